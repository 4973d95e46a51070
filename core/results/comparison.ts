import { validatePlan, type Plan, type Scenario } from '../plan/plan';
import { FAILOVER_METRICS, type FailoverMetric, type RunRecord, type ScenarioAggregate } from './result-model';
import { tCritical95, type Stats } from './statistics';

/**
 * Comparisons between runs (run vs baseline, cloud vs cloud) and within a run (load balancer vs direct).
 *
 * Noise rule: a difference counts only when Welch's two-sample t-test rejects "equal means" at the 95%
 * level, i.e. when the 95% confidence interval of the difference of the means excludes zero. Welch's
 * test is used rather than "the two 95% CIs overlap" because overlapping intervals can still hide a
 * significant difference (overlap is a stricter, less sensitive rule), and because it gives the
 * interval of the delta itself, which is what a report shows. It needs at least two successful
 * repetitions on each side; with fewer the verdict is `too-few-repetitions`, never a guess.
 */

/** One run and its per-scenario aggregates, as the result store provides them. */
export interface RunResults {
  readonly run: RunRecord;
  readonly aggregates: readonly ScenarioAggregate[];
}

/**
 * Throughput, the capacity at a latency bound (capacity workloads: the rate each repetition held), or one of the
 * lost-message verifier's numbers (fault scenarios: a higher value is worse for all of them).
 */
export type ComparedMetric = 'receiveRate' | 'sendRate' | 'capacityRate' | FailoverMetric;

/** Whether any scenario of these runs has a capacity result: then comparisons add the capacity rate. */
export function capacityIn(runs: readonly RunResults[]): boolean {
  return runs.some((results) =>
    results.aggregates.some((aggregate) => aggregate.capacity?.rateMsgPerSecond !== undefined),
  );
}

/** The verifier metrics any scenario of these runs has, in report order: the comparisons made beside receiveRate. */
export function failoverMetricsIn(runs: readonly RunResults[]): FailoverMetric[] {
  return FAILOVER_METRICS.filter((metric) =>
    runs.some((results) => results.aggregates.some((aggregate) => aggregate.failover?.[metric] !== undefined)),
  );
}

export type Verdict =
  /** Candidate significantly above the baseline. */
  | 'higher'
  /** Candidate significantly below the baseline. */
  | 'lower'
  /** The difference is within run-to-run noise. */
  | 'inside-noise'
  /** Fewer than two successful repetitions on a side: noise cannot be estimated. */
  | 'too-few-repetitions'
  /** A side has no successful repetition or no such scenario. */
  | 'no-data';

export interface WelchResult {
  /** candidate mean − baseline mean. */
  readonly delta: number;
  readonly standardError: number;
  /** Welch–Satterthwaite degrees of freedom. */
  readonly degreesOfFreedom: number;
  /** Half-width of the 95% confidence interval of `delta`. */
  readonly ci95: number;
  readonly significant: boolean;
}

export interface ComparedSide {
  readonly runId: string;
  readonly target: RunRecord['target'];
  readonly scenarioId: string;
  readonly repetitionsSucceeded: number;
  readonly repetitionsFailed: number;
  readonly stats?: Stats;
}

export interface ScenarioDelta {
  /** What is compared, e.g. `three-nodes/small` or `three-nodes-lb/small vs three-nodes-direct/small`. */
  readonly label: string;
  readonly metric: ComparedMetric;
  readonly baseline: ComparedSide;
  readonly candidate: ComparedSide;
  readonly verdict: Verdict;
  /** Present when both sides have data. */
  readonly delta?: number;
  /** delta relative to the baseline mean, in percent (absent when the baseline mean is 0). */
  readonly deltaPercent?: number;
  /** Present when both sides have at least two repetitions. */
  readonly welch?: WelchResult;
  /** Why there is no verdict, for `no-data` and `too-few-repetitions`. */
  readonly message?: string;
}

export interface RunComparison {
  readonly planName: string;
  readonly baselineRunId: string;
  readonly rows: readonly ScenarioDelta[];
}

/** Marks one run as the reference its plan's later runs are compared with (stored by the result store). */
export interface BaselineMark {
  readonly planName: string;
  readonly runId: string;
}

/** The comparison asked for cannot be made; the message says why and what would work. */
export class ComparisonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ComparisonError';
  }
}

/** Welch's t-test on two summaries; undefined when a side has fewer than two values. */
export function welchTest(baseline: Stats, candidate: Stats): WelchResult | undefined {
  if (baseline.n < 2 || candidate.n < 2) return undefined;
  const delta = candidate.mean - baseline.mean;
  const varianceOfMeanA = baseline.stddev ** 2 / baseline.n;
  const varianceOfMeanB = candidate.stddev ** 2 / candidate.n;
  const standardError = Math.sqrt(varianceOfMeanA + varianceOfMeanB);
  if (standardError === 0) {
    // No spread on either side: any difference is real, none is noise.
    const degreesOfFreedom = baseline.n + candidate.n - 2;
    return { delta, standardError, degreesOfFreedom, ci95: 0, significant: delta !== 0 };
  }
  const degreesOfFreedom =
    standardError ** 4 / (varianceOfMeanA ** 2 / (baseline.n - 1) + varianceOfMeanB ** 2 / (candidate.n - 1));
  // Rounding the degrees of freedom down keeps the test conservative.
  const ci95 = tCritical95(Math.max(1, Math.floor(degreesOfFreedom))) * standardError;
  return { delta, standardError, degreesOfFreedom, ci95, significant: Math.abs(delta) > ci95 };
}

