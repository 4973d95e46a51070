import {
  CloudFormationClient,
  DeleteStackCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  ListStacksCommand,
  type Stack,
  type StackEvent,
  type StackStatus,
} from '@aws-sdk/client-cloudformation';
import {
  DescribeInstanceInformationCommand,
  GetCommandInvocationCommand,
  SendCommandCommand,
  SSMClient,
} from '@aws-sdk/client-ssm';
import { sweepable, type CleanupCandidate, type RunStateLookup } from '../../core/cloud/cleanup';
import { loadGeneratorInstanceIds } from './aws-stack-outputs';
import { EXPIRES_AT_TAG, RUN_ID_TAG } from './env';

// What runs against a launched cluster stack (readiness, failure reasons, deletion, PerfTest over SSM). Launching,
// which
// needs the plan model (and zod with it), is in aws-launch.ts, so that the functions that only check or delete stay
// small.

/**
 * Ready once CREATE_COMPLETE and every load generator (loadGeneratorInstanceIds) is an online SSM managed instance; a
 * failed stack, or a passed
 * deadline, is an error that leads to teardown. A failed stack's error carries the first failed resource's reason from
 * its events and, when a node's boot signalled FAILURE, where that node's boot log tail is.
 */
export async function checkStack(
  cfn: CloudFormationClient,
  launch: { clusterId: string; readyBy: string },
  now = new Date(),
  ssm?: SSMClient,
) {
  const response = await cfn.send(new DescribeStacksCommand({ StackName: launch.clusterId }));
  const stack: Stack | undefined = response.Stacks?.[0];
  const status = stack?.StackStatus ?? 'UNKNOWN';
  const pastDeadline = now.getTime() > Date.parse(launch.readyBy);
  if (status === 'CREATE_COMPLETE') {
    const outputs = Object.fromEntries(
      (stack?.Outputs ?? []).map((output) => [output.OutputKey ?? '', output.OutputValue ?? '']),
    );
    for (const instanceId of loadGeneratorInstanceIds(outputs)) {
      if (!ssm) break;
      const pingStatus = await managedInstancePingStatus(ssm, instanceId);
      if (pingStatus !== 'Online') {
        const seen = pingStatus === undefined ? 'not registered with Systems Manager' : `PingStatus ${pingStatus}`;
        if (pastDeadline)
          throw new Error(
            `stack ${launch.clusterId} is ${status}, but its load generator ${instanceId} ` +
              `was not an online SSM managed instance by ${launch.readyBy} (${seen}): ` +
              `PerfTest cannot be started on it with Run Command`,
          );
        return { ready: false, status: `${status}, load generator ${instanceId} ${seen}` };
      }
    }
    return { ready: true, status, outputs };
  }
  if (status !== 'CREATE_IN_PROGRESS')
    throw new Error(
      `stack ${launch.clusterId} is ${status}: ` +
        `${await stackFailureReason(cfn, launch.clusterId, stack?.StackStatusReason)}`,
    );
  if (pastDeadline)
    throw new Error(
      `stack ${launch.clusterId} was not ready by ${launch.readyBy} (still ${status})` +
        `${await bootProgress(cfn, launch.clusterId)}`,
    );
  return { ready: false, status };
}

// The load generators' instance ids among the stack's outputs, in a module without SDK clients (IngestRepetition).
export { loadGeneratorInstanceId, loadGeneratorInstanceIds } from './aws-stack-outputs';

/**
 * The SSM agent's PingStatus for an instance (Online, ConnectionLost, Inactive), undefined while the instance has not
 * registered as a managed instance
 * (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_DescribeInstanceInformation.html,
 * InstanceInformation.PingStatus; filter key InstanceIds:
 * https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_InstanceInformationStringFilter.html).
 */
export async function managedInstancePingStatus(ssm: SSMClient, instanceId: string): Promise<string | undefined> {
  const response = await ssm.send(
    new DescribeInstanceInformationCommand({ Filters: [{ Key: 'InstanceIds', Values: [instanceId] }] }),
  );
  return response.InstanceInformationList?.find((info) => info.InstanceId === instanceId)?.PingStatus;
}

