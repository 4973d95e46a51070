/**
 * The RabbitMQ knobs of seed 002 (fan-out exchange, lazy queues, length limits) and the producer/consumer totals over a
 * queue sequence, run by the real PerfTest through the local target against a real RabbitMQ node. What the broker
 * holds is read from its management API while PerfTest runs (the target deletes the benchmark queues afterwards).
 */
import { connect } from 'amqplib';
import { ingestRepetition } from '../../core/results/ingest';
import { parsePlanText, groupScenariosByCluster, type Scenario } from '../../core/plan/plan';
import { LocalTarget, type RabbitClusterHandle } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { tempDir } from './helpers';

jest.setTimeout(600_000);

interface QueueInfo {
  name: string;
  consumers?: number;
  messages?: number;
  arguments?: Record<string, unknown>;
  message_stats?: { publish?: number };
}

const plan = parsePlanText(
  `
name: knobs
clusters:
  - { name: one, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: totals, producers: 2, consumers: 2, queues: 2, messageSizeBytes: 100, durationSeconds: 10 }
  - { name: fanout, producers: 1, consumers: 3, queues: 3, messageSizeBytes: 100, durationSeconds: 6, ` +
    `exchange: { type: fanout } }
  - { name: fixed-work, producers: 2, consumers: 2, queues: 2, messageSizeBytes: 100, durationSeconds: 60, ` +
    `messageCount: 30000, publishRateLimit: 5000 }
  - { name: fixed-work-too-slow, producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: 3, ` +
    `messageCount: 100000000 }
  - { name: limited, producers: 1, consumers: 0, messageSizeBytes: 100, durationSeconds: 5, maxLength: 50, ` +
    `overflow: reject-publish, queueMode: lazy }
  - { name: warm-up, producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: 6, warmUpSeconds: 2 }
  - name: capacity
    producers: 1
    consumers: 1
    messageSizeBytes: 150
    capacity: { p99LatencyMs: 100, minRate: 2000, maxRate: 128000, stepFactor: 4, stepSeconds: 6, warmUpSeconds: 2 }
`,
  'knobs.yaml',
);

