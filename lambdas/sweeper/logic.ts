import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { deleteStack, expiredStacks } from '../shared/aws-cluster';

/** Deletes this controller's stacks whose expiry tag has passed, whatever happened to their run. */
export async function sweepExpiredStacks(cfn: CloudFormationClient, roleArn: string, prefix: string, now = new Date()) {
  const stacks = await expiredStacks(cfn, prefix, now);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  return { deleted: stacks };
}
