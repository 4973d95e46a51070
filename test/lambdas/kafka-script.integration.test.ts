import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaClusterTemplateFileName } from '../../cdk/BenchmarkController';
import { ingestRepetition } from '../../core/results/ingest';
import { perfTestExpectations } from '../../core/perftest/perftest-output';
import { kafkaReadinessScript, kafkaSmokeTestScript } from '../../lambdas/shared/kafka-load-generator';
import {
  awsKafkaRepetitionScript,
  kafkaLadderOutput,
  kafkaExpectations,
  kafkaRawFiles,
  scenarioOf,
} from '../../lambdas/start-repetition/kafka-script';
import { rawPrefix } from '../../lambdas/start-repetition/logic';
import { LocalKafkaCluster } from '../../local/kafka-cluster';
import { cachedArtifactDir, KAFKA_ARTIFACT, PERFTEST_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { buildSchedule } from '../../state-machines/schedule';
import { startFakeAws, type FakeAws } from './fake-aws-endpoint';
import {
  ACCOUNT,
  BUCKET,
  loadGeneratorStatements,
  REGION,
  requireAwsCli,
  runOnLoadGenerator as runSandboxed,
} from './sandboxed-load-generator';

/**
 * The exact scripts the controller sends to the AWS load generator of a Kafka cluster stack (StartRepetition's Kafka
 * repetition, SmokeTest's Kafka smoke test), executed with bash on a sandboxed load generator, as
 * perftest-script.integration.test.ts does for PerfTest:
 * - laid out by the real boot commands of cdk/user-data/load-generator.ts with the Kafka tools (kafkaTools: true), in a
 *   mount + PID namespace whose /opt, /usr/local/bin and /etc are private, so nothing on this machine changes. Two
 * kinds
 *   of boot line are substituted, by exact match: `dnf install` of Corretto (this machine's Java runs the tools) and
 *   each `curl` from Maven Central (the same jar is copied from the local Maven cache; the boot's own SHA-256 checks
 *   then verify it against the pinned sums of cdk/kafka-artifacts.ts and cdk/perf-test-artifacts.ts);
 * - with the real AWS CLI pointed at a local endpoint that answers S3 PutObject and authorizes each call with the load
 *   generator role's policy taken from the synthesized Kafka cluster template;
 * - against a real 1-broker KRaft cluster started by the test (local/kafka-cluster.ts, the same jars).
 */
jest.setTimeout(300_000);

const statements = () => loadGeneratorStatements(kafkaClusterTemplateFileName(1));

describe('the AWS Kafka scripts, executed on a sandboxed load generator against a real KRaft broker', () => {
  const processes = new ProcessRegistry();
  let work: string;
  let cluster: LocalKafkaCluster;
  let jarDirs: string[];

  beforeAll(async () => {
    requireAwsCli();
    const perfTest = cachedArtifactDir(cacheDir(), PERFTEST_ARTIFACT);
    const kafka = cachedArtifactDir(cacheDir(), KAFKA_ARTIFACT);
    if (!perfTest || !kafka)
      throw new Error('PerfTest or Kafka is not in the Maven cache: run rmqbench doctor --fix (scripts/setup.sh does)');
    jarDirs = [perfTest, kafka];
    work = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-loadgen-'));
    cluster = await LocalKafkaCluster.start({ nodes: 1, workDir: join(work, 'cluster'), processes, jarsDir: kafka });
  });
  afterAll(async () => {
    await processes.stopAll();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  // PerfTest's jars and the 92 Kafka jars.
  const runOnLoadGenerator = (fake: FakeAws | undefined, script: string) =>
    runSandboxed(work, { jarDirs, kafkaTools: true, minDownloads: 100, timeoutMs: 240_000 }, fake, script);

  /** The cluster's topics, as TopicCommand --list prints them (into its log in the cluster's folder). */
  const topicList = async (logName: string) => {
    await cluster.topicCommand(['--list'], logName);
    return readFileSync(join(work, 'cluster', logName), 'utf8');
  };

  // Rate-limited so that the transfer spans several of the consumer's per-second rows: 20,000 unthrottled records can
  // arrive before its first row, and its rate counts only what arrives between its first and last rows (CI read 0).
  const planWith = (nodes: number) => ({
    name: 'kafka-script',
    clusters: [{ name: 'k', broker: 'kafka', nodes, instanceType: 'c5.xlarge' }],
    workloads: [
      {
        name: 'w',
        producers: 1,
        consumers: 1,
        messageSizeBytes: 100,
        messageCount: 20000,
        publishRateLimit: 4000,
        durationSeconds: 30,
        acks: 'all',
      },
    ],
  });

  test(
    'the repetition script creates the topic, runs consumer and producer, ' +
      "uploads both outputs with the template's role, and they ingest into a SUCCEEDED record",
    async () => {
      const plan = planWith(1);
      const item = buildSchedule({ plan, target: 'aws', runId: 'run-kafka' }, 'exec').clusters[0]!.repetitions[0]!;
      const fake = await startFakeAws({ statements: statements(), secrets: {}, region: REGION, account: ACCOUNT });
      try {
        const { script, args, files } = awsKafkaRepetitionScript({
          plan,
          runId: 'run-kafka',
          item,
          bootstrapServers: cluster.bootstrapServers,
          bucket: BUCKET,
        });
        expect(files).toEqual(kafkaRawFiles(1, 1));
        const run = await runOnLoadGenerator(fake, script);
        expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
        expect(fake.calls.map((call) => [call.action, call.allowed])).toEqual([
          ['s3:PutObject', true],
          ['s3:PutObject', true],
        ]);
        const prefix = `${BUCKET}/${rawPrefix('run-kafka', item)}`;
        expect([...fake.objects.keys()].sort()).toEqual([`${prefix}/consumer-1.txt`, `${prefix}/producer-1.txt`]);
        const scenario = scenarioOf(plan, item);
        const record = ingestRepetition({
          runId: 'run-kafka',
          scenarioId: item.scenarioId,
          repetition: 1,
          startedAt: '2025-01-01T00:00:00.000Z',
          finishedAt: '2025-01-01T00:00:30.000Z',
          perfTestArgs: args,
          expectations: perfTestExpectations(scenario.workload),
          stdout: '',
          csv: '',
          kafka: {
            output: {
              producers: [fake.objects.get(`${prefix}/producer-1.txt`)!.toString('utf8')],
              consumers: [fake.objects.get(`${prefix}/consumer-1.txt`)!.toString('utf8')],
            },
            expectations: kafkaExpectations(scenario),
          },
        });
        expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
        expect(record.result!.summary.sendRateAvg).toBeGreaterThan(0);
        expect(record.result!.summary.receiveRateAvg).toBeGreaterThan(0);
        // The topic was the benchmark's own and is gone.
        expect(await topicList('topics-after.log')).not.toMatch(/rmqbench-w-/);
      } finally {
        await fake.stop();
      }
    },
  );

  test(
    'durationSeconds only: the producer is stopped at the duration and the consumer after it, ' +
      'and the windows inside it ingest into a SUCCEEDED record with receive rates, its warm-up left out',
    async () => {
      const seconds = 8;
      const plan = {
        name: 'kafka-duration',
        clusters: [{ name: 'k', broker: 'kafka', nodes: 1, instanceType: 'c5.xlarge' }],
        // The warm-up is left out of the summary by the windows' seconds (no --warmup-records without a rate).
        workloads: [
          { name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: seconds, warmUpSeconds: 2 },
        ],
      };
      const item = buildSchedule({ plan, target: 'aws', runId: 'run-duration' }, 'exec').clusters[0]!.repetitions[0]!;
      const fake = await startFakeAws({ statements: statements(), secrets: {}, region: REGION, account: ACCOUNT });
      try {
        const { script, args } = awsKafkaRepetitionScript({
          plan,
          runId: 'run-duration',
          item,
          bootstrapServers: cluster.bootstrapServers,
          bucket: BUCKET,
        });
        const run = await runOnLoadGenerator(fake, script);
        expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
        const prefix = `${BUCKET}/${rawPrefix('run-duration', item)}`;
        const producer = fake.objects.get(`${prefix}/producer-1.txt`)!.toString('utf8');
        const consumer = fake.objects.get(`${prefix}/consumer-1.txt`)!.toString('utf8');
        // Stopped, not finished: 1 s windows, at most one per second of the duration, and no summary.
        const windows = producer.split('\n').filter((line) => / records sent, .* ms max latency\.$/.test(line));
        expect(windows.length).toBeGreaterThanOrEqual(2);
        expect(windows.length).toBeLessThanOrEqual(seconds);
        expect(producer).not.toMatch(/99\.9th/);
        expect(consumer).not.toMatch(/WARNING: Exiting before consuming/);
        const scenario = scenarioOf(plan, item);
        const record = ingestRepetition({
          runId: 'run-duration',
          scenarioId: item.scenarioId,
          repetition: 1,
          startedAt: '2025-01-01T00:00:00.000Z',
          finishedAt: '2025-01-01T00:00:30.000Z',
          perfTestArgs: args,
          expectations: perfTestExpectations(scenario.workload),
          stdout: '',
          csv: '',
          kafka: {
            output: { producers: [producer], consumers: [consumer] },
            expectations: kafkaExpectations(scenario),
          },
        });
        expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
        expect(record.result!.summary.sendRateAvg).toBeGreaterThan(0);
        expect(record.result!.summary.receiveRateAvg).toBeGreaterThan(0);
        expect(args).not.toContain('--warmup-records');
        expect(record.result!.warmUpSeconds).toBe(2);
        expect(record.result!.perfTestSummary!.sendRateAvg).toBeGreaterThan(0);
        expect(await topicList('topics-after-duration.log')).not.toMatch(/rmqbench-w-/);
      } finally {
        await fake.stop();
      }
    },
  );

  test('a capacity ladder: a producer run per step at its rate, step times uploaded, judged at ingest', async () => {
    const plan = {
      name: 'kafka-ladder',
      clusters: [{ name: 'k', broker: 'kafka', nodes: 1, instanceType: 'c5.xlarge' }],
      workloads: [
        {
          name: 'w',
          producers: 1,
          consumers: 1,
          messageSizeBytes: 100,
          capacity: {
            p99LatencyMs: 1000,
            minRate: 500,
            maxRate: 1000,
            stepFactor: 2,
            stepSeconds: 5,
            warmUpSeconds: 1,
          },
        },
      ],
    };
    const item = buildSchedule({ plan, target: 'local', runId: 'run-ladder' }, 'exec').clusters[0]!.repetitions[0]!;
    const fake = await startFakeAws({ statements: statements(), secrets: {}, region: REGION, account: ACCOUNT });
    try {
      const { script, args, files } = awsKafkaRepetitionScript({
        plan,
        runId: 'run-ladder',
        item,
        bootstrapServers: cluster.bootstrapServers,
        bucket: BUCKET,
      });
      expect(files.steps).toEqual([['producer-1-step-1.txt'], ['producer-1-step-2.txt']]);
      expect(args.filter((line) => line.startsWith('ProducerPerformance (step'))).toHaveLength(2);
      const run = await runOnLoadGenerator(fake, script);
      expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
      const prefix = `${BUCKET}/${rawPrefix('run-ladder', item)}`;
      expect([...fake.objects.keys()].sort()).toEqual(
        ['consumer-1.txt', 'producer-1-step-1.txt', 'producer-1-step-2.txt', 'steps.txt'].map((f) => `${prefix}/${f}`),
      );
      const read = async (name: string) => fake.objects.get(`${prefix}/${name}`)?.toString('utf8') ?? '';
      const scenario = scenarioOf(plan, item);
      const expectations = kafkaExpectations(scenario);
      const record = ingestRepetition({
        runId: 'run-ladder',
        scenarioId: item.scenarioId,
        repetition: 1,
        startedAt: '2025-01-01T00:00:00.000Z',
        finishedAt: '2025-01-01T00:00:30.000Z',
        perfTestArgs: args,
        expectations: perfTestExpectations(scenario.workload),
        stdout: '',
        csv: '',
        kafka: {
          output: {
            producers: [],
            consumers: [await read('consumer-1.txt')],
            steps: await kafkaLadderOutput(files, read),
          },
          expectations,
        },
      });
      expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
      expect(record.capacity!.steps.map((step) => step.targetRate)).toEqual([500, 1000]);
      expect(record.capacity!.steps[0]!.passed).toBe(true);
      expect(record.capacity!.steps[0]!.consumeRate).toBeGreaterThan(0.9 * 500);
      expect(record.capacity!.rateMsgPerSecond).toBeGreaterThanOrEqual(500);
    } finally {
      await fake.stop();
    }
  });

  test(
    'a topic the cluster cannot place (3 replicas asked of 1 broker) fails the script ' +
      'with the reason on stderr, after uploading the (empty) outputs, and ingests as FAILED',
    async () => {
      const plan = planWith(3);
      const item = buildSchedule({ plan, target: 'aws', runId: 'run-kafka-bad' }, 'exec').clusters[0]!.repetitions[0]!;
      const fake = await startFakeAws({ statements: statements(), secrets: {}, region: REGION, account: ACCOUNT });
      try {
        const { script } = awsKafkaRepetitionScript({
          plan,
          runId: 'run-kafka-bad',
          item,
          bootstrapServers: cluster.bootstrapServers,
          bucket: BUCKET,
        });
        const run = await runOnLoadGenerator(fake, script);
        expect(run.code).toBe(1);
        expect(run.stderr).toMatch(
          new RegExp(
            String.raw`could not create topic rmqbench-w-[0-9a-f]{6}: .*replication factor of 3 cannot be reached ` +
              String.raw`because only 1 broker\(s\) are registered`,
          ),
        );
        expect(fake.objects.size).toBe(2);
        const scenario = scenarioOf(plan, item);
        const prefix = `${BUCKET}/${rawPrefix('run-kafka-bad', item)}`;
        const record = ingestRepetition({
          runId: 'run-kafka-bad',
          scenarioId: item.scenarioId,
          repetition: 1,
          startedAt: '2025-01-01T00:00:00.000Z',
          finishedAt: '2025-01-01T00:00:30.000Z',
          perfTestArgs: [],
          expectations: perfTestExpectations(scenario.workload),
          stdout: '',
          csv: '',
          kafka: {
            output: {
              producers: [fake.objects.get(`${prefix}/producer-1.txt`)!.toString('utf8')],
              consumers: [fake.objects.get(`${prefix}/consumer-1.txt`)!.toString('utf8')],
            },
            expectations: kafkaExpectations(scenario),
          },
          targetError: 'the SSM command ended Failed (exit code 1)',
        });
        expect(record.status).toBe('FAILED');
        expect(record.error).toMatch(/^the SSM command ended Failed \(exit code 1\); Kafka tool output is incomplete/);
      } finally {
        await fake.stop();
      }
    },
  );

  test(
    'the smoke-test script creates, describes, writes to with acks=all and deletes a topic; ' +
      'asked for more brokers than the cluster has it fails saying what failed',
    async () => {
      const passed = await runOnLoadGenerator(
        undefined,
        kafkaSmokeTestScript({ bootstrapServers: cluster.bootstrapServers, brokers: 1, suffix: 'ok' }),
      );
      expect({ code: passed.code, stderr: passed.stderr.slice(-2000) }).toEqual({
        code: 0,
        stderr: expect.any(String),
      });
      expect(passed.stdout).toContain('smoke test: 1 partition leaders, 10 records acknowledged by 1 replicas');
      expect(await topicList('topics-after-smoke.log')).not.toContain('rmqbench-smoke-ok');
      // 2 brokers asked of a 1-broker cluster: the topic cannot be placed.
      const failed = await runOnLoadGenerator(
        undefined,
        kafkaSmokeTestScript({ bootstrapServers: cluster.bootstrapServers, brokers: 2, suffix: 'two' }),
      );
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(
        new RegExp(
          String.raw`smoke test: could not create a topic with 2 partitions and 2 replicas:[\s\S]*replication ` +
            String.raw`factor of 2 cannot be reached because only 1 broker\(s\) are registered`,
        ),
      );
    },
  );

  test(
    'the readiness script (CheckClusterReady on azure) ' +
      'passes when every broker is registered and fails naming how many are',
    async () => {
      const ready = await runOnLoadGenerator(
        undefined,
        kafkaReadinessScript({ bootstrapServers: cluster.bootstrapServers, brokers: 1 }),
      );
      expect({ code: ready.code, stderr: ready.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
      expect(ready.stdout).toContain('readiness: 1 of 1 brokers registered');
      const short = await runOnLoadGenerator(
        undefined,
        kafkaReadinessScript({ bootstrapServers: cluster.bootstrapServers, brokers: 3 }),
      );
      expect(short.code).toBe(1);
      expect(short.stderr).toMatch(/readiness: 1 of 3 brokers registered, 0 not answering:\n.*\(id: \d+ rack: /);
    },
  );
});
