import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { brokerMetricsFromSamples, brokerSeriesOnHosts, combineRepetitionMetrics, type BrokerHost } from '../../core/broker-samples';
import type { RepetitionMetrics } from '../../core/host-metrics';
import { ingestRepetition, RawRepetition } from '../../core/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

/**
 * Reads a repetition's host metrics from the cloud's monitoring service for its window; throws with the reason when it
 * cannot. `incomplete` says which part it could not read while returning the rest (an Azure Kafka deployment from before
 * the kafkaBrokerResourceIds output: the load generator's series without the brokers').
 */
export type HostMetricsSource = (window: { startedAt: string; finishedAt: string }) => Promise<RepetitionMetrics & { readonly incomplete?: string }>;

/** The cluster's broker hosts (id as the host series name it, RabbitMQ node name), to put the broker series under the host's name. */
export type BrokerHostsSource = () => Promise<readonly BrokerHost[]>;

/**
 * Reads the raw output the load generator uploaded, adds the host metrics of the repetition's window when a source is
 * given and the broker metrics of the management API sampler's output when the raw repetition carries it (a RabbitMQ
 * repetition in the cloud), parses it with the shared ingest and stores it (idempotent keys). Metrics that cannot be
 * read never fail the repetition: the record keeps its result and says why in metricsError ("metrics unavailable:
 * <reason>" for the host metrics, "metrics incomplete: <reason>" for a part of them the source could not read,
 * "broker metrics unavailable: <reason>" for the broker's), with whatever the other
 * source gave. With `brokerHosts`, the broker series are named like the host series (brokerSeriesOnHosts); a node left
 * under RabbitMQ's name, or a listing that failed, is named in metricsError too.
 */
export async function ingestFromS3(s3: S3Client, bucket: string, store: ResultsStore, runId: string, item: ScheduledRepetition, hostMetrics?: HostMetricsSource, brokerHosts?: BrokerHostsSource) {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `runs/${runId}/ingest/${item.rawKey}` }));
  const raw = JSON.parse(await object.Body!.transformToString()) as RawRepetition;
  const record = ingestRepetition(await withCloudMetrics(raw, hostMetrics, brokerHosts));
  await store.putRepetition(record);
  return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
}

async function withCloudMetrics(raw: RawRepetition, hostMetrics: HostMetricsSource | undefined, brokerHosts: BrokerHostsSource | undefined): Promise<RawRepetition> {
  if (!hostMetrics && raw.brokerSamples === undefined) return raw;
  const parts: RepetitionMetrics[] = [];
  const problems: string[] = raw.metricsError ? [raw.metricsError] : [];
  const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
  if (hostMetrics) {
    try {
      const { incomplete, ...metrics } = await hostMetrics({ startedAt: raw.startedAt, finishedAt: raw.finishedAt });
      parts.push(metrics);
      if (incomplete) problems.push(`metrics incomplete: ${incomplete}`);
    } catch (error) {
      problems.push(`metrics unavailable: ${reason(error)}`);
    }
  }
  if (raw.brokerSamples !== undefined) {
    try {
      const broker = brokerMetricsFromSamples(raw.brokerSamples, new Date(raw.startedAt));
      if (broker.unusable > 0) problems.push(`broker metrics: ${broker.unusable} of ${broker.samples + broker.unusable} samples unusable (first: ${broker.firstProblem})`);
      parts.push(brokerHosts ? await onHosts(broker.metrics, brokerHosts, problems) : broker.metrics);
    } catch (error) {
      problems.push(`broker metrics unavailable: ${reason(error)}`);
    }
  }
  const { brokerSamples: _consumed, metricsError: _replaced, ...rest } = raw;
  return { ...rest, ...(parts.length > 0 ? { metrics: combineRepetitionMetrics(parts) } : {}), ...(problems.length > 0 ? { metricsError: problems.join('; ') } : {}) };
}

/** The broker series under their hosts' names; when the hosts cannot be listed they keep RabbitMQ's names and the problem is recorded. */
async function onHosts(metrics: RepetitionMetrics, brokerHosts: BrokerHostsSource, problems: string[]): Promise<RepetitionMetrics> {
  let hosts: readonly BrokerHost[];
  try {
    hosts = await brokerHosts();
  } catch (error) {
    problems.push(`broker metrics keep RabbitMQ's node names: the cluster's hosts could not be listed: ${error instanceof Error ? error.message : String(error)}`);
    return metrics;
  }
  const named = brokerSeriesOnHosts(metrics, hosts);
  if (named.unmatched.length > 0) problems.push(`broker metrics keep RabbitMQ's node names for ${named.unmatched.join(', ')}: no running host of the cluster has that name`);
  return named.metrics;
}
