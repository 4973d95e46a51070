/**
 * Step Functions for the twin: an execution that StartExecution records in moto runs here instead, with
 * aws-local-stepfunctions, from the definition moto holds (the template's DefinitionString with its
 * DefinitionSubstitutions resolved by CloudFormation). Every Task's Lambda resource is invoked through the twin's
 * Lambda Invoke with the state machine role's credentials, so that its lambda:InvokeFunction grant is checked. A
 * Lambda error reaches Retry and Catch as Step Functions presents it: the error name is the function's errorType,
 * the cause Lambda's JSON error object (Step Functions developer guide, "Handling errors in Lambda tasks").
 * The polling waits are shortened (TWIN_POLLING_WAITS_MS): they only set how often a state is checked, and the twin
 * models neither the clouds' boot times nor Azure Monitor's ingestion delay (WaitForLateMetrics, 180 s in the
 * definition, waits for the latter). The waits that mean something pass in real time, as in the cloud: a fault's and
 * its healing's time on PerfTest's clock (WaitForFault, WaitForHeal) and the plan's pause between repetitions.
 */
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { STATE } from '../../state-machines/states';

/**
 * The polling Wait states and how long each waits in the twin (milliseconds; aws-local-stepfunctions'
 * `waitTimeOverrides`). TWIN_REAL_WAITS=1 in the twin's environment keeps the definition's own.
 */
export const TWIN_POLLING_WAITS_MS: Readonly<Record<string, number>> = {
  [STATE.waitForCluster]: 3_000,
  [STATE.waitForRepetition]: 5_000,
  [STATE.waitForLateMetrics]: 1_000,
  // One poll a second finds a deleted stack gone sooner; each is one short function process.
  [STATE.waitForTeardown]: 1_000,
};

type Json = Parameters<StateMachine['run']>[0];

export interface ExecutionRecord {
  status: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'ABORTED';
  stopDate?: Date;
  output?: string;
  error?: string;
  cause?: string;
  /** Task states entered, in order. */
  readonly tasks: string[];
  abort?: () => void;
  readonly done: Promise<void>;
}

export type LambdaInvoker = (
  functionArn: string,
  payload: unknown,
) => Promise<{ ok: true; payload: unknown } | { ok: false; errorType: string; errorMessage: string }>;

interface AslState {
  Type: string;
  Resource?: string;
  Seconds?: number;
  ItemProcessor?: { States: Record<string, AslState> };
  Iterator?: { States: Record<string, AslState> };
}

function taskResources(states: Record<string, AslState>, found: Record<string, string> = {}): Record<string, string> {
  for (const [name, state] of Object.entries(states)) {
    if (state.Type === 'Task' && state.Resource?.startsWith('arn:aws:lambda:')) found[name] = state.Resource;
    const nested = state.ItemProcessor ?? state.Iterator;
    if (nested) taskResources(nested.States, found);
  }
  return found;
}

export class LocalExecutions {
  readonly executions = new Map<string, ExecutionRecord>();

  constructor(private readonly options: { readonly onTask?: (execution: string, state: string) => void } = {}) {}

  /** Starts `executionArn` of a machine whose `definition` is given; invokes tasks through `invoke`. */
  start(
    executionArn: string,
    stateMachineArn: string,
    definitionText: string,
    input: string,
    invoke: LambdaInvoker,
  ): ExecutionRecord {
    const definition = JSON.parse(definitionText) as { States: Record<string, AslState> };
    const resources = taskResources(definition.States);
    const tasks: string[] = [];
    const handlers = Object.fromEntries(
      Object.entries(resources).map(([state, arn]) => [
        state,
        async (event: Json) => {
          const answer = await invoke(arn, event).catch((error: Error) => {
            this.options.onTask?.(name, `${state} could not be invoked: ${error.stack ?? error.message}`);
            throw error;
          });
          if (answer.ok) return answer.payload as Json;
          const error = new Error(
            JSON.stringify({ errorType: answer.errorType, errorMessage: answer.errorMessage, trace: [] }),
          );
          error.name = answer.errorType;
          throw error;
        },
      ]),
    );
    const machine = new StateMachine(definition as unknown as StateMachineDefinition);
    const name = executionArn.split(':').pop()!;
    const startTime = new Date().toISOString();
    const parsedInput = JSON.parse(input) as Json;
    const run = machine.run(parsedInput, {
      context: {
        Execution: { Id: executionArn, Name: name, Input: parsedInput, StartTime: startTime, RoleArn: '' },
        StateMachine: { Id: stateMachineArn, Name: stateMachineArn.split(':').pop()! },
      },
      overrides: {
        taskResourceLocalHandlers: handlers,
        ...(process.env['TWIN_REAL_WAITS'] === '1' ? {} : { waitTimeOverrides: { ...TWIN_POLLING_WAITS_MS } }),
      },
    });
    const record: ExecutionRecord = { status: 'RUNNING', tasks, abort: () => run.abort(), done: Promise.resolve() };
    const collect = (async () => {
      for await (const event of run.eventLogs) {
        if (event.type === 'StateEntered' && event.state.type === 'Task') {
          tasks.push(event.state.name);
          this.options.onTask?.(name, event.state.name);
        }
      }
    })().catch(() => undefined);
    (record as { done: Promise<void> }).done = run.result.then(
      async (output) => {
        await collect;
        record.status = 'SUCCEEDED';
        record.output = JSON.stringify(output);
        record.stopDate = new Date();
      },
      async (error: Error) => {
        await collect;
        record.stopDate = new Date();
        if (record.status === 'ABORTED') return;
        record.status = 'FAILED';
        // A Fail state's Error and Cause are the thrown error's name and message (aws-local-stepfunctions
        // FailStateError).
        record.error = error.name;
        record.cause = error.message;
      },
    );
    this.executions.set(executionArn, record);
    return record;
  }

  stop(executionArn: string): void {
    const record = this.executions.get(executionArn);
    if (!record || record.status !== 'RUNNING') return;
    record.status = 'ABORTED';
    record.abort?.();
  }
}
