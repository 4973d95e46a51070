import { PerfTestOutputError } from '../plan/errors';
import type { LatencyPercentiles, PerSecondSample, PerfTestResult } from '../results/result-model';
import { describe } from '../results/statistics';
import type { KafkaCapacityExpectations, KafkaStepOutput } from './kafka-capacity';

/** What the parser must find, given what the workload asked the tools to do. */
export interface KafkaPerfExpectations {
  readonly producers: number;
  readonly consumers: number;
  readonly recordsPerProducer: number;
  /**
   * The producers ran with --warmup-records for these seconds: the summary is their "steady state" line and the
   * consumers' rate from the rows after it.
   */
  readonly warmUpSeconds?: number;
  /** Capacity mode: the ladder run as one producer run per step (core/kafka/kafka-capacity.ts). */
  readonly capacity?: KafkaCapacityExpectations;
  /**
   * A workload bounded by durationSeconds only: every tool was stopped after these seconds (KafkaRunSettings
   * stopAfterSeconds), so no producer printed its summary; its rate comes from its 1 s windows, all inside the
   * duration, and there are no acknowledgement-latency percentiles.
   */
  readonly stoppedAtSeconds?: number;
}

/** The console output of every ProducerPerformance and ConsumerPerformance of one repetition. */
export interface KafkaPerfOutput {
  readonly producers: readonly string[];
  readonly consumers: readonly string[];
  /** Capacity mode: each step's producer runs and times (then `producers` is empty). */
  readonly steps?: readonly KafkaStepOutput[];
}

/**
 * ProducerPerformance's lines (Stats.printWindow / printTotal in tools/.../ProducerPerformance.java):
 *   "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency."
 *   "%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th,
 * %d ms 99th, %d ms 99.9th."
 * Latency there is the time from send() to the broker's acknowledgement (per acks).
 */
const NUMBER = '(\\d+(?:\\.\\d+)?)';
const WINDOW_LINE = new RegExp(
  `^(\\d+) records sent, ${NUMBER} records/sec \\(${NUMBER} MB/sec\\), ` +
    `${NUMBER} ms avg latency, ${NUMBER} ms max latency\\.$`,
);
const TOTAL_FIELDS =
  `records sent, ${NUMBER} records/sec \\(${NUMBER} MB/sec\\), ${NUMBER} ms avg latency, ${NUMBER} ms max latency, ` +
  '(\\d+) ms 50th, (\\d+) ms 95th, (\\d+) ms 99th, (\\d+) ms 99\\.9th\\.$';
const TOTAL_LINE = new RegExp(`^(\\d+) ${TOTAL_FIELDS}`);
/** With --warmup-records, the summary over the records after the warm-up follows: "%d steady state records sent…". */
const STEADY_LINE = new RegExp(`^(\\d+) steady state ${TOTAL_FIELDS}`);
/** ConsumerPerformance --show-detailed-stats (printHeader / printConsumerProgress in ConsumerPerformance.java). */
const CONSUMER_HEADER = 'time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec';
/** Its default --date-format is "yyyy-MM-dd HH:mm:ss:SSS". */
const CONSUMER_ROW =
  /^(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}):(\d{2}):(\d{3}), \d+, ([\d.]+), ([\d.]+), (\d+), ([\d.]+)(?:, .*)?$/;
const CONSUMER_TIMEOUT = /^WARNING: Exiting before consuming the expected number of (?:records|messages): timeout/;

/** A producer's or consumer's per-second line as live progress: records/s, or undefined for any other line. */
export function parseKafkaProgressLine(line: string): { kind: 'sent' | 'received'; rate: number } | undefined {
  const window = WINDOW_LINE.exec(line.trim());
  if (window) return { kind: 'sent', rate: Number(window[2]) };
  const row = CONSUMER_ROW.exec(line.trim());
  return row ? { kind: 'received', rate: Number(row[9]) } : undefined;
}

interface ProducerOutcome {
  readonly windows: number[];
  readonly sent: number;
  readonly rate: number;
  /** Absent for a producer stopped at the duration: ProducerPerformance prints percentiles in its summary only. */
  readonly latency?: LatencyPercentiles;
  /**
   * After the warm-up: with --warmup-records, ProducerPerformance's "steady state" rate and latency; for a producer
   * stopped at the duration, the rate of its windows after the warm-up's seconds (no latency, as above).
   */
  readonly steady?: { readonly rate: number; readonly latency?: LatencyPercentiles };
}

