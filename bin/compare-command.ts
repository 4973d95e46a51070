import {
  capacityIn,
  type ComparedMetric,
  baselineMarkFor,
  chooseBaseline,
  compareLoadBalancerToDirect,
  compareRuns,
  ComparisonError,
  failoverMetricsIn,
  type RunComparison,
  type RunResults,
  type ScenarioDelta,
} from '../core/results/comparison';
import { aggregateRun, renderDeltasMarkdown } from '../core/report/report';
import type { ResultsStore } from '../store/results-store';

/** The store operations comparisons need (a ResultsStore, or a stand-in in tests). */
export type ComparisonStore = Pick<ResultsStore, 'getRun' | 'getBaseline' | 'setBaseline' | 'tableName'>;

export interface CompareOutcome {
  /** Which run is the baseline and why. */
  readonly note: string;
  readonly comparisons: readonly RunComparison[];
  /** Load balancer vs direct within the (single) run, when its plan has such pairs. */
  readonly loadBalancerDeltas: readonly ScenarioDelta[];
}

/**
 * `rmqbench compare <runId> [<runId>...]`.
 * Several runs: each against the baseline (the plan's marked baseline when it is among them, else the first).
 * One run: against its plan's marked baseline, and load balancer vs direct within the run.
 */
export async function compareCommand(
  store: ComparisonStore,
  runIds: readonly string[],
  options: { json: boolean },
): Promise<string> {
  const outcome = await compareStoredRuns(store, runIds);
  if (options.json) return `${JSON.stringify(outcome, null, 2)}\n`;
  const lines = [outcome.note];
  for (const comparison of outcome.comparisons) {
    const metric = comparison.rows[0]?.metric ?? 'receiveRate';
    lines.push(
      '',
      `## plan ${comparison.planName}, ${metric}: against baseline run ${comparison.baselineRunId}`,
      '',
      ...renderDeltasMarkdown(comparison.rows, 'scenario'),
    );
  }
  if (outcome.loadBalancerDeltas.length > 0) {
    lines.push(
      '',
      '## load balancer vs direct (direct is the baseline)',
      '',
      ...renderDeltasMarkdown(outcome.loadBalancerDeltas, 'scenarios'),
    );
  }
  lines.push(
    '',
    'A delta counts only when its 95% confidence interval (Welch) excludes 0; otherwise it is inside the noise.',
  );
  return `${lines.join('\n')}\n`;
}

/** What runs are compared on beside the receive rate: the capacity at a latency bound, then the verifier's numbers. */
function extraMetricsIn(runs: readonly RunResults[]): ComparedMetric[] {
  return [...(capacityIn(runs) ? ['capacityRate' as const] : []), ...failoverMetricsIn(runs)];
}

export async function compareStoredRuns(store: ComparisonStore, runIds: readonly string[]): Promise<CompareOutcome> {
  if (runIds.length === 0) throw new ComparisonError('no run ids given: rmqbench compare <runId> [<runId>...]');
  const runs: RunResults[] = [];
  for (const runId of runIds) runs.push(await loadResults(store, runId));
  const first = runs[0]!;
  const markedRunId = await store.getBaseline(first.run.planName);
  const mark = markedRunId === undefined ? undefined : { planName: first.run.planName, runId: markedRunId };

  if (runs.length > 1) {
    const { baseline, candidates, note } = chooseBaseline(runs, mark);
    return {
      note,
      comparisons: [
        compareRuns(baseline, candidates),
        ...extraMetricsIn(runs).map((metric) => compareRuns(baseline, candidates, metric)),
      ],
      loadBalancerDeltas: [],
    };
  }

  const comparisons: RunComparison[] = [];
  let note: string;
  if (mark !== undefined && mark.runId !== first.run.runId) {
    const baseline = await loadResults(store, mark.runId).catch((error: unknown) => {
      throw new ComparisonError(
        `the marked baseline of plan "${mark.planName}" cannot be read: ${(error as Error).message}`,
      );
    });
    comparisons.push(
      compareRuns(baseline, [first]),
      ...extraMetricsIn([baseline, first]).map((metric) => compareRuns(baseline, [first], metric)),
    );
    note = `baseline: run ${mark.runId} (marked baseline of plan "${mark.planName}")`;
  } else {
    note =
      mark === undefined
        ? `run ${first.run.runId} alone: plan "${first.run.planName}" has no marked baseline (rmqbench baseline ` +
          `<runId> marks one)`
        : `run ${first.run.runId} is itself the marked baseline of plan "${first.run.planName}"`;
  }
  // A run without a successful repetition cannot be compared with anything; say so before anything else.
  baselineMarkFor(first);
  let loadBalancerDeltas: ScenarioDelta[] = [];
  try {
    loadBalancerDeltas = compareLoadBalancerToDirect(first);
  } catch (error) {
    if (!(error instanceof ComparisonError)) throw error;
    // No lb/direct pair in the plan: only a problem when there is no baseline comparison either.
    if (comparisons.length === 0)
      throw new ComparisonError(`nothing to compare: ${note}, and ${error.message}; or give two or more run ids`);
  }
  return { note, comparisons, loadBalancerDeltas };
}

/** `rmqbench baseline <runId>`: marks the run as its plan's baseline; it needs a successful repetition. */
export async function baselineCommand(
  store: ComparisonStore,
  runId: string,
  options: { json: boolean },
): Promise<string> {
  const results = await loadResults(store, runId);
  const mark = baselineMarkFor(results);
  const previous = await store.getBaseline(mark.planName);
  await store.setBaseline(mark.planName, mark.runId);
  if (options.json) return `${JSON.stringify({ ...mark, previous: previous ?? null }, null, 2)}\n`;
  const was = previous === undefined ? 'no baseline before' : previous === runId ? 'unchanged' : `was ${previous}`;
  return (
    `run ${runId} is now the baseline of plan "${mark.planName}" (${was}); rmqbench compare compares its later ` +
    `runs with it\n`
  );
}

async function loadResults(store: ComparisonStore, runId: string): Promise<RunResults> {
  const stored = await store.getRun(runId);
  if (stored === undefined)
    throw new ComparisonError(`no run "${runId}" in table ${store.tableName} (see rmqbench runs)`);
  return { run: stored.run, aggregates: aggregateRun(stored.run, stored.repetitions) };
}