/** Compares one scenario side with another; the verdict follows the noise rule above. */
export function compareSides(
  label: string,
  metric: ComparedMetric,
  baseline: ComparedSide,
  candidate: ComparedSide,
): ScenarioDelta {
  const common = { label, metric, baseline, candidate };
  const missing = [baseline, candidate].find((side) => side.stats === undefined);
  if (missing !== undefined) {
    const why =
      missing.repetitionsSucceeded === 0 && missing.repetitionsFailed > 0
        ? `no successful repetition (${missing.repetitionsFailed} failed)`
        : missing.repetitionsSucceeded === 0
          ? 'no result'
          : `no ${metric} recorded`;
    return { ...common, verdict: 'no-data', message: `${missing.scenarioId} in run ${missing.runId} has ${why}` };
  }
  const a = baseline.stats!;
  const b = candidate.stats!;
  const delta = b.mean - a.mean;
  const withDelta = { ...common, delta, ...(a.mean === 0 ? {} : { deltaPercent: (delta / a.mean) * 100 }) };
  const welch = welchTest(a, b);
  if (welch === undefined) {
    const few = [baseline, candidate]
      .filter((side) => side.stats!.n < 2)
      .map((side) => `${side.scenarioId} in run ${side.runId}`);
    return {
      ...withDelta,
      verdict: 'too-few-repetitions',
      message: `${few.join(' and ')}: one successful repetition, at least 2 are needed to tell a difference from noise`,
    };
  }
  const verdict: Verdict = !welch.significant ? 'inside-noise' : delta > 0 ? 'higher' : 'lower';
  return { ...withDelta, welch, verdict };
}

/**
 * Every scenario of each candidate run against the same scenario of the baseline run: run vs baseline,
 * or cloud vs cloud when the runs are one plan on two targets. Runs must be of the same plan.
 */
export function compareRuns(
  baseline: RunResults,
  candidates: readonly RunResults[],
  metric: ComparedMetric = 'receiveRate',
): RunComparison {
  if (candidates.length === 0) {
    throw new ComparisonError(`nothing to compare run ${baseline.run.runId} with: give at least two run ids`);
  }
  const all = [baseline, ...candidates];
  const seen = new Set<string>();
  for (const results of all) {
    if (seen.has(results.run.runId))
      throw new ComparisonError(`run ${results.run.runId} is given twice; give distinct run ids`);
    seen.add(results.run.runId);
  }
  const otherPlans = candidates.filter((results) => results.run.planName !== baseline.run.planName);
  if (otherPlans.length > 0) {
    throw new ComparisonError(
      `runs of different plans cannot be compared scenario by scenario: ` +
        `${baseline.run.runId} ran plan "${baseline.run.planName}" but ` +
        otherPlans.map((results) => `${results.run.runId} ran "${results.run.planName}"`).join(', ') +
        '; compare runs of one plan (e.g. the same plan on aws and azure)',
    );
  }
  all.forEach(requireSomeSuccess);

  const rows: ScenarioDelta[] = [];
  for (const candidate of candidates) {
    for (const scenarioId of unionInOrder(baseline, candidate)) {
      const label =
        candidates.length > 1 || baseline.run.target !== candidate.run.target
          ? `${scenarioId} ` +
            `(${baseline.run.target} ${baseline.run.runId} → ${candidate.run.target} ${candidate.run.runId})`
          : scenarioId;
      rows.push(compareSides(label, metric, side(baseline, scenarioId, metric), side(candidate, scenarioId, metric)));
    }
  }
  return { planName: baseline.run.planName, baselineRunId: baseline.run.runId, rows };
}

/** Two scenarios of one run, e.g. the same workload through a load balancer and directly. */
export function compareScenarios(
  results: RunResults,
  baselineScenarioId: string,
  candidateScenarioId: string,
  metric: ComparedMetric = 'receiveRate',
): ScenarioDelta {
  for (const id of [baselineScenarioId, candidateScenarioId]) {
    if (!results.run.scenarioIds.includes(id) && !results.aggregates.some((aggregate) => aggregate.scenarioId === id)) {
      throw new ComparisonError(
        `run ${results.run.runId} has no scenario "${id}"; its scenarios are: ${results.run.scenarioIds.join(', ')}`,
      );
    }
  }
  return compareSides(
    `${candidateScenarioId} vs ${baselineScenarioId}`,
    metric,
    side(results, baselineScenarioId, metric),
    side(results, candidateScenarioId, metric),
  );
}

export interface ScenarioPair {
  readonly baselineScenarioId: string;
  readonly candidateScenarioId: string;
}

/**
 * Pairs each `connection: direct` scenario with the `connection: lb` scenario whose cluster is otherwise
 * identical (nodes, version, topology) and whose workload and sweep values are the same.
 * Direct is the baseline, so a negative delta is what the load balancer costs.
 */
