/**
 * The price-performance model of the seed thesis (chapter 7):
 *
 *   Score    = Throughput / MonthlyCost                      (7.1)
 *   Capacity = Throughput / MaximumThroughput × 100          (7.2)
 *
 * For each required throughput (10k, 20k, … msg/s) and queue count, the instances whose measured
 * maximum meets the requirement are ranked by score. At a fixed requirement the score only depends on
 * the cost, so the ranking is "cheapest capable instance first", exactly as the thesis describes it.
 * Consecutive requirements with the same choices are merged into one range row, as in Tables 7.4–7.7.
 */

/** One instance type (or cluster) as a candidate: its measured maximum for one queue count and its cost. */
export interface PricePerformanceCandidate {
  /** What a report shows, e.g. `c5.xlarge` or `aws eu-west-1 3 × c5.xlarge + lb`. */
  readonly instanceType: string;
  /** Highest throughput measured for this queue count, msg/s. */
  readonly maxThroughput: number;
  readonly monthlyCostUsd: number;
}

export interface Choice {
  readonly instanceType: string;
  readonly monthlyCostUsd: number;
  readonly maxThroughput: number;
  /** Equation 7.1: required msg/s per USD per month. */
  readonly score: number;
  /** Equation 7.2, unrounded. */
  readonly capacityPercent: number;
}

export interface RequirementRow {
  readonly requiredThroughput: number;
  /** Best first; at most `top` entries; empty when no candidate reaches the requirement. */
  readonly choices: readonly Choice[];
}

export interface RangeChoice {
  readonly instanceType: string;
  readonly monthlyCostUsd: number;
  readonly capacityPercentFrom: number;
  readonly capacityPercentTo: number;
}

/** Consecutive requirements whose ordered choices are the same instance types. */
export interface RangeRow {
  readonly fromThroughput: number;
  readonly toThroughput: number;
  readonly choices: readonly RangeChoice[];
}

export interface PricePerformanceOptions {
  /** Requirement increment and first requirement, msg/s. @default 10000 */
  readonly step?: number;
  /** Last requirement. @default - the largest multiple of `step` that some candidate reaches */
  readonly upTo?: number;
  /** Choices per row. @default 3 */
  readonly top?: number;
}

/** The invalid input and what would be valid. */
export class PricePerformanceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PricePerformanceError';
  }
}

/** Equation 7.1. */
export function score(requiredThroughput: number, monthlyCostUsd: number): number {
  return requiredThroughput / monthlyCostUsd;
}

/** Equation 7.2, in percent. */
export function capacityPercent(requiredThroughput: number, maxThroughput: number): number {
  return (requiredThroughput / maxThroughput) * 100;
}

/** The candidates able to carry `requiredThroughput`, best score first (ties: more headroom, then name). */
export function rankCandidates(
  requiredThroughput: number,
  candidates: readonly PricePerformanceCandidate[],
  top = 3,
): Choice[] {
  candidates.forEach(checkCandidate);
  return candidates
    .filter((candidate) => candidate.maxThroughput >= requiredThroughput)
    .map((candidate) => ({
      instanceType: candidate.instanceType,
      monthlyCostUsd: candidate.monthlyCostUsd,
      maxThroughput: candidate.maxThroughput,
      score: score(requiredThroughput, candidate.monthlyCostUsd),
      capacityPercent: capacityPercent(requiredThroughput, candidate.maxThroughput),
    }))
    .sort(
      (a, b) => b.score - a.score || b.maxThroughput - a.maxThroughput || a.instanceType.localeCompare(b.instanceType),
    )
    .slice(0, top);
}

/** One row per required throughput: step, 2 × step, … up to `upTo`. */
export function requirementRows(
  candidates: readonly PricePerformanceCandidate[],
  options: PricePerformanceOptions = {},
): RequirementRow[] {
  const step = options.step ?? 10_000;
  const top = options.top ?? 3;
  if (!(step > 0)) throw new PricePerformanceError(`step must be a positive number of msg/s, got ${step}`);
  if (!Number.isInteger(top) || top < 1) throw new PricePerformanceError(`top must be a positive integer, got ${top}`);
  candidates.forEach(checkCandidate);
  const reachable = Math.max(0, ...candidates.map((candidate) => candidate.maxThroughput));
  const upTo = options.upTo ?? Math.floor(reachable / step) * step;
  const rows: RequirementRow[] = [];
  for (let multiple = 1; multiple * step <= upTo; multiple++) {
    const requiredThroughput = multiple * step;
    rows.push({ requiredThroughput, choices: rankCandidates(requiredThroughput, candidates, top) });
  }
  return rows;
}

