import type { PriceCatalog } from '../core/cost/cost-catalog';
import { budgetProblem, estimateRun, type RunEstimate } from '../core/cost/estimate';
import type { Plan } from '../core/plan/plan';

export interface EstimateCommandOptions {
  readonly target: string;
  readonly json: boolean;
  readonly region?: string;
  /** Refuse (exit 1) when the estimate exceeds this; the plan's maxCostUsd applies too. */
  readonly maxCost?: string;
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

/** `rmqbench estimate <plan> --target aws|azure [--region R] [--max-cost USD] [--json]`. */
export function estimateCommand(plan: Plan, options: EstimateCommandOptions): EstimateCommandResult {
  if (options.target !== 'aws' && options.target !== 'azure') {
    throw new EstimateUsageError(
      `estimate needs --target aws or --target azure (got "${options.target}"): a local run costs nothing`,
    );
  }
  const maxCost = options.maxCost === undefined ? undefined : Number(options.maxCost);
  if (maxCost !== undefined && !(Number.isFinite(maxCost) && maxCost > 0)) {
    throw new EstimateUsageError(`--max-cost must be a positive number of US dollars, got "${options.maxCost}"`);
  }
  const estimate = estimateRun(plan, {
    target: options.target,
    catalog: options.catalog,
    ...(options.region ? { region: options.region } : {}),
  });
  const problem =
    budgetProblem(estimate, maxCost, '--max-cost') ?? budgetProblem(estimate, plan.maxCostUsd, `the plan's maxCostUsd`);
  const stdout = options.json ? `${JSON.stringify(estimate, null, 2)}\n` : formatEstimate(plan.name, estimate);
  return problem ? { stdout, exitCode: 1, error: problem } : { stdout, exitCode: 0 };
}

export function formatEstimate(planName: string, estimate: RunEstimate): string {
  const lines = [
    `estimated cost of plan ${planName} on ${estimate.target}: $${estimate.totalUsd.toFixed(2)}${estimate.complete ? '' : ' (at least: some parts are not priced)'}`,
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
      `  ${part.name.padEnd(width)}  ${part.priced ? `$${part.usd.toFixed(2).padStart(8)}` : '  ——————'}  ${part.detail}`,
    );
  return `${lines.join('\n')}\n`;
}
