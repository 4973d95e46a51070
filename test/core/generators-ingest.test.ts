import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatorsResult, type RawGeneratorOutput } from '../../core/loadgen/generators-result';
import { hostMetricsFromCloudWatch, LOAD_GENERATOR_ROLE } from '../../core/metrics/cloudwatch-host-metrics';
import { loadGeneratorNode, type RepetitionMetrics } from '../../core/metrics/host-metrics';
import { parsePerfTestOutput } from '../../core/perftest/perftest-output';
import { loadGeneratorsSection } from '../../core/report/load-generators-report';
import { ingestRepetition, type RawRepetition } from '../../core/results/ingest';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
const expectations = { durationSeconds: 5, producers: 1, consumers: 1, confirms: false };

// Two real PerfTest 2.22.1 runs: 5 s with 1 producer and 1 consumer, 3 s with 2 and 2 on two queues, the second
// started 1.4 s after the first.
const outputs: RawGeneratorOutput[] = [
  {
    id: 'lg-1',
    producers: 1,
    consumers: 1,
    queues: ['perf-test-1'],
    startedAtMs: 1_000_000,
    perfTestArgs: ['--queue', 'perf-test-1'],
    expectations,
    stdout: fixture('basic-150b.stdout.txt'),
    csv: fixture('basic-150b.csv'),
  },
  {
    id: 'lg-2',
    producers: 2,
    consumers: 2,
    queues: ['perf-test-2', 'perf-test-3'],
    startedAtMs: 1_001_400,
    perfTestArgs: ['--queue-pattern', 'perf-test-%d', '--queue-pattern-from', '2', '--queue-pattern-to', '3'],
    expectations: { ...expectations, durationSeconds: 3, producers: 2, consumers: 2 },
    stdout: fixture('two-queues-12b.stdout.txt'),
    csv: fixture('two-queues-12b.csv'),
  },
];
const single = outputs.map((output) => parsePerfTestOutput(output.stdout, output.csv, output.expectations));

function cpuSeries(node: string, value: number): RepetitionMetrics['series'][number] {
  return { node, metric: 'cpuPercent', unit: 'percent', points: [1, 2, 3, 4, 5].map((t) => [t, value]) };
}

const raw = (metrics?: RepetitionMetrics, generators = outputs): RawRepetition => ({
  runId: 'run-1',
  scenarioId: 'c/w',
  repetition: 1,
  startedAt: '2026-11-26T04:00:00.000Z',
  finishedAt: '2026-11-26T04:00:08.000Z',
  perfTestArgs: outputs[0]!.perfTestArgs,
  expectations: { ...expectations, producers: 3, consumers: 3 },
  stdout: '',
  csv: '',
  loadGenerators: { split: 'split by queue over 2 load generators', outputs: generators },
  ...(metrics ? { metrics } : {}),
});

