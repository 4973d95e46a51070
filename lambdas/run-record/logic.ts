import { validatePlan } from '../../core/plan';
import type { RunRecord } from '../../core/result-model';
import { CaughtError, ClusterResult, describeCaught, firstClusterFailure, runStatus } from '../../state-machines/run-outcome';
import type { WorkflowSchedule } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

export type RunRecordEvent =
  | { action: 'start'; state: WorkflowSchedule }
  | { action: 'finish'; state: WorkflowSchedule & { clusterResults?: ClusterResult[] } }
  | { action: 'fail'; state: Partial<WorkflowSchedule> & { error?: CaughtError; runId?: string; plan?: unknown } ; executionName?: string };

/** RecordRunStart, FinishRun and RecordRunFailure: the run record's life in the results table. */
export async function recordRun(store: ResultsStore, event: RunRecordEvent, environment: Record<string, string>, now = () => new Date().toISOString()) {
  switch (event.action) {
    case 'start':
      await store.putRun(runRecord(event.state, environment, now()));
      return {};
    case 'finish': {
      const stored = await store.getRun(event.state.runId);
      const outcome = runStatus(firstClusterFailure(event.state.clusterResults), stored?.repetitions ?? [], event.state.totalRepetitions);
      await store.finishRun(event.state.runId, outcome.status, now(), outcome.error);
      return outcome;
    }
    case 'fail': {
      const error = describeCaught(event.state.error);
      const runId = event.state.runId ?? `${(event.state.plan as { name?: string } | undefined)?.name ?? 'plan'}-${event.executionName ?? 'unknown'}`;
      if (!(await store.getRun(runId))) {
        // An invalid plan stores nothing: the execution's error carries the validation issues.
        let plan;
        try {
          plan = validatePlan(event.state.plan, 'the execution input');
        } catch {
          return { status: 'FAILED', error };
        }
        await store.putRun(runRecord({ runId, target: (event.state.target ?? 'aws'), planName: plan.name, plan: event.state.plan, clusters: [], plannedSeconds: 0, totalRepetitions: 0 }, environment, now(), plan.scenarios.map((s) => s.id)));
      }
      await store.finishRun(runId, 'FAILED', now(), error);
      return { status: 'FAILED', error };
    }
  }
}

function runRecord(schedule: WorkflowSchedule, environment: Record<string, string>, startedAt: string, scenarioIds?: string[]): RunRecord {
  const plan = validatePlan(schedule.plan, 'the execution input');
  const { scenarios, ...planData } = plan;
  return {
    runId: schedule.runId,
    planName: plan.name,
    plan: planData,
    target: schedule.target,
    status: 'RUNNING',
    startedAt,
    environment,
    scenarioIds: scenarioIds ?? scenarios.map((scenario) => scenario.id),
  };
}