export function loadBalancerPairs(plan: Pick<Plan, 'scenarios'>): ScenarioPair[] {
  const pairs: ScenarioPair[] = [];
  const key = (scenario: Scenario) => {
    // Everything but the cluster's name and connection must match.
    const cluster = { ...scenario.cluster, name: '', connection: '' };
    return JSON.stringify([cluster, scenario.workload, scenario.sweep]);
  };
  for (const direct of plan.scenarios.filter((scenario) => scenario.cluster.connection === 'direct')) {
    for (const lb of plan.scenarios.filter((scenario) => scenario.cluster.connection === 'lb')) {
      if (key(lb) === key(direct)) pairs.push({ baselineScenarioId: direct.id, candidateScenarioId: lb.id });
    }
  }
  return pairs;
}

/** Load balancer vs direct within one run, for every pair `loadBalancerPairs` finds in the run's plan. */
export function compareLoadBalancerToDirect(
  results: RunResults,
  metric: ComparedMetric = 'receiveRate',
): ScenarioDelta[] {
  let plan: Plan;
  try {
    plan = validatePlan(results.run.plan, `the plan stored with run ${results.run.runId}`);
  } catch (error) {
    throw new ComparisonError(`cannot pair load balancer and direct scenarios: ${(error as Error).message}`);
  }
  const pairs = loadBalancerPairs(plan);
  if (pairs.length === 0) {
    throw new ComparisonError(
      `plan "${plan.name}" of run ${results.run.runId} has no pair of clusters ` +
        `that differ only in connection (lb vs direct); ` +
        'add such a pair to the plan, or compare two scenarios by id',
    );
  }
  requireSomeSuccess(results);
  return pairs.map((pair) => compareScenarios(results, pair.baselineScenarioId, pair.candidateScenarioId, metric));
}

/**
 * Splits runs into the baseline and the rest: the marked baseline of their plan when it is among them,
 * otherwise the first run given. `note` says which rule applied, for the report.
 */
export function chooseBaseline(
  runs: readonly RunResults[],
  mark?: BaselineMark,
): { baseline: RunResults; candidates: RunResults[]; note: string } {
  const first = runs[0];
  if (first === undefined) throw new ComparisonError('no runs given; give at least two run ids');
  const marked = mark === undefined ? undefined : runs.find((results) => results.run.runId === mark.runId);
  if (mark !== undefined && marked !== undefined && marked.run.planName === mark.planName) {
    return {
      baseline: marked,
      candidates: runs.filter((r) => r !== marked),
      note: `baseline: run ${marked.run.runId} (marked baseline of plan "${mark.planName}")`,
    };
  }
  const why =
    mark === undefined
      ? 'no baseline is marked for this plan'
      : `the marked baseline ${mark.runId} of plan "${mark.planName}" is not among the runs given`;
  return {
    baseline: first,
    candidates: runs.slice(1),
    note: `baseline: run ${first.run.runId}, the first given (${why})`,
  };
}

/** Checks that a run may be marked as its plan's baseline: it needs at least one successful repetition. */
export function baselineMarkFor(results: RunResults): BaselineMark {
  requireSomeSuccess(results);
  return { planName: results.run.planName, runId: results.run.runId };
}

function requireSomeSuccess(results: RunResults): void {
  const succeeded = results.aggregates.reduce((sum, aggregate) => sum + aggregate.repetitionsSucceeded, 0);
  if (succeeded === 0) {
    const failed = results.aggregates.reduce((sum, aggregate) => sum + aggregate.repetitionsFailed, 0);
    throw new ComparisonError(
      `run ${results.run.runId} (plan "${results.run.planName}", status ${results.run.status}) ` +
        `has no successful repetition ` +
        `(${failed} failed)${results.run.error === undefined ? '' : `: ${results.run.error}`}; ` +
        `rerun it or compare another run`,
    );
  }
}

function side(results: RunResults, scenarioId: string, metric: ComparedMetric): ComparedSide {
  const aggregate = results.aggregates.find((candidate) => candidate.scenarioId === scenarioId);
  const picked =
    metric === 'receiveRate' || metric === 'sendRate'
      ? aggregate?.[metric]
      : metric === 'capacityRate'
        ? aggregate?.capacity?.rateMsgPerSecond
        : aggregate?.failover?.[metric];
  const stats = aggregate !== undefined && aggregate.repetitionsSucceeded > 0 ? picked : undefined;
  return {
    runId: results.run.runId,
    target: results.run.target,
    scenarioId,
    repetitionsSucceeded: aggregate?.repetitionsSucceeded ?? 0,
    repetitionsFailed: aggregate?.repetitionsFailed ?? 0,
    ...(stats === undefined ? {} : { stats }),
  };
}

function unionInOrder(a: RunResults, b: RunResults): string[] {
  const ids = [
    ...a.run.scenarioIds,
    ...a.aggregates.map((x) => x.scenarioId),
    ...b.run.scenarioIds,
    ...b.aggregates.map((x) => x.scenarioId),
  ];
  return [...new Set(ids)];
}
