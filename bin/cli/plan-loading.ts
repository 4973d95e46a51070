/** A plan named on the command line (a file, or a built-in plan's name), read and checked for a target. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { formatPlanIssue, PlanValidationError } from '../../core/plan/errors';
import { parsePlanText, type Plan } from '../../core/plan/plan';
import { targetProblems } from '../../core/plan/target-rules';
import { WORKFLOW_TARGETS } from '../../state-machines/schedule';
import { CliError } from './cli-error';

/** plans/ of the package (this file is dist/bin/cli/plan-loading.js once built). */
export const BUILT_IN_PLANS = join(__dirname, '..', '..', '..', 'plans');

export function loadPlan(reference: string): Plan {
  const builtIn = join(BUILT_IN_PLANS, `${reference}.yaml`);
  const path = existsSync(reference) ? reference : existsSync(builtIn) ? builtIn : undefined;
  if (!path)
    throw new CliError(`no plan file "${reference}" and no built-in plan of that name (see rmqbench plans)`, 2);
  try {
    return parsePlanText(readFileSync(path, 'utf8'), path);
  } catch (error) {
    if (error instanceof PlanValidationError) {
      const details = error.issues.map((issue) => `  - ${formatPlanIssue(issue)}`).join('\n');
      throw new CliError(
        `invalid plan ${path} (${error.issues.length} problem${error.issues.length > 1 ? 's' : ''}):\n${details}`,
        2,
      );
    }
    throw error;
  }
}

/**
 * The plan, after the schema and what the target needs (the workflow's ValidatePlan applies the same rules);
 * a problem is a CliError (exit 2) naming each field.
 */
export function loadPlanForTarget(reference: string, target: string): Plan {
  if (!(WORKFLOW_TARGETS as readonly string[]).includes(target))
    throw new CliError(`--target must be one of ${WORKFLOW_TARGETS.join(', ')} (got "${target}")`, 2);
  const plan = loadPlan(reference);
  const issues = targetProblems(plan, target, defaultPriceCatalog);
  if (issues.length > 0) {
    const details = issues.map((issue) => `  - ${formatPlanIssue(issue)}`).join('\n');
    const count = `${issues.length} problem${issues.length > 1 ? 's' : ''}`;
    throw new CliError(`plan ${plan.name} cannot run on target ${target} (${count}):\n${details}`, 2);
  }
  return plan;
}