describe('workload knobs on a real RabbitMQ node', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('knobs');
  let target: LocalTarget;
  let handle: RabbitClusterHandle;

  beforeAll(async () => {
    target = new LocalTarget({ processes, runDir: work.path, cacheDir: cacheDir() });
    target.preflight(plan);
    handle = await target.launchRabbitMq(groupScenariosByCluster(plan)[0]!, 0);
  });
  afterAll(async () => {
    if (handle) await target.teardown(handle);
    await processes.stopAll();
    work.cleanup();
  });

  const scenario = (name: string): Scenario => plan.scenarios.find((candidate) => candidate.workload.name === name)!;
  const queues = () => handle.cluster.api<QueueInfo[]>('GET', '/api/queues/%2F');

  /**
   * Runs one repetition and, while PerfTest runs, samples the benchmark queues every 250 ms: their depth and consumer
   * count in real time through a passive declare (AMQP queue.declare-ok), and the management API's view (statistics
   * that arrive every 5 s, collect_statistics_interval, and the queue's arguments).
   */
  async function runWatching(name: string, queueNames: readonly string[]) {
    const connection = await connect(handle.cluster.amqpUri(handle.cluster.nodes[0]!));
    let done = false;
    const live: { queue: string; messageCount: number; consumerCount: number }[] = [];
    const management: QueueInfo[] = [];
    const run = target.runRepetition(handle, 'knobs-run', scenario(name), 1).finally(() => (done = true));
    try {
      while (!done) {
        for (const queue of queueNames) {
          // A passive declare of a queue that does not exist (yet) closes the channel: one channel per check.
          const channel = await connection.createChannel();
          channel.on('error', () => undefined);
          const ok = await channel.checkQueue(queue).catch(() => undefined);
          if (ok) live.push({ queue, messageCount: ok.messageCount, consumerCount: ok.consumerCount });
          await channel.close().catch(() => undefined);
        }
        management.push(...(await queues().catch(() => [])));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      await connection.close().catch(() => undefined);
    }
    const raw = await run;
    return { live, management, record: ingestRepetition(raw), raw };
  }

  test(
    'producers and consumers are totals spread over the queue ' +
      'sequence: every queue gets a producer and a consumer',
    async () => {
      const names = ['perf-test-1', 'perf-test-2'];
      const { live, management, record, raw } = await runWatching('totals', names);
      const published = (queue: string) =>
        Math.max(
          0,
          ...management.filter((info) => info.name === queue).map((info) => info.message_stats?.publish ?? 0),
        );
      for (const queue of names) {
        expect({
          queue,
          consumers: Math.max(
            0,
            ...live.filter((sample) => sample.queue === queue).map((sample) => sample.consumerCount),
          ),
        }).toEqual({ queue, consumers: 1 });
        // Before the totals were passed through, one producer fed perf-test-1 only.
        const share = published(queue) / (published('perf-test-1') + published('perf-test-2'));
        expect({ queue, atLeastAThird: share > 0.3 }).toEqual({ queue, atLeastAThird: true });
      }
      expect(raw.perfTestArgs).toEqual(expect.arrayContaining(['--producers', '2', '--consumers', '2']));
      expect(record.status).toBe('SUCCEEDED');
    },
  );

  test(
    'a fanout exchange delivers every message to every queue: ' +
      'three queues receive about three times what one producer sends',
    async () => {
      const names = ['perf-test-1', 'perf-test-2', 'perf-test-3'];
      const { live, record } = await runWatching('fanout', names);
      for (const queue of names)
        expect({
          queue,
          consumers: Math.max(
            0,
            ...live.filter((sample) => sample.queue === queue).map((sample) => sample.consumerCount),
          ),
        }).toEqual({ queue, consumers: 1 });
      const exchange = await handle.cluster.api<{ type: string }>('GET', '/api/exchanges/%2F/rmqbench-fanout');
      expect(exchange.type).toBe('fanout');
      expect(record.status).toBe('SUCCEEDED');
      const { sendRateAvg, receiveRateAvg } = record.result!.summary;
      expect(receiveRateAvg).toBeGreaterThan(2.5 * sendRateAvg);
    },
  );

  test(
    'a length limit with reject-publish holds the queue at exactly ' +
      'maxLength, declared lazy, while the producer keeps publishing',
    async () => {
      const { live, management, record } = await runWatching('limited', ['perf-test-1']);
      const depths = live.map((sample) => sample.messageCount);
      expect(depths.length).toBeGreaterThan(4);
      expect(Math.max(...depths)).toBe(50);
      expect(depths.at(-1)).toBe(50);
      expect(management.find((info) => info.name === 'perf-test-1')!.arguments).toMatchObject({
        'x-max-length': 50,
        'x-overflow': 'reject-publish',
        'x-queue-mode': 'lazy',
      });
      expect(record.status).toBe('SUCCEEDED');
      expect(record.result!.summary.sendRateAvg).toBeGreaterThan(50);
    },
  );

  // 2 producers at 5,000 msg/s each: 3 s of work on any machine, so PerfTest's per-second CSV has samples.
  test(
    'a fixed amount of work ends when it is sent and consumed, ' +
      'well before the duration limit, and records how long it took',
    async () => {
      const { record, raw } = await runWatching('fixed-work', []);
      expect(raw.perfTestArgs).toEqual(
        expect.arrayContaining(['--pmessages', '15000', '--cmessages', '15000', '--time', '60']),
      );
      expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
      expect(raw.stdout).toMatch(
        /test stopped \((?=[^)]*Producer reached message limit)(?=[^)]*Consumer reached message limit)[^)]*\)/,
      );
      expect(record.result!.completedInSeconds).toBeGreaterThanOrEqual(2);
      expect(record.result!.completedInSeconds).toBeLessThan(60);
    },
  );

  test(
    'warm-up: the summary leaves the first seconds out and is ' +
      "computed from the per-second samples; PerfTest's own is kept",
    async () => {
      const { record } = await runWatching('warm-up', []);
      expect(record.status).toBe('SUCCEEDED');
      const result = record.result!;
      const after = result.samples.filter((sample) => Math.round(sample.time) - 1 >= 2);
      expect(after.length).toBeGreaterThanOrEqual(3);
      expect(after.length).toBeLessThan(result.samples.length);
      expect(result.warmUpSeconds).toBe(2);
      expect(result.sendRate.n).toBe(after.length);
      expect(result.summary.sendRateAvg).toBe(
        Math.round(after.reduce((sum, sample) => sum + sample.published, 0) / after.length),
      );
      expect(result.perfTestSummary!.sendRateAvg).toBeGreaterThan(0);
    },
  );

  // A ladder of 2,000, 8,000, 32,000 and 128,000 msg/s for 6 s each: one producer on this 2-core machine publishes
  // ~20-24k msg/s flat out (../shared/ENVIRONMENT.md), so the first step holds and the last cannot.
  test(
    'capacity: PerfTest follows the ladder (--variable-rate), and the ' +
      'verdict names the highest step that held and why the next did not',
    async () => {
      const { record, raw } = await runWatching('capacity', []);
      expect(raw.perfTestArgs).toEqual(
        expect.arrayContaining(['--variable-rate', '2000:6', '--variable-rate', '128000:6', '--time', '24']),
      );
      expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
      const capacity = record.capacity!;
      expect(capacity.steps.map((step) => step.targetRate)).toEqual([2000, 8000, 32000, 128000]);
      // The first step was published at its rate, not flat out: PerfTest's rate control followed the ladder.
      expect(capacity.steps[0]!.publishRate).toBeGreaterThan(1900);
      expect(capacity.steps[0]!.publishRate).toBeLessThan(2100);
      expect(capacity.steps[0]!.passed).toBe(true);
      expect(capacity.steps[3]!.passed).toBe(false);
      expect(capacity.steps[3]!.reasons.join('; ')).toMatch(/fell behind|p99 was|queues grew/);
      expect([2000, 8000, 32000]).toContain(capacity.rateMsgPerSecond);
      expect(capacity.firstFailedRate).toBe(capacity.rateMsgPerSecond! * 4);
      expect(capacity.verdict).toContain(
        `${capacity.rateMsgPerSecond!.toLocaleString('en-US')} msg/s held p99 ≤ 100 ms`,
      );
    },
  );

  test('fixed work that the duration limit cuts short is a failed repetition that says so', async () => {
    const { record } = await runWatching('fixed-work-too-slow', []);
    expect(record.status).toBe('FAILED');
    expect(record.error).toContain(
      '100000000 messages were not sent and consumed within the 3 s limit (PerfTest stopped: Reached time limit)',
    );
  });
});
