import { randomBytes } from 'node:crypto';
import type { RunOutcome, RunPlanOptions } from './run-events';
import { runPlanWorkflow } from './workflow-runner';

export type { RunEvent, RunOutcome, RunPlanOptions } from './run-events';

export function newRunId(planName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  return `${planName}-${stamp}-${randomBytes(2).toString('hex')}`;
}

/**
 * Runs every scenario × repetition of a plan on the local target through the workflow definition
 * the BenchmarkController deploys (local/workflow-runner.ts): each repetition is stored as soon as it
 * is measured, clusters are torn down on every path, and a failure marks the run FAILED with its cause.
 */
export function runPlan(options: RunPlanOptions): Promise<RunOutcome> {
  return runPlanWorkflow(options);
}
