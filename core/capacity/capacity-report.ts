import type { RepetitionRecord } from '../results/result-model';
import { describe, median, type Stats } from '../results/statistics';
import type { CapacityResult } from './capacity-verdict';
import { ACHIEVED_RATE_SHARE, CONSUMED_SHARE } from './capacity-verdict';

/** A scenario's capacity over its repetitions. */
export interface ScenarioCapacity {
  /** The plan's bound (capacity.p99LatencyMs). */
  readonly p99BoundMs: number;
  /** Kafka: the bound is on the acknowledgement latency (CapacityResult.latency). */
  readonly latency?: 'acknowledgement';
  readonly stepFactor: number;
  readonly warmUpSeconds: number;
  /** The rate each repetition held (mean ± 95 % CI over the repetitions that held one); absent when none did. */
  readonly rateMsgPerSecond?: Stats;
  /** Consumer latency p50 and p99 at those rates, ms (median over the repetitions). */
  readonly p50LatencyMs?: number;
  readonly p99LatencyMs?: number;
  /** Every repetition held the ladder's top: the capacity is at least the rate. */
  readonly atLeast: boolean;
  /** Repetitions in which not even the first step held. */
  readonly noneHeld: number;
  /** Each repetition's verdict and steps, in order. */
  readonly repetitions: readonly {
    readonly repetition: number;
    readonly rateMsgPerSecond?: number;
    readonly verdict: string;
    readonly steps: CapacityResult['steps'];
  }[];
}

/** The capacity of a scenario's successful capacity repetitions; undefined when it has none. */
export function aggregateCapacity(
  repetitions: readonly Pick<RepetitionRecord, 'repetition' | 'capacity'>[],
): ScenarioCapacity | undefined {
  const judged = repetitions.filter(
    (rep): rep is typeof rep & { capacity: CapacityResult } => rep.capacity !== undefined,
  );
  if (judged.length === 0) return undefined;
  const first = judged[0]!.capacity;
  const found = judged.map((rep) => rep.capacity).filter((capacity) => capacity.rateMsgPerSecond !== undefined);
  const medianOf = (values: readonly (number | undefined)[]) => {
    const present = values.filter((value): value is number => value !== undefined);
    return present.length > 0 ? median(present) : undefined;
  };
  const p50 = medianOf(found.map((capacity) => capacity.p50LatencyMs));
  const p99 = medianOf(found.map((capacity) => capacity.p99LatencyMs));
  return {
    p99BoundMs: first.p99BoundMs,
    ...(first.latency ? { latency: first.latency } : {}),
    stepFactor: first.stepFactor,
    warmUpSeconds: first.warmUpSeconds,
    ...(found.length > 0 ? { rateMsgPerSecond: describe(found.map((capacity) => capacity.rateMsgPerSecond!)) } : {}),
    ...(p50 === undefined ? {} : { p50LatencyMs: p50 }),
    ...(p99 === undefined ? {} : { p99LatencyMs: p99 }),
    atLeast: judged.every((rep) => rep.capacity.atLeast),
    noneHeld: judged.length - found.length,
    repetitions: judged.map((rep) => ({
      repetition: rep.repetition,
      ...(rep.capacity.rateMsgPerSecond === undefined ? {} : { rateMsgPerSecond: rep.capacity.rateMsgPerSecond }),
      verdict: rep.capacity.verdict,
      steps: rep.capacity.steps,
    })),
  };
}

/** How the capacity was searched, in the words a report uses. */
export function capacityStrategyLine(
  capacity: Pick<ScenarioCapacity, 'stepFactor' | 'warmUpSeconds' | 'p99BoundMs' | 'latency'>,
): string {
  if (capacity.latency === 'acknowledgement')
    return (
      `Kafka: searched with a geometric ladder of publish rates (each step × ${capacity.stepFactor} the last), one ` +
      `ProducerPerformance run per step at --throughput, its first ${capacity.warmUpSeconds} s of records left out ` +
      `(--warmup-records). A step holds when the producers achieved ${ACHIEVED_RATE_SHARE * 100} % of its rate, the ` +
      `consumers received ${CONSUMED_SHARE * 100} % of it within the step, and the producers' ` +
      "acknowledgement latency p99 (send to broker ack: Kafka's tools measure no end-to-end latency) was within " +
      `${capacity.p99BoundMs} ms.`
    );
  return (
    `Searched with a geometric ladder of publish rates (each step × ${capacity.stepFactor} the one before) ` +
    `in one PerfTest run per repetition, ` +
    `through PerfTest's --variable-rate, each step's first ${capacity.warmUpSeconds} s left out. ` +
    `A step holds when the producers achieved ` +
    `${ACHIEVED_RATE_SHARE * 100} % of its rate, the consumers received ${CONSUMED_SHARE * 100} % ` +
    `of what was delivered, the queues did not grow ` +
    `(where the broker was sampled) and the step's consumer latency p99 was within ${capacity.p99BoundMs} ms ` +
    `(estimated from its seconds' percentiles, weighted by the messages each received). ` +
    `The capacity is the last step before the first that did not hold (mean ± 95 % CI over the repetitions): ` +
    `the true one lies below the next step (× ${capacity.stepFactor}).`
  );
}