export interface ConsumerRow {
  readonly atMs: number;
  readonly total: number;
  readonly rate: number;
}

/** A ProducerPerformance run's lines: its 1 s windows' rates, and its summaries where it printed them. */
export interface ProducerLines {
  readonly windows: readonly number[];
  /** The records each window counts, beside `windows`' rates. */
  readonly windowRecords: readonly number[];
  readonly total?: { readonly records: number; readonly rate: number; readonly latency: LatencyPercentiles };
  readonly steady?: { readonly records: number; readonly rate: number; readonly latency: LatencyPercentiles };
}

/** Reads a producer's output without judging it (core/kafka/kafka-capacity.ts judges each step's run). */
export function producerLines(text: string): ProducerLines {
  const windows: number[] = [];
  const windowRecords: number[] = [];
  let total: RegExpExecArray | undefined;
  let steady: RegExpExecArray | undefined;
  for (const line of text.split(/\r?\n/).map((candidate) => candidate.trim())) {
    const window = WINDOW_LINE.exec(line);
    if (window) {
      windows.push(Number(window[2]));
      windowRecords.push(Number(window[1]));
    }
    total ??= TOTAL_LINE.exec(line) ?? undefined;
    steady ??= STEADY_LINE.exec(line) ?? undefined;
  }
  const summaryOf = (line: RegExpExecArray) => ({
    records: Number(line[1]),
    rate: Number(line[2]),
    latency: { median: Number(line[6]) * 1000, p95: Number(line[7]) * 1000, p99: Number(line[8]) * 1000 },
  });
  return {
    windows,
    windowRecords,
    ...(total ? { total: summaryOf(total) } : {}),
    ...(steady ? { steady: summaryOf(steady) } : {}),
  };
}

/** A consumer's per-second rows (--show-detailed-stats), without judging them. */
export function consumerRows(text: string): ConsumerRow[] {
  const rows: ConsumerRow[] = [];
  for (const line of text.split(/\r?\n/).map((candidate) => candidate.trim())) {
    const row = CONSUMER_ROW.exec(line);
    if (!row) continue;
    const atMs = Date.parse(`${row[1]}T${row[2]}:${row[3]}:${row[4]}.${row[5]}Z`);
    rows.push({ atMs, total: Number(row[8]), rate: Number(row[9]) });
  }
  return rows;
}

/**
 * Normalizes one Kafka repetition into the result model PerfTest results use: the send rate is the producers'
 * own final rates added up, the receive rate the consumers' records between their first and last per-second row
 * over that time (so that neither the time before the first row nor the idle timeout after the last counts; a
 * consumer with one row counts that row's rate, one without partitions and so without rows counts 0),
 * and the producers' acknowledgement latency (50th/95th/99th; the tool reports no minimum or 75th) is the
 * confirm latency. Output that is cut short or garbled throws a PerfTestOutputError naming what is missing.
 */
export function parseKafkaPerfOutput(output: KafkaPerfOutput, expected: KafkaPerfExpectations): PerfTestResult {
  const missing: string[] = [];
  if (output.producers.length !== expected.producers)
    missing.push(`the output of ${expected.producers} producer(s) (found ${output.producers.length})`);
  if (output.consumers.length !== expected.consumers)
    missing.push(`the output of ${expected.consumers} consumer(s) (found ${output.consumers.length})`);
  const producers = output.producers.map((text, index) => parseProducer(text, index + 1, expected, missing));
  const consumers = output.consumers.map((text, index) => parseConsumer(text, index + 1, expected.consumers, missing));
  if (expected.consumers > 0 && consumers.every((rows) => rows !== undefined && rows.length === 0)) {
    missing.push(`per-second rows from any of the ${expected.consumers} consumer(s) (found none)`);
  }
  const crash = [...output.producers, ...output.consumers].map(firstErrorLine).find((line) => line !== undefined);
  if (missing.length > 0) {
    const cause = crash ? ` The tool reported: ${crash}.` : '';
    throw new PerfTestOutputError(`Kafka tool output is incomplete: missing ${missing.join('; ')}.${cause}`, missing);
  }
  const done = producers as ProducerOutcome[];
  const rows = consumers as ConsumerRow[][];
  const samples = mergeSamples(done, rows);
  const summary = (steady: boolean) => ({
    // Whole msg/s, the resolution PerfTest reports its averages in.
    sendRateAvg: Math.round(
      done.reduce((sum, producer) => sum + (steady ? (producer.steady ?? producer) : producer).rate, 0),
    ),
    receiveRateAvg: Math.round(
      rows.reduce((sum, consumer) => sum + consumerRate(steady ? afterWarmUp(consumer, expected) : consumer), 0),
    ),
    ...confirmLatencyOf(done.map((producer) => (steady ? (producer.steady ?? producer) : producer).latency)),
  });
  const warmUp = expected.warmUpSeconds ?? 0;
  const measured = warmUp > 0 ? samples.filter((sample) => sample.time - 1 >= warmUp) : samples;
  const counted = measured.length > 0 ? measured : samples;
  return {
    summary: summary(warmUp > 0),
    ...(warmUp > 0 ? { warmUpSeconds: warmUp, perfTestSummary: summary(false) } : {}),
    samples,
    sendRate: describe(counted.map((sample) => sample.published)),
    receiveRate: describe(counted.map((sample) => sample.received)),
  };
}

