import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ResultsStore } from '../../store/results-store';
import { azureClientsFromEnv, azureConfigured } from '../shared/azure-target';
import { requireEnv } from '../shared/env';
import { ExecutionStatusChange, handleFailedExecution } from './logic';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const cfn = new CloudFormationClient({});

export const handler = async (event: ExecutionStatusChange) =>
  handleFailedExecution(cfn, store, roleArn, event, undefined, azureConfigured() ? (await azureClientsFromEnv()).clients : undefined);
