import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { RunStateLookup } from '../../core/cloud/cleanup';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { sweepExpiredStacks } from './logic';

// The Azure SDK is loaded only when the controller has Azure (AZURE_CREDENTIALS_SECRET_ARN): a chunk of its own in the
// bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
// Listing and deleting share the account's CloudFormation request quota with everyone else: more attempts than the
// standard retry mode's default 3, with its exponential back-off
// (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html).
const cfn = new CloudFormationClient({ maxAttempts: 8 });

const store = new ResultsStore(new DynamoDBClient({ maxAttempts: 8 }), requireEnv('RESULTS_TABLE'));
/** A run's state in the results table; a table that cannot be read leaves expiry alone to decide, as before. */
const runStateOf: RunStateLookup = async (runId) => {
  try {
    return (await store.getRun(runId))?.run.status ?? 'not-recorded';
  } catch (error) {
    console.log(
      `the results table could not be read for run ${runId}: ${(error as Error).message}; its expiry alone decides`,
    );
    return undefined;
  }
};

/**
 * Hourly: deletes this controller's stacks (and Azure resource groups, when configured) whose expiry tag has passed and
 * whose run is not RUNNING.
 */
export const handler = async () =>
  sweepExpiredStacks(
    cfn,
    roleArn,
    'rmqbench-',
    new Date(),
    process.env.AZURE_CREDENTIALS_SECRET_ARN ? (await (await azureTarget()).azureClientsFromEnv()).clients : undefined,
    console.log,
    runStateOf,
  );