/** A consumer's rows from its first row plus the warm-up on (all of them when fewer than two would be left). */
function afterWarmUp(rows: readonly ConsumerRow[], expected: KafkaPerfExpectations): readonly ConsumerRow[] {
  const first = rows[0];
  if (!first || !expected.warmUpSeconds) return rows;
  const later = rows.filter((row) => row.atMs - first.atMs >= expected.warmUpSeconds! * 1000);
  return later.length >= 2 ? later : rows;
}

function parseProducer(
  text: string,
  number: number,
  expected: KafkaPerfExpectations,
  missing: string[],
): ProducerOutcome | undefined {
  if (expected.stoppedAtSeconds !== undefined)
    return stoppedProducer(text, number, expected.stoppedAtSeconds, missing, expected.warmUpSeconds);
  const expectedRecords = expected.recordsPerProducer;
  const { windows, total, steady } = producerLines(text);
  if (total && expected.warmUpSeconds && !steady) {
    missing.push(`producer ${number}: the "steady state records sent" line that follows the summary with a warm-up`);
    return undefined;
  }
  if (!total) {
    missing.push(
      `producer ${number}: the final "records sent ... ms 99.9th" line ` +
        `(the run was cut short after ${windows.length} per-second line(s))`,
    );
    return undefined;
  }
  const sent = total.records;
  if (sent !== expectedRecords) {
    missing.push(
      `producer ${number}: ${expectedRecords} acknowledged records (it reports ${sent}; failed sends are not counted)`,
    );
    return undefined;
  }
  return {
    windows: [...windows],
    sent,
    rate: total.rate,
    latency: total.latency,
    ...(steady ? { steady: { rate: steady.rate, latency: steady.latency } } : {}),
  };
}

/**
 * A producer stopped at the duration: ProducerPerformance 4.3.1 registers no shutdown hook (its classes call no
 * Runtime.addShutdownHook), so a stopped one prints its 1 s windows and nothing after them. Each window line is printed
 * once its interval has passed (Stats.record → printWindow, ProducerPerformance.java lines 440-463 in the 4.3.1 jar's
 * line table), so every printed window lies inside the duration and the unfinished last one is never printed. Its
 * rate: the windows' records over the windows' time (each window's records ÷ its rate). With a warm-up, the steady
 * rate is that of the windows after the first `warmUpSeconds` seconds of windows (all of them when none is left).
 */
