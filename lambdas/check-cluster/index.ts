import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { checkStack } from '../shared/aws-cluster';

const cfn = new CloudFormationClient({});

export const handler = async (event: { launch: { clusterId: string; readyBy: string } }) => checkStack(cfn, event.launch);