describe('a repetition run by several load generators', () => {
  test("its rates are the sum of the generators' summaries and its percentiles the worst generator's", () => {
    const { result, merged } = generatorsResult(outputs);
    expect(result.summary.sendRateAvg).toBe(single[0]!.summary.sendRateAvg + single[1]!.summary.sendRateAvg);
    expect(result.summary.receiveRateAvg).toBe(single[0]!.summary.receiveRateAvg + single[1]!.summary.receiveRateAvg);
    const p99s = single.map((one) => one.summary.consumerLatency!.p99);
    expect(result.summary.consumerLatency!.p99).toBe(Math.max(...p99s));
    expect(merged.startSkewMs).toBe(1400);
    // Second 1 of lg-2 lands on second 2 of lg-1: the merged second 2 holds both.
    const second2 = merged.samples.find((sample) => sample.time === 2)!;
    expect(second2.published).toBe(single[0]!.samples[1]!.published + single[1]!.samples[0]!.published);
    expect(second2.generators).toBe(2);
    // The rate statistics count only seconds both generators measured.
    const both = merged.samples.filter((sample) => sample.generators === 2);
    expect(result.sendRate.mean).toBeCloseTo(both.reduce((sum, s) => sum + s.published, 0) / both.length, 6);
    expect(result.samples.every((sample) => !('generators' in sample))).toBe(true);
  });

  test('ingest stores each generator with its CPU, the skew, the split and the summed result', () => {
    const metrics: RepetitionMetrics = {
      source: 'local-proc',
      series: [cpuSeries(loadGeneratorNode('lg-1'), 40), cpuSeries(loadGeneratorNode('lg-2'), 60)],
    };
    const record = ingestRepetition(raw(metrics));
    expect(record.status).toBe('SUCCEEDED');
    expect(record.startSkewMs).toBe(1400);
    expect(record.loadGeneratorSplit).toBe('split by queue over 2 load generators');
    expect(record.loadGenerators!.map((lg) => [lg.id, lg.queues, lg.cpuPercent])).toEqual([
      ['lg-1', ['perf-test-1'], 40],
      ['lg-2', ['perf-test-2', 'perf-test-3'], 60],
    ]);
    expect(record.result!.summary.sendRateAvg).toBe(record.loadGenerators!.reduce((sum, lg) => sum + lg.sendRate, 0));
    expect(record.loadGenerator).toEqual({ medianCpuPercent: 60, bound: false });
  });

  test('a generator over the bound is named, with the count that would lift it', () => {
    const metrics: RepetitionMetrics = {
      source: 'local-proc',
      series: [cpuSeries(loadGeneratorNode('lg-1'), 50), cpuSeries(loadGeneratorNode('lg-2'), 95)],
    };
    const { loadGenerator } = ingestRepetition(raw(metrics));
    expect(loadGenerator!.bound).toBe(true);
    expect(loadGenerator!.boundGenerators).toEqual([{ id: 'lg-2', cpuPercent: 95 }]);
    // ceil(2 × 95 / 70) = 3
    expect(loadGenerator!.suggestedLoadGenerators).toBe(3);
    expect(loadGenerator!.line).toMatch(/lg-2 at 95\.0 %.*loadGenerators: 3/);
    // The report states the split, how figures were combined, each generator, the skew and the verdict.
    const section = loadGeneratorsSection([ingestRepetition(raw(metrics))]).join('\n');
    expect(section).toContain('\n- c/w: split by queue over 2 load generators');
    expect(section).toMatch(/Combined: rates: summed per second .* latency percentiles: never averaged/);
    expect(section).toMatch(
      /- c\/w #1 \(sent \/ received\): lg-1 \d+ \/ \d+ msg\/s, p99 [\d.]+ ms, CPU 50\.0 %; lg-2 .*CPU 95\.0 %/,
    );
    expect(section).toContain('; start skew 1400 ms');
    expect(section).toMatch(
      /- c\/w #1: load-generator bound .* loadGenerators: 3 would bring the busiest to about 63 % CPU/,
    );
    expect(loadGeneratorsSection([{ scenarioId: 'c/w', repetition: 1 }])).toEqual([]);
  });

  test("one generator's output cut short fails the repetition, naming that generator", () => {
    const cut = outputs.map((output, index) =>
      index === 1 ? { ...output, csv: output.csv.split('\n').slice(0, 2).join('\n') } : output,
    );
    const record = ingestRepetition(raw(undefined, cut));
    expect(record.status).toBe('FAILED');
    expect(record.error).toMatch(/^load generator lg-2: PerfTest output is incomplete: missing per-second samples/);
  });

  describe("on AWS: each load generator instance's CloudWatch CPU under its own generator", () => {
    const startedAt = new Date('2026-11-26T04:00:00.000Z');
    const cpu = (instance: string, value: number) => ({
      metric: {
        name: 'cpu_usage_active',
        dimensions: { ClusterId: 'c1', InstanceId: instance, cpu: 'cpu-total', Role: LOAD_GENERATOR_ROLE },
      },
      timestamps: [1, 2, 3, 4, 5].map((t) => new Date(startedAt.getTime() + t * 1000)),
      values: [1, 2, 3, 4, 5].map(() => value),
    });
    // The stack's InstanceIds output lists lg-1's instance first; CloudWatch lists the metrics in another order.
    const instances = ['i-0first', 'i-0second'];
    const fetched = [cpu('i-0second', 95), cpu('i-0first', 50)];

    test('two instances are two nodes, never one series of their summed CPU, and the busy one is named', () => {
      const metrics = hostMetricsFromCloudWatch(fetched, startedAt, 1, instances);
      expect(metrics.series.map((series) => [series.node, series.points[0]![1]])).toEqual([
        ['load-generator-lg-1', 50],
        ['load-generator-lg-2', 95],
      ]);
      const { loadGenerator, loadGenerators } = ingestRepetition(raw(metrics));
      expect(loadGenerators!.map((lg) => [lg.id, lg.cpuPercent])).toEqual([
        ['lg-1', 50],
        ['lg-2', 95],
      ]);
      expect(loadGenerator!.boundGenerators).toEqual([{ id: 'lg-2', cpuPercent: 95 }]);
      // Without the instance list (one generator), the load generator is one node, as before.
      expect(hostMetricsFromCloudWatch([cpu('i-0first', 50)], startedAt, 1).series[0]!.node).toBe('load-generator');
      // An instance the stack does not list keeps a node of its own.
      expect(hostMetricsFromCloudWatch([cpu('i-0other', 7)], startedAt, 1, instances).series[0]!.node).toBe(
        'load-generator-i-0other',
      );
    });

    test("a one-generator repetition on a cluster of two is judged on lg-1's CPU", () => {
      const metrics = hostMetricsFromCloudWatch([cpu('i-0first', 97), cpu('i-0second', 1)], startedAt, 1, instances);
      const { loadGenerators: _several, ...one } = raw(metrics);
      const record = ingestRepetition({
        ...one,
        finishedAt: '2026-11-26T04:00:06.000Z',
        stdout: outputs[0]!.stdout,
        csv: outputs[0]!.csv,
        expectations,
      });
      expect(record.status).toBe('SUCCEEDED');
      expect(record.loadGenerator).toMatchObject({ medianCpuPercent: 97, bound: true });
    });
  });
});
