import type { LatencyPercentiles, PerSecondSample, PerfTestSummary } from './result-model';

/**
 * A repetition's summary without its first `warmUpSeconds`, from PerfTest's per-second samples (its own summary
 * covers the whole run, warm-up included):
 * - rates: the mean of the per-second rates after the warm-up;
 * - each latency percentile: the median of the per-second values, each second weighted by the messages it measured
 *   (received for consumer latency, confirmed for confirm latency). PerfTest computes every second's percentiles on a
 *   fresh reservoir (v2.22.1 DefaultPerformanceMetrics.metrics()), so seconds are independent estimates; percentiles
 *   are never averaged, and the weighted median keeps a quiet second from counting as much as a busy one.
 * Returns undefined when no sample is left after the warm-up.
 */
export function summaryAfterWarmUp(
  samples: readonly PerSecondSample[],
  warmUpSeconds: number,
): PerfTestSummary | undefined {
  const measured = samplesAfterWarmUp(samples, warmUpSeconds);
  if (measured.length === 0) return undefined;
  const mean = (pick: (sample: PerSecondSample) => number) =>
    measured.reduce((sum, sample) => sum + pick(sample), 0) / measured.length;
  const consumerLatency = weightedPercentiles(
    measured.flatMap((sample) =>
      sample.consumerLatency ? [{ weight: sample.received, value: sample.consumerLatency }] : [],
    ),
  );
  const confirmLatency = weightedPercentiles(
    measured.flatMap((sample) =>
      sample.confirmLatency ? [{ weight: sample.confirmed, value: sample.confirmLatency }] : [],
    ),
  );
  return {
    sendRateAvg: Math.round(mean((sample) => sample.published)),
    receiveRateAvg: Math.round(mean((sample) => sample.received)),
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
  };
}

/** The samples whose second starts at or after `warmUpSeconds` (a sample at `time` counts the second before it). */
export function samplesAfterWarmUp(samples: readonly PerSecondSample[], warmUpSeconds: number): PerSecondSample[] {
  return samples.filter((sample) => Math.round(sample.time) - 1 >= warmUpSeconds);
}

/** The weighted median of `values` (weights ≥ 0; all-zero weights count equally). */
export function weightedMedian(entries: readonly { readonly weight: number; readonly value: number }[]): number {
  if (entries.length === 0) throw new Error('weightedMedian of nothing');
  const total = entries.reduce((sum, entry) => sum + Math.max(0, entry.weight), 0);
  const weighted = total > 0 ? entries : entries.map((entry) => ({ ...entry, weight: 1 }));
  const sorted = [...weighted].sort((a, b) => a.value - b.value);
  const half = (total > 0 ? total : sorted.length) / 2;
  let running = 0;
  for (const entry of sorted) {
    running += Math.max(0, entry.weight);
    if (running >= half) return entry.value;
  }
  return sorted.at(-1)!.value;
}

function weightedPercentiles(
  entries: readonly { readonly weight: number; readonly value: LatencyPercentiles }[],
): LatencyPercentiles | undefined {
  if (entries.length === 0) return undefined;
  const of = (key: 'median' | 'p95' | 'p99') =>
    weightedMedian(entries.map((entry) => ({ weight: entry.weight, value: entry.value[key] })));
  const optional = (key: 'min' | 'p75') =>
    entries.every((entry) => entry.value[key] !== undefined)
      ? { [key]: weightedMedian(entries.map((entry) => ({ weight: entry.weight, value: entry.value[key]! }))) }
      : {};
  return { ...optional('min'), median: of('median'), ...optional('p75'), p95: of('p95'), p99: of('p99') };
}
