import { createInterface } from 'node:readline/promises';
import { DescribeStacksCommand, type CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  DescribeExecutionCommand,
  ListExecutionsCommand,
  StartExecutionCommand,
  StopExecutionCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import type { PriceCatalog } from '../core/cost/cost-catalog';
import type { Plan } from '../core/plan/plan';
import { aggregateRun, renderMarkdownReport } from '../core/report/report';
import {
  buildSchedule,
  executionInput,
  runIdFor,
  type WorkflowInput,
  type WorkflowSchedule,
} from '../state-machines/schedule';
import type { ResultsStore } from '../store/results-store';
import { followExecution, type ClusterReadiness, type FollowResult } from './cloud-follow';
import type { ControllerEndpoints } from './cloud-controller';
import { estimateCommand } from './estimate-command';
import { ProgressDisplay } from './progress';

/** What a cloud run or watch prints and its exit code (as for local runs: 0, 1 failed, 3 partial, 130 interrupted). */
export interface CloudCommandResult {
  readonly exitCode: number;
  readonly stdout: string;
  /** One line for stderr when the command did not succeed. */
  readonly error?: string;
}

export interface CloudRunContext {
  readonly sfn: SFNClient;
  readonly cfn: CloudFormationClient;
  readonly store: Pick<ResultsStore, 'getRun' | 'tableName'>;
  readonly controller: ControllerEndpoints;
  readonly json: boolean;
  /** Progress lines (stderr). */
  readonly progress: NodeJS.WriteStream;
  /** @default 10000 */
  readonly pollMs?: number;
  /** Ctrl-C: aborts following; `askToStop` then decides whether the execution is stopped. */
  readonly interrupted?: AbortSignal;
  /** Asks "stop the execution? [y/N]" (on a terminal); undefined: not a terminal, the execution keeps running. */
  readonly askToStop?: () => Promise<boolean>;
}

/**
 * Step Functions execution names allow 1-80 characters without whitespace, brackets, wildcards or `"#%\^|~`$&,;:/`
 * (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html, name); rmqbench run ids are
 * `<plan>-<UTC stamp>-<hex>` and plan names letters, digits and dashes, so the run id itself is the name.
 */
export function executionNameFor(runId: string): string {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(runId)) {
    throw new Error(`run id "${runId}" cannot name a Step Functions execution: use 1-80 letters, digits, "-" or "_"`);
  }
  return runId;
}

/**
 * The estimate, printed before anything is started, and the budget check (`--max-cost`, the plan's `maxCostUsd`):
 * the same code as `rmqbench estimate`.
 */
export function checkBudget(
  plan: Plan,
  target: 'aws' | 'azure',
  catalog: PriceCatalog,
  maxCost: string | undefined,
  region: string | undefined,
) {
  return estimateCommand([plan], {
    target,
    json: false,
    catalog,
    ...(maxCost === undefined ? {} : { maxCost }),
    ...(region ? { region } : {}),
  });
}

/** StartExecution with the same input `execution-input` prints, named after the run id. */
export async function startCloudRun(
  sfn: SFNClient,
  stateMachineArn: string,
  plan: Plan,
  target: 'aws' | 'azure',
  runId: string,
) {
  const input = executionInput(plan, target, runId);
  const name = executionNameFor(runId);
  // Validates and lays the run out as ValidatePlan will, before anything is started.
  const schedule = buildSchedule(input, name);
  const started = await sfn.send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }));
  return { executionArn: started.executionArn!, schedule };
}

/**
 * The execution of a run: first the execution named after the run id (an execution ARN is the state machine's with
 * `execution:<name>`: https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsstepfunctions.html,
 * resource type execution), else one whose run id is `<plan>-<execution name>` (scheduled runs, started without a
 * runId).
 */
export async function findExecution(
  sfn: SFNClient,
  stateMachineArn: string,
  runId: string,
): Promise<{ executionArn: string; schedule: WorkflowSchedule }> {
  const describe = async (executionArn: string) => {
    const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    const input = JSON.parse(execution.input ?? '{}') as WorkflowInput;
    return { executionArn, name: execution.name!, input };
  };
  const byName = stateMachineArn.replace(':stateMachine:', ':execution:') + `:${runId}`;
  const candidates: string[] = [];
  if (/^[A-Za-z0-9_-]{1,80}$/.test(runId)) candidates.push(byName);
  let token: string | undefined;
  do {
    const page = await sfn.send(new ListExecutionsCommand({ stateMachineArn, nextToken: token }));
    for (const execution of page.executions ?? []) {
      if (execution.name && execution.executionArn !== byName && runId.endsWith(`-${execution.name}`))
        candidates.push(execution.executionArn!);
    }
    token = page.nextToken;
  } while (token);
  for (const executionArn of candidates) {
    let found;
    try {
      found = await describe(executionArn);
    } catch (error) {
      if ((error as Error).name === 'ExecutionDoesNotExist') continue;
      throw error;
    }
    if (runIdFor(found.input, found.name) === runId)
      return { executionArn, schedule: buildSchedule(found.input, found.name) };
  }
  throw new Error(
    `no execution of ${stateMachineArn} has run id "${runId}" (rmqbench run names executions after their run ` +
      `id; see rmqbench runs --store aws)`,
  );
}

