import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { requireEnv } from '../shared/env';
import { sweepExpiredStacks } from './logic';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

/** Hourly: deletes this controller's stacks whose expiry tag has passed. */
export const handler = async () => sweepExpiredStacks(cfn, roleArn, 'rmqbench-');