/** At most this many pages of stack events are read for a failure reason (a cluster stack has a few dozen events). */
const MAX_EVENT_PAGES = 5;
/**
 * A boot signal's event reason, e.g. "Received FAILURE signal with UniqueId i-0abc" (the node script passes its
 * instance id as unique id).
 */
const BOOT_SIGNAL = /Received (SUCCESS|FAILURE) signal with UniqueId (\S+)/;

/**
 * A stack's events, oldest first (DescribeStackEvents answers newest first,
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStackEvents.html).
 */
async function stackEventsOldestFirst(cfn: CloudFormationClient, stackName: string): Promise<StackEvent[]> {
  const events: StackEvent[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await cfn.send(new DescribeStackEventsCommand({ StackName: stackName, NextToken: token }));
    events.push(...(page.StackEvents ?? []));
    token = page.NextToken;
  } while (token && ++pages < MAX_EVENT_PAGES);
  return events.reverse();
}

/**
 * The instances that signalled the boot result, and the retained boot log group (an AWS::Logs::LogGroup of the stack,
 * streams `<instance id>/boot`, see cdk/RabbitMqCluster.ts).
 */
function bootReport(events: readonly StackEvent[]) {
  const signalled = (result: string) => [
    ...new Set(
      events
        .map((event) => BOOT_SIGNAL.exec(event.ResourceStatusReason ?? ''))
        .filter((match) => match?.[1] === result)
        .map((match) => match![2]!),
    ),
  ];
  const logGroup = events.find(
    (event) => event.ResourceType === 'AWS::Logs::LogGroup' && event.PhysicalResourceId,
  )?.PhysicalResourceId;
  const streams = (ids: readonly string[]) =>
    `stream${ids.length > 1 ? 's' : ''} ${ids.map((id) => `${id}/boot`).join(', ')}`;
  return { succeeded: signalled('SUCCESS'), failed: signalled('FAILURE'), logGroup, streams };
}

/**
 * Why a stack failed, from its events: the oldest *_FAILED event that is not a cancellation caused by another failure,
 * the instances whose boot signalled FAILURE and where their boot log tails are.
 */
export async function stackFailureReason(
  cfn: CloudFormationClient,
  stackName: string,
  statusReason?: string,
  bootLogTail: BootLogTail = readBootLogTail,
): Promise<string> {
  let events: StackEvent[];
  try {
    events = await stackEventsOldestFirst(cfn, stackName);
  } catch (error) {
    return `${statusReason ?? 'no reason given'} (its events could not be read: ${(error as Error).message})`;
  }
  const failed = events.filter(
    (event) => event.ResourceStatus?.endsWith('_FAILED') && event.LogicalResourceId !== stackName,
  );
  const first = failed.find((event) => !/cancel/i.test(event.ResourceStatusReason ?? '')) ?? failed[0];
  const parts = [
    first
      ? `first failed resource ${first.LogicalResourceId} (${first.ResourceType}) ${first.ResourceStatus}: ` +
        `${first.ResourceStatusReason ?? 'no reason given'}`
      : (statusReason ?? 'no reason given'),
  ];
  const boot = bootReport(events);
  if (boot.failed.length > 0) {
    parts.push(
      `boot FAILURE signalled by ${boot.failed.join(', ')}` +
        `${
          boot.logGroup ? `; boot log tail in CloudWatch Logs group ${boot.logGroup}, ${boot.streams(boot.failed)}` : ''
        }`,
    );
    // The first failing node's last boot lines, as its exit trap shipped them, so that the run's error says what
    // failed.
    if (boot.logGroup) parts.push(await bootLogTail(boot.logGroup, `${boot.failed[0]}/boot`));
  } else if (boot.logGroup) {
    parts.push(`node boot logs in CloudWatch Logs group ${boot.logGroup}`);
  }
  return parts.join('; ');
}

/**
 * Reads the last lines of a node's boot log stream, as text for the run's error (never throws: a read failure is named
 * instead).
 */
export type BootLogTail = (logGroupName: string, logStreamName: string) => Promise<string>;

/** Lines of a failed node's boot log that go into the run's error, and the characters they may take. */
const BOOT_LOG_TAIL_LINES = 15;
const BOOT_LOG_TAIL_CHARS = 2000;

