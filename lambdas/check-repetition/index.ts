import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';
import { requireEnv } from '../shared/env';
import { checkRepetition } from './logic';

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const ssm = new SSMClient({});
const s3 = new S3Client({});

export const handler = async (event: Parameters<typeof checkRepetition>[3]) => checkRepetition(ssm, s3, bucket, event);
