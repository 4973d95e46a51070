import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ingestRepetition, RawRepetition } from '../../core/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

/** Reads the raw output the load generator uploaded, parses it with the shared ingest and stores it (idempotent keys). */
export async function ingestFromS3(s3: S3Client, bucket: string, store: ResultsStore, runId: string, item: ScheduledRepetition) {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `runs/${runId}/ingest/${item.rawKey}` }));
  const raw = JSON.parse(await object.Body!.transformToString()) as RawRepetition;
  const record = ingestRepetition(raw);
  await store.putRepetition(record);
  return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
}
