import {
  GetMetricDataCommand,
  ListMetricsCommand,
  type CloudWatchClient,
  type GetMetricDataCommandInput,
} from '@aws-sdk/client-cloudwatch';
import { cloudWatchHostMetrics } from '../../lambdas/ingest-repetition/cloudwatch-metrics';

// A new cluster stack's metrics may not be listed yet (ListMetrics shows a new metric up to 15 minutes late): the
// CPU and memory of the stack's known instances are read by name with GetMetricData all the same. A scripted
// CloudWatch that lists nothing and serves the points the agent put under the exact dimensions it publishes.

const START = new Date('2026-11-27T10:00:00Z');
const window = { startedAt: START.toISOString(), finishedAt: new Date(START.getTime() + 3000).toISOString() };
const CLUSTER = 'rmqbench-run-1-c1';

/** Points the agents published, by metric name and sorted dimensions. */
const PUBLISHED = new Map<string, number[]>([
  [
    key('cpu_usage_active', { InstanceId: 'i-node1', ClusterId: CLUSTER, Role: 'rabbitmq-node', cpu: 'cpu-total' }),
    [40, 41, 42],
  ],
  [key('mem_used', { InstanceId: 'i-node1', ClusterId: CLUSTER, Role: 'rabbitmq-node' }), [1e9, 1e9, 1e9]],
  [
    key('cpu_usage_active', { InstanceId: 'i-lg1', ClusterId: CLUSTER, Role: 'load-generator', cpu: 'cpu-total' }),
    [95, 96, 97],
  ],
  // A Kafka broker (no component tag): asked under kafka-broker and nats-server, found under the first.
  [
    key('cpu_usage_active', { InstanceId: 'i-broker1', ClusterId: CLUSTER, Role: 'kafka-broker', cpu: 'cpu-total' }),
    [30, 31, 32],
  ],
]);

function key(name: string, dimensions: Record<string, string>): string {
  return `${name}|${JSON.stringify(Object.entries(dimensions).sort())}`;
}

function scriptedCloudWatch(): { client: CloudWatchClient; asked: string[] } {
  const asked: string[] = [];
  const client = {
    send: async (command: unknown) => {
      if (command instanceof ListMetricsCommand) return { Metrics: [] };
      if (command instanceof GetMetricDataCommand) {
        const input = command.input as GetMetricDataCommandInput;
        return {
          MetricDataResults: input.MetricDataQueries!.map((query) => {
            const metric = query.MetricStat!.Metric!;
            const dims = Object.fromEntries(metric.Dimensions!.map((d) => [d.Name!, d.Value!]));
            const id = key(metric.MetricName!, dims);
            asked.push(id);
            const values = PUBLISHED.get(id) ?? [];
            return {
              Id: query.Id,
              Timestamps: values.map((_, second) => new Date(START.getTime() + second * 1000)),
              Values: values,
            };
          }),
        };
      }
      throw new Error(`unexpected command ${String(command)}`);
    },
  } as unknown as CloudWatchClient;
  return { client, asked };
}

test('unlisted metrics: CPU and memory of the known instances are read by name, each under its node', async () => {
  const { client, asked } = scriptedCloudWatch();
  const metrics = await cloudWatchHostMetrics(
    client,
    CLUSTER,
    window,
    ['i-lg1'],
    [
      { instanceId: 'i-node1', role: 'rabbitmq-node' },
      { instanceId: 'i-lg1', role: 'load-generator' },
      { instanceId: 'i-broker1' },
    ],
  );
  const cpu = (node: string) =>
    metrics.series.find((series) => series.node === node && series.metric === 'cpuPercent')?.points;
  expect(cpu('i-node1')).toEqual([
    [0, 40],
    [1, 41],
    [2, 42],
  ]);
  expect(cpu('i-broker1')).toEqual([
    [0, 30],
    [1, 31],
    [2, 32],
  ]);
  expect(cpu('load-generator')).toEqual([
    [0, 95],
    [1, 96],
    [2, 97],
  ]);
  expect(metrics.series.find((series) => series.node === 'i-node1' && series.metric === 'memoryBytes')).toBeDefined();
  // The broker of unknown role was asked under both broker roles; a role without points makes no series.
  expect(asked.filter((id) => id.includes('i-broker1') && id.startsWith('cpu_usage_active'))).toHaveLength(2);
  expect(new Set(metrics.series.map((series) => series.node))).toEqual(
    new Set(['i-node1', 'i-broker1', 'load-generator']),
  );
});

test('nothing listed and nothing published: the error says so and asks whether the agent started', async () => {
  const { client } = scriptedCloudWatch();
  await expect(
    cloudWatchHostMetrics(client, 'rmqbench-run-2-c1', window, [], [{ instanceId: 'i-silent', role: 'rabbitmq-node' }]),
  ).rejects.toThrow(
    /CloudWatch has no rmqbench metrics with ClusterId=rmqbench-run-2-c1 .*did the CloudWatch agent start/,
  );
});
