import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudWatchClient, PutMetricDataCommand, type Dimension } from '@aws-sdk/client-cloudwatch';
import { AwsQueryProtocol } from '@aws-sdk/core/protocols';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeImagesCommand, DescribeInstancesCommand, EC2Client, RunInstancesCommand } from '@aws-sdk/client-ec2';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { RawRepetition } from '../../core/results/ingest';
import { azureMonitorHostMetrics } from '../../lambdas/ingest-repetition/azure-metrics';
import { cloudWatchHostMetrics } from '../../lambdas/ingest-repetition/cloudwatch-metrics';
import { clusterNodes, NODE_COMPONENT } from '../../lambdas/fault/aws';
import { ingestFromS3 } from '../../lambdas/ingest-repetition/logic';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { motoClientConfig, startMoto, type Moto } from '../cloud/moto';
import { startFakeArm } from './fake-arm-clients';

// The real @aws-sdk/client-cloudwatch against moto server (moto 5.2.5 implements PutMetricData, ListMetrics with a
// dimension filter and GetMetricData with MetricStat queries: moto/cloudwatch/models.py). The test publishes what the
// CloudWatch agent of cdk/user-data/cloudwatch-agent.ts would (names, dimensions, delta bytes per second) and reads it
// back through IngestRepetition's code.
//
// Wire protocol: the client (3.1164) speaks AWS JSON 1.0 to CloudWatch by default, with awsQueryCompatible settings;
// moto 5.2.5 with the botocore 1.35.99 that .venv-tools pins knows CloudWatch's query protocol only ("Unsupported
// protocol [json] for service cloudwatch", moto/core/request.py determine_request_protocol). The test therefore gives
// the client @aws-sdk/core's AwsQueryProtocol (the client's own protocolSettings carry its xmlNamespace and version,
// and CloudWatch still serves the query protocol); commands, inputs and outputs are the same shapes.

const CLUSTER = 'rmqbench-run-1-c1';
const KAFKA_CLUSTER = 'rmqbench-run-1-c2';
const START = new Date(Math.floor(Date.now() / 1000) * 1000 - 120_000);
const FINISH = new Date(START.getTime() + 10_000);
const at = (second: number) => new Date(START.getTime() + second * 1000);

let moto: Moto;
let cloudwatch: CloudWatchClient;

/** Publishes `values[i]` at second i of the repetition for one agent metric of one instance. */
async function put(
  name: string,
  dimensions: Record<string, string>,
  values: readonly number[],
  unit: 'Percent' | 'Bytes',
) {
  const Dimensions: Dimension[] = Object.entries(dimensions).map(([Name, Value]) => ({ Name, Value }));
  await cloudwatch.send(
    new PutMetricDataCommand({
      Namespace: 'rmqbench',
      MetricData: values.map((value, second) => ({
        MetricName: name,
        Dimensions,
        Timestamp: at(second),
        Value: value,
        Unit: unit,
        StorageResolution: 1,
      })),
    }),
  );
}

const node = (instance: string, role = 'rabbitmq-node', cluster = CLUSTER) => ({
  InstanceId: instance,
  ClusterId: cluster,
  Role: role,
});

