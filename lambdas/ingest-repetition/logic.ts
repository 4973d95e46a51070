import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { AZURE_METRICS_LATE } from '../../core/metrics/azure-monitor-metrics';
import {
  brokerMetricsFromSamples,
  brokerSeriesOnHosts,
  combineRepetitionMetrics,
  type BrokerHost,
  type BrokerSamplesResult,
} from '../../core/broker/broker-samples';
import type { RepetitionMetrics } from '../../core/metrics/host-metrics';
import { settledCheck } from '../../core/results/adaptive-repetitions';
import { ingestRepetition, RawRepetition } from '../../core/results/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';

/**
 * Reads a repetition's host metrics from the cloud's monitoring service for its window; throws with the reason when it
 * cannot. `incomplete` says which part it could not read while returning the rest (an Azure Kafka deployment from
 * before
 * the kafkaBrokerResourceIds output: the load generator's series without the brokers').
 */
export type HostMetricsSource = (window: {
  startedAt: string;
  finishedAt: string;
}) => Promise<RepetitionMetrics & { readonly incomplete?: string }>;

/**
 * The cluster's broker hosts (id as the host series name it, RabbitMQ node name), to put the broker series under the
 * host's name.
 */
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
export async function ingestFromS3(
  s3: S3Client,
  bucket: string,
  store: ResultsStore,
  runId: string,
  item: ScheduledRepetition,
  hostMetrics?: HostMetricsSource,
  brokerHosts?: BrokerHostsSource,
) {
  const record = await ingestedRecord(s3, bucket, runId, item, hostMetrics, brokerHosts);
  await store.putRepetition(record);
  return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
}

async function ingestedRecord(
  s3: S3Client,
  bucket: string,
  runId: string,
  item: ScheduledRepetition,
  hostMetrics: HostMetricsSource | undefined,
  brokerHosts: BrokerHostsSource | undefined,
) {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `runs/${runId}/ingest/${item.rawKey}` }));
  const raw = JSON.parse(await object.Body!.transformToString()) as RawRepetition;
  return ingestRepetition(await withCloudMetrics(raw, hostMetrics, brokerHosts));
}

/**
 * What the re-read of a cluster's host metrics did: repetitions read again, stored anew, and those still without every
 * minute.
 */
export interface MetricsReread {
  readonly reread: number;
  readonly stored: number;
  readonly stillIncomplete: number;
}

const pointsOf = (metrics: RepetitionMetrics | undefined) =>
  (metrics?.series ?? []).reduce((sum, one) => sum + one.points.length, 0);

/**
 * The "metricsOnly" mode of IngestRepetition, run on azure before a cluster is torn down, once Azure Monitor has had
 * time
 * to take in the last minutes (state-machines/phases.ts): every stored repetition of the cluster whose metricsError
 * says
 * its host metrics were read before Azure Monitor had them (AZURE_METRICS_LATE) is ingested again from its raw object,
 * with a new read of its host (and broker) metrics, and stored under the same keys; its metricsError is what the new
 * read
 * says, so "incomplete" goes once every minute is there. The stored record is replaced only when the new read is no
 * worse:
 * the host read succeeded and gives at least as many points (so also as many metric chunks: none of the old is left
 * behind); otherwise it stays as it is. Repetitions that were not stored (the run failed before them) are skipped. A
 * repetition that cannot be read again does not stop the others; afterwards the step fails naming each (the workflow
 * goes on to teardown).
 */
export async function rereadLateHostMetrics(
  s3: S3Client,
  bucket: string,
  store: ResultsStore,
  runId: string,
  items: readonly ScheduledRepetition[],
  hostMetrics: HostMetricsSource,
  brokerHosts?: BrokerHostsSource,
): Promise<MetricsReread> {
  const stored = await store.getRun(runId);
  const late = items.filter((item) =>
    stored?.repetitions.some(
      (one) =>
        one.scenarioId === item.scenarioId &&
        one.repetition === item.repetition &&
        (one.metricsError ?? '').includes(AZURE_METRICS_LATE),
    ),
  );
  let storedCount = 0;
  let stillIncomplete = 0;
  const failures: string[] = [];
  for (const item of late) {
    const name = `${item.scenarioId} #${item.repetition}`;
    // The host read's own failure (not the broker samples', which metricsError also names) is what keeps the record.
    let hostFailure: unknown;
    const watched: HostMetricsSource = async (window) => {
      try {
        return await hostMetrics(window);
      } catch (failure) {
        hostFailure = failure;
        throw failure;
      }
    };
    try {
      const record = await ingestedRecord(s3, bucket, runId, item, watched, brokerHosts);
      const error = record.metricsError ?? '';
      if (hostFailure !== undefined)
        throw new Error(
          `its host metrics could not be read again ` +
            `(${hostFailure instanceof Error ? hostFailure.message : String(hostFailure)}); the stored record is kept`,
        );
      const before = await store.getMetrics(runId, item.scenarioId, item.repetition);
      if (pointsOf(record.metrics) < pointsOf(before))
        throw new Error(
          `the new read has fewer points (${pointsOf(record.metrics)}) than the stored one (${pointsOf(before)}); ` +
            `the stored record is kept`,
        );
      await store.putRepetition(record);
      storedCount++;
      if (error.includes(AZURE_METRICS_LATE)) stillIncomplete++;
    } catch (failure) {
      failures.push(`${name}: ${failure instanceof Error ? failure.message : String(failure)}`);
    }
  }
  if (failures.length > 0)
    throw new Error(
      `the host metrics of ${failures.length} of ${late.length} repetition(s) were not read again: ` +
        `${failures.join('; ')}`,
    );
  return { reread: late.length, stored: storedCount, stillIncomplete };
}

