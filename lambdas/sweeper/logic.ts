import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { deleteStack, expiredStacks } from '../shared/aws-cluster';
import { type AzureClients, expiredResourceGroups } from '../shared/azure-cluster';
import { deleteGroups } from '../failure-handler/logic';

/** Deletes this controller's stacks (and, with Azure, resource groups) whose expiry tag has passed, whatever happened to their run. */
export async function sweepExpiredStacks(cfn: CloudFormationClient, roleArn: string, prefix: string, now = new Date(), azure?: AzureClients) {
  const stacks = await expiredStacks(cfn, prefix, now);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  const groups = azure ? await deleteGroups(azure, await expiredResourceGroups(azure, prefix, now)) : undefined;
  return { deleted: stacks, ...(groups ? { deletedResourceGroups: groups } : {}) };
}
