import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { RepetitionMetrics } from '../../core/host-metrics';
import { ingestRepetition, RawRepetition } from '../../core/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

/** Reads a repetition's host metrics from the cloud's monitoring service for its window; throws with the reason when it cannot. */
export type HostMetricsSource = (window: { startedAt: string; finishedAt: string }) => Promise<RepetitionMetrics>;

/**
 * Reads the raw output the load generator uploaded, adds the host metrics of the repetition's window when a source is
 * given, parses it with the shared ingest and stores it (idempotent keys). Metrics that cannot be read never fail the
 * repetition: the record says "metrics unavailable: <reason>" (metricsError) and keeps its result.
 */
export async function ingestFromS3(s3: S3Client, bucket: string, store: ResultsStore, runId: string, item: ScheduledRepetition, hostMetrics?: HostMetricsSource) {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `runs/${runId}/ingest/${item.rawKey}` }));
  const raw = JSON.parse(await object.Body!.transformToString()) as RawRepetition;
  const record = ingestRepetition(hostMetrics ? await withHostMetrics(raw, hostMetrics) : raw);
  await store.putRepetition(record);
  return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
}

async function withHostMetrics(raw: RawRepetition, hostMetrics: HostMetricsSource): Promise<RawRepetition> {
  try {
    return { ...raw, metrics: await hostMetrics({ startedAt: raw.startedAt, finishedAt: raw.finishedAt }) };
  } catch (error) {
    const reason = `metrics unavailable: ${error instanceof Error ? error.message : String(error)}`;
    return { ...raw, metricsError: raw.metricsError ? `${raw.metricsError}; ${reason}` : reason };
  }
}
