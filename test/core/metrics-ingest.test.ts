import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RepetitionMetrics } from '../../core/metrics/host-metrics';
import { ingestRepetition, RawRepetition } from '../../core/results/ingest';
import { metricsFromItems, repetitionItems, withoutKeys } from '../../core/results/result-items';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');

// A real PerfTest 2.22.1 run (test/fixtures/perftest/basic-150b.*): 5 s, 1 producer, 1 consumer.
const raw: RawRepetition = {
  runId: 'run-1',
  scenarioId: 'three/small',
  repetition: 2,
  startedAt: '2026-11-23T13:00:00.000Z',
  finishedAt: '2026-11-23T13:00:06.000Z',
  perfTestArgs: ['-x', '1'],
  expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
  stdout: fixture('basic-150b.stdout.txt'),
  csv: fixture('basic-150b.csv'),
};

const metrics: RepetitionMetrics = {
  source: 'local-proc',
  series: [
    {
      node: 'rmqbench1@localhost',
      metric: 'cpuPercent',
      unit: 'percent',
      points: [
        [1, 20.5],
        [2, 31],
      ],
    },
    {
      node: 'rmqbench1@localhost',
      metric: 'memoryAlarm',
      unit: 'boolean',
      points: [
        [1, 0],
        [2, 0],
      ],
    },
    {
      node: 'load-generator',
      metric: 'cpuPercent',
      unit: 'percent',
      points: [
        [1, 40],
        [2, 45],
      ],
    },
  ],
};

describe('ingest of broker and host metrics', () => {
  test('well-formed metrics ride on the SUCCEEDED repetition', () => {
    const record = ingestRepetition({ ...raw, metrics });
    expect(record.status).toBe('SUCCEEDED');
    expect(record.metrics).toEqual(metrics);
    expect(record.metricsError).toBeUndefined();
  });

  test('malformed metrics are dropped with the reason, the throughput result stands', () => {
    const broken = {
      source: 'local-proc',
      series: [{ node: 'rmqbench1@localhost', metric: 'cpuPercent', unit: 'percent', points: [[1, 'high']] }],
    };
    const record = ingestRepetition({ ...raw, metrics: broken });
    expect(record.status).toBe('SUCCEEDED');
    expect(record.result!.summary.sendRateAvg).toBe(6068);
    expect(record.metrics).toBeUndefined();
    expect(record.metricsError).toBe(
      'metrics dropped: metrics.series[0].points[0]: must be [tSeconds, value], two finite numbers (got [1,"high"])',
    );
  });

  test("the collector's own error is recorded beside the metrics it still gathered", () => {
    const record = ingestRepetition({ ...raw, metrics, metricsError: 'management API: connection refused at t=3 s' });
    expect(record.metrics).toEqual(metrics);
    expect(record.metricsError).toBe('management API: connection refused at t=3 s');
  });

  test('records without metrics (older records, targets without them) have neither field', () => {
    const record = ingestRepetition(raw);
    expect(record).not.toHaveProperty('metrics');
    expect(record).not.toHaveProperty('metricsError');
  });

  test(
    'the load-generator verdict is kept on the repetition, ' +
      'over the seconds PerfTest measured (samples 1.001 to 5.0 s)',
    () => {
      const saturated: RepetitionMetrics = {
        source: 'local-proc',
        // Seconds 1-5 measured: 95 % median; seconds 6-9 after PerfTest's last sample (draining, shutting down) do not
        // count.
        series: [
          {
            node: 'load-generator',
            metric: 'cpuPercent',
            unit: 'percent',
            points: [
              [1, 93],
              [2, 95],
              [3, 96],
              [4, 91],
              [5, 99],
              [6, 1],
              [7, 1],
              [8, 1],
              [9, 1],
            ],
          },
        ],
      };
      expect(ingestRepetition({ ...raw, metrics: saturated }).loadGenerator).toEqual({
        medianCpuPercent: 95,
        bound: true,
      });
      expect(ingestRepetition({ ...raw, metrics }).loadGenerator).toEqual({ medianCpuPercent: 42.5, bound: false });
      expect(ingestRepetition(raw)).not.toHaveProperty('loadGenerator');
    },
  );

  test('a FAILED repetition keeps its metrics: they may say why it failed', () => {
    const record = ingestRepetition({ ...raw, metrics, targetError: 'PerfTest exited with code 1' });
    expect(record.status).toBe('FAILED');
    expect(record.metrics).toEqual(metrics);
  });
});

describe('metrics items in the results table', () => {
  const record = ingestRepetition({ ...raw, metrics });

  test('stored apart from the repetition item under METRICS#<scenario>#<rep>#<chunk>, read back equal', () => {
    const items = repetitionItems(record);
    const metricItems = items.filter((item) => item.type === 'metrics');
    expect(metricItems.map((item) => item.SK)).toEqual(['METRICS#three/small#002#000']);
    expect(metricItems[0]!.PK).toBe('RUN#run-1');
    expect(metricsFromItems(metricItems)).toEqual(metrics);
    const repetitionItem = items.find((item) => item.type === 'repetition')!;
    expect(repetitionItem).not.toHaveProperty('metrics');
    expect(withoutKeys<Record<string, unknown>>(repetitionItem)).not.toHaveProperty('metrics');
  });

  test('the keys are deterministic: writing the same record twice gives the same items', () => {
    expect(repetitionItems(ingestRepetition({ ...raw, metrics }))).toEqual(repetitionItems(record));
  });

  test('many series are split across chunks and merged back in order, whatever order the items are read in', () => {
    const long: RepetitionMetrics = {
      source: 'local-proc',
      series: ['a', 'b', 'c'].map((node) => ({
        node,
        metric: 'cpuPercent' as const,
        unit: 'percent' as const,
        points: Array.from({ length: 1500 }, (_, index) => [index, index % 100] as const),
      })),
    };
    const items = repetitionItems({ ...record, metrics: long }).filter((item) => item.type === 'metrics');
    expect(items.map((item) => item.SK)).toEqual([
      'METRICS#three/small#002#000',
      'METRICS#three/small#002#001',
      'METRICS#three/small#002#002',
    ]);
    expect(metricsFromItems([...items].reverse())).toEqual(long);
  });

  test('metrics without any series still store one item, so the source is kept; none stored reads as undefined', () => {
    const items = repetitionItems({ ...record, metrics: { source: 'local-proc', series: [] } }).filter(
      (item) => item.type === 'metrics',
    );
    expect(metricsFromItems(items)).toEqual({ source: 'local-proc', series: [] });
    expect(metricsFromItems([])).toBeUndefined();
  });
});