/**
 * GetLogEvents with startFromHead false returns the newest events
 * (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetLogEvents.html). The Logs client is
 * loaded
 * only here, on the failure path, so that it is a chunk of its own outside what every CheckClusterReady call loads.
 */
export const readBootLogTail: BootLogTail = async (logGroupName, logStreamName) => {
  try {
    const { CloudWatchLogsClient, GetLogEventsCommand } = await import('@aws-sdk/client-cloudwatch-logs');
    const response = await new CloudWatchLogsClient({}).send(
      new GetLogEventsCommand({ logGroupName, logStreamName, limit: BOOT_LOG_TAIL_LINES, startFromHead: false }),
    );
    return formatBootLogTail(
      logStreamName,
      (response.events ?? []).map((event) => event.message ?? ''),
    );
  } catch (error) {
    return `its boot log tail could not be read (${(error as Error).name}: ${(error as Error).message})`;
  }
};

export function formatBootLogTail(logStreamName: string, lines: readonly string[]): string {
  if (lines.length === 0) return `boot log ${logStreamName} is empty`;
  const text = lines.map((line) => line.trimEnd()).join(' | ');
  return (
    `last boot log lines of ${logStreamName}: ` +
    `${text.length > BOOT_LOG_TAIL_CHARS ? `…${text.slice(-BOOT_LOG_TAIL_CHARS)}` : text}`
  );
}

/**
 * For a stack still creating at the deadline: which nodes have signalled their boot so far, and where the boot logs
 * are.
 */
async function bootProgress(cfn: CloudFormationClient, stackName: string): Promise<string> {
  try {
    const boot = bootReport(await stackEventsOldestFirst(cfn, stackName));
    const signalled = [...boot.succeeded.map((id) => `${id} SUCCESS`), ...boot.failed.map((id) => `${id} FAILURE`)];
    return (
      `; boot signals so far: ${signalled.length > 0 ? signalled.join(', ') : 'none'}` +
      `${boot.logGroup ? `; node boot logs in CloudWatch Logs group ${boot.logGroup}` : ''}`
    );
  } catch (error) {
    return ` (its events could not be read: ${(error as Error).message})`;
  }
}

/**
 * Without a role ARN (`rmqbench cleanup` with the user's credentials) CloudFormation deletes with the role the stack
 * was created with (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DeleteStack.html, RoleARN).
 */
export async function deleteStack(
  cfn: CloudFormationClient,
  roleArn: string | undefined,
  clusterId: string,
): Promise<void> {
  await cfn.send(new DeleteStackCommand({ StackName: clusterId, ...(roleArn ? { RoleARN: roleArn } : {}) }));
}

/**
 * Every stack status except DELETE_COMPLETE: ListStacks filters by status on the server
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_ListStacks.html, StackStatusFilter), and a
 * deleted stack needs nothing more.
 */
const LIVE_STACK_STATUSES: StackStatus[] = [
  'CREATE_IN_PROGRESS',
  'CREATE_FAILED',
  'CREATE_COMPLETE',
  'ROLLBACK_IN_PROGRESS',
  'ROLLBACK_FAILED',
  'ROLLBACK_COMPLETE',
  'DELETE_IN_PROGRESS',
  'DELETE_FAILED',
  'UPDATE_IN_PROGRESS',
  'UPDATE_COMPLETE_CLEANUP_IN_PROGRESS',
  'UPDATE_COMPLETE',
  'UPDATE_FAILED',
  'UPDATE_ROLLBACK_IN_PROGRESS',
  'UPDATE_ROLLBACK_FAILED',
  'UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS',
  'UPDATE_ROLLBACK_COMPLETE',
  'REVIEW_IN_PROGRESS',
  'IMPORT_IN_PROGRESS',
  'IMPORT_COMPLETE',
  'IMPORT_ROLLBACK_IN_PROGRESS',
  'IMPORT_ROLLBACK_FAILED',
  'IMPORT_ROLLBACK_COMPLETE',
];

/**
 * This controller's live stacks (name prefix), with their tags. ListStacks pages summaries (no tags) of the account's
 * stacks; only those with the prefix are described, by name, instead of paging DescribeStacks over every stack in the
 * account (its quota is shared with every other caller of the account: throttling).
 */
