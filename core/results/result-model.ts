import type { LoadGeneratorVerdict, RepetitionMetrics } from '../metrics/host-metrics';
import type { Stats } from './statistics';
import type { CapacityResult } from '../capacity/capacity-verdict';
import type { ScenarioCapacity } from '../capacity/capacity-report';
import type { GeneratorFigures } from '../loadgen/per-second-merge';
import type { AdaptiveOutcome } from './adaptive-repetitions';

/** Latency percentiles in microseconds, as PerfTest reports them. */
export interface LatencyPercentiles {
  /** Absent where the tool does not report it (Kafka's ProducerPerformance reports 50th, 95th, 99th and 99.9th). */
  readonly min?: number;
  readonly median: number;
  /** Absent where the tool does not report it (Kafka's ProducerPerformance). */
  readonly p75?: number;
  readonly p95: number;
  readonly p99: number;
}

/** Megabytes (10^6 bytes of message body) per second at `rate` msg/s of `messageSizeBytes`: seed 004 reports MB/s. */
export const megabytesPerSecond = (rate: number, messageSizeBytes: number): number =>
  (rate * messageSizeBytes) / 1_000_000;

/** One row of PerfTest's `-o` CSV: what happened in one sampling interval. */
export interface PerSecondSample {
  /** Seconds since PerfTest started. */
  readonly time: number;
  readonly published: number;
  readonly returned: number;
  readonly confirmed: number;
  readonly nacked: number;
  readonly received: number;
  readonly consumerLatency?: LatencyPercentiles;
  readonly confirmLatency?: LatencyPercentiles;
}

/** PerfTest's own end-of-run summary (stdout). */
export interface PerfTestSummary {
  readonly sendRateAvg: number;
  readonly receiveRateAvg: number;
  readonly consumerLatency?: LatencyPercentiles;
  readonly confirmLatency?: LatencyPercentiles;
}

/** The parsed, normalized outcome of one PerfTest execution. */
export interface PerfTestResult {
  /**
   * The repetition's summary: PerfTest's own, or with a warm-up the one computed after it (core/results/warm-up.ts).
   */
  readonly summary: PerfTestSummary;
  /** Seconds left out of `summary`, `sendRate` and `receiveRate`; absent when none were. */
  readonly warmUpSeconds?: number;
  /** With a warm-up: PerfTest's own summary of the whole run, for the record. */
  readonly perfTestSummary?: PerfTestSummary;
  readonly samples: readonly PerSecondSample[];
  /** Statistics over the per-second samples (published and received msg/s). */
  readonly sendRate: Stats;
  readonly receiveRate: Stats;
  /** A fixed amount of work: how long PerfTest took to send and consume it (its last per-second sample), seconds. */
  readonly completedInSeconds?: number;
}

/** The fault a repetition applied, as it happened. */
export interface AppliedFault {
  readonly action: 'kill' | 'stop' | 'restart' | 'partition';
  /** As the plan named it: `leader`, `follower` or an index. */
  readonly node: 'leader' | 'follower' | number;
  /** The node it hit (e.g. `rmqbench1@localhost`). */
  readonly nodeName: string;
  /** Seconds after the verifier started. */
  readonly appliedAtSeconds: number;
  readonly healedAtSeconds?: number;
}

/**
 * What the lost-message verifier counted beside PerfTest in a repetition with a fault
 * (sequence-numbered persistent messages, publisher confirms, manual acks).
 */
export interface FailoverResult {
  readonly fault: AppliedFault;
  readonly published: number;
  readonly confirmed: number;
  /** Distinct sequence numbers consumed. */
  readonly consumed: number;
  /** Confirmed, never consumed after the run drained. */
  readonly lostMessages: number;
  /** Deliveries of a sequence number already consumed. */
  readonly duplicatedMessages: number;
  /** NATS: confirmed, never consumed, yet still in the stream at the end (core/failover/failover.ts). */
  readonly undeliveredMessages?: number;
  /** Published but not yet confirmed when the fault was applied. */
  readonly unconfirmedAtFault: number;
  /**
   * Fault to receive rate back at >= 90 % of the pre-fault median (core/failover/failover.ts); absent when it never
   * came back.
   */
  readonly recoverySeconds?: number;
  /** Seconds from the fault on with nothing received. */
  readonly unavailableSeconds: number;
  /** Times the verifier's publisher or consumer lost its connection (or subscription) and worked again. */
  readonly reconnects: number;
  /** Messages received per second by the verifier's consumer, from its start. */
  readonly receivedPerSecond: readonly number[];
}

/**
 * A fault a cloud target applied whose lost messages were not counted (the verifier beside PerfTest left no usable
 * output, or none runs: core/failover/cloud-fault.ts notCountedReason): what was done and why nothing was counted, so
 * that a
 * report says "not counted" instead of showing zeros that were never measured.
 */
export interface UncountedFault {
  /**
   * `appliedAtSeconds` and `healedAtSeconds` count from when StartRepetition sent PerfTest's command (PerfTest starts a
   * few seconds later).
   */
  readonly fault: AppliedFault;
  readonly reason: string;
}

/** The verifier's numbers in the order reports show them. */
export const FAILOVER_METRICS = [
  'lostMessages',
  'duplicatedMessages',
  'unconfirmedAtFault',
  'recoverySeconds',
  'unavailableSeconds',
  'reconnects',
] as const;
export type FailoverMetric = (typeof FAILOVER_METRICS)[number];

