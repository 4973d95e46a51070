import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { deleteStack } from '../shared/aws-cluster';
import { deleteResourceGroup } from '../shared/azure-cluster';
import { azureClientsFromEnv } from '../shared/azure-target';
import { requireEnv } from '../shared/env';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

/**
 * Deletes by the deterministic name (stack or resource group), so it also cleans up after a launch
 * that failed half-way (deleting a missing stack or group succeeds). Azure: waits up to 40 s of the
 * function's minute for the deletion; ARM completes it after that.
 */
export const handler = async (event: { target: WorkflowTarget; cluster: ScheduledCluster }) => {
  if (event.target === 'azure') return deleteResourceGroup((await azureClientsFromEnv()).clients, event.cluster.clusterId, 40_000);
  await deleteStack(cfn, roleArn, event.cluster.clusterId);
  return {};
};
