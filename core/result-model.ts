import type { Stats } from './statistics';

/** Latency percentiles in microseconds, as PerfTest reports them. */
export interface LatencyPercentiles {
  readonly min: number;
  readonly median: number;
  readonly p75: number;
  readonly p95: number;
  readonly p99: number;
}

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
  readonly summary: PerfTestSummary;
  readonly samples: readonly PerSecondSample[];
  /** Statistics over the per-second samples (published and received msg/s). */
  readonly sendRate: Stats;
  readonly receiveRate: Stats;
}

export type RepetitionStatus = 'SUCCEEDED' | 'FAILED';

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
  /** PerfTest's command line (without credentials). */
  readonly perfTestArgs: readonly string[];
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
  /** Over the repetitions' average rates (PerfTest summary), present when at least one succeeded. */
  readonly sendRate?: Stats;
  readonly receiveRate?: Stats;
  /** Median across repetitions of each consumer-latency percentile, microseconds. */
  readonly consumerLatency?: LatencyPercentiles;
  readonly confirmLatency?: LatencyPercentiles;
}
