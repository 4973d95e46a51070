import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { azureClientsFromEnv, azureConfigured } from '../shared/azure-target';
import { requireEnv } from '../shared/env';
import { sweepExpiredStacks } from './logic';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

/** Hourly: deletes this controller's stacks (and Azure resource groups, when configured) whose expiry tag has passed. */
export const handler = async () => sweepExpiredStacks(cfn, roleArn, 'rmqbench-', new Date(), azureConfigured() ? (await azureClientsFromEnv()).clients : undefined);
