import { PerfTestOutputError } from '../plan/errors';
import type { LatencyPercentiles, PerSecondSample, PerfTestResult, PerfTestSummary } from '../results/result-model';
import { fixedMessageCount } from '../plan/fixed-work';
import type { Workload } from '../plan/plan-schema';
import { describe } from '../results/statistics';
import { samplesAfterWarmUp, summaryAfterWarmUp } from '../results/warm-up';
import { capacityLadder, type CapacitySpec } from '../capacity/capacity-plan';
import type { CapacityExpectations } from '../capacity/capacity-verdict';

/** What the parser must find, given what the workload asked PerfTest to do. */
export interface PerfTestExpectations {
  readonly durationSeconds: number;
  readonly producers: number;
  readonly consumers: number;
  /** True when publisher confirms were on (`-c`). */
  readonly confirms: boolean;
  /**
   * Messages in total when the workload is a fixed amount of work (PerfTest --pmessages/--cmessages): the run ends when
   * it is done, before durationSeconds.
   */
  readonly fixedMessages?: number;
  /** Seconds left out of the summary (core/results/warm-up.ts); absent or 0: PerfTest's own summary. */
  readonly warmUpSeconds?: number;
  /** Capacity mode: the ladder the verdict judges (core/capacity/capacity-verdict.ts). */
  readonly capacity?: CapacityExpectations;
}

/** What the parser expects of a workload's PerfTest output: one rule for every target. */
export function perfTestExpectations(workload: Workload): PerfTestExpectations {
  const fixedMessages = fixedMessageCount(workload);
  return {
    durationSeconds: workload.durationSeconds,
    producers: workload.producers,
    consumers: workload.consumers,
    confirms: workload.confirmWindow !== undefined,
    ...(fixedMessages === undefined ? {} : { fixedMessages }),
    ...(workload.warmUpSeconds ? { warmUpSeconds: workload.warmUpSeconds } : {}),
    ...(workload.capacity ? { capacity: capacityExpectations(workload.capacity, workload) } : {}),
  };
}

/** What the capacity verdict needs of a capacity workload: its bound, its ladder, the deliveries of one message. */
export function capacityExpectations(
  capacity: CapacitySpec,
  workload: Pick<Workload, 'producers' | 'queues' | 'exchange'>,
): CapacityExpectations {
  return {
    p99LatencyMs: capacity.p99LatencyMs,
    stepFactor: capacity.stepFactor,
    warmUpSeconds: capacity.warmUpSeconds,
    steps: capacityLadder(capacity, workload.producers),
    // A fanout exchange delivers every message to every queue (PerfTest counts each delivery as received).
    deliveriesPerMessage: workload.exchange.type === 'fanout' ? workload.queues : 1,
  };
}

const CSV_HEADER_START = 'id,time (s),published (msg/s)';
/** PerfTest's sampling clock drifts by a few ms per second; accept the last sample this close to the end. */
const END_TOLERANCE_SECONDS = 1.5;

/**
 * Normalizes one PerfTest execution: per-second samples from its CSV, the summary from its stdout.
 * Anything missing or garbled throws a PerfTestOutputError naming what is missing: such a run is
 * recorded as failed, never as a zero-throughput result.
 */
export function parsePerfTestOutput(stdout: string, csv: string, expected: PerfTestExpectations): PerfTestResult {
  const missing: string[] = [];
  const crash = firstErrorLine(stdout);
  const samples = parseSamplesCsv(csv, missing);
  const summary = parseSummary(stdout, expected, missing);

  const lastTime = samples.length > 0 ? samples[samples.length - 1]!.time : 0;
  const stopped = /test stopped \(([^)\n]*)\)/.exec(stdout)?.[1];
  if (expected.fixedMessages === undefined) {
    if (!stopped?.includes('Reached time limit')) missing.push('"test stopped (Reached time limit)" line on stdout');
    if (lastTime < expected.durationSeconds - END_TOLERANCE_SECONDS) {
      missing.push(`per-second samples up to ${expected.durationSeconds} s (CSV ends at ${lastTime.toFixed(1)} s)`);
    }
  } else if (stopped === undefined) {
    missing.push('the "test stopped (…)" line on stdout');
  } else if (stopped.includes('Reached time limit')) {
    // PerfTest's stop reasons (v2.22.1 Producer/Consumer/MulticastSet): the time limit came before the message limits.
    missing.push(
      `the end of the fixed work: ${expected.fixedMessages} messages were not sent and consumed ` +
        `within the ${expected.durationSeconds} s limit (PerfTest stopped: ${stopped})`,
    );
  } else if (samples.length === 0 && csv.trim() === '') {
    // PerfTest writes its CSV once per second: work done within the first second leaves no sample to measure.
    missing.splice(missing.indexOf('the per-second CSV (empty file)'), 1);
    missing.push(
      `a per-second sample: the fixed work (${expected.fixedMessages} messages) was done before PerfTest's ` +
        `first one (under 1 s), too little to measure; use a larger messageCount or totalBytes`,
    );
  }
  if (missing.length > 0 || summary === undefined) {
    const cause = crash ? ` PerfTest reported: ${crash}.` : '';
    throw new PerfTestOutputError(`PerfTest output is incomplete: missing ${missing.join('; ')}.${cause}`, missing);
  }
  // With a warm-up, the summary and the rate statistics start after it; PerfTest's own summary is kept beside them.
  const warmUp = expected.warmUpSeconds ?? 0;
  const trimmed = warmUp > 0 ? summaryAfterWarmUp(samples, warmUp) : undefined;
  if (warmUp > 0 && trimmed === undefined) {
    throw new PerfTestOutputError(
      `PerfTest output is incomplete: missing per-second samples after the ${warmUp} s warm-up.`,
      [`per-second samples after the ${warmUp} s warm-up`],
    );
  }
  const measured = trimmed ? samplesAfterWarmUp(samples, warmUp) : samples;
  return {
    summary: trimmed ?? summary,
    ...(trimmed ? { warmUpSeconds: warmUp, perfTestSummary: summary } : {}),
    samples,
    sendRate: describe(measured.map((sample) => sample.published)),
    receiveRate: describe(measured.map((sample) => sample.received)),
    ...(expected.fixedMessages === undefined ? {} : { completedInSeconds: Math.round(lastTime * 10) / 10 }),
  };
}

