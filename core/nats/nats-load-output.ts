import { PerfTestOutputError } from '../plan/errors';
import type { LatencyPercentiles, PerSecondSample, PerfTestResult, PerfTestSummary } from '../results/result-model';
import { describe } from '../results/statistics';
import { samplesAfterWarmUp, summaryAfterWarmUp } from '../results/warm-up';

/** What the parser must find, given what the workload asked the load client to do. */
export interface NatsLoadExpectations {
  readonly producers: number;
  readonly consumers: number;
  /** Fixed work: messages each producer sends (every one must be acknowledged). */
  readonly messagesPerProducer?: number;
  /** The stream has maxBytes or maxMsgs, so it may discard messages before the consumers read them. */
  readonly mayDiscard?: boolean;
  /** Seconds left out of the summary (core/results/warm-up.ts). */
  readonly warmUpSeconds?: number;
  /**
   * A fault hits a server mid-run: publishes it refused and acknowledged messages the drain did not bring are what it
   * cost (the lost-message verifier beside the load counts them message by message), not a run cut short.
   */
  readonly underFault?: boolean;
}

/** Latency percentiles as the load client prints them, microseconds. */
interface LatencyLine {
  readonly min: number;
  readonly median: number;
  readonly p75: number;
  readonly p95: number;
  readonly p99: number;
}

/** One `interval` line: what happened since the previous one (about a second; the last may be shorter). */
interface IntervalLine {
  readonly type: 'interval';
  readonly time: number;
  readonly intervalSeconds: number;
  readonly published: number;
  readonly confirmed: number;
  readonly nacked: number;
  readonly received: number;
  readonly confirmLatencyUs?: LatencyLine;
  readonly consumerLatencyUs?: LatencyLine;
}

interface SummaryLine {
  readonly type: 'summary';
  readonly elapsedSeconds: number;
  readonly sendSeconds: number;
  readonly receiveSeconds: number;
  readonly published: number;
  readonly confirmed: number;
  readonly nacked: number;
  readonly received: number;
  readonly drained: boolean;
  readonly confirmLatencyUs?: LatencyLine;
  readonly consumerLatencyUs?: LatencyLine;
  readonly firstError?: string;
}

/** A last interval shorter than this is too short for a rate of its own; its messages count in the summary. */
export const MIN_SAMPLE_SECONDS = 0.1;

type Line = { readonly type: string } & Record<string, unknown>;

function jsonLines(stdout: string): Line[] {
  const lines: Line[] = [];
  for (const text of stdout.split(/\r?\n/)) {
    const trimmed = text.trim();
    if (!trimmed.startsWith('{')) continue;
    try {
      const value: unknown = JSON.parse(trimmed);
      if (typeof value === 'object' && value !== null && typeof (value as Line).type === 'string')
        lines.push(value as Line);
    } catch {
      // A line cut off mid-way (the client was stopped while printing) is no line.
    }
  }
  return lines;
}

/** An interval line as live progress (msg/s), or undefined for any other line. */
export function parseNatsProgressLine(line: string): { time: number; sent: number; received: number } | undefined {
  const [parsed] = jsonLines(line);
  if (parsed?.type !== 'interval') return undefined;
  const interval = parsed as unknown as IntervalLine;
  if (!(interval.intervalSeconds > 0)) return undefined;
  return {
    time: Math.round(interval.time),
    sent: Math.round(interval.confirmed / interval.intervalSeconds),
    received: Math.round(interval.received / interval.intervalSeconds),
  };
}

const latency = (line: LatencyLine | undefined): LatencyPercentiles | undefined =>
  line && { min: line.min, median: line.median, p75: line.p75, p95: line.p95, p99: line.p99 };

/**
 * The per-second samples: each interval's counts as rates (÷ its length); the last, shorter interval only when it
 * lasted MIN_SAMPLE_SECONDS (or is the only one). `published` is what the stream acknowledged (as Kafka's producers
 * count a record once acknowledged), so that a refused publish is not counted as sent.
 */
function samplesOf(intervals: readonly IntervalLine[]): PerSecondSample[] {
  const kept = intervals.filter(
    (interval, index) =>
      interval.intervalSeconds >= MIN_SAMPLE_SECONDS ||
      (intervals.length === 1 && index === 0 && interval.intervalSeconds > 0),
  );
  return kept.map((interval) => {
    const rate = (count: number) => Math.round(count / interval.intervalSeconds);
    const consumerLatency = latency(interval.consumerLatencyUs);
    const confirmLatency = latency(interval.confirmLatencyUs);
    return {
      time: interval.time,
      published: rate(interval.confirmed),
      returned: 0,
      confirmed: rate(interval.confirmed),
      nacked: rate(interval.nacked),
      received: rate(interval.received),
      ...(consumerLatency ? { consumerLatency } : {}),
      ...(confirmLatency ? { confirmLatency } : {}),
    };
  });
}

