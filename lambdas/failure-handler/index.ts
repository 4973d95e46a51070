import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { ExecutionStatusChange, handleFailedExecution } from './logic';

// The Azure SDK is loaded only when the controller has Azure (AZURE_CREDENTIALS_SECRET_ARN): a chunk of its own in the
// bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
// Listing and deleting share the account's CloudFormation request quota with everyone else: more attempts than the
// standard retry mode's default 3, with its exponential back-off
// (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html).
const cfn = new CloudFormationClient({ maxAttempts: 8 });

// The launch function's timeout (BenchmarkController sets it): how long a launch under way when the execution ended may
// still create a stack or resource group.
const launchDeadlineMs = Number(requireEnv('LAUNCH_FUNCTION_TIMEOUT_SECONDS')) * 1000;

export const handler = async (event: ExecutionStatusChange) =>
  handleFailedExecution(
    cfn,
    store,
    roleArn,
    event,
    undefined,
    process.env.AZURE_CREDENTIALS_SECRET_ARN ? (await (await azureTarget()).azureClientsFromEnv()).clients : undefined,
    {
      launchDeadlineMs,
    },
  );