/** SKIPPED: an adaptive scenario had settled before this repetition (`skipReason` says how); not an error. */
export type RepetitionStatus = 'SUCCEEDED' | 'FAILED' | 'SKIPPED';

/** One repetition of one scenario, as stored. */
export interface RepetitionRecord {
  readonly runId: string;
  readonly scenarioId: string;
  /** 1-based. */
  readonly repetition: number;
  readonly status: RepetitionStatus;
  readonly startedAt: string;
  readonly finishedAt: string;
  /** Present when SUCCEEDED. */
  readonly result?: PerfTestResult;
  /** Present when FAILED: what went wrong, in one line. */
  readonly error?: string;
  /** Present when SKIPPED: `settled: CI half-width 3.1 % ≤ 5 % after 2 repetitions`. */
  readonly skipReason?: string;
  /** PerfTest's command line (without credentials). */
  readonly perfTestArgs: readonly string[];
  /** Present when the scenario has a fault: what the lost-message verifier counted. */
  readonly failover?: FailoverResult;
  /**
   * Broker and host metrics per node and second (core/metrics/host-metrics.ts); absent in older records and where not
   * collected.
   */
  readonly metrics?: RepetitionMetrics;
  /**
   * What went wrong collecting metrics (a source that failed in some or all seconds, malformed metrics dropped); the
   * throughput result stands regardless.
   */
  readonly metricsError?: string;
  /**
   * The load generator's CPU over PerfTest's measured seconds and whether it bounded the result
   * (core/metrics/host-metrics.ts); kept on the repetition item so that reports need no metrics read.
   */
  readonly loadGenerator?: LoadGeneratorVerdict;
  /**
   * Several load generators (issue 27): one entry per generator (its producers, consumers, queues, rates,
   * percentiles and CPU); the repetition's own rates are their sum.
   */
  readonly loadGenerators?: readonly GeneratorFigures[];
  /** Several load generators: the latest PerfTest start minus the earliest, ms. */
  readonly startSkewMs?: number;
  /** Several load generators: how the workload was split (core/loadgen/workload-split.ts). */
  readonly loadGeneratorSplit?: string;
  /** Several load generators: how their rates and percentiles were combined (core/loadgen/per-second-merge.ts). */
  readonly loadGeneratorMerge?: string;
  /**
   * Present when the scenario has a fault that a cloud target applied but could not count (no usable verifier output):
   * nothing was counted.
   */
  readonly uncountedFault?: UncountedFault;
  /**
   * A capacity workload: every step of its ladder as measured and the highest rate that held
   * (core/capacity/capacity-verdict.ts).
   */
  readonly capacity?: CapacityResult;
  /**
   * A saturated run whose queues grew while it ran: why its latencies are queueing time (core/results/ingest.ts
   * queueingNote).
   */
  readonly queueingNote?: string;
}

export type RunStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'PARTIAL';

/** One execution of a plan on a target. */
export interface RunRecord {
  readonly runId: string;
  readonly planName: string;
  /** The validated plan as run, so a report can be made without the file. */
  readonly plan: unknown;
  readonly target: 'local' | 'aws' | 'azure';
  readonly status: RunStatus;
  readonly startedAt: string;
  readonly finishedAt?: string;
  readonly error?: string;
  /** Environment facts (RabbitMQ version, PerfTest version, instance type, host). */
  readonly environment: Readonly<Record<string, string>>;
  readonly scenarioIds: readonly string[];
}

/** A scenario's repetitions reduced to one row of a report. */
export interface ScenarioAggregate {
  readonly scenarioId: string;
  readonly repetitionsSucceeded: number;
  readonly repetitionsFailed: number;
  /** Adaptive repetitions: skipped because the scenario had settled (absent when none were). */
  readonly repetitionsSkipped?: number;
  /** Adaptive repetitions: how many the scenario needed and why it stopped. */
  readonly adaptive?: AdaptiveOutcome;
  /** Over the repetitions' average rates (PerfTest summary), present when at least one succeeded. */
  readonly sendRate?: Stats;
  readonly receiveRate?: Stats;
  /** The scenario's message body size, when the stored plan names it: what turns msg/s into MB/s. */
  readonly messageSizeBytes?: number;
  /** sendRate and receiveRate in megabytes (10^6 bytes of message body) per second, as seed 004 reports throughput. */
  readonly sendMBps?: Stats;
  readonly receiveMBps?: Stats;
  /** A fixed amount of work: seconds each repetition took to send and consume it, over the repetitions. */
  readonly completedInSeconds?: Stats;
  /** Median across repetitions of each consumer-latency percentile, microseconds. */
  readonly consumerLatency?: LatencyPercentiles;
  readonly confirmLatency?: LatencyPercentiles;
  /** Over the repetitions that carry verifier counts (recoverySeconds over those that recovered). */
  readonly failover?: Partial<Record<FailoverMetric, Stats>>;
  /** Of the repetitions with a load-generator CPU verdict (`of`), how many were load-generator bound. */
  readonly loadGeneratorBound?: { readonly bound: number; readonly of: number };
  /** A capacity workload: the rate every repetition held within its p99 bound (core/capacity/capacity-report.ts). */
  readonly capacity?: ScenarioCapacity;
}
