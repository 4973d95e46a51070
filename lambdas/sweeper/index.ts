import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { deleteStack, expiredStacks } from '../shared/aws-cluster';
import { requireEnv } from '../shared/env';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

/** Hourly: deletes this controller's stacks whose expiry tag has passed, whatever happened to their run. */
export const handler = async () => {
  const stacks = await expiredStacks(cfn, 'rmqbench-');
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  return { deleted: stacks };
};