export async function controllerStacks(cfn: CloudFormationClient, prefix: string): Promise<Stack[]> {
  const names: string[] = [];
  let token: string | undefined;
  do {
    const page = await cfn.send(new ListStacksCommand({ NextToken: token, StackStatusFilter: LIVE_STACK_STATUSES }));
    for (const summary of page.StackSummaries ?? []) {
      if (summary.StackName?.startsWith(prefix) && summary.StackStatus !== 'DELETE_COMPLETE')
        names.push(summary.StackId ?? summary.StackName);
    }
    token = page.NextToken;
  } while (token);
  const stacks: Stack[] = [];
  for (const name of names) {
    try {
      stacks.push(...((await cfn.send(new DescribeStacksCommand({ StackName: name }))).Stacks ?? []));
    } catch (error) {
      // Deleted between the two calls: nothing left to do for it.
      if (!/does not exist/.test((error as Error).message)) throw error;
    }
  }
  return stacks;
}

/** A stack the sweeper handles: expired, and either still standing or left DELETE_FAILED by an earlier deletion. */
export interface ExpiredStack {
  readonly name: string;
  readonly status: string;
  readonly statusReason?: string;
}

/**
 * Stacks of this controller (name prefix) whose expiry tag has passed: the hourly sweeper deletes them. A stack in
 * DELETE_FAILED is included (its deletion is retried); one being deleted is not.
 */
export async function expiredStacks(
  cfn: CloudFormationClient,
  prefix: string,
  now = new Date(),
  runStateOf?: RunStateLookup,
): Promise<ExpiredStack[]> {
  return (await sweepable(await controllerStacks(cfn, prefix), stackCandidate, now, runStateOf)).map((stack) => ({
    name: stack.StackName!,
    status: stack.StackStatus ?? 'UNKNOWN',
    ...(stack.StackStatusReason ? { statusReason: stack.StackStatusReason } : {}),
  }));
}

/** A stack as the shared clean-up rule (core/cloud/cleanup.ts) sees it: its run and expiry tags, age and status. */
export function stackCandidate(stack: Stack): CleanupCandidate {
  const tag = (key: string) => stack.Tags?.find((candidate) => candidate.Key === key)?.Value;
  const runId = tag(RUN_ID_TAG);
  const expiresAt = tag(EXPIRES_AT_TAG);
  return {
    kind: 'stack',
    name: stack.StackName!,
    ...(runId ? { runId } : {}),
    ...(expiresAt ? { expiresAt } : {}),
    ...(stack.CreationTime ? { createdAt: new Date(stack.CreationTime).toISOString() } : {}),
    ...(stack.StackStatus ? { state: stack.StackStatus } : {}),
    beingDeleted: stack.StackStatus === 'DELETE_IN_PROGRESS' || stack.StackStatus === 'DELETE_COMPLETE',
  };
}

/**
 * Stacks launched for one run (the failure rule tears them down): this controller's stacks with the run's tag, not
 * being deleted.
 */
export async function stacksOfRun(cfn: CloudFormationClient, runId: string, prefix = 'rmqbench-'): Promise<string[]> {
  return (await controllerStacks(cfn, prefix))
    .filter(
      (stack) =>
        stack.Tags?.some((tag) => tag.Key === RUN_ID_TAG && tag.Value === runId) &&
        stack.StackStatus !== 'DELETE_IN_PROGRESS' &&
        stack.StackStatus !== 'DELETE_COMPLETE',
    )
    .map((stack) => stack.StackName!);
}

/** How StartRepetition retries SendCommand while the load generator is not (yet) a managed instance. */
export interface SendRetry {
  /** Give up (with the cause) once the next attempt would start after this. */
  readonly until: Date;
  /** First back-off in ms, doubled per attempt up to maxDelayMs. @default 2000 */
  readonly initialDelayMs?: number;
  /** @default 30000 */
  readonly maxDelayMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => Date;
}

const errorName = (error: unknown) => (error as { name?: string } | undefined)?.name ?? '';

