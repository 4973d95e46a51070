import {
  CloudFormationClient,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { deleteStack } from '../shared/aws-cluster';
import type { AzureClients } from '../shared/azure-cluster';

/**
 * How long a cluster's deletion may take before the run records it as failed. A cluster stack deletes its Auto Scaling
 * group, load balancer and roles in minutes; CloudFormation waits for instances to terminate and for Lambda-managed
 * network interfaces, which can take longer. Azure deletes a resource group's resources in dependency order and retries
 * a resource's DELETE that answers 5xx, 429 or 408 for 15 minutes by default before the group's deletion fails
 * (https://learn.microsoft.com/azure/azure-resource-manager/management/delete-resource-group, "Deletion errors"): 45
 * minutes leave room for the VMs' own deletion after such retries. The margins are generous: the cost of waiting is a
 * Wait state per poll.
 */
export const TEARDOWN_DEADLINE_MINUTES = { aws: 30, azure: 45 } as const;

/** What TeardownCluster returns: whether the deletion already finished, and until when CheckTeardown waits for it. */
export interface TeardownStarted {
  readonly done: boolean;
  readonly deleteBy: string;
  /** The boot log group to delete once the stack is gone (absent when the cluster failed: its boot log is kept). */
  readonly bootLogGroup?: string;
  /** Azure: why the first deletion of the resource group failed, when it failed within TeardownCluster's wait. */
  readonly lastError?: string;
}

/** A deletion that did not finish by its deadline: the cluster counts as failed and the run's record names it. */
export class TeardownIncompleteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TeardownIncomplete';
  }
}

export function deleteByFrom(target: 'aws' | 'azure', now: Date): string {
  return new Date(now.getTime() + TEARDOWN_DEADLINE_MINUTES[target] * 60_000).toISOString();
}

/**
 * Starts deleting the stack (deleting a missing stack succeeds: a launch that failed half-way is cleaned up too). The
 * cluster's boot log group is retained by the stack (cdk/boot-log.ts: a failed boot's log must outlive a rolled-back
 * stack); unless `keepBootLogs`, its name is read from the stack's outputs first and deleted once the stack is gone.
 */
export async function startStackTeardown(
  cfn: CloudFormationClient,
  roleArn: string,
  clusterId: string,
  keepBootLogs: boolean,
  now = new Date(),
): Promise<TeardownStarted> {
  const bootLogGroup = keepBootLogs ? undefined : await bootLogGroupOf(cfn, clusterId);
  await deleteStack(cfn, roleArn, clusterId);
  return { done: false, deleteBy: deleteByFrom('aws', now), ...(bootLogGroup ? { bootLogGroup } : {}) };
}

/**
 * The stack's BootLogGroupName output (RabbitMqCluster, KafkaCluster), or undefined for a stack without one or none at
 * all.
 */
async function bootLogGroupOf(cfn: CloudFormationClient, clusterId: string): Promise<string | undefined> {
  try {
    const outputs = (await cfn.send(new DescribeStacksCommand({ StackName: clusterId }))).Stacks?.[0]?.Outputs ?? [];
    return outputs.find((output) => output.OutputKey?.includes('BootLogGroupName'))?.OutputValue;
  } catch (error) {
    if ((error as { name?: string }).name === 'ValidationError') return undefined;
    throw error;
  }
}

/**
 * Deletes a boot log group whose stack is gone; one already deleted is fine. The Logs client is loaded here only (a
 * chunk
 * of its own): the teardown's cold start stays small (test/lambdas/bundles.test.ts).
 */
export async function deleteBootLogGroup(logs: CloudWatchLogsClient, logGroupName: string): Promise<void> {
  const { DeleteLogGroupCommand } = await import('@aws-sdk/client-cloudwatch-logs');
  try {
    await logs.send(new DeleteLogGroupCommand({ logGroupName }));
  } catch (error) {
    if ((error as { name?: string }).name !== 'ResourceNotFoundException') throw error;
  }
}

/**
 * Is the stack gone? DescribeStacks by name answers ValidationError for a deleted stack
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html: "If the stack doesn't
 * exist,
 * a ValidationError is returned"), DELETE_COMPLETE while it is still listed. A stack left DELETE_FAILED is deleted
 * again
 * (as the sweeper does, without RetainResources: DeleteStack accepts a DELETE_FAILED stack, API_DeleteStack.html,
 * RetainResources); a stack that is not being deleted (the DeleteStack was lost) gets it again.
 * Past `deleteBy` the error names the stack and the resource that would not go.
 */
