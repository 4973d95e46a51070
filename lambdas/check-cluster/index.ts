import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { checkStack } from '../shared/aws-cluster';
import { checkDeployment } from '../shared/azure-cluster';
import { azureClientsFromEnv } from '../shared/azure-target';

const cfn = new CloudFormationClient({});
const ssm = new SSMClient({});

export const handler = async (event: { target: WorkflowTarget; launch: { clusterId: string; readyBy: string } }) =>
  event.target === 'azure' ? checkDeployment((await azureClientsFromEnv()).clients, event.launch) : checkStack(cfn, event.launch, new Date(), ssm);
