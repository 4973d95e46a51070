import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { deleteStack } from '../shared/aws-cluster';
import { requireEnv } from '../shared/env';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

/** Deletes by the deterministic stack name, so it also cleans up after a launch that failed half-way (deleting a missing stack succeeds). */
export const handler = async (event: { cluster: ScheduledCluster }) => {
  await deleteStack(cfn, roleArn, event.cluster.clusterId);
  return {};
};
