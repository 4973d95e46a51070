import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { azureClientsFromEnv } from '../shared/azure-target';
import { requireEnv } from '../shared/env';
import { checkAzureRepetition, checkRepetition } from './logic';

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const ssm = new SSMClient({});
const s3 = new S3Client({});

type AwsEvent = Parameters<typeof checkRepetition>[3];
type AzureEvent = Parameters<typeof checkAzureRepetition>[3];

export const handler = async (event: (AwsEvent | AzureEvent) & { target: WorkflowTarget }) =>
  event.target === 'azure' ? checkAzureRepetition((await azureClientsFromEnv()).clients, s3, bucket, event as AzureEvent) : checkRepetition(ssm, s3, bucket, event as AwsEvent);
