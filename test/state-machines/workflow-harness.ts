import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { buildBenchmarkDefinition, resolveResources, type BenchmarkDefinition } from '../../state-machines/definition';
import {
  buildSchedule,
  type ScheduledCluster,
  type ScheduledRepetition,
  type WorkflowInput,
} from '../../state-machines/schedule';
import { STATE, type TaskStateName } from '../../state-machines/states';

/**
 * The deployed definition executed locally (aws-local-stepfunctions) with Task handlers of the test's choosing: what
 * the
 * state-machine tests share. Waits and retry intervals pass at once; the handlers decide how long things "take".
 */
type Json = Parameters<StateMachine['run']>[0];
/** One event of the execution's log (the package does not export its EventLog type). */
type EventLog = ReturnType<StateMachine['run']>['eventLogs'] extends AsyncIterable<infer Event> ? Event : never;
export type TaskHandlers = Record<TaskStateName, (event: never) => unknown>;

const refuse = (state: string, why: string) => () => {
  throw new Error(`${state} entered ${why}`);
};

/**
 * A run that goes well at once: every cluster ready on its first check, every repetition done on its first, deleted at
 * once.
 */
export function happyHandlers(): TaskHandlers {
  return {
    [STATE.validatePlan]: (event: { input: WorkflowInput; executionName: string }) =>
      buildSchedule(event.input, event.executionName),
    [STATE.recordRunStart]: () => ({}),
    [STATE.launchCluster]: (event: { cluster: ScheduledCluster }) => ({
      clusterId: event.cluster.clusterId,
      readyBy: '2030-01-01T00:00:00.000Z',
    }),
    [STATE.checkClusterReady]: () => ({ ready: true, status: 'CREATE_COMPLETE', outputs: {} }),
    [STATE.smokeTest]: () => ({ roundTripMs: 1 }),
    [STATE.startRepetition]: () => ({
      commandId: 'c',
      instanceId: 'i',
      startedAt: '2025-01-01T00:31:00.000Z',
      perfTestArgs: [],
      doneBy: '2030-01-01T00:00:00.000Z',
    }),
    [STATE.injectFault]: refuse(STATE.injectFault, 'for a plan without a fault'),
    [STATE.healFault]: refuse(STATE.healFault, 'for a plan without a fault'),
    // Adaptive repetitions never settle here: every repetition runs, as in the estimate's count (its maximum).
    [STATE.checkSettled]: () => ({ skip: false, reason: 'not settled' }),
    [STATE.checkRepetition]: (event: { item: ScheduledRepetition }) => ({ done: true, rawKey: event.item.rawKey }),
    [STATE.ingestRepetition]: (event: { item: ScheduledRepetition }) => ({
      scenarioId: event.item.scenarioId,
      repetition: event.item.repetition,
      status: 'SUCCEEDED',
    }),
    [STATE.rereadHostMetrics]: () => ({ reread: 0, stored: 0, stillIncomplete: 0 }),
    [STATE.teardownCluster]: () => ({ done: true }),
    [STATE.checkTeardown]: refuse(STATE.checkTeardown, 'after a teardown that was done'),
    [STATE.finishRun]: (event: { state: { clusterResults?: { failed: boolean }[] } }) =>
      event.state.clusterResults?.some((result) => result.failed)
        ? { status: 'FAILED', error: 'a cluster failed' }
        : { status: 'SUCCEEDED' },
    [STATE.recordRunFailure]: () => ({ status: 'FAILED', error: 'recorded' }),
  };
}

export interface Executed {
  readonly succeeded: boolean;
  /** Task states in the order they were entered (retries not repeated). */
  readonly tasks: string[];
  /** States entered: Step Functions' billed state transitions. */
  readonly transitions: number;
  /** The history events Step Functions would record (historyEventsOf). */
  readonly historyEvents: number;
  /** Attempts of each Task state, retries included. */
  readonly attempts: Record<string, number>;
  /** FinishRun's input, when it ran. */
  readonly finished?: { clusterResults?: { failed: boolean; state?: Record<string, unknown> }[] };
}

