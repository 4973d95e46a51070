import { PerfTestOutputError } from '../plan/errors';
import { failoverResult, FaultOutcome, VerifierCounts } from '../failover/failover';
import type { PerfTestExpectations } from '../perftest/perftest-output';
import { parsePerfTestOutput } from '../perftest/perftest-output';
import { KafkaPerfExpectations, KafkaPerfOutput, parseKafkaPerfOutput } from '../kafka/kafka-perf-output';
import { NatsLoadExpectations, parseNatsLoadOutput } from '../nats/nats-load-output';
import {
  LOAD_GENERATOR_NODE,
  loadGeneratorNode,
  loadGeneratorVerdict,
  type LoadGeneratorVerdict,
  type RepetitionMetrics,
  validateRepetitionMetrics,
} from '../metrics/host-metrics';
import type { PerfTestResult, RepetitionRecord, UncountedFault } from './result-model';
import { capacityVerdict, summedQueueDepth, type CapacityResult } from '../capacity/capacity-verdict';
import { generatorsResult, type RawGeneratorOutput } from '../loadgen/generators-result';
import { loadGeneratorsVerdict } from '../loadgen/load-generators-verdict';
import { loadGeneratorId } from '../loadgen/load-generator-count';
import { kafkaCapacityResult } from '../kafka/kafka-capacity';

/** What a target hands over after one PerfTest execution (the same shape locally and from S3 in the cloud). */
export interface RawRepetition {
  readonly runId: string;
  readonly scenarioId: string;
  readonly repetition: number;
  readonly startedAt: string;
  readonly finishedAt: string;
  /** Redacted PerfTest arguments. */
  readonly perfTestArgs: readonly string[];
  readonly expectations: PerfTestExpectations;
  readonly stdout: string;
  readonly csv: string;
  /**
   * A Kafka repetition: the console output of each ProducerPerformance and ConsumerPerformance (then `stdout` and
   * `csv` are empty and `expectations` is what the workload asked for, for the record).
   */
  readonly kafka?: { readonly output: KafkaPerfOutput; readonly expectations: KafkaPerfExpectations };
  /**
   * A NATS JetStream repetition: the load client's output (local/nats-load, JSON lines) and what the parser expects of
   * it (then `stdout` and `csv` are empty, as for Kafka).
   */
  readonly nats?: { readonly output: string; readonly expectations: NatsLoadExpectations };
  /**
   * Several load generators (issue 27): each one's output (then `stdout` and `csv` are empty, `expectations` is the
   * whole workload's and `perfTestArgs` the first generator's), and how the workload was split, for the report.
   */
  readonly loadGenerators?: { readonly split: string; readonly outputs: readonly RawGeneratorOutput[] };
  /** Set when the target itself failed (PerfTest could not start, timed out, ...). */
  readonly targetError?: string;
  /** A repetition with a fault: the lost-message verifier's counts and the fault as applied. */
  readonly failover?: { readonly counts: VerifierCounts; readonly fault: FaultOutcome };
  /**
   * Broker and host metrics collected beside PerfTest (RepetitionMetrics of core/metrics/host-metrics.ts), unvalidated:
   * ingest checks them and keeps the repetition's result whatever they hold.
   */
  readonly metrics?: unknown;
  /**
   * A RabbitMQ repetition in the cloud: the management API sampler's output as the load generator uploaded it
   * (core/broker/broker-samples.ts; '' when it uploaded none). IngestRepetition turns it into the memoryAlarm and
   * queueDepth
   * series; absent for Kafka (no management API) and on the local target (its own sampler fills `metrics`).
   */
  readonly brokerSamples?: string;
  /** The metrics collector failed; recorded on the repetition as metricsError. */
  readonly metricsError?: string;
  /**
   * A repetition whose fault a cloud target applied but could not count (core/failover/cloud-fault.ts
   * notCountedReason): kept, uncounted.
   */
  readonly uncountedFault?: UncountedFault;
}

/**
 * Turns raw PerfTest output into the record that is stored. Output that is cut short or garbled
 * becomes a FAILED repetition that says what was missing, never a zero-throughput success.
 */