/**
 * Starts PerfTest on the load generator with SSM Run Command (AWS-RunShellScript); its script uploads the output to S3.
 * SendCommand answers InvalidInstanceId while the instance's SSM agent has not registered yet
 * (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_SendCommand.html, Errors): that is retried with
 * exponential back-off until `retry.until`, then fails naming the instance and the cause.
 */
/**
 * SendCommand refuses a command whose document with its parameters exceeds 64 KB (MaxDocumentSizeExceeded: "The size
 * limit of a document is 64 KB", https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_SendCommand.html,
 * Errors). The run scripts stay far below it (about 12 KB with the lost-message verifier); the check names the cause
 * before a cluster's time is spent on a refused command.
 */
export const SSM_COMMAND_SIZE_LIMIT_BYTES = 64 * 1024;

export async function startPerfTest(
  ssm: SSMClient,
  instanceId: string,
  script: string,
  timeoutSeconds: number,
  retry?: SendRetry,
) {
  const bytes = Buffer.byteLength(script, 'utf8');
  if (bytes > SSM_COMMAND_SIZE_LIMIT_BYTES - 1024) {
    throw new Error(
      `the load generator's run script is ${bytes} bytes, ` +
        `too close to SendCommand's 64 KB document limit (MaxDocumentSizeExceeded); nothing was sent`,
    );
  }
  const sleep = retry?.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = retry?.now ?? (() => new Date());
  let delay = retry?.initialDelayMs ?? 2_000;
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await ssm.send(
        new SendCommandCommand({
          InstanceIds: [instanceId],
          DocumentName: 'AWS-RunShellScript',
          Parameters: { commands: [script], executionTimeout: [String(timeoutSeconds)] },
          TimeoutSeconds: 60,
        }),
      );
      return { commandId: response.Command?.CommandId ?? '', instanceId };
    } catch (error) {
      if (errorName(error) !== 'InvalidInstanceId' || !retry) throw error;
      if (now().getTime() + delay > retry.until.getTime()) {
        throw new Error(
          `SendCommand to the load generator ${instanceId} still failed with InvalidInstanceId ` +
            `after ${attempt} attempts (until ${retry.until.toISOString()}): ` +
            `its SSM agent is not registered and online, so PerfTest cannot start (${(error as Error).message})`,
        );
      }
      await sleep(delay);
      delay = Math.min(delay * 2, retry.maxDelayMs ?? 30_000);
    }
  }
}

/**
 * How long after SendCommand an InvocationDoesNotExist answer still means "not started yet" (the invocation appears
 * with a delay).
 */
export const INVOCATION_APPEARANCE_SECONDS = 120;

/**
 * The command's state on the load generator. GetCommandInvocation may answer InvocationDoesNotExist right after
 * SendCommand (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetCommandInvocation.html, Errors):
 * not started yet, until INVOCATION_APPEARANCE_SECONDS after `startedAt`, then an error with the cause.
 */
export async function perfTestState(
  ssm: SSMClient,
  started: { commandId: string; instanceId: string; startedAt?: string },
  now = new Date(),
) {
  let response;
  try {
    response = await ssm.send(
      new GetCommandInvocationCommand({ CommandId: started.commandId, InstanceId: started.instanceId }),
    );
  } catch (error) {
    if (errorName(error) !== 'InvocationDoesNotExist') throw error;
    const since = started.startedAt ? (now.getTime() - Date.parse(started.startedAt)) / 1000 : Infinity;
    if (since > INVOCATION_APPEARANCE_SECONDS) {
      throw new Error(
        `the SSM command ${started.commandId} has no invocation on the load generator ${started.instanceId} ` +
          `${Number.isFinite(since) ? `${Math.round(since)} s after SendCommand` : '(no start time recorded)'} ` +
          `(InvocationDoesNotExist): the command was not delivered`,
      );
    }
    return { done: false, status: 'NotYetVisible' };
  }
  const status = response.Status ?? 'Pending';
  if (['Pending', 'InProgress', 'Delayed'].includes(status)) return { done: false, status };
  // StandardErrorContent holds the first 8,000 characters of the script's stderr
  // (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetCommandInvocation.html).
  return { done: true, status, exitCode: response.ResponseCode ?? -1, stderr: response.StandardErrorContent ?? '' };
}
