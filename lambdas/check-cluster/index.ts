import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { checkStack } from '../shared/aws-cluster';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureCluster = () => import('../shared/azure-cluster');

const cfn = new CloudFormationClient({});
const ssm = new SSMClient({});

export const handler = async (event: { target: WorkflowTarget; launch: { clusterId: string; readyBy: string } }) =>
  event.target === 'azure' ? (await azureCluster()).checkDeployment((await (await azureTarget()).azureClientsFromEnv()).clients, event.launch) : checkStack(cfn, event.launch, new Date(), ssm);