function firstErrorLine(stdout: string): string | undefined {
  const line = stdout
    .split('\n')
    .find((candidate) => /Exception|ERROR|Error:/.test(candidate) && !/^\s+at /.test(candidate));
  return line?.trim();
}

function parseSamplesCsv(csv: string, missing: string[]): PerSecondSample[] {
  const lines = csv.split(/\r?\n/).filter((line) => line.trim() !== '');
  if (lines.length === 0) {
    missing.push('the per-second CSV (empty file)');
    return [];
  }
  if (!lines[0]!.startsWith(CSV_HEADER_START)) {
    missing.push(`the CSV header (first line starts "${lines[0]!.slice(0, 40)}")`);
    return [];
  }
  const samples: PerSecondSample[] = [];
  for (const [index, line] of lines.slice(1).entries()) {
    const cells = line.split(',');
    if (cells.length < 17) {
      missing.push(`CSV row ${index + 2}: 17 columns (found ${cells.length}: the row is cut short)`);
      break;
    }
    const number = (cell: string | undefined, column: string): number | undefined => {
      if (cell === undefined || cell === '') return undefined;
      const value = Number(cell);
      if (!Number.isFinite(value)) {
        missing.push(`CSV row ${index + 2}: a number in column "${column}" (found "${cell}")`);
        return undefined;
      }
      return value;
    };
    const time = number(cells[1], 'time (s)');
    if (time === undefined) break;
    const latency = (offset: number, kind: string): LatencyPercentiles | undefined => {
      const values = [0, 1, 2, 3, 4].map((i) => number(cells[offset + i], `${kind} latency`));
      if (values.some((value) => value === undefined)) return undefined;
      const [min, median, p75, p95, p99] = values as number[];
      return { min: min!, median: median!, p75: p75!, p95: p95!, p99: p99! };
    };
    const consumerLatency = latency(7, 'consumer');
    const confirmLatency = latency(12, 'confirm');
    samples.push({
      time,
      published: number(cells[2], 'published') ?? 0,
      returned: number(cells[3], 'returned') ?? 0,
      confirmed: number(cells[4], 'confirmed') ?? 0,
      nacked: number(cells[5], 'nacked') ?? 0,
      received: number(cells[6], 'received') ?? 0,
      ...(consumerLatency ? { consumerLatency } : {}),
      ...(confirmLatency ? { confirmLatency } : {}),
    });
  }
  if (samples.length === 0 && missing.length === 0) missing.push('per-second rows in the CSV (header only)');
  return samples;
}

function parseSummary(stdout: string, expected: PerfTestExpectations, missing: string[]): PerfTestSummary | undefined {
  const rate = (label: string): number | undefined => {
    const match = new RegExp(`${label} rate avg: (\\d+(?:\\.\\d+)?) msg/s`).exec(stdout);
    return match ? Number(match[1]) : undefined;
  };
  const latency = (label: string): LatencyPercentiles | undefined => {
    // PerfTest writes "µs" in the JVM's stdout encoding: without a UTF-8 locale (e.g. a script run by the SSM agent)
    // the
    // µ comes out as "?", and a UTF-8 µ read as Latin-1 as "Âµ". The unit is microseconds either way.
    const match = new RegExp(
      `${label} latency min/median/75th/95th/99th (\\d+)/(\\d+)/(\\d+)/(\\d+)/(\\d+) (?:µ|Âµ|\\?)s`,
    ).exec(stdout);
    if (!match) return undefined;
    const [min, median, p75, p95, p99] = match.slice(1).map(Number) as [number, number, number, number, number];
    return { min, median, p75, p95, p99 };
  };
  const sendRateAvg = rate('sending');
  const receiveRateAvg = rate('receiving');
  const consumerLatency = latency('consumer');
  const confirmLatency = latency('confirm');
  const before = missing.length;
  if (expected.producers > 0 && sendRateAvg === undefined) missing.push('"sending rate avg" on stdout');
  if (expected.consumers > 0 && receiveRateAvg === undefined) missing.push('"receiving rate avg" on stdout');
  if (expected.producers > 0 && expected.consumers > 0 && consumerLatency === undefined) {
    missing.push('"consumer latency min/median/75th/95th/99th" summary on stdout');
  }
  if (expected.confirms && confirmLatency === undefined)
    missing.push('"confirm latency min/median/75th/95th/99th" summary on stdout');
  if (missing.length > before) return undefined;
  return {
    sendRateAvg: sendRateAvg ?? 0,
    receiveRateAvg: receiveRateAvg ?? 0,
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
  };
}

/** The latest per-second line PerfTest printed, for live progress: `{ time, sent, received }`. */
export function parseProgressLine(line: string): { time: number; sent: number; received: number } | undefined {
  const match = /time (\d+(?:\.\d+)?) s, sent: (\d+) msg\/s, received: (\d+) msg\/s/.exec(line);
  if (!match) return undefined;
  return { time: Number(match[1]), sent: Number(match[2]), received: Number(match[3]) };
}