function stoppedProducer(
  text: string,
  number: number,
  seconds: number,
  missing: string[],
  warmUpSeconds?: number,
): ProducerOutcome | undefined {
  const { windows, windowRecords } = producerLines(text);
  if (windows.length === 0) {
    missing.push(`producer ${number}: any per-second "records sent" line in the ${seconds} s it ran (found none)`);
    return undefined;
  }
  const windowSeconds = windowRecords.map((records, index) => records / (windows[index] || Infinity));
  const rateOf = (from: number) => {
    const sent = windowRecords.slice(from).reduce((sum, records) => sum + records, 0);
    const elapsed = windowSeconds.slice(from).reduce((sum, time) => sum + time, 0);
    return elapsed > 0 ? sent / elapsed : 0;
  };
  const sent = windowRecords.reduce((sum, records) => sum + records, 0);
  const rate = rateOf(0);
  if (!warmUpSeconds) return { windows: [...windows], sent, rate };
  // The first window that starts once the warm-up's seconds have passed (the one after the window ending there).
  let end = 0;
  const firstSteady = windowSeconds.map((time) => (end += time)).findIndex((at) => at >= warmUpSeconds) + 1;
  const steady = firstSteady > 0 && firstSteady < windows.length ? rateOf(firstSteady) : rate;
  return { windows: [...windows], sent, rate, steady: { rate: steady } };
}

function parseConsumer(text: string, number: number, consumers: number, missing: string[]): ConsumerRow[] | undefined {
  const lines = text.split(/\r?\n/).map((candidate) => candidate.trim());
  if (!lines.some((line) => line.startsWith(CONSUMER_HEADER))) {
    missing.push(`consumer ${number}: the "${CONSUMER_HEADER}" header`);
    return undefined;
  }
  const rows = consumerRows(text);
  // A lone consumer asks for exactly what the producers send, so its timeout means records never arrived.
  if (consumers === 1 && lines.some((line) => CONSUMER_TIMEOUT.test(line))) {
    missing.push(
      `consumer ${number}: every record ` +
        `(it stopped waiting: "WARNING: Exiting before consuming the expected number of records")`,
    );
    return undefined;
  }
  // The rate is measured from the first row on; a consumer whose rows never move after it got everything before that
  // row (a transfer shorter than the tool's 1 s report interval), and the rate would read 0.
  const first = rows[0];
  if (rows.length >= 2 && first !== undefined && first.total > 0 && rows[rows.length - 1]!.total === first.total) {
    missing.push(
      `consumer ${number}: a measurable receive rate ` +
        `(all ${first.total} of its records arrived before its first per-second row, ` +
        'so the transfer was shorter than the 1 s report interval: ' +
        'send more records, e.g. a larger messageCount, or a longer durationSeconds)',
    );
    return undefined;
  }
  return rows;
}

/** Records per second between a consumer's first and last row. */
function consumerRate(rows: readonly ConsumerRow[]): number {
  if (rows.length === 0) return 0;
  if (rows.length === 1) return rows[0]!.rate;
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  return ((last.total - first.total) * 1000) / (last.atMs - first.atMs);
}

/** Per-second samples: the n-th report of every producer and consumer added up as second n. */
function mergeSamples(producers: readonly ProducerOutcome[], consumers: readonly ConsumerRow[][]): PerSecondSample[] {
  const length = Math.max(
    ...producers.map((producer) => producer.windows.length),
    ...consumers.map((rows) => rows.length),
    0,
  );
  return Array.from({ length }, (_, index) => {
    const published = producers.reduce((sum, producer) => sum + (producer.windows[index] ?? 0), 0);
    return {
      time: index + 1,
      published,
      returned: 0,
      // A producer counts a record once the broker acknowledged it, so what it sent is what was confirmed.
      confirmed: published,
      nacked: 0,
      received: consumers.reduce((sum, rows) => sum + (rows[index]?.rate ?? 0), 0),
    };
  });
}

/** The producers' acknowledgement latency, when they reported any (producers stopped at the duration do not). */
function confirmLatencyOf(values: readonly (LatencyPercentiles | undefined)[]): {
  confirmLatency?: LatencyPercentiles;
} {
  const reported = values.filter((value): value is LatencyPercentiles => value !== undefined);
  return reported.length > 0 ? { confirmLatency: medianLatency(reported) } : {};
}

/** Several producers' latencies as one: the median of each percentile. */
function medianLatency(values: readonly LatencyPercentiles[]): LatencyPercentiles {
  const middle = (pick: (value: LatencyPercentiles) => number) => {
    const sorted = values.map(pick).sort((a, b) => a - b);
    const half = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
  };
  return { median: middle((v) => v.median), p95: middle((v) => v.p95), p99: middle((v) => v.p99) };
}

function firstErrorLine(text: string): string | undefined {
  return text
    .split('\n')
    .find((line) => /Exception|ERROR|Error:/.test(line) && !/^\s+at /.test(line))
    ?.trim();
}