/**
 * Step Functions' history events for one local event
 * (https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html):
 * a Lambda Task's entry is TaskStateEntered, LambdaFunctionScheduled and LambdaFunctionStarted, its exit
 * LambdaFunctionSucceeded and TaskStateExited, each retry LambdaFunctionFailed and the next Scheduled and Started, a
 * failure LambdaFunctionFailed; a Map state's entry MapStateEntered and MapStateStarted, its exit MapStateSucceeded and
 * MapStateExited; a Map iteration's start and end one event each; any other state's entry and exit one each.
 */
export function historyEventsOf(event: EventLog): number {
  switch (event.type) {
    case 'StateEntered':
      return event.state.type === 'Task' || event.state.type === 'Map' ? (event.state.type === 'Task' ? 3 : 2) : 1;
    case 'StateExited':
      return event.state.type === 'Task' || event.state.type === 'Map' ? 2 : 1;
    case 'StateRetried':
      return 3;
    case 'StateFailed':
      return event.state.type === 'Task' ? 1 : 0;
    case 'StateCaught':
      return 0;
    default:
      // ExecutionStarted, ExecutionSucceeded/Failed, MapIterationStarted/Succeeded/Failed.
      return 1;
  }
}

export interface ExecuteOptions {
  readonly definition?: BenchmarkDefinition;
  /** Retry intervals pass at once unless a test wants them (a retry's back-off is the definition's). */
  readonly retryIntervalsMs?: Partial<Record<string, number>>;
}

/** Runs the definition on `input` with `handlers` over happyHandlers(); counts what Step Functions would count. */
export async function executeWorkflow(
  input: WorkflowInput,
  handlers: Partial<TaskHandlers> = {},
  options: ExecuteOptions = {},
): Promise<Executed> {
  const merged: TaskHandlers = { ...happyHandlers(), ...handlers };
  const attempts: Record<string, number> = {};
  let finished: Executed['finished'];
  const local = Object.fromEntries(
    Object.entries(merged).map(([name, handler]) => [
      name,
      async (event: Json) => {
        attempts[name] = (attempts[name] ?? 0) + 1;
        if (name === STATE.finishRun) finished = (event as { state: Executed['finished'] }).state;
        return (await handler(event as never)) as Json;
      },
    ]),
  );
  const definition = options.definition ?? resolveResources(buildBenchmarkDefinition({ maxConcurrency: 1 }));
  const machine = new StateMachine(definition as unknown as StateMachineDefinition);
  const zeroRetries = Object.fromEntries(Object.keys(merged).map((name) => [name, 0]));
  const execution = machine.run(input as unknown as Json, {
    context: {
      Execution: {
        Input: input as unknown as Json,
        Name: 'harness',
        Id: 'local:harness',
        StartTime: '2025-01-01T00:00:00.000Z',
      },
    },
    overrides: {
      taskResourceLocalHandlers: local,
      waitTimeOverrides: Object.fromEntries(
        [
          STATE.waitForCluster,
          STATE.waitForRepetition,
          STATE.pauseBetweenRepetitions,
          STATE.waitForLateMetrics,
          STATE.waitForTeardown,
          STATE.waitForFault,
          STATE.waitForHeal,
        ].map((state) => [state, 0]),
      ),
      retryIntervalOverrides: { ...zeroRetries, ...(options.retryIntervalsMs as Record<string, number> | undefined) },
    },
  });
  const tasks: string[] = [];
  let transitions = 0;
  let historyEvents = 0;
  const collect = (async () => {
    for await (const event of execution.eventLogs) {
      historyEvents += historyEventsOf(event);
      if (event.type !== 'StateEntered') continue;
      transitions++;
      if (event.state.type === 'Task') tasks.push(event.state.name);
    }
  })();
  const succeeded = await execution.result.then(
    () => true,
    () => false,
  );
  await collect;
  return { succeeded, tasks, transitions, historyEvents, attempts, ...(finished ? { finished } : {}) };
}
