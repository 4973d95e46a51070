import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CloudWatchClient,
  GetDashboardCommand,
  GetMetricDataCommand,
  ListMetricsCommand,
  PutMetricDataCommand,
} from '@aws-sdk/client-cloudwatch';
import { startMoto, type Moto } from '../cloud/moto';
import { CloudWatchJson } from './cloudwatch-json';

// The functions' own CloudWatch client (JSON 1.0 by default) against the twin's translation to moto's query protocol:
// what IngestRepetition sends and reads in the twin, with the SDK's own serializer and parser on both sides.

let moto: Moto;
let translator: CloudWatchJson;
let server: Server;
let client: CloudWatchClient;

beforeAll(async () => {
  moto = await startMoto();
  translator = new CloudWatchJson(moto.endpoint);
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const operation = String(req.headers['x-amz-target']).split('.').pop()!;
      void translator
        .answer(operation, JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>)
        .then((answer) => res.writeHead(answer.status, answer.headers).end(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new CloudWatchClient({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'ASIATWIN', secretAccessKey: 'twin' },
    maxAttempts: 1,
  });
}, 60_000);

afterAll(async () => {
  client?.destroy();
  translator?.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await moto?.stop();
});

const ROUND_TRIP =
  'PutMetricData, ListMetrics and GetMetricData round-trip with their timestamps; an error keeps its code';

test(ROUND_TRIP, async () => {
  const start = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  const dimensions = [{ Name: 'ClusterId', Value: 'rmqbench-run-1-c1' }];
  await client.send(
    new PutMetricDataCommand({
      Namespace: 'rmqbench',
      MetricData: [0, 1, 2].map((second) => ({
        MetricName: 'cpu_usage_active',
        Dimensions: dimensions,
        Timestamp: new Date(start.getTime() + second * 1000),
        Value: 10 + second,
        Unit: 'Percent',
        StorageResolution: 1,
      })),
    }),
  );
  const listed = await client.send(new ListMetricsCommand({ Namespace: 'rmqbench', Dimensions: dimensions }));
  expect(listed.Metrics?.map((metric) => metric.MetricName)).toContain('cpu_usage_active');
  const data = await client.send(
    new GetMetricDataCommand({
      StartTime: start,
      EndTime: new Date(start.getTime() + 5_000),
      ScanBy: 'TimestampAscending',
      MetricDataQueries: [
        {
          Id: 'm0',
          MetricStat: {
            Metric: { Namespace: 'rmqbench', MetricName: 'cpu_usage_active', Dimensions: dimensions },
            Period: 1,
            Stat: 'Average',
          },
        },
      ],
    }),
  );
  const result = data.MetricDataResults?.[0];
  expect(result?.Values).toEqual([10, 11, 12]);
  expect(result?.Timestamps?.map((timestamp) => timestamp.getTime() - start.getTime())).toEqual([0, 1000, 2000]);
  // An error answer: the SDK throws it with CloudWatch's error code and message.
  const missing = await client.send(new GetDashboardCommand({ DashboardName: 'no-such-dashboard' })).catch((e) => e);
  expect(missing).toMatchObject({ name: 'ResourceNotFound', $metadata: { httpStatusCode: 404 } });
  expect(String((missing as Error).message)).toMatch(/does not exist/i);
});
