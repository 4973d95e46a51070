import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { recordRun, RunRecordEvent } from './logic';
import { withTransientErrors } from '../shared/transient-errors';

const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const environment = { region: requireEnv('AWS_REGION'), controller: 'BenchmarkController' };

export const handler = withTransientErrors(async (event: RunRecordEvent) => recordRun(store, event, environment));
