import { randomBytes } from 'node:crypto';
import { connect } from 'amqplib';

/**
 * Publishes one message and consumes it back through `url` (the load balancer in the cloud), so
 * that a broken cluster fails here and not later as a zero-throughput result.
 */
export async function smokeTest(url: string, timeoutMs = 20_000): Promise<{ roundTripMs: number }> {
  const started = Date.now();
  const where = url.replace(/\/\/[^@]*@/, '//');
  const connection = await withTimeout(connect(url, { timeout: timeoutMs }), timeoutMs, `connect to ${where}`);
  try {
    const channel = await connection.createConfirmChannel();
    const { queue } = await channel.assertQueue(`rmqbench-smoke-${randomBytes(4).toString('hex')}`, { exclusive: true, autoDelete: true, durable: false });
    const body = randomBytes(16).toString('hex');
    const received = new Promise<string>((resolve) => {
      void channel.consume(queue, (message) => {
        if (message) resolve(message.content.toString());
      }, { noAck: true });
    });
    channel.sendToQueue(queue, Buffer.from(body));
    await withTimeout(channel.waitForConfirms(), timeoutMs, `have the smoke-test message confirmed by ${where}`);
    const echoed = await withTimeout(received, timeoutMs, `consume the smoke-test message from ${where}`);
    if (echoed !== body) throw new Error(`smoke test through ${where}: consumed "${echoed}" instead of the published "${body}"`);
    await channel.close();
    return { roundTripMs: Date.now() - started };
  } finally {
    await connection.close().catch(() => undefined);
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`smoke test: could not ${what} within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