async function withCloudMetrics(
  raw: RawRepetition,
  hostMetrics: HostMetricsSource | undefined,
  brokerHosts: BrokerHostsSource | undefined,
): Promise<RawRepetition> {
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
      problems.push(...brokerSampleProblems(broker, raw.failover !== undefined || raw.uncountedFault !== undefined));
      parts.push(brokerHosts ? await onHosts(broker.metrics, brokerHosts, problems) : broker.metrics);
    } catch (error) {
      problems.push(`broker metrics unavailable: ${reason(error)}`);
    }
  }
  const { brokerSamples: _consumed, metricsError: _replaced, ...rest } = raw;
  return {
    ...rest,
    ...(parts.length > 0 ? { metrics: combineRepetitionMetrics(parts) } : {}),
    ...(problems.length > 0 ? { metricsError: problems.join('; ') } : {}),
  };
}

/**
 * What the broker samples lost, as metricsError parts: lines that are not samples always; lines in which a request got
 * no answer only in a repetition without a fault. A killed, stopped or cut-off node stays behind the load balancer
 * until its health check takes it out (AWS: 3 failed checks 10 s apart, cdk/RabbitMqCluster.ts; Azure: 2 failed
 * probes 5 s apart, bicep/modules/cluster.bicep), so some of the sampler's requests reach it even after one retry
 * on a new connection (lambdas/start-repetition/broker-sampler.ts): those seconds are the fault's own outage, a gap in
 * the series, not a failure to measure.
 */
function brokerSampleProblems(broker: BrokerSamplesResult, faultApplied: boolean): string[] {
  const lines = broker.samples + broker.unusable + broker.unanswered;
  return [
    ...(broker.unusable > 0
      ? [`broker metrics: ${broker.unusable} of ${lines} samples unusable (first: ${broker.firstProblem})`]
      : []),
    ...(broker.unanswered > 0 && !faultApplied
      ? [
          `broker metrics: ${broker.unanswered} of ${lines} samples got no answer from the management API ` +
            `(first: ${broker.firstUnanswered})`,
        ]
      : []),
  ];
}

/**
 * The broker series under their hosts' names; when the hosts cannot be listed they keep RabbitMQ's names and the
 * problem is recorded.
 */
async function onHosts(
  metrics: RepetitionMetrics,
  brokerHosts: BrokerHostsSource,
  problems: string[],
): Promise<RepetitionMetrics> {
  let hosts: readonly BrokerHost[];
  try {
    hosts = await brokerHosts();
  } catch (error) {
    problems.push(
      `broker metrics keep RabbitMQ's node names: the cluster's hosts could not be listed: ` +
        `${error instanceof Error ? error.message : String(error)}`,
    );
    return metrics;
  }
  const named = brokerSeriesOnHosts(metrics, hosts);
  if (named.unmatched.length > 0)
    problems.push(
      `broker metrics keep RabbitMQ's node names for ${named.unmatched.join(', ')}: ` +
        `no running host of the cluster has that name`,
    );
  return named.metrics;
}

/**
 * CheckSettled (adaptive repetitions, IngestRepetition's "settledCheck" action): before repetition `item` starts,
 * decide
 * from its scenario's repetitions already in the table whether the scenario has settled; if so store this repetition
 * SKIPPED with the reason (the key is the repetition's own, so a retried call writes the same item).
 */
export async function checkSettledInStore(
  store: ResultsStore,
  runId: string,
  item: ScheduledRepetition,
  now = () => new Date().toISOString(),
): Promise<{ skip: boolean; reason: string }> {
  if (!item.settledCheck)
    throw new Error(`CheckSettled needs item.settledCheck (${item.scenarioId} #${item.repetition})`);
  const stored = await store.getRun(runId);
  const rule = { ...item.settledCheck, max: item.repetitions };
  const outcome = settledCheck(rule, { runId, ...item }, stored?.repetitions ?? [], now());
  if (outcome.skip) await store.putRepetition(outcome.record);
  return { skip: outcome.skip, reason: outcome.reason };
}
