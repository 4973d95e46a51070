import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { deleteStack } from '../shared/aws-cluster';
import { requireEnv } from '../shared/env';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureCluster = () => import('../shared/azure-cluster');

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

/**
 * Deletes by the deterministic name (stack or resource group), so it also cleans up after a launch
 * that failed half-way (deleting a missing stack or group succeeds). Azure: waits up to 40 s of the
 * function's minute for the deletion; ARM completes it after that.
 */
export const handler = async (event: { target: WorkflowTarget; cluster: ScheduledCluster }) => {
  if (event.target === 'azure') return (await azureCluster()).deleteResourceGroup((await (await azureTarget()).azureClientsFromEnv()).clients, event.cluster.clusterId, 40_000);
  await deleteStack(cfn, roleArn, event.cluster.clusterId);
  return {};
};
