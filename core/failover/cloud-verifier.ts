import { failoverResult, type FaultOutcome, type VerifierCounts } from './failover';
import type { FailoverResult } from '../results/result-model';

/**
 * The lost-message verifier on a cloud load generator prints one JSON result line when it ends: RabbitMQ's
 * (lambdas/start-repetition/lost-message-verifier-java.ts) that line alone, Kafka's and NATS's in their cloud mode
 * (local/kafka-verifier/KafkaLostMessageVerifier.java --duration-seconds, local/nats-load/verify.go -verify-seconds)
 * a {"type":"counts",...} line after a "ready" one. It cannot know when the fault step hit the node, so it prints its
 * own start (epoch ms) and the unconfirmed count at each whole second; the fault step's applied and healed times
 * (wall clock, recorded by the workflow) are placed on that timeline here. Pure, so that it is tested on captured
 * output.
 */
/** The file the load generator's run script leaves the verifier's output in (uploaded beside PerfTest's). */
export const VERIFIER_OUTPUT_FILE = 'verifier.txt';

export interface CloudVerifierOutput extends Pick<
  VerifierCounts,
  'published' | 'confirmed' | 'consumed' | 'lostMessages' | 'duplicatedMessages' | 'undeliveredMessages' | 'reconnects'
> {
  readonly startedAtMs: number;
  /** Deliveries in whole second i after startedAtMs (no partial last second, no drain). */
  readonly receivedPerSecond: readonly number[];
  /** Published but not yet confirmed at second i after startedAtMs. */
  readonly unconfirmedPerSecond: readonly number[];
}

/**
 * The fault as the cloud fault step applied it, with its wall-clock times (ISO 8601, as lambdas/fault/aws.ts records
 * them).
 */
export interface CloudFaultTimes extends FaultOutcome {
  readonly appliedAt?: string;
  readonly healedAt?: string;
}

const COUNT_FIELDS = [
  'published',
  'confirmed',
  'consumed',
  'lostMessages',
  'duplicatedMessages',
  'reconnects',
] as const;
const SERIES_FIELDS = ['receivedPerSecond', 'unconfirmedPerSecond'] as const;

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** A JSON line with a string `type` ("ready", "counts", "error"), as the Kafka and NATS verifiers print them. */
interface TypedLine {
  readonly line: string;
  readonly type: string;
  readonly message?: unknown;
}

function typedLines(lines: readonly string[]): TypedLine[] {
  return lines.flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      const parsed: unknown = JSON.parse(line);
      const record = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
      return typeof record.type === 'string' ? [{ line, type: record.type, message: record.message }] : [];
    } catch {
      return [];
    }
  });
}

/**
 * The result line: the last "counts" line where the verifier types its lines, else the last JSON line (the RabbitMQ
 * verifier's, untyped). Throws when the verifier reported an error or printed no result.
 */
function resultLine(lines: readonly string[]): string {
  const typed = typedLines(lines);
  const error = typed.find((candidate) => candidate.type === 'error');
  if (error) throw new Error(`the verifier failed: ${String(error.message)}`);
  const counts = typed.filter((candidate) => candidate.type === 'counts').at(-1);
  if (counts) return counts.line;
  const line = [...lines].reverse().find((candidate) => candidate.startsWith('{'));
  if (line === undefined) {
    const tail = lines.slice(-2).join(' | ').slice(0, 300);
    throw new Error(
      `the verifier printed no result line (it was cut short or failed before its drain)` +
        `${tail ? `; its output ended with: ${tail}` : '; its output was empty'}`,
    );
  }
  const last = typed.at(-1);
  if (last?.line === line)
    throw new Error(
      `the verifier printed no counts line, its last was a "${last.type}" line ` +
        `(it was cut short or failed before its drain): ${line.slice(0, 200)}`,
    );
  return line;
}

/**
 * Reads the verifier's result line from its whole stdout; throws naming what is missing or wrong (a run cut short
 * prints none).
 */
