import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { AwsClusterConfig, launchStack } from '../shared/aws-cluster';
import { launchResourceGroup } from '../shared/azure-cluster';
import { azureTarget } from '../shared/azure-target';
import { requireEnv } from '../shared/env';

const config: AwsClusterConfig = {
  templateUrls: Object.fromEntries(
    Object.entries(process.env)
      .filter(([name, value]) => name.startsWith('CLUSTER_TEMPLATE_URL_') && value)
      .map(([name, value]) => [Number(name.slice('CLUSTER_TEMPLATE_URL_'.length)), value!]),
  ),
  cloudFormationRoleArn: requireEnv('CLOUDFORMATION_ROLE_ARN'),
  resultsBucketName: requireEnv('RAW_OUTPUT_BUCKET'),
  expiryHours: Number(requireEnv('EXPIRY_HOURS')),
  launchTimeoutMinutes: Number(requireEnv('LAUNCH_TIMEOUT_MINUTES')),
  network: {
    vpcId: requireEnv('CLUSTER_VPC_ID'),
    privateSubnetIds: requireEnv('CLUSTER_SUBNET_IDS').split(','),
    availabilityZones: requireEnv('CLUSTER_AVAILABILITY_ZONES').split(','),
    clientSecurityGroupId: requireEnv('CLUSTER_CLIENT_SECURITY_GROUP_ID'),
  },
};
const cfn = new CloudFormationClient({});

export const handler = async (event: { runId: string; target: WorkflowTarget; cluster: ScheduledCluster }) => {
  if (event.target === 'azure') {
    const azure = await azureTarget();
    return launchResourceGroup(azure.clients, azure.config, event.runId, event.cluster);
  }
  if (event.target !== 'aws') throw new Error(`this controller launches AWS and Azure clusters; target "${event.target}" runs with rmqbench run on the machine itself`);
  return launchStack(cfn, config, event.runId, event.cluster);
};
