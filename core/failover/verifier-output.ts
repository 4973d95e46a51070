import type { VerifierCounts } from './failover';

/**
 * The output of a lost-message verifier that runs as a process of its own (NATS: local/nats-load/verify.go, Kafka:
 * local/kafka-verifier/KafkaLostMessageVerifier.java): JSON lines, a `ready` line once its stream or topic and clients
 * are ready, one `counts` line when it finished, or an `error` line. The counts are those of the RabbitMQ verifier
 * (VerifierCounts), so that the shared ingest and the failover report read them alike.
 */

/** The counts the verifier printed; throws, naming what is missing, when its output has none or a broken one. */
export function parseVerifierCounts(output: string, broker: string): VerifierCounts {
  const lines = output.split('\n').filter((line) => line.trim().startsWith('{'));
  const parsed = lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  const error = parsed.find((line) => line.type === 'error');
  if (error) throw new Error(`the ${broker} verifier failed: ${String(error.message)}`);
  const counts = parsed.find((line) => line.type === 'counts');
  if (!counts) {
    const said = parsed.some((line) => line.type === 'ready') ? 'it was ready, then stopped before' : 'no';
    throw new Error(`the ${broker} verifier's output holds no counts line (${said} counts; cut short?)`);
  }
  const numbers = ['published', 'confirmed', 'consumed', 'lostMessages', 'duplicatedMessages', 'reconnects'] as const;
  for (const field of numbers) {
    if (typeof counts[field] !== 'number')
      throw new Error(`the ${broker} verifier's counts line has no number ${field}`);
  }
  const perSecond = counts.receivedPerSecond;
  if (!Array.isArray(perSecond) || !perSecond.every((value) => typeof value === 'number')) {
    throw new Error(`the ${broker} verifier's counts line has no receivedPerSecond list of numbers`);
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
