import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ResultsStore } from '../../store/results-store';
import { deleteStack, stacksOfRun } from '../shared/aws-cluster';
import type { AzureClients } from '../shared/azure-cluster';

// Value imports of azure-cluster are dynamic: the Azure SDK stays out of what an AWS invocation loads
// (scripts/bundle-lambdas.mjs).
const azureCluster = () => import('../shared/azure-cluster');

export interface ExecutionStatusChange {
  /**
   * EventBridge's "Step Functions Execution Status Change" detail; stopDate is when the execution ended, in epoch
   * milliseconds (https://docs.aws.amazon.com/step-functions/latest/dg/cw-events.html).
   */
  readonly detail: {
    readonly name: string;
    readonly status: string;
    readonly input?: string;
    readonly cause?: string;
    readonly stopDate?: number;
  };
}

/** The window in which a launch that was under way when the execution ended can still create a stack or group. */
export interface InFlightLaunches {
  /**
   * Milliseconds a LaunchCluster invocation can run: stopping an execution does not stop a Lambda invocation it
   * started, so a CreateStack (or resource group) may land up to that long after the execution ended. 0: not waited
   * for.
   */
  readonly launchDeadlineMs: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly clock?: () => number;
}

/** Margin beyond the launch function's timeout: the invocation's last call reaching CloudFormation or ARM. */
const IN_FLIGHT_MARGIN_MS = 10_000;

/**
 * Safety net for FAILED / TIMED_OUT / ABORTED executions: tears down the run's stacks (and, when the controller has
 * Azure, its resource groups) and records the run FAILED (keeping an error already recorded). A launch still running
 * when the execution ended may create its stack after the first listing: once the launch function's deadline has
 * passed (counted from the execution's end), the run's stacks and groups are listed and deleted again.
 */
export async function handleFailedExecution(
  cfn: CloudFormationClient,
  store: ResultsStore,
  roleArn: string,
  event: ExecutionStatusChange,
  now = () => new Date().toISOString(),
  azure?: AzureClients,
  inFlight: InFlightLaunches = { launchDeadlineMs: 0 },
) {
  const input = JSON.parse(event.detail.input ?? '{}') as { runId?: string; plan?: { name?: string } };
  const runId = input.runId ?? `${input.plan?.name ?? 'plan'}-${event.detail.name}`;
  const clock = inFlight.clock ?? Date.now;
  const deleted = await deleteRunClusters(cfn, roleArn, runId, azure);
  const stored = await store.getRun(runId);
  if (stored && (stored.run.status === 'RUNNING' || !stored.run.error)) {
    await store.finishRun(
      runId,
      'FAILED',
      now(),
      stored.run.error ?? `execution ${event.detail.status}${event.detail.cause ? `: ${event.detail.cause}` : ''}`,
    );
  }
  if (inFlight.launchDeadlineMs > 0) {
    const wait = (event.detail.stopDate ?? clock()) + inFlight.launchDeadlineMs + IN_FLIGHT_MARGIN_MS - clock();
    if (wait > 0) await (inFlight.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms))))(wait);
    const late = await deleteRunClusters(cfn, roleArn, runId, azure);
    deleted.stacks.push(...late.stacks.filter((stack) => !deleted.stacks.includes(stack)));
    if (deleted.groups && late.groups)
      deleted.groups.push(...late.groups.filter((group) => !deleted.groups!.includes(group)));
  }
  return { runId, deleted: deleted.stacks, ...(deleted.groups ? { deletedResourceGroups: deleted.groups } : {}) };
}

/** Deletes every stack (and resource group) of the run that is not already being deleted. */
async function deleteRunClusters(cfn: CloudFormationClient, roleArn: string, runId: string, azure?: AzureClients) {
  const stacks = await stacksOfRun(cfn, runId);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  const groups = azure
    ? await deleteGroups(azure, await (await azureCluster()).resourceGroupsOfRun(azure, runId))
    : undefined;
  return { stacks, groups };
}

/**
 * Starts the deletion of each group and waits a few seconds for it (ARM finishes a deletion it has
 * accepted; the hourly sweeper catches one that did not start).
 */
export async function deleteGroups(
  azure: AzureClients,
  names: string[],
  waitMs = 5_000,
  updateIntervalInMs?: number,
): Promise<string[]> {
  const { deleteResourceGroup } = await azureCluster();
  for (const name of names) await deleteResourceGroup(azure, name, waitMs, updateIntervalInMs);
  return names;
}