/** The strategy line of each kind of search among the rows (PerfTest's ladder, Kafka's step runs). */
export function capacityStrategyLines(rows: readonly { readonly capacity: ScenarioCapacity }[]): string[] {
  return [...new Set(rows.map((row) => capacityStrategyLine(row.capacity)))];
}

/**
 * The capacity cell: `12,000 ± 0 msg/s`, `≥ 100,000 msg/s` (the ladder's top held) or `none held`; repetitions that
 * held nothing are counted.
 */
export function formatCapacity(capacity: ScenarioCapacity): string {
  const rate = capacity.rateMsgPerSecond;
  if (rate === undefined) return 'none held';
  const value = capacity.atLeast
    ? `≥ ${Math.round(rate.mean).toLocaleString('en-US')}`
    : `${Math.round(rate.mean).toLocaleString('en-US')} ± ${Math.round(rate.ci95).toLocaleString('en-US')}`;
  return `${value} msg/s${capacity.noneHeld > 0 ? ` (${capacity.noneHeld} repetition(s) held none)` : ''}`;
}

/** What a million messages cost at the capacity: the cluster's hourly price over the messages an hour carries. */
export function usdPerMillionMessages(hourlyUsd: number, ratePerSecond: number): number {
  if (!(ratePerSecond > 0)) throw new Error(`a capacity must be positive to price messages, got ${ratePerSecond}`);
  return (hourlyUsd / (ratePerSecond * 3600)) * 1_000_000;
}

/** A capacity priced by its cluster. */
export interface CapacityCost {
  readonly scenarioId: string;
  readonly clusterName: string;
  /** The scenario's capacity (mean over repetitions), msg/s. */
  readonly rateMsgPerSecond: number;
  readonly atLeast: boolean;
  readonly hourlyUsd: number;
  readonly usdPerMillionMessages: number;
  /** msg/s carried within the bound per dollar-hour of the cluster. */
  readonly msgPerSecondPerUsdHour: number;
}

/** The Markdown section of capacity results (with their prices when the run was priced). */
export function renderCapacityMarkdown(
  rows: readonly { readonly scenarioId: string; readonly capacity: ScenarioCapacity }[],
  costs: readonly CapacityCost[] = [],
): string[] {
  if (rows.length === 0) return [];
  const byScenario = new Map(costs.map((cost) => [cost.scenarioId, cost]));
  const lines = [
    '## Capacity at a latency target',
    '',
    ...capacityStrategyLines(rows).flatMap((line) => [line, '']),
    '| scenario | p99 bound (ms) | capacity (mean ± 95% CI) | p50 / p99 at it (ms) | ' +
      'USD per million messages | msg/s per USD-hour | repetitions |',
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const { scenarioId, capacity } of rows) {
    const cells = capacityCells(capacity, byScenario.get(scenarioId));
    lines.push(
      `| ${scenarioId} | ${cells.join(' | ')} | ` +
        `${capacity.repetitions.map((rep) => `#${rep.repetition}: ${rep.verdict}`).join('<br>')} |`,
    );
  }
  return lines;
}

/**
 * The cells every capacity table shows: bound, capacity, p50 / p99 at it, USD per million messages, msg/s per USD-hour.
 */
export function capacityCells(capacity: ScenarioCapacity, cost: CapacityCost | undefined): string[] {
  const latency =
    capacity.p50LatencyMs === undefined || capacity.p99LatencyMs === undefined
      ? '—'
      : `${capacity.p50LatencyMs} / ${capacity.p99LatencyMs}`;
  const bound = cost?.atLeast ? '≤ ' : '';
  return [
    String(capacity.p99BoundMs),
    formatCapacity(capacity),
    latency,
    cost ? `${bound}${cost.usdPerMillionMessages.toPrecision(3)}` : '—',
    cost ? `${cost.atLeast ? '≥ ' : ''}${Math.round(cost.msgPerSecondPerUsdHour).toLocaleString('en-US')}` : '—',
  ];
}
