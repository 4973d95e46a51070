import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mergePerSecond, worstOf, type GeneratorRun } from '../../core/loadgen/per-second-merge';
import { parsePerfTestOutput } from '../../core/perftest/perftest-output';
import type { LatencyPercentiles, PerSecondSample } from '../../core/results/result-model';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');

// Two real PerfTest 2.22.1 runs as two generators' output: a 5 s run (1 producer, 1 consumer) and a 3 s one over two
// queues (2 producers, 2 consumers).
const first = parsePerfTestOutput(fixture('basic-150b.stdout.txt'), fixture('basic-150b.csv'), {
  durationSeconds: 5,
  producers: 1,
  consumers: 1,
  confirms: false,
});
const second = parsePerfTestOutput(fixture('two-queues-12b.stdout.txt'), fixture('two-queues-12b.csv'), {
  durationSeconds: 3,
  producers: 2,
  consumers: 2,
  confirms: false,
});
const START = Date.UTC(2025, 0, 1, 12, 0, 0);

function runs(secondStartsLaterMs: number): GeneratorRun[] {
  return [
    { id: 'lg-1', producers: 1, consumers: 1, queues: ['perf-test-1'], startedAtMs: START, result: first },
    {
      id: 'lg-2',
      producers: 2,
      consumers: 2,
      queues: ['perf-test-2', 'perf-test-3'],
      startedAtMs: START + secondStartsLaterMs,
      result: second,
      cpuPercent: 71.5,
    },
  ];
}

const at = (samples: readonly PerSecondSample[], time: number) => samples.find((sample) => sample.time === time);

describe('mergePerSecond on captured PerfTest output', () => {
  test('a generator starting 1.4 s later is shifted by 1 s; rates are summed per aligned second', () => {
    const merged = mergePerSecond(runs(1400));
    expect(merged.startSkewMs).toBe(1400);
    expect(merged.startedAtMs).toBe(START);
    expect(merged.samples.map((sample) => sample.time)).toEqual([1, 2, 3, 4, 5]);
    // lg-2's second s lands on second s + 1.
    for (const time of [2, 3, 4]) {
      const [one, two] = [first.samples[time - 1]!, second.samples[time - 2]!];
      expect(at(merged.samples, time)).toMatchObject({
        published: one.published + two.published,
        received: one.received + two.received,
        generators: 2,
      });
    }
    // Seconds only one generator covered (the skew's edges) carry its sample alone, and say so.
    expect(at(merged.samples, 1)).toMatchObject({ published: first.samples[0]!.published, generators: 1 });
    expect(at(merged.samples, 5)).toMatchObject({ published: first.samples[4]!.published, generators: 1 });
  });

  test('a generator starting 1.6 s later is shifted by 2 s', () => {
    const merged = mergePerSecond(runs(1600));
    expect(merged.startSkewMs).toBe(1600);
    expect(at(merged.samples, 3)!.published).toBe(first.samples[2]!.published + second.samples[0]!.published);
  });

  test('per second, each latency percentile is the highest generator value, not the mean; min is the lowest', () => {
    const merged = mergePerSecond(runs(1400));
    for (const time of [2, 3, 4]) {
      const [one, two] = [first.samples[time - 1]!.consumerLatency!, second.samples[time - 2]!.consumerLatency!];
      const latency = at(merged.samples, time)!.consumerLatency!;
      for (const key of ['median', 'p75', 'p95', 'p99'] as const) {
        expect(latency[key]).toBe(Math.max(one[key]!, two[key]!));
        if (one[key] !== two[key]) expect(latency[key]).not.toBe((one[key]! + two[key]!) / 2);
      }
      expect(latency.min).toBe(Math.min(one.min!, two.min!));
    }
    expect(merged.method).toMatch(/never averaged/);
    expect(merged.method).toMatch(/highest generator value per second/);
  });

  test("the repetition's rates are the sum of the generators' summaries; its percentiles their worst", () => {
    const merged = mergePerSecond(runs(1400));
    expect(merged.sendRate).toBe(first.summary.sendRateAvg + second.summary.sendRateAvg);
    expect(merged.receiveRate).toBe(first.summary.receiveRateAvg + second.summary.receiveRateAvg);
    expect(merged.consumerLatency!.p99).toBe(
      Math.max(first.summary.consumerLatency!.p99, second.summary.consumerLatency!.p99),
    );
    expect(merged.confirmLatency).toBeUndefined();
  });

  test('one entry per generator for show --json, with its own figures and start offset', () => {
    const merged = mergePerSecond(runs(1400));
    expect(merged.loadGenerators).toEqual([
      {
        id: 'lg-1',
        producers: 1,
        consumers: 1,
        queues: ['perf-test-1'],
        sendRate: first.summary.sendRateAvg,
        receiveRate: first.summary.receiveRateAvg,
        consumerLatency: first.summary.consumerLatency,
        startOffsetMs: 0,
      },
      {
        id: 'lg-2',
        producers: 2,
        consumers: 2,
        queues: ['perf-test-2', 'perf-test-3'],
        sendRate: second.summary.sendRateAvg,
        receiveRate: second.summary.receiveRateAvg,
        consumerLatency: second.summary.consumerLatency,
        cpuPercent: 71.5,
        startOffsetMs: 1400,
      },
    ]);
  });
});

describe('mergePerSecond edge cases', () => {
  const sample = (time: number, published: number): PerSecondSample => ({
    time,
    published,
    returned: 0,
    confirmed: 0,
    nacked: 0,
    received: published,
  });
  const run = (id: string, startedAtMs: number, samples: PerSecondSample[], completedInSeconds?: number) => ({
    id,
    producers: 1,
    consumers: 1,
    queues: [],
    startedAtMs,
    result: {
      summary: { sendRateAvg: 10, receiveRateAvg: 10 },
      samples,
      ...(completedInSeconds === undefined ? {} : { completedInSeconds }),
    },
  });

  test("a sample that drifts onto its predecessor's second takes the next one, so nothing is counted twice", () => {
    // PerfTest's clock running a little fast: 2.501 and 3.499 both round to 3.
    const merged = mergePerSecond([run('lg-1', 0, [sample(1.5, 1), sample(2.501, 2), sample(3.499, 4)])]);
    expect(merged.samples.map((one) => [one.time, one.published])).toEqual([
      [2, 1],
      [3, 2],
      [4, 4],
    ]);
  });

  test('a fixed amount of work is done when the last generator is, on the earliest clock', () => {
    const merged = mergePerSecond([run('lg-1', 5_000, [], 12.3), run('lg-2', 5_250, [], 12.2)]);
    expect(merged.completedInSeconds).toBe(12.5);
    expect(mergePerSecond([run('lg-1', 0, [], 12.3), run('lg-2', 0, [])]).completedInSeconds).toBeUndefined();
  });

  test('nothing to merge is an error', () => {
    expect(() => mergePerSecond([])).toThrow(/at least one generator/);
  });
});

describe('worstOf', () => {
  const kafkaLike: LatencyPercentiles = { median: 5, p95: 9, p99: 30 };
  const perfTest: LatencyPercentiles = { min: 1, median: 4, p75: 6, p95: 12, p99: 20 };
  test('leaves out min and p75 unless every generator has them', () => {
    expect(worstOf([kafkaLike, perfTest])).toEqual({ median: 5, p95: 12, p99: 30 });
    expect(worstOf([perfTest, { ...perfTest, min: 3, p75: 2 }])).toEqual({ ...perfTest, min: 1, p75: 6 });
    expect(worstOf([undefined, undefined])).toBeUndefined();
  });
});
