import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { ingestFromS3 } from './logic';

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const s3 = new S3Client({});

export const handler = async (event: { runId: string; item: ScheduledRepetition }) => ingestFromS3(s3, bucket, store, event.runId, event.item);
