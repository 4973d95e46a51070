import { capacityLadder } from '../../core/capacity/capacity-plan';
import { MAX_LOAD_GENERATORS } from '../../core/loadgen/load-generator-count';
import { generatorQueueArgs, LoadGeneratorSplitError, splitWorkload } from '../../core/loadgen/workload-split';
import { buildPerfTestArgs } from '../../core/perftest/perftest-args';
import { perfTestMessageLimits } from '../../core/plan/fixed-work';
import { parsePlanText } from '../../core/plan/plan';
import type { Workload } from '../../core/plan/plan-schema';

/** A workload as the plan parser makes it, so that defaults are the real ones. */
function workload(fields: string): Workload {
  const plan = parsePlanText(
    `name: split\nclusters:\n  - { name: c, nodes: 3 }\nworkloads:\n  - { name: w, ${fields} }\n`,
    'split.yaml',
  );
  return plan.scenarios[0]!.workload;
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/**
 * Which queue each producer (consumer) of a single PerfTest run publishes to (consumes from): round-robin over the
 * queue sequence, as PerfTest does.
 */
const roundRobin = (agents: number, queues: readonly string[]) =>
  Array.from({ length: agents }, (_, index) => queues[index % queues.length]!);

describe('splitWorkload: queues, producers and consumers', () => {
  test('5 queues over 2 generators: the first gets the remainder queue and its producers and consumers', () => {
    const split = splitWorkload(workload('producers: 7, consumers: 5, queues: 5'), 2);
    expect(split.generators.map((share) => share.id)).toEqual(['lg-1', 'lg-2']);
    expect(split.generators.map((share) => share.queues.names)).toEqual([
      ['perf-test-1', 'perf-test-2', 'perf-test-3'],
      ['perf-test-4', 'perf-test-5'],
    ]);
    // 7 producers round-robin over 5 queues: queues 1 and 2 have two each, so lg-1 gets 2 + 2 + 1.
    expect(split.generators.map((share) => [share.producers, share.consumers])).toEqual([
      [5, 3],
      [2, 2],
    ]);
  });

  test('queues are disjoint, cover every queue, and producers and consumers add up, for many shapes', () => {
    for (const [producers, consumers, queues, n] of [
      [10, 10, 10, 3],
      [200, 200, 200, 7],
      [13, 29, 11, 4],
      [4, 0, 4, 4],
      [0, 9, 3, 2],
    ] as const) {
      const split = splitWorkload(workload(`producers: ${producers}, consumers: ${consumers}, queues: ${queues}`), n);
      const names = split.generators.flatMap((share) => share.queues.names);
      expect(new Set(names).size).toBe(names.length);
      expect([...names].sort()).toEqual(Array.from({ length: queues }, (_, index) => `perf-test-${index + 1}`).sort());
      expect(sum(split.generators.map((share) => share.producers))).toBe(producers);
      expect(sum(split.generators.map((share) => share.consumers))).toBe(consumers);
      const sizes = split.generators.map((share) => share.queues.names.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
    }
  });

  test("each queue keeps the producers and consumers a single run gives it, all on the queue's generator", () => {
    const whole = workload('producers: 13, consumers: 17, queues: 6');
    const allQueues = Array.from({ length: 6 }, (_, index) => `perf-test-${index + 1}`);
    const single = { producers: roundRobin(13, allQueues), consumers: roundRobin(17, allQueues) };
    const split = splitWorkload(whole, 4);
    const onGenerators = {
      producers: split.generators.flatMap((share) => roundRobin(share.producers, share.queues.names)),
      consumers: split.generators.flatMap((share) => roundRobin(share.consumers, share.queues.names)),
    };
    expect([...onGenerators.producers].sort()).toEqual([...single.producers].sort());
    expect([...onGenerators.consumers].sort()).toEqual([...single.consumers].sort());
  });

  test('one generator runs the whole workload, with the queue arguments a single run has', () => {
    const whole = workload('producers: 3, consumers: 3, queues: 3');
    const split = splitWorkload(whole, 1);
    expect(split.generators).toHaveLength(1);
    expect(split.generators[0]).toMatchObject({ id: 'lg-1', producers: 3, consumers: 3, queues: { from: 1, to: 3 } });
    const args = buildPerfTestArgs({
      workload: whole,
      topology: { type: 'classic' },
      queueArguments: {},
      uris: ['amqp://localhost'],
      csvPath: 'out.csv',
    });
    const at = args.indexOf('--queue-pattern');
    expect(generatorQueueArgs(split.generators[0]!)).toEqual(args.slice(at, at + 6));
    expect(split.description).toBe('one load generator: lg-1 perf-test-1…3 (3 producers, 3 consumers)');
  });

  test('a generator with one queue names it; one with several takes its block of the pattern', () => {
    const split = splitWorkload(workload('producers: 3, consumers: 3, queues: 3'), 2);
    expect(generatorQueueArgs(split.generators[0]!)).toEqual([
      '--queue-pattern',
      'perf-test-%d',
      '--queue-pattern-from',
      '1',
      '--queue-pattern-to',
      '2',
    ]);
    expect(generatorQueueArgs(split.generators[1]!)).toEqual(['--queue', 'perf-test-3']);
  });

  test('a topic exchange splits like a direct one (each queue bound by its own name)', () => {
    const split = splitWorkload(workload('producers: 4, consumers: 4, queues: 4, exchange: { type: topic }'), 2);
    expect(split.generators.map((share) => share.queues.names.length)).toEqual([2, 2]);
  });
});

describe('splitWorkload: rates, fixed work and capacity ladders', () => {
  test('a per-producer rate limit is kept per producer; the generators’ totals add up to the whole', () => {
    const whole = workload('producers: 7, consumers: 7, queues: 7, publishRateLimit: 150, consumerRateLimit: 90');
    const split = splitWorkload(whole, 3);
    expect(split.generators.map((share) => share.publishRateLimit!.perProducer)).toEqual([150, 150, 150]);
    expect(split.generators.map((share) => share.publishRateLimit!.total)).toEqual([450, 300, 300]);
    expect(sum(split.generators.map((share) => share.publishRateLimit!.total))).toBe(150 * 7);
    expect(sum(split.generators.map((share) => share.consumerRateLimit!.total))).toBe(90 * 7);
    expect(split.description).toContain('lg-1 perf-test-1…3 (3 producers, 3 consumers, 450 msg/s limit)');
  });

  test('no rate limit, no share of one', () => {
    const [share] = splitWorkload(workload('producers: 2, consumers: 2, queues: 2'), 2).generators;
    expect(share!.publishRateLimit).toBeUndefined();
    expect(share!.messageLimits).toBeUndefined();
  });

  test('a fixed message count is shared by producers; the shares add up and --cmessages stays per queue', () => {
    // 5 queues, 10 producers (a multiple of queues, as fixed work requires), 5 consumers (one per queue).
    const whole = workload('producers: 10, consumers: 5, queues: 5, messageCount: 100000');
    const split = splitWorkload(whole, 2);
    const single = perfTestMessageLimits(whole)!;
    expect(split.generators.map((share) => share.messageLimits!.total)).toEqual([60_000, 40_000]);
    expect(sum(split.generators.map((share) => share.messageLimits!.total))).toBe(100_000);
    for (const share of split.generators) {
      expect(share.messageLimits!.perProducer).toBe(single.perProducer);
      expect(share.messageLimits!.perConsumer).toBe(single.perConsumer);
      // Each of the generator's queues receives what its consumer waits for.
      expect(share.messageLimits!.total / share.queues.names.length).toBe(share.messageLimits!.perConsumer);
    }
  });

  test('totalBytes becomes a message count first, and its shares add up to it', () => {
    const whole = workload('producers: 3, consumers: 3, queues: 3, messageSizeBytes: 1000, totalBytes: 10000001');
    const split = splitWorkload(whole, 2);
    const total = perfTestMessageLimits(whole)!.total;
    expect(sum(split.generators.map((share) => share.messageLimits!.total))).toBe(total);
    expect(split.generators[0]!.messageLimits!.total).toBe(2 * split.generators[1]!.messageLimits!.total);
  });

  test("a capacity ladder keeps the whole run's per-producer rates; each step's shares add up to its rate", () => {
    const whole = workload(
      'producers: 5, consumers: 5, queues: 5, capacity: { p99LatencyMs: 50, minRate: 1000, maxRate: 9000 }',
    );
    const ladder = capacityLadder(whole.capacity!, 5);
    const split = splitWorkload(whole, 2);
    for (const share of split.generators) {
      expect(share.capacitySteps!.map((step) => step.perProducerRate)).toEqual(
        ladder.map((step) => step.perProducerRate),
      );
    }
    ladder.forEach((step, index) =>
      expect(sum(split.generators.map((share) => share.capacitySteps![index]!.targetRate))).toBe(step.targetRate),
    );
    expect(split.generators[0]!.capacitySteps![0]!.targetRate).toBe(3 * ladder[0]!.perProducerRate);
  });
});

describe('splitWorkload: refusals name the field', () => {
  const refusal = (fields: string, n: number) => {
    try {
      splitWorkload(workload(fields), n);
    } catch (error) {
      if (error instanceof LoadGeneratorSplitError) return error;
      throw error;
    }
    throw new Error('expected the split to be refused');
  };

  test('fewer queues than generators: queues, producers and consumers are named', () => {
    const error = refusal('producers: 1, consumers: 1, queues: 1', 2);
    expect(error.issues.map((issue) => issue.path)).toEqual(['queues', 'producers', 'consumers']);
    expect(error.issues[0]).toMatchObject({ value: 1, message: expect.stringMatching(/at least 2 queues/) });
    expect(error.message).toMatch(/^cannot split workload "w" over 2 load generators: queues: 2 load generators/);
  });

  test('more producers than queues do not rescue a split with fewer queues than generators', () => {
    const error = refusal('producers: 8, consumers: 8, queues: 2', 3);
    expect(error.issues.map((issue) => issue.path)).toEqual(['queues']);
  });

  test('a fanout exchange is refused at exchange.type, whatever the counts', () => {
    const error = refusal('producers: 4, consumers: 4, queues: 4, exchange: { type: fanout }', 2);
    expect(error.issues.map((issue) => issue.path)).toEqual(['exchange.type']);
    expect(error.issues[0]!.message).toMatch(/fan-out would fall from 4 queues to about 2/);
  });

  test('a fanout workload still runs on one generator', () => {
    expect(
      splitWorkload(workload('producers: 1, consumers: 4, queues: 4, exchange: { type: fanout }'), 1),
    ).toBeDefined();
  });

  test('a generator count outside 1…maximum is a programming error', () => {
    const whole = workload('producers: 20, consumers: 20, queues: 20');
    for (const n of [0, 1.5, MAX_LOAD_GENERATORS + 1]) expect(() => splitWorkload(whole, n)).toThrow(RangeError);
    expect(splitWorkload(whole, MAX_LOAD_GENERATORS).generators).toHaveLength(MAX_LOAD_GENERATORS);
  });
});
