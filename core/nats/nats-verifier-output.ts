import type { VerifierCounts } from '../failover/failover';
import { natsStreamArgs } from './nats-load-args';

/**
 * The NATS lost-message verifier's output (local/nats-load/verify.go, `-verify`): JSON lines, a `ready` line once its
 * stream and clients are ready, one `counts` line when it finished, or an `error` line. The counts are those of the
 * RabbitMQ verifier (core/failover/failover.ts VerifierCounts), so that the shared ingest and the failover report
 * read both alike.
 */

/** The counts the verifier printed; throws, naming what is missing, when its output has none or a broken one. */
export function parseNatsVerifierCounts(output: string): VerifierCounts {
  const lines = output.split('\n').filter((line) => line.trim().startsWith('{'));
  const parsed = lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  const error = parsed.find((line) => line.type === 'error');
  if (error) throw new Error(`the NATS verifier failed: ${String(error.message)}`);
  const counts = parsed.find((line) => line.type === 'counts');
  if (!counts) {
    const said = parsed.some((line) => line.type === 'ready') ? 'it was ready, then stopped before' : 'no';
    throw new Error(`the NATS verifier's output holds no counts line (${said} counts; cut short?)`);
  }
  const numbers = ['published', 'confirmed', 'consumed', 'lostMessages', 'duplicatedMessages', 'reconnects'] as const;
  for (const field of numbers) {
    if (typeof counts[field] !== 'number') throw new Error(`the NATS verifier's counts line has no number ${field}`);
  }
  const perSecond = counts.receivedPerSecond;
  if (!Array.isArray(perSecond) || !perSecond.every((value) => typeof value === 'number')) {
    throw new Error(`the NATS verifier's counts line has no receivedPerSecond list of numbers`);
  }
  const optional = (field: string) => (typeof counts[field] === 'number' ? { [field]: counts[field] } : {});
  return {
    published: counts.published as number,
    confirmed: counts.confirmed as number,
    consumed: counts.consumed as number,
    lostMessages: counts.lostMessages as number,
    duplicatedMessages: counts.duplicatedMessages as number,
    reconnects: counts.reconnects as number,
    receivedPerSecond: perSecond as number[],
    ...optional('undeliveredMessages'),
    ...optional('unconfirmedAtFault'),
    ...optional('faultAtSeconds'),
    ...optional('healAtSeconds'),
  };
}

/** The arguments of the verifier: its own stream with the workload's JetStream settings (core/nats/nats-load-args). */
export function natsVerifierArgs(options: {
  readonly servers: readonly string[];
  readonly stream: string;
  readonly subject: string;
  readonly settings: Parameters<typeof natsStreamArgs>[0];
  /** Messages per second. @default 200 (the RabbitMQ verifier's rate) */
  readonly ratePerSecond?: number;
}): string[] {
  return [
    '-verify',
    '-servers',
    options.servers.join(','),
    '-stream',
    options.stream,
    '-subject',
    options.subject,
    '-verify-rate',
    String(options.ratePerSecond ?? 200),
    ...natsStreamArgs(options.settings),
    // At most this many unacknowledged publishes, as the RabbitMQ verifier's confirm window.
    '-window',
    '200',
  ];
}
