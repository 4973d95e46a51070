import type { RunRecord } from '../../core/results/result-model';
import {
  CaughtError,
  ClusterResult,
  describeCaught,
  firstClusterFailure,
  runStatus,
} from '../../state-machines/run-outcome';
import type { WorkflowSchedule } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

export type RunRecordEvent =
  | { action: 'start'; state: WorkflowSchedule }
  | { action: 'finish'; state: WorkflowSchedule & { clusterResults?: ClusterResult[] } }
  | {
      action: 'fail';
      state: Partial<WorkflowSchedule> & { error?: CaughtError; runId?: string; plan?: unknown };
      executionName?: string;
    };

/** RecordRunStart, FinishRun and RecordRunFailure: the run record's life in the results table. */
export async function recordRun(
  store: ResultsStore,
  event: RunRecordEvent,
  environment: Record<string, string>,
  now = () => new Date().toISOString(),
) {
  switch (event.action) {
    case 'start':
      await store.putRun(runRecord(event.state, environment, now()));
      return {};
    case 'finish': {
      const stored = await store.getRun(event.state.runId);
      const outcome = runStatus(
        clusterFailures(event.state.clusterResults),
        stored?.repetitions ?? [],
        event.state.totalRepetitions,
      );
      await store.finishRun(event.state.runId, outcome.status, now(), outcome.error);
      return outcome;
    }
    case 'fail': {
      const error = describeCaught(event.state.error);
      const runId =
        event.state.runId ??
        `${(event.state.plan as { name?: string } | undefined)?.name ?? 'plan'}-${event.executionName ?? 'unknown'}`;
      if (!(await store.getRun(runId))) {
        // Only a run that failed before RecordRunStart gets here: the plan schema (zod) is loaded for this path alone,
        // so the function's usual invocations do not load it (scripts/bundle-lambdas.mjs prints what a cold start
        // loads).
        const { repetitionsAsWritten, validatePlan } = await import('./validate-plan-late');
        // An invalid plan stores nothing: the execution's error carries the validation issues.
        let plan;
        try {
          plan = validatePlan(event.state.plan, 'the execution input');
        } catch {
          return { status: 'FAILED', error };
        }
        // Stored as written (an adaptive rule as its object), so that a report can validate it again.
        const { scenarios, adaptiveRepetitions: _rule, ...rest } = plan;
        const data = { ...rest, repetitions: repetitionsAsWritten(plan) };
        await store.putRun(
          runRecord(
            {
              runId,
              target: event.state.target ?? 'aws',
              planName: plan.name,
              plan: data,
              scenarioIds: scenarios.map((scenario) => scenario.id),
            },
            environment,
            now(),
          ),
        );
      }
      await store.finishRun(runId, 'FAILED', now(), error);
      return { status: 'FAILED', error };
    }
  }
}

/**
 * The run's error from its cluster results: the first failure, and every cluster whose deletion failed (a stack or
 * resource group left behind bills until the sweeper deletes it), even when that cluster or another failed before.
 */
export function clusterFailures(results: readonly ClusterResult[] | undefined): string | undefined {
  const first = firstClusterFailure(results);
  const teardowns = (results ?? []).flatMap((result) =>
    result.state?.teardownError
      ? [`teardown of ${result.clusterId} failed: ${describeCaught(result.state.teardownError)}`]
      : [],
  );
  const failures = [...(first === undefined ? [] : [first]), ...teardowns.filter((teardown) => teardown !== first)];
  return failures.length > 0 ? failures.join('; ') : undefined;
}

/**
 * The run record from what ValidatePlan laid out: the validated plan, its name and scenario ids, without validating
 * again.
 */
function runRecord(
  schedule: Pick<WorkflowSchedule, 'runId' | 'target' | 'planName' | 'plan' | 'scenarioIds'>,
  environment: Record<string, string>,
  startedAt: string,
): RunRecord {
  return {
    runId: schedule.runId,
    planName: schedule.planName,
    plan: schedule.plan,
    target: schedule.target,
    status: 'RUNNING',
    startedAt,
    environment,
    scenarioIds: schedule.scenarioIds,
  };
}
