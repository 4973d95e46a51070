import type { PriceCatalog } from '../core/cost/cost-catalog';
import { budgetProblem, estimateRun, type RunEstimate } from '../core/cost/estimate';
import type { Plan } from '../core/plan/plan';

export interface EstimateCommandOptions {
  readonly target: string;
  readonly json: boolean;
  readonly region?: string;
  /** Refuse (exit 1) when the estimate exceeds this; the plan's maxCostUsd applies too. */
  readonly maxCost?: string;
  /** Clusters the controller runs at once, for the wall time. @default 4 (the controller's default) */
  readonly clusterConcurrency?: string;
  readonly catalog: PriceCatalog;
}

/** The command's outcome: what to print and the exit code (1 when over budget). */
export interface EstimateCommandResult {
  readonly stdout: string;
  readonly exitCode: number;
  readonly error?: string;
}

/** Thrown for bad usage (exit 2): a target without cloud prices, a --max-cost that is not a positive number. */
export class EstimateUsageError extends Error {}

/** Several plans priced together: what a matrix (the thesis's chapters) costs and how long it takes, in sequence. */
export interface PlansEstimate {
  readonly target: 'aws' | 'azure';
  readonly plans: readonly (RunEstimate & { readonly plan: string })[];
  /** The plans' costs summed. */
  readonly totalUsd: number;
  /** True when every plan is priced in full. */
  readonly complete: boolean;
  /** The plans' ceilings summed (a plan without one counts its total), set when one plan has a ceiling. */
  readonly maxTotalUsd?: number;
  /** The plans' wall-clock minutes summed: each plan is one execution, run one after another. */
  readonly wallMinutes: number;
}

/**
 * `rmqbench estimate <plan>... --target aws|azure [--region R] [--max-cost USD] [--cluster-concurrency N] [--json]`:
 * one plan's estimate, or several plans' with their sum (`--max-cost` then bounds the sum; each plan's maxCostUsd its
 * own cost).
 */
export function estimateCommand(plans: readonly Plan[], options: EstimateCommandOptions): EstimateCommandResult {
  if (options.target !== 'aws' && options.target !== 'azure') {
    throw new EstimateUsageError(
      `estimate needs --target aws or --target azure (got "${options.target}"): a local run costs nothing`,
    );
  }
  const target = options.target;
  const maxCost = options.maxCost === undefined ? undefined : Number(options.maxCost);
  if (maxCost !== undefined && !(Number.isFinite(maxCost) && maxCost > 0)) {
    throw new EstimateUsageError(`--max-cost must be a positive number of US dollars, got "${options.maxCost}"`);
  }
  const concurrency = options.clusterConcurrency === undefined ? undefined : Number(options.clusterConcurrency);
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 40)) {
    throw new EstimateUsageError(
      "--cluster-concurrency must be a whole number from 1 to 40 (the controller's maxConcurrency), " +
        `got "${options.clusterConcurrency}"`,
    );
  }
  const estimates = plans.map((plan) => ({
    plan: plan.name,
    ...estimateRun(plan, {
      target,
      catalog: options.catalog,
      ...(options.region ? { region: options.region } : {}),
      ...(concurrency === undefined ? {} : { clusterConcurrency: concurrency }),
    }),
  }));
  const problems = plans.flatMap((plan, index) => {
    const problem = budgetProblem(estimates[index]!, plan.maxCostUsd, `plan ${plan.name}'s maxCostUsd`);
    return problem ? [problem] : [];
  });
  if (estimates.length === 1) {
    const [estimate] = estimates;
    const { plan: _name, ...single } = estimate!;
    const overall = budgetProblem(single, maxCost, '--max-cost');
    const stdout = options.json ? `${JSON.stringify(single, null, 2)}\n` : formatEstimate(plans[0]!.name, single);
    const problem = overall ?? problems[0];
    return problem ? { stdout, exitCode: 1, error: problem } : { stdout, exitCode: 0 };
  }
  const sum: PlansEstimate = {
    target,
    plans: estimates,
    totalUsd: estimates.reduce((total, estimate) => total + estimate.totalUsd, 0),
    complete: estimates.every((estimate) => estimate.complete),
    ...(estimates.some((estimate) => estimate.maxTotalUsd !== undefined)
      ? { maxTotalUsd: estimates.reduce((total, estimate) => total + (estimate.maxTotalUsd ?? estimate.totalUsd), 0) }
      : {}),
    wallMinutes: estimates.reduce((total, estimate) => total + estimate.wallMinutes, 0),
  };
  const overall = budgetProblem(sum, maxCost, '--max-cost');
  const stdout = options.json ? `${JSON.stringify(sum, null, 2)}\n` : formatPlansEstimate(sum);
  const problem = overall ?? problems[0];
  return problem ? { stdout, exitCode: 1, error: problem } : { stdout, exitCode: 0 };
}