/** Merges consecutive rows with the same ordered instance types (Tables 7.4–7.7 "Up to 10k-20k"). */
export function mergeIntoRanges(rows: readonly RequirementRow[]): RangeRow[] {
  const ranges: RangeRow[] = [];
  let open: { from: RequirementRow; to: RequirementRow } | undefined;
  const close = () => {
    if (open === undefined) return;
    const { from, to } = open;
    ranges.push({
      fromThroughput: from.requiredThroughput,
      toThroughput: to.requiredThroughput,
      choices: from.choices.map((choice, index) => ({
        instanceType: choice.instanceType,
        monthlyCostUsd: choice.monthlyCostUsd,
        capacityPercentFrom: choice.capacityPercent,
        capacityPercentTo: to.choices[index]!.capacityPercent,
      })),
    });
  };
  for (const row of rows) {
    if (open !== undefined && sameInstances(open.from, row)) {
      open.to = row;
    } else {
      close();
      open = { from: row, to: row };
    }
  }
  close();
  return ranges;
}

/** Requirement rows merged into ranges, dropping requirements no candidate reaches. */
export function pricePerformanceTable(
  candidates: readonly PricePerformanceCandidate[],
  options: PricePerformanceOptions = {},
): RangeRow[] {
  return mergeIntoRanges(requirementRows(candidates, options).filter((row) => row.choices.length > 0));
}

/**
 * A range row as the thesis prints it: `["Up to 10k-20k", "t3.xlarge (35% - 70%)", …, "-"]`,
 * padded with "-" to `columns` choices. Capacities are rounded half up to whole percent.
 */
export function formatRangeRow(row: RangeRow, columns = 3): string[] {
  const throughput =
    row.fromThroughput === row.toThroughput
      ? `Up to ${kilo(row.fromThroughput)}`
      : `Up to ${kilo(row.fromThroughput)}-${kilo(row.toThroughput)}`;
  const cells = row.choices.map((choice) => {
    const from = Math.round(choice.capacityPercentFrom);
    const to = Math.round(choice.capacityPercentTo);
    return row.fromThroughput === row.toThroughput
      ? `${choice.instanceType} (${from}%)`
      : `${choice.instanceType} (${from}% - ${to}%)`;
  });
  while (cells.length < columns) cells.push('-');
  return [throughput, ...cells];
}

function kilo(throughput: number): string {
  return throughput % 1000 === 0 ? `${throughput / 1000}k` : `${throughput}`;
}

function sameInstances(a: RequirementRow, b: RequirementRow): boolean {
  return (
    a.choices.length === b.choices.length &&
    a.choices.every((choice, index) => choice.instanceType === b.choices[index]!.instanceType)
  );
}

function checkCandidate(candidate: PricePerformanceCandidate): void {
  if (!(candidate.monthlyCostUsd > 0) || !Number.isFinite(candidate.monthlyCostUsd)) {
    throw new PricePerformanceError(
      `${candidate.instanceType}: monthly cost must be a positive number of USD, got ${candidate.monthlyCostUsd}`,
    );
  }
  if (!(candidate.maxThroughput >= 0) || !Number.isFinite(candidate.maxThroughput)) {
    throw new PricePerformanceError(
      `${candidate.instanceType}: maximum throughput must be a non-negative number of msg/s, ` +
        `got ${candidate.maxThroughput}`,
    );
  }
}

/** One measured scenario: e.g. a scenario aggregate's mean receive rate with the run's instance type. */
export interface ThroughputMeasurement {
  /** What the candidate is called in the table (instance type, or cluster description). */
  readonly instanceType: string;
  readonly queues: number;
  /** msg/s */
  readonly throughput: number;
}

/**
 * The candidates for one queue count: each instance's highest measurement at that queue count, priced by
 * `monthlyCostOf` (e.g. `type => clusterCost(catalog, {...}).monthlyUsd`, which throws on an unknown type).
 */
export function candidatesForQueues(
  measurements: readonly ThroughputMeasurement[],
  queues: number,
  monthlyCostOf: (instanceType: string) => number,
): PricePerformanceCandidate[] {
  const maxima = new Map<string, number>();
  for (const measurement of measurements.filter((m) => m.queues === queues)) {
    maxima.set(measurement.instanceType, Math.max(maxima.get(measurement.instanceType) ?? 0, measurement.throughput));
  }
  return [...maxima].map(([instanceType, maxThroughput]) => ({
    instanceType,
    maxThroughput,
    monthlyCostUsd: monthlyCostOf(instanceType),
  }));
}
