import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { brokerMetricsFromSamples, combineRepetitionMetrics } from '../../core/broker-samples';
import type { RepetitionMetrics } from '../../core/host-metrics';
import { ingestRepetition, RawRepetition } from '../../core/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

/** Reads a repetition's host metrics from the cloud's monitoring service for its window; throws with the reason when it cannot. */
export type HostMetricsSource = (window: { startedAt: string; finishedAt: string }) => Promise<RepetitionMetrics>;

/**
 * Reads the raw output the load generator uploaded, adds the host metrics of the repetition's window when a source is
 * given and the broker metrics of the management API sampler's output when the raw repetition carries it (a RabbitMQ
 * repetition in the cloud), parses it with the shared ingest and stores it (idempotent keys). Metrics that cannot be
 * read never fail the repetition: the record keeps its result and says why in metricsError ("metrics unavailable:
 * <reason>" for the host metrics, "broker metrics unavailable: <reason>" for the broker's), with whatever the other
 * source gave.
 */
export async function ingestFromS3(s3: S3Client, bucket: string, store: ResultsStore, runId: string, item: ScheduledRepetition, hostMetrics?: HostMetricsSource) {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `runs/${runId}/ingest/${item.rawKey}` }));
  const raw = JSON.parse(await object.Body!.transformToString()) as RawRepetition;
  const record = ingestRepetition(await withCloudMetrics(raw, hostMetrics));
  await store.putRepetition(record);
  return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
}

async function withCloudMetrics(raw: RawRepetition, hostMetrics: HostMetricsSource | undefined): Promise<RawRepetition> {
  if (!hostMetrics && raw.brokerSamples === undefined) return raw;
  const parts: RepetitionMetrics[] = [];
  const problems: string[] = raw.metricsError ? [raw.metricsError] : [];
  const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
  if (hostMetrics) {
    try {
      parts.push(await hostMetrics({ startedAt: raw.startedAt, finishedAt: raw.finishedAt }));
    } catch (error) {
      problems.push(`metrics unavailable: ${reason(error)}`);
    }
  }
  if (raw.brokerSamples !== undefined) {
    try {
      const broker = brokerMetricsFromSamples(raw.brokerSamples, new Date(raw.startedAt));
      parts.push(broker.metrics);
      if (broker.unusable > 0) problems.push(`broker metrics: ${broker.unusable} of ${broker.samples + broker.unusable} samples unusable (first: ${broker.firstProblem})`);
    } catch (error) {
      problems.push(`broker metrics unavailable: ${reason(error)}`);
    }
  }
  const { brokerSamples: _consumed, metricsError: _replaced, ...rest } = raw;
  return { ...rest, ...(parts.length > 0 ? { metrics: combineRepetitionMetrics(parts) } : {}), ...(problems.length > 0 ? { metricsError: problems.join('; ') } : {}) };
}
