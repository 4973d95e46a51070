import type { RepetitionRecord } from '../results/result-model';
import type { CapacityResult } from './capacity-verdict';
import { ACHIEVED_RATE_SHARE, CONSUMED_SHARE } from './capacity-verdict';

/** A scenario's capacity over its repetitions. */
export interface ScenarioCapacity {
  readonly p99LatencyMs: number;
  readonly stepFactor: number;
  readonly warmUpSeconds: number;
  /** The lowest capacity of the repetitions (a rate every repetition held); absent when a repetition held no step. */
  readonly rate?: number;
  /** Every repetition held the ladder's top: the capacity is at least `rate`. */
  readonly atLeast: boolean;
  /** Each repetition's verdict, in order. */
  readonly repetitions: readonly { readonly repetition: number; readonly capacityRate?: number; readonly verdict: string }[];
}

/** The capacity of a scenario's successful capacity repetitions; undefined when it has none. */
export function aggregateCapacity(repetitions: readonly Pick<RepetitionRecord, 'repetition' | 'capacity'>[]): ScenarioCapacity | undefined {
  const judged = repetitions.filter((rep): rep is typeof rep & { capacity: CapacityResult } => rep.capacity !== undefined);
  if (judged.length === 0) return undefined;
  const first = judged[0]!.capacity;
  const rates = judged.map((rep) => rep.capacity.capacityRate);
  const rate = rates.every((value): value is number => value !== undefined) ? Math.min(...rates) : undefined;
  return {
    p99LatencyMs: first.p99LatencyMs,
    stepFactor: first.stepFactor,
    warmUpSeconds: first.warmUpSeconds,
    ...(rate === undefined ? {} : { rate }),
    atLeast: judged.every((rep) => rep.capacity.atLeast),
    repetitions: judged.map((rep) => ({ repetition: rep.repetition, ...(rep.capacity.capacityRate === undefined ? {} : { capacityRate: rep.capacity.capacityRate }), verdict: rep.capacity.verdict })),
  };
}

/** How the capacity was searched, in the words a report uses. */
export function capacityStrategyLine(capacity: Pick<ScenarioCapacity, 'stepFactor' | 'warmUpSeconds' | 'p99LatencyMs'>): string {
  return (
    `Searched with a geometric ladder of publish rates (each step × ${capacity.stepFactor} the one before) in one PerfTest run per repetition, ` +
    `through PerfTest's --variable-rate, each step's first ${capacity.warmUpSeconds} s left out. A step holds when the producers achieved ` +
    `${ACHIEVED_RATE_SHARE * 100} % of its rate, the consumers received ${CONSUMED_SHARE * 100} % of what was delivered, the queues did not grow ` +
    `(where the broker was sampled) and no second's consumer latency p99 passed ${capacity.p99LatencyMs} ms (so neither did the step's). ` +
    `The capacity is the last step before the first that did not hold, the lowest over the repetitions: the true one lies below the next step (× ${capacity.stepFactor}).`
  );
}

/** The capacity cell: `12,000 msg/s`, `≥ 100,000 msg/s` (the ladder's top held) or `none held`. */
export function formatCapacity(capacity: ScenarioCapacity): string {
  if (capacity.rate === undefined) return 'none held';
  return `${capacity.atLeast ? '≥ ' : ''}${capacity.rate.toLocaleString('en-US')} msg/s`;
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
  readonly rate: number;
  readonly atLeast: boolean;
  readonly hourlyUsd: number;
  readonly usdPerMillionMessages: number;
}

/** The Markdown section of capacity results (with their prices when the run was priced). */
export function renderCapacityMarkdown(rows: readonly { readonly scenarioId: string; readonly capacity: ScenarioCapacity }[], costs: readonly CapacityCost[] = []): string[] {
  if (rows.length === 0) return [];
  const byScenario = new Map(costs.map((cost) => [cost.scenarioId, cost]));
  const lines = ['## Capacity at a latency target', '', capacityStrategyLine(rows[0]!.capacity), '', '| scenario | p99 bound (ms) | capacity | USD per million messages at it | repetitions |', '|---|---:|---:|---:|---|'];
  for (const { scenarioId, capacity } of rows) {
    const cost = byScenario.get(scenarioId);
    const price = cost ? `${cost.atLeast ? '≤ ' : ''}${cost.usdPerMillionMessages.toPrecision(3)}` : '—';
    lines.push(`| ${scenarioId} | ${capacity.p99LatencyMs} | ${formatCapacity(capacity)} | ${price} | ${capacity.repetitions.map((rep) => `#${rep.repetition}: ${rep.verdict}`).join('<br>')} |`);
  }
  return lines;
}
