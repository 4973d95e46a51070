import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { ExecutionStatusChange, handleFailedExecution } from './logic';

// The Azure SDK is loaded only when the controller has Azure (AZURE_CREDENTIALS_SECRET_ARN): a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const cfn = new CloudFormationClient({});

export const handler = async (event: ExecutionStatusChange) =>
  handleFailedExecution(cfn, store, roleArn, event, undefined, process.env.AZURE_CREDENTIALS_SECRET_ARN ? (await (await azureTarget()).azureClientsFromEnv()).clients : undefined);