beforeAll(async () => {
  moto = await startMoto();
  cloudwatch = new CloudWatchClient({ ...motoClientConfig(moto), protocol: AwsQueryProtocol });
  for (const [instance, role, cpu] of [
    ['i-0node1', 'rabbitmq-node', 40],
    ['i-0node2', 'rabbitmq-node', 20],
    ['i-0loadgen', 'load-generator', 95],
  ] as const) {
    await put('cpu_usage_active', { ...node(instance, role), cpu: 'cpu-total' }, [cpu, cpu + 1, cpu + 2], 'Percent');
    await put('mem_used', node(instance, role), [1e9, 1.1e9, 1.2e9], 'Bytes');
    // Two whole disks count; a partition of one of them (its bytes are the disk's too) does not.
    await put('diskio_write_bytes', { ...node(instance, role), name: 'nvme0n1' }, [100, 100, 100], 'Bytes');
    await put('diskio_write_bytes', { ...node(instance, role), name: 'nvme1n1' }, [5000, 6000, 7000], 'Bytes');
    await put('diskio_write_bytes', { ...node(instance, role), name: 'nvme1n1p1' }, [5000, 6000, 7000], 'Bytes');
    // Sent + received on the instance's interface; loopback does not count.
    await put('net_bytes_sent', { ...node(instance, role), interface: 'ens5' }, [1000, 2000, 3000], 'Bytes');
    await put('net_bytes_recv', { ...node(instance, role), interface: 'ens5' }, [10, 20, 30], 'Bytes');
    await put('net_bytes_sent', { ...node(instance, role), interface: 'lo' }, [9e9, 9e9, 9e9], 'Bytes');
  }
  // A Kafka cluster stack's brokers (Role kafka-broker, cdk/user-data/kafka-node.ts) and its load generator.
  for (const [instance, role, cpu] of [
    ['i-0broker1', 'kafka-broker', 30],
    ['i-0broker2', 'kafka-broker', 60],
    ['i-0kafkaloadgen', 'load-generator', 91],
  ] as const) {
    await put('cpu_usage_active', { ...node(instance, role, KAFKA_CLUSTER), cpu: 'cpu-total' }, [cpu, cpu], 'Percent');
    await put('mem_used', node(instance, role, KAFKA_CLUSTER), [2e9, 2e9], 'Bytes');
  }
  // Another cluster's node in the same namespace: never part of this cluster's metrics.
  await put(
    'cpu_usage_active',
    { ...node('i-0other', 'rabbitmq-node', 'rmqbench-run-2-c1'), cpu: 'cpu-total' },
    [99, 99, 99],
    'Percent',
  );
}, 60_000);
afterAll(async () => moto?.stop());

/** The sampler's lines with the third one's /api/nodes answer missing (null), as curl leaves a request that failed. */
function withoutAnswer(samples: string): string {
  const lines = samples.split('\n');
  lines[2] = lines[2]!.replace(/"nodes":\[[^\]]*\]/, '"nodes":null');
  return lines.join('\n');
}