export async function checkStackTeardown(
  cfn: CloudFormationClient,
  roleArn: string,
  clusterId: string,
  deleteBy: string,
  now = new Date(),
): Promise<{ done: boolean }> {
  let status: string | undefined;
  let statusReason: string | undefined;
  try {
    const stack = (await cfn.send(new DescribeStacksCommand({ StackName: clusterId }))).Stacks?.[0];
    status = stack?.StackStatus;
    statusReason = stack?.StackStatusReason;
  } catch (error) {
    if ((error as { name?: string }).name === 'ValidationError' && /does not exist/.test((error as Error).message))
      return { done: true };
    throw error;
  }
  if (status === undefined || status === 'DELETE_COMPLETE') return { done: true };
  if (now.getTime() > Date.parse(deleteBy)) {
    const reason =
      status === 'DELETE_FAILED' ? await deleteFailedReason(cfn, clusterId, statusReason) : `still ${status}`;
    throw new TeardownIncompleteError(
      `stack ${clusterId} was not deleted by ${deleteBy}: ${reason}; ` +
        `the hourly sweeper deletes it again (rmqbench cleanup --target aws shows it)`,
    );
  }
  if (status !== 'DELETE_IN_PROGRESS') await deleteStack(cfn, roleArn, clusterId);
  return { done: false };
}

/** The resource CloudFormation could not delete, from the stack's events (newest first), or the stack's own reason. */
async function deleteFailedReason(
  cfn: CloudFormationClient,
  clusterId: string,
  statusReason: string | undefined,
): Promise<string> {
  const events = (await cfn.send(new DescribeStackEventsCommand({ StackName: clusterId }))).StackEvents ?? [];
  const failed = events.find(
    (event) => event.ResourceStatus === 'DELETE_FAILED' && event.LogicalResourceId !== clusterId,
  );
  return failed
    ? `DELETE_FAILED at ${failed.LogicalResourceId} (${failed.ResourceType}): ` +
        `${failed.ResourceStatusReason ?? 'no reason given'}`
    : `DELETE_FAILED: ${statusReason ?? 'no reason given'}`;
}

/**
 * Starts deleting the resource group and follows it for up to `waitMs` of the invocation. A deletion ARM refuses
 * part-way
 * (ResourceGroupDeletionBlocked: "The provisioning state of the resource group will be rolled back") is not an error
 * here: CheckTeardown deletes the group again, and its reason is kept for the deadline's error (ARM keeps it in the
 * activity log only, not on the group).
 */
export async function startGroupTeardown(
  clients: AzureClients,
  name: string,
  waitMs: number,
  now = new Date(),
): Promise<TeardownStarted> {
  const deleteBy = deleteByFrom('azure', now);
  const { deleteResourceGroup } = await import('../shared/azure-cluster');
  try {
    return { done: (await deleteResourceGroup(clients, name, waitMs)).deleted, deleteBy };
  } catch (error) {
    if ((error as { code?: string }).code !== 'ResourceGroupDeletionBlocked') throw error;
    return { done: false, deleteBy, lastError: (error as Error).message };
  }
}

/**
 * Is the resource group gone? ARM answers 404 for a deleted group
 * (https://learn.microsoft.com/rest/api/resources/resource-groups/get: ResourceGroupNotFound); a group still there and
 * not "Deleting" (a deletion that failed, its state rolled back) is deleted again. Past `deleteBy` the error names the
 * group, its state and, when TeardownCluster saw it, why its deletion failed.
 */
export async function checkGroupTeardown(
  clients: AzureClients,
  name: string,
  deleteBy: string,
  now = new Date(),
  lastError?: string,
): Promise<{ done: boolean }> {
  let state: string | undefined;
  try {
    state = (await clients.resources.resourceGroups.get(name)).properties?.provisioningState;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return { done: true };
    throw error;
  }
  if (now.getTime() > Date.parse(deleteBy)) {
    const reason = lastError === undefined ? '' : `; its deletion failed: ${lastError}`;
    throw new TeardownIncompleteError(
      `resource group ${name} was not deleted by ${deleteBy} (provisioning state ${state ?? 'unknown'})${reason}; ` +
        `the hourly sweeper deletes it again (rmqbench cleanup --target azure shows it)`,
    );
  }
  if (state !== 'Deleting') await clients.resources.resourceGroups.beginDelete(name);
  return { done: false };
}