/** `2 h 05 min` or `45 min`. */
export function formatMinutes(minutes: number): string {
  const whole = Math.ceil(minutes);
  return whole < 60 ? `${whole} min` : `${Math.floor(whole / 60)} h ${String(whole % 60).padStart(2, '0')} min`;
}

export function formatEstimate(planName: string, estimate: RunEstimate): string {
  const lines = [
    `estimated cost of plan ${planName} on ${estimate.target}: ` +
      `$${estimate.totalUsd.toFixed(2)}${estimate.complete ? '' : ' (at least: some parts are not priced)'}` +
      ceilingText(estimate.maxTotalUsd),
    `wall time: about ${formatMinutes(estimate.wallMinutes)} ` +
      `(${estimate.clusters.length} cluster(s), ${estimate.clusterConcurrency} at a time)`,
    ...adaptiveEstimateLines(estimate),
    '',
  ];
  for (const cluster of estimate.clusters)
    lines.push(
      `  cluster ${cluster.cluster}: ${cluster.nodes} × ${cluster.instanceType}, ${cluster.minutes.toFixed(1)} min`,
    );
  lines.push('');
  const width = Math.max(...estimate.parts.map((part) => part.name.length));
  for (const part of estimate.parts)
    lines.push(
      `  ${part.name.padEnd(width)}  ${part.priced ? `$${part.usd.toFixed(2).padStart(8)}` : '  ——————'}  ` +
        `${part.detail}`,
    );
  return `${lines.join('\n')}\n`;
}

/**
 * The ceiling beside a total: workloads with neither a publish rate nor fixed work are priced at their planned traffic
 * (none) and bounded by the load generators' line rate.
 */
function ceilingText(maxTotalUsd: number | undefined): string {
  return maxTotalUsd === undefined
    ? ''
    : `, up to $${maxTotalUsd.toFixed(2)} if the workloads without a publish rate moved traffic at the load ` +
        "generators' line rate";
}

/** Adaptive repetitions: the figures count every scenario's max; the least is every scenario settled after min. */
function adaptiveEstimateLines(estimate: RunEstimate): string[] {
  const adaptive = estimate.adaptiveRepetitions;
  if (!adaptive) return [];
  return [
    `adaptive repetitions: counted at the most, ${adaptive.max} per scenario; at the least (every scenario settled ` +
      `after ${adaptive.min}): $${adaptive.minimumUsd.toFixed(2)}, about ${formatMinutes(adaptive.minimumWallMinutes)}`,
  ];
}

/** Several plans: one line each, then their sum. */
export function formatPlansEstimate(sum: PlansEstimate): string {
  const width = Math.max(...sum.plans.map((estimate) => estimate.plan.length));
  const lines = [`estimated cost of ${sum.plans.length} plans on ${sum.target}, run one after another:`, ''];
  for (const estimate of sum.plans) {
    const ceiling = estimate.maxTotalUsd === undefined ? '' : ` (up to $${estimate.maxTotalUsd.toFixed(2)})`;
    const cost = `$${estimate.totalUsd.toFixed(2)}${estimate.complete ? '' : ' (at least)'}${ceiling}`;
    lines.push(
      `  ${estimate.plan.padEnd(width)}  ${cost.padStart(32)}  ` +
        `${formatMinutes(estimate.wallMinutes).padStart(12)}  ${estimate.clusters.length} cluster(s)`,
    );
  }
  const totalCeiling = sum.maxTotalUsd === undefined ? '' : ` (up to $${sum.maxTotalUsd.toFixed(2)})`;
  const total = `$${sum.totalUsd.toFixed(2)}${sum.complete ? '' : ' (at least)'}${totalCeiling}`;
  lines.push('', `  ${'total'.padEnd(width)}  ${total.padStart(32)}  ${formatMinutes(sum.wallMinutes).padStart(12)}`);
  if (sum.maxTotalUsd !== undefined)
    lines.push(
      '',
      "  up to: if the workloads without a publish rate moved traffic at the load generators' line rate; " +
        'rmqbench estimate <plan> --target ... shows which',
    );
  if (!sum.complete) lines.push('', '  some parts are not priced: rmqbench estimate <plan> --target ... shows which');
  return `${lines.join('\n')}\n`;
}