describe('IngestRepetition reads host metrics from CloudWatch (real SDK client, moto server)', () => {
  test(
    'every node and the load generator get per-second cpu, memory, ' +
      'disk-write and network series from the agent metrics of their cluster only',
    async () => {
      const metrics = await cloudWatchHostMetrics(cloudwatch, CLUSTER, {
        startedAt: START.toISOString(),
        finishedAt: FINISH.toISOString(),
      });
      expect(metrics.source).toBe('cloudwatch');
      const series = (nodeName: string, metric: string) =>
        metrics.series.find((one) => one.node === nodeName && one.metric === metric)?.points;
      expect([...new Set(metrics.series.map((one) => one.node))]).toEqual(['i-0node1', 'i-0node2', 'load-generator']);
      expect(series('i-0node1', 'cpuPercent')).toEqual([
        [0, 40],
        [1, 41],
        [2, 42],
      ]);
      expect(series('load-generator', 'cpuPercent')).toEqual([
        [0, 95],
        [1, 96],
        [2, 97],
      ]);
      expect(series('i-0node2', 'memoryBytes')).toEqual([
        [0, 1e9],
        [1, 1.1e9],
        [2, 1.2e9],
      ]);
      expect(series('i-0node1', 'diskWriteBytesPerSecond')).toEqual([
        [0, 5100],
        [1, 6100],
        [2, 7100],
      ]);
      expect(series('i-0node1', 'networkBytesPerSecond')).toEqual([
        [0, 1010],
        [1, 2020],
        [2, 3030],
      ]);
      expect(metrics.series.every((one) => one.node !== 'i-0other')).toBe(true);
      expect(metrics.series.map((one) => one.unit)).toEqual(
        expect.arrayContaining(['percent', 'bytes', 'bytesPerSecond']),
      );
    },
  );

  test("a Kafka cluster's brokers are nodes under their instance ids beside its load generator", async () => {
    const metrics = await cloudWatchHostMetrics(cloudwatch, KAFKA_CLUSTER, {
      startedAt: START.toISOString(),
      finishedAt: FINISH.toISOString(),
    });
    expect([...new Set(metrics.series.map((one) => one.node))]).toEqual(['i-0broker1', 'i-0broker2', 'load-generator']);
    expect(metrics.series.filter((one) => one.metric === 'cpuPercent').map((one) => [one.node, one.points])).toEqual([
      [
        'i-0broker1',
        [
          [0, 30],
          [1, 30],
        ],
      ],
      [
        'i-0broker2',
        [
          [0, 60],
          [1, 60],
        ],
      ],
      [
        'load-generator',
        [
          [0, 91],
          [1, 91],
        ],
      ],
    ]);
  });

  test('a cluster that published nothing is an error that says what was looked for', async () => {
    await expect(
      cloudWatchHostMetrics(cloudwatch, 'rmqbench-run-9-c1', {
        startedAt: START.toISOString(),
        finishedAt: FINISH.toISOString(),
      }),
    ).rejects.toThrow(
      /CloudWatch has no rmqbench metrics with ClusterId=rmqbench-run-9-c1 in the repetition.s window \(did the/,
    );
  });

  describe('ingestFromS3 stores them with the repetition; a failed fetch leaves the result and says why', () => {
    const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
    const item = { scenarioId: 'three/small', repetition: 1, rawKey: 'three_small.rep-1.json' } as ScheduledRepetition;
    let s3: S3Client;
    let store: ResultsStore;
    let instanceIds: string[];
    let listHosts: () => ReturnType<typeof clusterNodes>;
    beforeAll(async () => {
      s3 = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
      store = new ResultsStore(new DynamoDBClient(motoClientConfig(moto)), 'rmqbench-results');
      await store.ensureTable();
      await s3.send(new CreateBucketCommand({ Bucket: 'raw' }));
      // A real PerfTest 2.22.1 run (5 s, 1 producer, 1 consumer) over the repetition's window.
      const raw: RawRepetition = {
        runId: 'run-1',
        scenarioId: item.scenarioId,
        repetition: 1,
        startedAt: START.toISOString(),
        finishedAt: FINISH.toISOString(),
        perfTestArgs: ['-x', '1'],
        expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
        stdout: fixture('basic-150b.stdout.txt'),
        csv: fixture('basic-150b.csv'),
      };
      // The management API sampler's lines captured on a local 3-node cluster (test/fixtures/broker-samples), moved
      // onto this repetition's clock.
      const captured = readFileSync(join(__dirname, '../fixtures/broker-samples/depth-25-on-node-2.jsonl'), 'utf8');
      const brokerSamples = captured.replace(
        /"t":([\d.]+)/g,
        (_, t: string) => `"t":${(Number(t) - 1795452130.05 + START.getTime() / 1000 + 0.5).toFixed(3)}`,
      );
      // Three node instances of the cluster stack in moto's EC2, as RabbitMqCluster launches them (tags of the fault
      // step's
      // listing); the samples then name the nodes as the cloud brokers do, rabbit@<private IP>.
      const ec2 = new EC2Client(motoClientConfig(moto));
      const image = (await ec2.send(new DescribeImagesCommand({}))).Images![0]!.ImageId!;
      const tags = { 'aws:cloudformation:stack-name': CLUSTER, 'rmqbench:component': NODE_COMPONENT };
      const launched = await ec2.send(
        new RunInstancesCommand({
          ImageId: image,
          MinCount: 3,
          MaxCount: 3,
          InstanceType: 'c5.xlarge',
          TagSpecifications: [
            { ResourceType: 'instance', Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
          ],
        }),
      );
      instanceIds = launched.Instances!.map((instance) => instance.InstanceId!);
      const described = (
        await ec2.send(new DescribeInstancesCommand({ InstanceIds: instanceIds }))
      ).Reservations!.flatMap((reservation) => reservation.Instances!);
      const ipOf = (id: string) => described.find((instance) => instance.InstanceId === id)!.PrivateIpAddress!;
      const cloudSamples = brokerSamples.replace(
        /rmqbench([123])@localhost/g,
        (_, index: string) => `rabbit@${ipOf(instanceIds[Number(index) - 1]!)}`,
      );
      listHosts = () => clusterNodes(ec2, CLUSTER);
      const runs: Record<string, Partial<RawRepetition>> = {
        'run-1': {},
        'run-9': {},
        'run-2': { brokerSamples },
        'run-3': { brokerSamples },
        'run-4': { brokerSamples: '' },
        'run-5': { brokerSamples: cloudSamples },
        'run-6': { brokerSamples: cloudSamples },
        // The third sample's /api/nodes got no answer (twice: the sampler asks again once), without and with a fault.
        'run-10': { brokerSamples: withoutAnswer(brokerSamples) },
        'run-11': {
          brokerSamples: withoutAnswer(brokerSamples),
          uncountedFault: {
            fault: { action: 'kill', node: 'leader', nodeName: 'rmqbench2@localhost', appliedAtSeconds: 2 },
            reason: 'the lost-message verifier left no verifier.json',
          },
        },
      };
      for (const [runId, extra] of Object.entries(runs)) {
        await s3.send(
          new PutObjectCommand({
            Bucket: 'raw',
            Key: `runs/${runId}/ingest/${item.rawKey}`,
            Body: JSON.stringify({ ...raw, ...extra, runId }),
          }),
        );
        await store.putRun({
          runId,
          planName: 'three',
          plan: {},
          target: 'aws',
          status: 'RUNNING',
          startedAt: START.toISOString(),
          environment: {},
          scenarioIds: [item.scenarioId],
        });
      }
    }, 30_000);

    test("the CloudWatch series are stored in the repetition's metric chunks", async () => {
      const result = await ingestFromS3(s3, 'raw', store, 'run-1', item, (window) =>
        cloudWatchHostMetrics(cloudwatch, CLUSTER, window),
      );
      expect(result.status).toBe('SUCCEEDED');
      const stored = await store.getMetrics('run-1', item.scenarioId, 1);
      expect(stored?.source).toBe('cloudwatch');
      expect(
        stored?.series.find((one) => one.node === 'load-generator' && one.metric === 'cpuPercent')?.points,
      ).toEqual([
        [0, 95],
        [1, 96],
        [2, 97],
      ]);
      const repetitions = (await store.getRun('run-1'))?.repetitions;
      expect(repetitions?.map((one) => [one.status, one.metricsError])).toEqual([['SUCCEEDED', undefined]]);
    });

    test('a fetch that fails is recorded as "metrics unavailable: <reason>" on a SUCCEEDED repetition', async () => {
      const result = await ingestFromS3(s3, 'raw', store, 'run-9', item, (window) =>
        cloudWatchHostMetrics(cloudwatch, 'rmqbench-run-9-c1', window),
      );
      expect(result.status).toBe('SUCCEEDED');
      const repetition = (await store.getRun('run-9'))?.repetitions[0];
      expect(repetition?.status).toBe('SUCCEEDED');
      expect(repetition?.metricsError).toMatch(
        /^metrics unavailable: CloudWatch has no rmqbench metrics with ClusterId=rmqbench-run-9-c1/,
      );
      expect(await store.getMetrics('run-9', item.scenarioId, 1)).toBeUndefined();
    });

    test(
      "the management API sampler's output adds queueDepth and " +
        'memoryAlarm per broker node beside the CloudWatch series',
      async () => {
        await ingestFromS3(s3, 'raw', store, 'run-2', item, (window) =>
          cloudWatchHostMetrics(cloudwatch, CLUSTER, window),
        );
        const stored = await store.getMetrics('run-2', item.scenarioId, 1);
        expect(stored?.source).toBe('cloudwatch+management-api');
        const points = (nodeName: string, metric: string) =>
          stored?.series.find((one) => one.node === nodeName && one.metric === metric)?.points;
        expect(points('rmqbench2@localhost', 'queueDepth')?.map(([, value]) => value)).toEqual([25, 25, 25, 25, 25]);
        expect(points('rmqbench2@localhost', 'queueDepth')?.[0]?.[0]).toBe(0.5);
        expect(points('rmqbench3@localhost', 'memoryAlarm')?.map(([, value]) => value)).toEqual([0, 0, 0, 0, 0]);
        expect(points('i-0node1', 'cpuPercent')).toEqual([
          [0, 40],
          [1, 41],
          [2, 42],
        ]);
        expect((await store.getRun('run-2'))?.repetitions.map((one) => [one.status, one.metricsError])).toEqual([
          ['SUCCEEDED', undefined],
        ]);
      },
    );

    test(
      "broker metrics are kept when CloudWatch fails, and CloudWatch's " +
        'are kept when the sampler left nothing; each failure is named',
      async () => {
        await ingestFromS3(s3, 'raw', store, 'run-3', item, (window) =>
          cloudWatchHostMetrics(cloudwatch, 'rmqbench-run-9-c1', window),
        );
        const brokerOnly = await store.getMetrics('run-3', item.scenarioId, 1);
        expect(brokerOnly?.source).toBe('management-api');
        expect([...new Set(brokerOnly?.series.map((one) => one.metric))].sort()).toEqual(['memoryAlarm', 'queueDepth']);
        const three = (await store.getRun('run-3'))?.repetitions[0];
        expect([three?.status, three?.metricsError]).toEqual([
          'SUCCEEDED',
          expect.stringMatching(/^metrics unavailable: CloudWatch has no rmqbench metrics/),
        ]);

        await ingestFromS3(s3, 'raw', store, 'run-4', item, (window) =>
          cloudWatchHostMetrics(cloudwatch, CLUSTER, window),
        );
        expect((await store.getMetrics('run-4', item.scenarioId, 1))?.source).toBe('cloudwatch');
        const four = (await store.getRun('run-4'))?.repetitions[0];
        expect([four?.status, four?.metricsError]).toEqual([
          'SUCCEEDED',
          "broker metrics unavailable: the management API sampler's broker-metrics.jsonl holds no complete line",
        ]);
        expect(four?.result?.summary.receiveRateAvg).toBeGreaterThan(0);
      },
    );

    test(
      'a sample whose request got no answer is a gap in the series; it is named in metricsError unless a fault ' +
        "was applied (then it is the fault's outage behind the load balancer), and the rest is stored either way",
      async () => {
        for (const runId of ['run-10', 'run-11'])
          await ingestFromS3(s3, 'raw', store, runId, item, (window) =>
            cloudWatchHostMetrics(cloudwatch, CLUSTER, window),
          );
        for (const runId of ['run-10', 'run-11']) {
          const depth = (await store.getMetrics(runId, item.scenarioId, 1))?.series.find(
            (one) => one.node === 'rmqbench2@localhost' && one.metric === 'queueDepth',
          )?.points;
          // Five samples, one without its answer: four points, and none in the third sample's second.
          expect(depth?.map(([, value]) => value)).toEqual([25, 25, 25, 25]);
          expect(depth?.some(([t]) => t > 2.2 && t < 2.8)).toBe(false);
        }
        const [noFault, fault] = await Promise.all(
          ['run-10', 'run-11'].map(async (runId) => (await store.getRun(runId))?.repetitions[0]),
        );
        expect([noFault?.status, noFault?.metricsError]).toEqual([
          'SUCCEEDED',
          'broker metrics: 1 of 5 samples got no answer from the management API ' +
            '(first: line 3: no answer from /api/nodes?columns=name,running)',
        ]);
        expect([fault?.status, fault?.metricsError, fault?.uncountedFault?.fault.action]).toEqual([
          'SUCCEEDED',
          undefined,
          'kill',
        ]);
      },
    );

    test(
      "with the cluster's instances listed (EC2 DescribeInstances on moto), a broker " +
        "node's series are under its instance id, the name its host series have",
      async () => {
        await ingestFromS3(
          s3,
          'raw',
          store,
          'run-5',
          item,
          (window) => cloudWatchHostMetrics(cloudwatch, CLUSTER, window),
          listHosts,
        );
        const stored = await store.getMetrics('run-5', item.scenarioId, 1);
        const nodes = [...new Set(stored?.series.filter((one) => one.metric === 'queueDepth').map((one) => one.node))];
        expect(nodes.sort()).toEqual([...instanceIds].sort());
        expect(
          stored?.series
            .find((one) => one.node === instanceIds[1] && one.metric === 'queueDepth')
            ?.points.map(([, value]) => value),
        ).toEqual([25, 25, 25, 25, 25]);
        expect((await store.getRun('run-5'))?.repetitions[0]?.metricsError).toBeUndefined();
      },
    );

    test(
      "an Azure Kafka repetition: each broker VM's Azure Monitor series (fake ARM, real ARM client), " +
        "used memory included, are stored under its VM name beside the load generator's",
      async () => {
        const { arm, clients } = await startFakeArm();
        try {
          const group = 'rmqbench-run-7-c1';
          const vm = (name: string) =>
            `/subscriptions/sub-1/resourceGroups/${group}/providers/Microsoft.Compute/virtualMachines/${name}`;
          const brokers = ['rmqbench-kafka-1', 'rmqbench-kafka-2', 'rmqbench-kafka-3'];
          const minuteOf = new Date(Math.floor(START.getTime() / 60_000) * 60_000).toISOString();
          const GIB = 2 ** 30;
          brokers.forEach((name, index) =>
            arm.metricValues.set(vm(name).toLowerCase(), [
              { metric: 'Percentage CPU', timeStamp: minuteOf, value: 20 + index },
              { metric: 'Disk Write Bytes', timeStamp: minuteOf, value: 600 * (index + 1) },
              { metric: 'Available Memory Bytes', timeStamp: minuteOf, value: (12 - index) * GIB },
            ]),
          );
          arm.metricValues.set(vm('rmqbench-loadgen').toLowerCase(), [
            { metric: 'Percentage CPU', timeStamp: minuteOf, value: 70 },
          ]);
          // The deployment outputs as checkDeployment hands them on (an array output as its JSON text).
          const outputs = {
            scaleSetResourceId: '',
            loadGeneratorResourceId: vm('rmqbench-loadgen'),
            kafkaBootstrapServers: '10.20.1.10:9092',
            kafkaBrokerResourceIds: JSON.stringify(brokers.map(vm)),
            clusterVmSize: 'Standard_F8s_v2',
            loadGeneratorVmSize: 'Standard_F16s_v2',
          };
          // A real Kafka 4.3.1 ProducerPerformance / ConsumerPerformance pair (test/fixtures/kafka) over the
          // repetition's window.
          const kafkaFixture = (name: string) => readFileSync(join(__dirname, '../fixtures/kafka', name), 'utf8');
          const raw: RawRepetition = {
            runId: 'run-7',
            scenarioId: item.scenarioId,
            repetition: 1,
            startedAt: START.toISOString(),
            finishedAt: FINISH.toISOString(),
            perfTestArgs: [],
            expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
            stdout: '',
            csv: '',
            kafka: {
              output: {
                producers: [kafkaFixture('one-producer-1.txt')],
                consumers: [kafkaFixture('one-consumer-1.txt')],
              },
              expectations: { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
            },
          };
          await s3.send(
            new PutObjectCommand({ Bucket: 'raw', Key: `runs/run-7/ingest/${item.rawKey}`, Body: JSON.stringify(raw) }),
          );
          await store.putRun({
            runId: 'run-7',
            planName: 'kafka',
            plan: {},
            target: 'azure',
            status: 'RUNNING',
            startedAt: START.toISOString(),
            environment: {},
            scenarioIds: [item.scenarioId],
          });

          const result = await ingestFromS3(s3, 'raw', store, 'run-7', item, (window) =>
            azureMonitorHostMetrics(clients, outputs, window),
          );
          expect(result.status).toBe('SUCCEEDED');
          const stored = await store.getMetrics('run-7', item.scenarioId, 1);
          expect(stored?.source).toBe('azure-monitor');
          expect([...new Set(stored?.series.map((one) => one.node))]).toEqual([...brokers, 'load-generator']);
          const offset = Math.max(0, Math.round((Date.parse(minuteOf) - START.getTime()) / 1000));
          expect(
            brokers.map(
              (name) => stored?.series.find((one) => one.node === name && one.metric === 'cpuPercent')?.points,
            ),
          ).toEqual([[[offset, 20]], [[offset, 21]], [[offset, 22]]]);
          expect(
            stored?.series.find((one) => one.node === 'rmqbench-kafka-3' && one.metric === 'diskWriteBytesPerSecond')
              ?.points,
          ).toEqual([[offset, 30]]);
          // Used memory of each 16 GiB Standard_F8s_v2 broker: its size's memory minus the available memory.
          expect(
            brokers.map(
              (name) => stored?.series.find((one) => one.node === name && one.metric === 'memoryBytes')?.points,
            ),
          ).toEqual([[[offset, 4 * GIB]], [[offset, 5 * GIB]], [[offset, 6 * GIB]]]);
          expect((await store.getRun('run-7'))?.repetitions.map((one) => [one.status, one.metricsError])).toEqual([
            ['SUCCEEDED', undefined],
          ]);

          // The same repetition with the outputs of a Kafka deployment from before kafkaBrokerResourceIds: the load
          // generator's series are stored and the record names the missing output.
          const { kafkaBrokerResourceIds: _absent, ...before } = outputs;
          await ingestFromS3(s3, 'raw', store, 'run-7', item, (window) =>
            azureMonitorHostMetrics(clients, before, window),
          );
          expect([
            ...new Set((await store.getMetrics('run-7', item.scenarioId, 1))?.series.map((one) => one.node)),
          ]).toEqual(['load-generator']);
          expect((await store.getRun('run-7'))?.repetitions[0]?.metricsError).toBe(
            "metrics incomplete: the brokers' host metrics were not read: the deployment lacks the outputs " +
              'kafkaBrokerResourceIds and natsServerResourceIds (deployed before them): ' +
              'deploy the current bicep/main.bicep',
          );
        } finally {
          await arm.stop();
        }
      },
    );

    test(
      'when the hosts cannot be listed the broker series ' + "keep RabbitMQ's names, and the record says why",
      async () => {
        await ingestFromS3(
          s3,
          'raw',
          store,
          'run-6',
          item,
          (window) => cloudWatchHostMetrics(cloudwatch, CLUSTER, window),
          async () => {
            throw new Error('UnauthorizedOperation: You are not authorized to perform this operation.');
          },
        );
        const stored = await store.getMetrics('run-6', item.scenarioId, 1);
        expect(
          stored?.series.filter((one) => one.metric === 'queueDepth').every((one) => one.node.startsWith('rabbit@')),
        ).toBe(true);
        const six = (await store.getRun('run-6'))?.repetitions[0];
        expect([six?.status, six?.metricsError]).toEqual([
          'SUCCEEDED',
          "broker metrics keep RabbitMQ's node names: the cluster's hosts could not be listed: " +
            'UnauthorizedOperation: You are not authorized to perform this operation.',
        ]);
      },
    );
  });
});
