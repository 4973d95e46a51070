import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { ScheduledRepetition, WorkflowTarget } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { cloudWatchHostMetrics } from './cloudwatch-metrics';
import { ingestFromS3, type HostMetricsSource } from './logic';

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const s3 = new S3Client({});
const cloudwatch = new CloudWatchClient({});

export const handler = async (event: { runId: string; target?: WorkflowTarget; launch?: { clusterId?: string }; item: ScheduledRepetition }) => {
  // AWS clusters publish host metrics to CloudWatch under their stack name, the cluster id LaunchCluster returned.
  const clusterId = event.launch?.clusterId;
  const hostMetrics: HostMetricsSource | undefined = event.target === 'aws' && clusterId ? (window) => cloudWatchHostMetrics(cloudwatch, clusterId, window) : undefined;
  return ingestFromS3(s3, bucket, store, event.runId, event.item, hostMetrics);
};