export function parseVerifierOutput(stdout: string): CloudVerifierOutput {
  const lines = stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  const line = resultLine(lines);
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (error) {
    throw new Error(
      `the verifier's result line is not valid JSON ` +
        `(${error instanceof Error ? error.message : String(error)}): ${line.slice(0, 200)}`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`the verifier's result line is not a JSON object: ${line.slice(0, 200)}`);
  const record = parsed as Record<string, unknown>;
  if (!(typeof record.startedAtMs === 'number' && Number.isInteger(record.startedAtMs) && record.startedAtMs > 0)) {
    throw new Error(
      `the verifier's result has no startedAtMs (epoch milliseconds), got ${JSON.stringify(record.startedAtMs)}`,
    );
  }
  for (const field of COUNT_FIELDS) {
    if (!isCount(record[field]))
      throw new Error(
        `the verifier's result has no ${field} (a non-negative integer), got ${JSON.stringify(record[field])}`,
      );
  }
  for (const field of SERIES_FIELDS) {
    const series = record[field];
    if (!Array.isArray(series) || !series.every(isCount))
      throw new Error(
        `the verifier's result has no ${field} (a list of non-negative integers), ` +
          `got ${JSON.stringify(series)?.slice(0, 100)}`,
      );
  }
  const output = record as unknown as CloudVerifierOutput;
  if (output.confirmed > output.published)
    throw new Error(
      `the verifier's result is inconsistent: confirmed ${output.confirmed} > published ${output.published}`,
    );
  if (output.lostMessages > output.confirmed)
    throw new Error(
      `the verifier's result is inconsistent: lostMessages ${output.lostMessages} > confirmed ${output.confirmed}`,
    );
  return {
    startedAtMs: output.startedAtMs,
    ...Object.fromEntries(COUNT_FIELDS.map((field) => [field, output[field]])),
    // Kafka and NATS: confirmed messages still in the log at the final read, never consumed (not lost).
    ...(isCount(record.undeliveredMessages) ? { undeliveredMessages: record.undeliveredMessages } : {}),
    receivedPerSecond: output.receivedPerSecond,
    unconfirmedPerSecond: output.unconfirmedPerSecond,
  } as CloudVerifierOutput;
}

function secondsAfterStart(output: CloudVerifierOutput, iso: string, what: string): number {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) throw new Error(`the fault step's ${what} time is not an ISO 8601 date: "${iso}"`);
  const seconds = (at - output.startedAtMs) / 1000;
  if (seconds < 0)
    throw new Error(
      `the fault was ${what} ${-seconds} s before the verifier started ` +
        `(${new Date(output.startedAtMs).toISOString()}), so the verifier did not see it`,
    );
  return Math.round(seconds * 1000) / 1000;
}

/** The verifier's output on the fault step's timeline: what core/failover/failover.ts measures. */
export function cloudVerifierCounts(output: CloudVerifierOutput, fault: CloudFaultTimes): VerifierCounts {
  const counts = {
    published: output.published,
    confirmed: output.confirmed,
    consumed: output.consumed,
    lostMessages: output.lostMessages,
    duplicatedMessages: output.duplicatedMessages,
    ...(output.undeliveredMessages === undefined ? {} : { undeliveredMessages: output.undeliveredMessages }),
    reconnects: output.reconnects,
    receivedPerSecond: output.receivedPerSecond,
  };
  if (fault.appliedAt === undefined) return counts;
  const faultAtSeconds = secondsAfterStart(output, fault.appliedAt, 'applied');
  // A fault after the verifier's window (a lookup and kill slower than the time left: an Azure Run Command takes 20 s
  // or more) left nothing it counted: no outage, recovery or loss of it can be read there.
  if (faultAtSeconds >= output.receivedPerSecond.length)
    throw new Error(
      `the fault was applied ${faultAtSeconds} s after the verifier started, after the ` +
        `${output.receivedPerSecond.length} s it counted, so nothing it measured shows the fault: leave the fault ` +
        'step more time between atSeconds and the end of durationSeconds',
    );
  if (output.unconfirmedPerSecond.length === 0)
    throw new Error('the verifier recorded no unconfirmed count, so what was in flight at the fault is unknown');
  // The last whole-second sample at or before the fault (a fault after the last sample takes the last one).
  const unconfirmedAtFault =
    output.unconfirmedPerSecond[Math.min(Math.floor(faultAtSeconds), output.unconfirmedPerSecond.length - 1)]!;
  return {
    ...counts,
    faultAtSeconds,
    unconfirmedAtFault,
    ...(fault.healedAt === undefined ? {} : { healAtSeconds: secondsAfterStart(output, fault.healedAt, 'healed') }),
  };
}

/**
 * The stored failover result of a cloud repetition, from the verifier's stdout and the fault step's record; throws with
 * the reason it cannot be measured.
 */
export function cloudFailoverResult(stdout: string, fault: CloudFaultTimes): FailoverResult {
  return failoverResult(cloudVerifierCounts(parseVerifierOutput(stdout), fault), fault);
}