export function ingestRepetition(raw: RawRepetition): RepetitionRecord {
  const base = {
    runId: raw.runId,
    scenarioId: raw.scenarioId,
    repetition: raw.repetition,
    startedAt: raw.startedAt,
    finishedAt: raw.finishedAt,
    perfTestArgs: raw.perfTestArgs,
    ...ingestMetrics(raw),
    ...(raw.uncountedFault ? { uncountedFault: raw.uncountedFault } : {}),
  };
  try {
    const generators = raw.loadGenerators ? severalGenerators(raw.loadGenerators, base.metrics) : undefined;
    const kafkaLadder = raw.kafka?.expectations.capacity
      ? kafkaCapacityResult(raw.kafka.output.steps ?? [], raw.kafka.output.consumers, raw.kafka.expectations.capacity)
      : undefined;
    const result =
      kafkaLadder?.result ??
      generators?.result ??
      (raw.kafka
        ? parseKafkaPerfOutput(raw.kafka.output, raw.kafka.expectations)
        : raw.nats
          ? parseNatsLoadOutput(raw.nats.output, raw.nats.expectations)
          : parsePerfTestOutput(raw.stdout, raw.csv, raw.expectations));
    if (raw.targetError) return { ...base, status: 'FAILED', error: raw.targetError };
    const verdict = {
      ...(generators?.record ?? measuredLoadGenerator(base.metrics, result)),
      ...(kafkaLadder ? { capacity: kafkaLadder.capacity } : measuredCapacity(base.metrics, result, raw.expectations)),
      ...queueingNote(base.metrics, result, raw.expectations),
    };
    if (!raw.failover) return { ...base, status: 'SUCCEEDED', result, ...verdict };
    let failover;
    try {
      failover = failoverResult(raw.failover.counts, raw.failover.fault);
    } catch (error) {
      return {
        ...base,
        status: 'FAILED',
        error: `lost-message verifier: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    return { ...base, status: 'SUCCEEDED', result, failover, ...verdict };
  } catch (error) {
    if (!(error instanceof PerfTestOutputError)) throw error;
    const message = raw.targetError ? `${raw.targetError}; ${error.message}` : error.message;
    return { ...base, status: 'FAILED', error: message };
  }
}

/**
 * Metrics are optional and never decide a repetition's status: malformed ones are dropped and the reason is kept
 * as metricsError (with the collector's own error, if it also reported one), so that nothing else is lost.
 */
function ingestMetrics(raw: RawRepetition): Pick<RepetitionRecord, 'metrics' | 'metricsError'> {
  if (raw.metrics === undefined) return raw.metricsError ? { metricsError: raw.metricsError } : {};
  try {
    const metrics = validateRepetitionMetrics(raw.metrics);
    return { metrics, ...(raw.metricsError ? { metricsError: raw.metricsError } : {}) };
  } catch (error) {
    const message = `metrics dropped: ${error instanceof Error ? error.message : String(error)}`;
    return { metricsError: raw.metricsError ? `${raw.metricsError}; ${message}` : message };
  }
}

/**
 * A saturated run's queues may grow by this share of what was received before its latencies are called queueing time.
 */
const QUEUEING_SHARE = 0.02;

/**
 * A run without capacity mode whose benchmark queues grew while it ran (broker samples): its latencies are mostly the
 * time messages waited in the growing queue, not the broker's latency. One line for the report, or nothing.
 */
export function queueingNote(
  metrics: RepetitionMetrics | undefined,
  result: PerfTestResult,
  expected: PerfTestExpectations,
): { queueingNote?: string } {
  if (expected.capacity || expected.fixedMessages !== undefined || !metrics) return {};
  const depth = summedQueueDepth(metrics.series);
  const first = result.samples[0];
  const last = result.samples.at(-1);
  if (depth.length < 2 || !first || !last) return {};
  const inRun = depth.filter(([t]) => t >= first.time - 1.5 && t <= last.time + 0.5);
  if (inRun.length < 2) return {};
  const growth = inRun.at(-1)![1] - inRun[0]![1];
  const received = result.samples.reduce((sum, sample) => sum + sample.received, 0);
  if (!(growth > Math.max(QUEUEING_SHARE * received, 1000))) return {};
  return {
    queueingNote:
      `the queues grew by ${Math.round(growth).toLocaleString('en-US')} messages during the run: ` +
      `publishers outran consumers, so its latencies are mostly queueing time, not broker latency ` +
      `(capacity mode measures latency at a rate the cluster sustains)`,
  };
}

/**
 * A capacity workload's verdict over its ladder, with the queue depth the broker samples give (where there are any).
 */
function measuredCapacity(
  metrics: RepetitionMetrics | undefined,
  result: PerfTestResult,
  expected: PerfTestExpectations,
): { capacity?: CapacityResult } {
  if (!expected.capacity) return {};
  const depth = metrics ? summedQueueDepth(metrics.series) : [];
  return { capacity: capacityVerdict(result.samples, expected.capacity, depth.length > 0 ? depth : undefined) };
}

/**
 * A repetition run by several load generators: their outputs merged into one result, each generator's figures with
 * its CPU (the median over its measured seconds, from its own metrics node), the start skew, and the verdict naming
 * the generators over the bound with the count that would lift it.
 */
function severalGenerators(
  raw: NonNullable<RawRepetition['loadGenerators']>,
  metrics: RepetitionMetrics | undefined,
): { result: PerfTestResult; record: Partial<RepetitionRecord> } {
  // Each generator's CPU over its own measured seconds (its PerfTest started within the start skew of the others).
  const { result, merged } = generatorsResult(
    raw.outputs,
    (id, own) => loadGeneratorVerdict(metrics, measuredWindow(own), loadGeneratorNode(id))?.medianCpuPercent,
  );
  const loads = merged.loadGenerators.flatMap((figures) =>
    figures.cpuPercent === undefined
      ? []
      : [{ id: figures.id, cpuPercent: figures.cpuPercent, sendRate: figures.sendRate }],
  );
  const verdict = loadGeneratorsVerdict(loads, raw.outputs.length);
  const loadGenerator: LoadGeneratorVerdict | undefined = verdict && {
    medianCpuPercent: verdict.maxCpuPercent,
    bound: verdict.bound,
    ...(verdict.bound
      ? {
          boundGenerators: verdict.boundGenerators,
          ...(verdict.suggestedLoadGenerators === undefined
            ? {}
            : { suggestedLoadGenerators: verdict.suggestedLoadGenerators }),
          ...(verdict.line ? { line: verdict.line } : {}),
        }
      : {}),
  };
  return {
    result,
    record: {
      loadGenerators: merged.loadGenerators,
      startSkewMs: merged.startSkewMs,
      loadGeneratorSplit: raw.split,
      loadGeneratorMerge: merged.method,
      ...(loadGenerator ? { loadGenerator } : {}),
    },
  };
}

/**
 * The load-generator verdict over PerfTest's measured seconds: a metric point at t is the rate over (t - 1, t], a
 * sample at `time` the count over the second before it, so the points within half a second of the first and last
 * samples' seconds are the ones measured beside them.
 */
function measuredLoadGenerator(
  metrics: RepetitionMetrics | undefined,
  result: PerfTestResult,
): { loadGenerator?: LoadGeneratorVerdict } {
  // One generator on a cluster that has several (a workload's loadGenerators: 1): the first ran it, and the cloud's
  // metrics name each generator's host by its id (loadGeneratorHostNode).
  const node = metrics?.series.some((series) => series.node === LOAD_GENERATOR_NODE)
    ? LOAD_GENERATOR_NODE
    : loadGeneratorNode(loadGeneratorId(0));
  const verdict = loadGeneratorVerdict(metrics, measuredWindow(result), node);
  return verdict ? { loadGenerator: verdict } : {};
}

/** PerfTest's first and last samples' seconds, within which metric points were measured beside them. */
function measuredWindow(result: PerfTestResult): { from: number; to: number } | undefined {
  const first = result.samples[0];
  const last = result.samples.at(-1);
  return first && last ? { from: first.time - 0.5, to: last.time + 0.5 } : undefined;
}
