import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ResultsStore } from '../../store/results-store';
import { deleteStack, stacksOfRun } from '../shared/aws-cluster';
import type { AzureClients } from '../shared/azure-cluster';

// Value imports of azure-cluster are dynamic: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
const azureCluster = () => import('../shared/azure-cluster');

export interface ExecutionStatusChange {
  readonly detail: { readonly name: string; readonly status: string; readonly input?: string; readonly cause?: string };
}

/**
 * Safety net for FAILED / TIMED_OUT / ABORTED executions: tears down the run's stacks (and, when the
 * controller has Azure, its resource groups) and records the run FAILED (keeping an error already recorded).
 */
export async function handleFailedExecution(cfn: CloudFormationClient, store: ResultsStore, roleArn: string, event: ExecutionStatusChange, now = () => new Date().toISOString(), azure?: AzureClients) {
  const input = JSON.parse(event.detail.input ?? '{}') as { runId?: string; plan?: { name?: string } };
  const runId = input.runId ?? `${input.plan?.name ?? 'plan'}-${event.detail.name}`;
  const stacks = await stacksOfRun(cfn, runId);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  const groups = azure ? await deleteGroups(azure, await (await azureCluster()).resourceGroupsOfRun(azure, runId)) : undefined;
  const stored = await store.getRun(runId);
  if (stored && (stored.run.status === 'RUNNING' || !stored.run.error)) {
    await store.finishRun(runId, 'FAILED', now(), stored.run.error ?? `execution ${event.detail.status}${event.detail.cause ? `: ${event.detail.cause}` : ''}`);
  }
  return { runId, deleted: stacks, ...(groups ? { deletedResourceGroups: groups } : {}) };
}

/**
 * Starts the deletion of each group and waits a few seconds for it (ARM finishes a deletion it has
 * accepted; the hourly sweeper catches one that did not start).
 */
export async function deleteGroups(azure: AzureClients, names: string[], waitMs = 5_000, updateIntervalInMs?: number): Promise<string[]> {
  const { deleteResourceGroup } = await azureCluster();
  for (const name of names) await deleteResourceGroup(azure, name, waitMs, updateIntervalInMs);
  return names;
}
