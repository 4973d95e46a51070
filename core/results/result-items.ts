import {
  chunkMetricSeries,
  mergeMetricChunks,
  type MetricSeries,
  type RepetitionMetrics,
} from '../metrics/host-metrics';
import type { RepetitionRecord, RunRecord } from './result-model';

/**
 * The results table: one table, keys designed for the cloud controller.
 *
 *   PK = RUN#<runId>  SK = RUN                                  the run (status, plan, environment)
 *   PK = RUN#<runId>  SK = REP#<scenarioId>#<rep:000>            one repetition's result or failure
 *   PK = RUN#<runId>  SK = SAMPLES#<scenarioId>#<rep:000>#<n:000> per-second samples, in chunks
 *   PK = RUN#<runId>  SK = METRICS#<scenarioId>#<rep:000>#<n:000> broker and host metrics, in chunks
 * (core/metrics/host-metrics.ts)
 *   PK = PLAN#<name>  SK = BASELINE                               the run marked as baseline for a plan
 *   GSI1: GSI1PK = RUNS, GSI1SK = <startedAt>#<runId>            runs listed newest first
 *
 * Every key is derived from what it stores, so writing the same result twice stores it once.
 */
export const TABLE_KEYS = {
  partitionKey: 'PK',
  sortKey: 'SK',
  gsi1Name: 'GSI1',
  gsi1PartitionKey: 'GSI1PK',
  gsi1SortKey: 'GSI1SK',
} as const;

/** Samples per item: 600 one-second samples stay far below DynamoDB's 400 KB item limit. */
export const SAMPLES_PER_ITEM = 600;

export type ItemKey = { PK: string; SK: string };

export const runKey = (runId: string): ItemKey => ({ PK: `RUN#${runId}`, SK: 'RUN' });

const rep = (repetition: number) => String(repetition).padStart(3, '0');

export const repetitionKey = (runId: string, scenarioId: string, repetition: number): ItemKey => ({
  PK: `RUN#${runId}`,
  SK: `REP#${scenarioId}#${rep(repetition)}`,
});

export const baselineKey = (planName: string): ItemKey => ({ PK: `PLAN#${planName}`, SK: 'BASELINE' });

export function runItem(run: RunRecord): Record<string, unknown> {
  return { ...runKey(run.runId), type: 'run', GSI1PK: 'RUNS', GSI1SK: `${run.startedAt}#${run.runId}`, ...run };
}

/** The repetition item (without samples and metrics) and the sample and metrics chunk items that go with it. */
export function repetitionItems(record: RepetitionRecord): Record<string, unknown>[] {
  const { result, metrics, ...rest } = record;
  const items: Record<string, unknown>[] = [];
  const samples = result?.samples ?? [];
  const chunks = Math.ceil(samples.length / SAMPLES_PER_ITEM);
  items.push({
    ...repetitionKey(record.runId, record.scenarioId, record.repetition),
    type: 'repetition',
    ...rest,
    ...(result ? { result: (({ samples: _samples, ...stored }) => stored)(result), sampleChunks: chunks } : {}),
  });
  if (metrics) items.push(...metricsItems(record.runId, record.scenarioId, record.repetition, metrics));
  for (let chunk = 0; chunk < chunks; chunk++) {
    items.push({
      PK: `RUN#${record.runId}`,
      SK: `SAMPLES#${record.scenarioId}#${rep(record.repetition)}#${String(chunk).padStart(3, '0')}`,
      type: 'samples',
      samples: samples.slice(chunk * SAMPLES_PER_ITEM, (chunk + 1) * SAMPLES_PER_ITEM),
    });
  }
  return items;
}

export const metricsKeyPrefix = (scenarioId: string, repetition: number): string =>
  `METRICS#${scenarioId}#${rep(repetition)}#`;

/** Metrics in chunks of at least one item (so that metrics without series still say where they came from). */
function metricsItems(
  runId: string,
  scenarioId: string,
  repetition: number,
  metrics: RepetitionMetrics,
): Record<string, unknown>[] {
  const chunks = chunkMetricSeries(metrics.series);
  return (chunks.length > 0 ? chunks : [[]]).map((series, chunk) => ({
    PK: `RUN#${runId}`,
    SK: `${metricsKeyPrefix(scenarioId, repetition)}${String(chunk).padStart(3, '0')}`,
    type: 'metrics',
    source: metrics.source,
    series,
  }));
}

/** Metrics chunk items (any order) back to the repetition's metrics; undefined when there are none. */
export function metricsFromItems(items: readonly Record<string, unknown>[]): RepetitionMetrics | undefined {
  if (items.length === 0) return undefined;
  const ordered = [...items].sort((a, b) => String(a.SK).localeCompare(String(b.SK)));
  return {
    source: String(ordered[0]!.source),
    series: mergeMetricChunks(ordered.map((item) => item.series as MetricSeries[])),
  };
}

/** Strips key attributes from a stored item. */
export function withoutKeys<T>(item: Record<string, unknown>): T {
  const { PK: _pk, SK: _sk, GSI1PK: _g1, GSI1SK: _g2, type: _type, sampleChunks: _chunks, ...rest } = item;
  return rest as T;
}

/** A repetition as `getRun` reads it: samples and metrics are read on demand (getSamples, getMetrics). */
export type StoredRepetition = Omit<RepetitionRecord, 'result' | 'metrics'> & {
  readonly result?: Omit<NonNullable<RepetitionRecord['result']>, 'samples'>;
};
