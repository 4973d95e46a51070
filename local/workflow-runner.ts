import { mkdirSync } from 'node:fs';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { groupScenariosByCluster } from '../core/plan/plan';
import { planOnTarget } from '../core/plan/plan-target';
import { buildBenchmarkDefinition, resolveResources } from '../state-machines/definition';
import { planData, WorkflowInput } from '../state-machines/schedule';
import { FAULT_INJECTABLE_STATES, STATE } from '../state-machines/states';
import type { ResultsStore } from '../store/results-store';
import type { RunOutcome, RunPlanOptions } from './run-events';
import { localTaskHandlers } from './tasks';
import { LocalRun, Prelaunch } from './tasks/local-run';

// aws-local-stepfunctions uses Promise.withResolvers (Node >= 22); the package asks for Node 22, but a
// user on Node 20 would otherwise see every state fail with "Promise.withResolvers is not a function".
const promiseStatics = Promise as unknown as { withResolvers?: () => unknown };
promiseStatics.withResolvers ??= () => {
  let resolve: unknown;
  let reject: unknown;
  const promise = new Promise((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
};

export interface WorkflowRunOptions extends RunPlanOptions {
  /** Makes this Task state fail (fault injection, `rmqbench run --fail-at <State>`). */
  readonly failAt?: string;
  /** Cluster configurations at the same time. @default 1 (a laptop has few cores) */
  readonly maxConcurrency?: number;
  /** Milliseconds between two polls of a running PerfTest. @default 250 */
  readonly pollMs?: number;
}

/** A fault injected by `--fail-at`: the state fails as a broken cloud call would. */
export class FaultInjectedError extends Error {
  constructor(readonly state: string) {
    super(`fault injected at ${state} (--fail-at ${state})`);
    this.name = 'FaultInjected';
  }
}

/** `State` fails every time the state runs; `State:N` only its N-th run (e.g. the second repetition). */
export function parseFailAt(failAt: string | undefined): { state: string; occurrence?: number } | undefined {
  if (failAt === undefined) return undefined;
  const match = /^([A-Za-z]+)(?::([1-9]\d*))?$/.exec(failAt);
  if (!match || !(FAULT_INJECTABLE_STATES as readonly string[]).includes(match[1]!)) {
    throw new Error(
      `--fail-at must name a Task state of the workflow, optionally with :N for its N-th run: ` +
        `${FAULT_INJECTABLE_STATES.join(', ')} (got "${failAt}")`,
    );
  }
  return match[2] ? { state: match[1]!, occurrence: Number(match[2]) } : { state: match[1]! };
}

type Json = Parameters<StateMachine['run']>[0];

/** The definition the local target executes: the one the BenchmarkController deploys, its Task resources resolved. */
export function localWorkflowDefinition(maxConcurrency = 1): StateMachineDefinition {
  return resolveResources(buildBenchmarkDefinition({ maxConcurrency })) as unknown as StateMachineDefinition;
}

/**
 * Runs a plan on the local target by executing the very workflow definition the BenchmarkController
 * deploys, with aws-local-stepfunctions and each Task state mapped to its local implementation
 * (local/tasks/): launch = start local nodes, start/check repetition = PerfTest, ingest = the shared
 * ingest into DynamoDB (Local), teardown = stop the nodes. Whatever path the execution takes, every
 * cluster is torn down before this returns.
 */
export async function runPlanWorkflow(options: WorkflowRunOptions): Promise<RunOutcome> {
  const { plan, target, runId, runDir } = options;
  const failAt = parseFailAt(options.failAt);
  mkdirSync(runDir, { recursive: true });
  // The clusters that run here, as the schedule (buildSchedule) numbers them: a cluster for the clouds only is not one.
  const groups = groupScenariosByCluster(planOnTarget(plan, 'local'));
  const prelaunch = new Prelaunch(target, groups[0]!);
  let store: ResultsStore;
  try {
    store = await options.store;
  } catch (error) {
    await prelaunch.discard();
    throw error;
  }
  const run = new LocalRun(plan, target, store, runId, runDir, options.onEvent ?? (() => undefined), prelaunch, groups);

  const entries = new Map<string, number>();
  const taskResourceLocalHandlers = Object.fromEntries(
    Object.entries(localTaskHandlers(run)).map(([state, handler]) => [
      state,
      async (payload: unknown) => {
        const entry = (entries.get(state) ?? 0) + 1;
        entries.set(state, entry);
        if (failAt?.state === state && (failAt.occurrence === undefined || failAt.occurrence === entry))
          throw new FaultInjectedError(state);
        return (await handler(payload as never)) as Json;
      },
    ]),
  );
  // Not validated on each run: aws-local-stepfunctions compiles its JSON schema for that, 0.4 CPU s while the cluster
  // boots. test/state-machines/local-definition.test.ts validates this very definition.
  const machine = new StateMachine(localWorkflowDefinition(options.maxConcurrency ?? 1), {
    validationOptions: { noValidate: true },
  });
  const input: WorkflowInput = { plan: planData(plan), target: 'local', runId };
  const pollMs = options.pollMs ?? 250;
  let executionError: string | undefined;
  try {
    await machine.run(input as unknown as Json, {
      context: {
        Execution: {
          Input: input as unknown as Json,
          Name: runId,
          Id: `local:${runId}`,
          StartTime: new Date().toISOString(),
        },
      },
      overrides: {
        taskResourceLocalHandlers,
        waitTimeOverrides: { [STATE.waitForRepetition]: pollMs, [STATE.waitForCluster]: pollMs },
        // A local cluster is ready when its nodes answer: SmokeTest's retries (for a cloud load balancer still
        // registering targets) need no wait here.
        retryIntervalOverrides: { [STATE.teardownCluster]: 100, [STATE.smokeTest]: 100 },
      },
    }).result;
  } catch (error) {
    executionError = describeExecutionError(error);
  } finally {
    await run.tearDownEverything();
  }
  return outcome(run, executionError);
}

/** The run's outcome; a failure the workflow could not record (RecordRunFailure itself failed) is recorded here. */
async function outcome(run: LocalRun, executionError: string | undefined): Promise<RunOutcome> {
  const { runId, records, runDir } = run;
  let finish = run.finish;
  if (executionError !== undefined && finish?.status !== 'FAILED') {
    const error = finish?.error ?? run.firstCause ?? executionError;
    finish = { status: 'FAILED', error };
    try {
      await run.recordFailure(error);
    } catch (storeError) {
      const message = storeError instanceof Error ? storeError.message : String(storeError);
      return {
        runId,
        status: 'FAILED',
        records,
        error:
          `${error}; also ${message} (raw output kept in ${runDir}; store it later with: rmqbench ingest ` +
          `${runDir})`,
      };
    }
  }
  if (!finish)
    return { runId, status: 'FAILED', records, error: executionError ?? 'the workflow ended without a run status' };
  return { runId, status: finish.status, records, ...(finish.error ? { error: finish.error } : {}) };
}

function describeExecutionError(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}
