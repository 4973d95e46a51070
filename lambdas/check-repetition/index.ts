import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { requireEnv } from '../shared/env';
import { checkAzureRepetition, checkRepetition } from './logic';
import { withTransientErrors } from '../shared/transient-errors';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const ssm = new SSMClient({});
const s3 = new S3Client({});

type AwsEvent = Parameters<typeof checkRepetition>[3];
type AzureEvent = Parameters<typeof checkAzureRepetition>[3];

export const handler = withTransientErrors(async (event: (AwsEvent | AzureEvent) & { target: WorkflowTarget }) =>
  event.target === 'azure'
    ? checkAzureRepetition((await (await azureTarget()).azureClientsFromEnv()).clients, s3, bucket, event as AzureEvent)
    : checkRepetition(ssm, s3, bucket, event as AwsEvent),
);
