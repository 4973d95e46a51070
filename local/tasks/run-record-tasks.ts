import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CaughtError,
  ClusterResult,
  describeCaught,
  firstClusterFailure,
  runStatus,
} from '../../state-machines/run-outcome';
import { buildSchedule, WorkflowInput, WorkflowSchedule } from '../../state-machines/schedule';
import type { LocalRun } from './local-run';

/** ValidatePlan: the same schedule the cloud's ValidatePlan Lambda builds. */
export const validatePlan = () => async (input: { input: WorkflowInput; executionName: string }) =>
  buildSchedule(input.input, input.executionName);

/** RecordRunStart: run.json in the run folder (for `rmqbench ingest` and `prune`) and the run record in the store. */
export const recordRunStart = (run: LocalRun) => async (input: { state: WorkflowSchedule }) => {
  const record = run.runRecord(input.state);
  writeFileSync(join(run.runDir, 'run.json'), `${JSON.stringify(record, null, 2)}\n`);
  await run.store.putRun(record);
  run.emit({ type: 'run-started', runId: run.runId, runDir: run.runDir, plannedSeconds: input.state.plannedSeconds });
  return {};
};

/** FinishRun: SUCCEEDED, PARTIAL or FAILED from the cluster results and the stored repetitions. */
export const finishRun =
  (run: LocalRun) => async (input: { state: WorkflowSchedule & { clusterResults?: ClusterResult[] } }) => {
    const clusterFailure = firstClusterFailure(input.state.clusterResults);
    run.firstCause ??= clusterFailure;
    const stored = await run.store.getRun(run.runId);
    const outcome = runStatus(clusterFailure, stored?.repetitions ?? [], input.state.totalRepetitions);
    await run.store.finishRun(run.runId, outcome.status, new Date().toISOString(), outcome.error);
    run.finish = outcome;
    return outcome;
  };

/** RecordRunFailure: the run FAILED with the cause the workflow caught. */
export const recordRunFailure =
  (run: LocalRun) => async (input: { state: { error?: CaughtError } & Partial<WorkflowSchedule> }) => {
    const error = describeCaught(input.state.error);
    run.firstCause ??= error;
    await run.recordFailure(error);
    run.finish = { status: 'FAILED', error };
    return run.finish;
  };