/** What the summary line lacks, given the workload. */
function summaryProblems(summary: SummaryLine, expected: NatsLoadExpectations): string[] {
  const missing: string[] = [];
  const refused =
    summary.nacked > 0 ? `; ${summary.nacked} refused${summary.firstError ? `: ${summary.firstError}` : ''}` : '';
  if (expected.messagesPerProducer !== undefined && !expected.underFault) {
    const total = expected.messagesPerProducer * expected.producers;
    if (summary.confirmed !== total)
      missing.push(`${total} acknowledged messages (the stream acknowledged ${summary.confirmed}${refused})`);
  } else if (summary.confirmed === 0) {
    missing.push(`acknowledged messages (the stream acknowledged none${refused})`);
  }
  if (expected.consumers > 0 && !summary.drained && !expected.mayDiscard && !expected.underFault) {
    missing.push(
      `every acknowledged message consumed (the consumers received ${summary.received} of ${summary.confirmed} ` +
        'and then nothing more for the drain time)',
    );
  }
  return missing;
}

/**
 * Normalizes the NATS load client's output (local/nats-load/main.go: JSON lines) into the result model every broker
 * shares: per-second samples from its interval lines, the summary from its summary line: the send rate is the
 * acknowledged messages over the time to the last acknowledgement, the receive rate the deliveries over the time to
 * the last one (both from the producers' start), the consumer latency send to delivery and the confirm latency send
 * to the stream's acknowledgement (min, median, 75th, 95th, 99th, microseconds). Output that is cut short (no
 * summary), reports an error, or falls short of the fixed work throws a PerfTestOutputError naming what is missing.
 */
export function parseNatsLoadOutput(stdout: string, expected: NatsLoadExpectations): PerfTestResult {
  const lines = jsonLines(stdout);
  const error = lines.find((line) => line.type === 'error');
  if (error) {
    const message = String(error.message);
    throw new PerfTestOutputError(`the NATS load client failed: ${message}`, [`a run without error (${message})`]);
  }
  const intervals = lines.filter((line) => line.type === 'interval') as unknown as IntervalLine[];
  const summary = lines.find((line) => line.type === 'summary') as unknown as SummaryLine | undefined;
  const missing: string[] = [];
  if (!lines.some((line) => line.type === 'start')) missing.push('the "start" line (the client never got going)');
  if (!summary) {
    missing.push(
      `the "summary" line: the output is cut short after ${intervals.length} interval line(s) ` +
        '(the client was stopped or crashed before it finished)',
    );
  } else missing.push(...summaryProblems(summary, expected));
  const samples = samplesOf(intervals);
  if (summary && missing.length === 0 && samples.length === 0) missing.push('an interval line with a rate');
  if (missing.length > 0 || !summary) {
    // A Go panic or fatal error goes to stderr, which the local target writes into the same file.
    const crash = stdout.split('\n').find((line) => /^(panic|fatal error): /.test(line));
    const cause = crash ? ` The client reported: ${crash.trim()}.` : '';
    throw new PerfTestOutputError(
      `NATS load client output is incomplete: missing ${missing.join('; ')}.${cause}`,
      missing,
    );
  }
  const rate = (count: number, seconds: number) => (seconds > 0 ? Math.round(count / seconds) : 0);
  const consumerLatency = latency(summary.consumerLatencyUs);
  const confirmLatency = latency(summary.confirmLatencyUs);
  const whole: PerfTestSummary = {
    sendRateAvg: rate(summary.confirmed, summary.sendSeconds),
    receiveRateAvg: rate(summary.received, summary.receiveSeconds),
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
  };
  const warmUp = expected.warmUpSeconds ?? 0;
  const trimmed = warmUp > 0 ? summaryAfterWarmUp(samples, warmUp) : undefined;
  if (warmUp > 0 && trimmed === undefined) {
    throw new PerfTestOutputError(
      `NATS load client output is incomplete: missing per-second samples after the ${warmUp} s warm-up.`,
      [`per-second samples after the ${warmUp} s warm-up`],
    );
  }
  const measured = trimmed ? samplesAfterWarmUp(samples, warmUp) : samples;
  return {
    summary: trimmed ?? whole,
    ...(trimmed ? { warmUpSeconds: warmUp, perfTestSummary: whole } : {}),
    samples,
    sendRate: describe(measured.map((sample) => sample.published)),
    receiveRate: describe(measured.map((sample) => sample.received)),
    ...(expected.messagesPerProducer === undefined
      ? {}
      : { completedInSeconds: Math.round(Math.max(summary.sendSeconds, summary.receiveSeconds) * 10) / 10 }),
  };
}

/**
 * The output the parser reads: the client's JSON lines (the file it wrote itself, complete), and a Go panic or fatal
 * error from its console, which only the console has.
 */
export function natsOutputWithCrash(jsonLines: string, consoleText: string): string {
  const crash = consoleText.split('\n').filter((line) => /^(panic|fatal error): /.test(line));
  return jsonLines + crash.map((line) => `${line}\n`).join('');
}

/** The load client's JSON lines as a repetition keeps them (a start line, one per second, a summary). */
export const NATS_LOAD_OUTPUT_FILE = 'nats-load.jsonl';
/** Its console (stdout and stderr): a Go panic or fatal error ends up there only. */
export const NATS_LOAD_LOG_FILE = 'nats-load.log';