/** The AWS clusters' readiness from their stacks (CREATE_COMPLETE: every node signalled its boot). */
export function awsClusterReadiness(cfn: CloudFormationClient): ClusterReadiness {
  return async (clusterId) => {
    let status: string | undefined;
    try {
      status = (await cfn.send(new DescribeStacksCommand({ StackName: clusterId }))).Stacks?.[0]?.StackStatus;
    } catch (error) {
      if (/does not exist/.test((error as Error).message)) return 'absent';
      throw error;
    }
    if (status === 'CREATE_IN_PROGRESS') return 'launching';
    if (status === 'CREATE_COMPLETE' || status === 'UPDATE_COMPLETE') return 'ready';
    return undefined;
  };
}

/**
 * What happens to a stopped execution's clusters, as the BenchmarkController deploys it (cdk/BenchmarkController.ts).
 */
export const STOPPED_TEARDOWN =
  "the controller's failure rule (EventBridge, Step Functions status ABORTED) runs its failure handler, which " +
  "deletes the run's stacks (and Azure resource groups) and records the run FAILED; " +
  'whatever outlives its expiry tag is deleted by the hourly sweeper';

/** Follows a started (or found) execution, printing progress, and turns its end into the CLI's output and exit code. */
export async function followCloudRun(
  context: CloudRunContext,
  executionArn: string,
  schedule: WorkflowSchedule,
  target: string,
): Promise<CloudCommandResult> {
  const display = new ProgressDisplay(context.progress);
  const raw = context.controller.bucketName
    ? `s3://${context.controller.bucketName}/runs/${schedule.runId}/`
    : `the controller's bucket under runs/${schedule.runId}/`;
  display.handle({ type: 'run-started', runId: schedule.runId, runDir: raw, plannedSeconds: schedule.plannedSeconds });
  const result = await followExecution({
    sfn: context.sfn,
    store: context.store,
    executionArn,
    schedule,
    onEvent: (event) => display.handle(event),
    ...(target === 'aws' ? { clusterReady: awsClusterReadiness(context.cfn) } : {}),
    ...(context.pollMs === undefined ? {} : { pollMs: context.pollMs }),
    ...(context.interrupted ? { signal: context.interrupted } : {}),
  });
  display.finish();
  if (result.status === 'RUNNING') return interrupted(context, executionArn, schedule.runId);
  return cloudOutcome(context, executionArn, schedule.runId, result);
}

async function interrupted(context: CloudRunContext, executionArn: string, runId: string): Promise<CloudCommandResult> {
  const stop = context.askToStop ? await context.askToStop() : false;
  if (!stop) {
    return {
      exitCode: 130,
      stdout: '',
      error:
        `stopped following; execution ${executionArn} keeps running: rmqbench watch ${runId} follows it again, ` +
        `aws stepfunctions stop-execution --execution-arn ${executionArn} stops it`,
    };
  }
  await context.sfn.send(
    new StopExecutionCommand({ executionArn, error: 'Interrupted', cause: 'stopped from rmqbench (Ctrl-C)' }),
  );
  return { exitCode: 130, stdout: '', error: `stopped execution ${executionArn}: ${STOPPED_TEARDOWN}` };
}

/** Exit codes as for local runs: 0 succeeded, 3 some repetitions failed, 1 the run or the execution failed. */
export function cloudOutcome(
  context: Pick<CloudRunContext, 'json' | 'store'>,
  executionArn: string,
  runId: string,
  result: FollowResult,
): CloudCommandResult {
  const stored = result.stored;
  const runStatus = stored?.run.status;
  const stdout = context.json
    ? `${JSON.stringify(
        {
          runId,
          executionArn,
          executionStatus: result.status,
          status: runStatus ?? 'UNKNOWN',
          ...(result.error ? { error: result.error } : {}),
          report: stored ? aggregateRun(stored.run, stored.repetitions) : undefined,
        },
        null,
        2,
      )}\n`
    : stored
      ? renderMarkdownReport(stored.run, stored.repetitions)
      : '';
  if (result.status !== 'SUCCEEDED') {
    const why = stored?.run.error ?? result.error ?? 'no error recorded';
    return { exitCode: 1, stdout, error: `run ${runId} failed: execution ${result.status}: ${why}` };
  }
  if (!stored)
    return {
      exitCode: 1,
      stdout,
      error: `execution ${executionArn} succeeded but run ${runId} is not in table ${context.store.tableName}`,
    };
  if (runStatus === 'PARTIAL') {
    const failed = stored.repetitions.filter((rep) => rep.status === 'FAILED').length;
    return {
      exitCode: 3,
      stdout,
      error:
        `run ${runId} finished with ${failed} failed repetition(s) of ${stored.repetitions.length}; see the ` +
        `report above`,
    };
  }
  if (runStatus !== 'SUCCEEDED')
    return {
      exitCode: 1,
      stdout,
      error: `run ${runId} ended ${runStatus}: ${stored.run.error ?? 'no repetition succeeded'}`,
    };
  return { exitCode: 0, stdout };
}

/** "stop the execution? [y/N]" on the terminal; a second Ctrl-C (or end of input) answers no. */
export async function askOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const cancelled = new AbortController();
  // Without a listener readline would only pause on ^C and the question would never be answered.
  rl.on('SIGINT', () => cancelled.abort());
  rl.on('close', () => cancelled.abort());
  try {
    return /^y(es)?$/i.test((await rl.question(question, { signal: cancelled.signal })).trim());
  } catch (error) {
    if ((error as Error).name === 'AbortError') return false;
    throw error;
  } finally {
    rl.close();
  }
}
