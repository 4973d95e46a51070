import { randomBytes } from 'node:crypto';
import { connect } from 'amqplib';
import { pinnedHttpsGet, pinnedTlsOptions } from '../shared/pinned-tls';

/**
 * Publishes one message and consumes it back through `url` (the load balancer in the cloud), so
 * that a broken cluster fails here and not later as a zero-throughput result. An `amqps://` URL
 * needs `pinnedCertificatePem`: the connection then trusts exactly that certificate
 * (lambdas/shared/pinned-tls.ts) and fails on any other.
 */
export async function smokeTest(
  url: string,
  timeoutMs = 20_000,
  pinnedCertificatePem?: string,
): Promise<{ roundTripMs: number }> {
  const started = Date.now();
  const where = url.replace(/\/\/[^@]*@/, '//');
  const tls = url.startsWith('amqps://');
  if (tls && !pinnedCertificatePem)
    throw new Error(`smoke test: ${where} is AMQPS but no certificate to pin was given`);
  if (!tls && pinnedCertificatePem)
    throw new Error(`smoke test: a certificate to pin was given for ${where}, which is not amqps://`);
  const socketOptions = { timeout: timeoutMs, ...(tls ? pinnedTlsOptions(pinnedCertificatePem!) : {}) };
  const connection = await withTimeout(connect(url, socketOptions), timeoutMs, `connect to ${where}`);
  try {
    const channel = await connection.createConfirmChannel();
    const { queue } = await channel.assertQueue(`rmqbench-smoke-${randomBytes(4).toString('hex')}`, {
      exclusive: true,
      autoDelete: true,
      durable: false,
    });
    const body = randomBytes(16).toString('hex');
    const received = new Promise<string>((resolve) => {
      void channel.consume(
        queue,
        (message) => {
          if (message) resolve(message.content.toString());
        },
        { noAck: true },
      );
    });
    channel.sendToQueue(queue, Buffer.from(body));
    await withTimeout(channel.waitForConfirms(), timeoutMs, `have the smoke-test message confirmed by ${where}`);
    const echoed = await withTimeout(received, timeoutMs, `consume the smoke-test message from ${where}`);
    if (echoed !== body)
      throw new Error(`smoke test through ${where}: consumed "${echoed}" instead of the published "${body}"`);
    await channel.close();
    return { roundTripMs: Date.now() - started };
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/**
 * Asks the management API (`managementUrl`, https) for `/api/overview` with the admin credentials over a
 * connection pinned to `pinnedCertificatePem`, and fails unless it answers 200 with the cluster's name.
 */
export async function managementSmokeTest(
  managementUrl: string,
  username: string,
  password: string,
  pinnedCertificatePem: string,
  timeoutMs = 20_000,
): Promise<{ clusterName: string }> {
  const url = `${managementUrl.replace(/\/+$/, '')}/api/overview`;
  const { status, body } = await withTimeout(
    pinnedHttpsGet(url, pinnedCertificatePem, username, password, timeoutMs),
    timeoutMs,
    `reach the management API at ${url}`,
  );
  if (status !== 200) throw new Error(`smoke test: GET ${url} answered ${status}: ${body.slice(0, 200)}`);
  const clusterName = (JSON.parse(body) as { cluster_name?: unknown }).cluster_name;
  if (typeof clusterName !== 'string')
    throw new Error(`smoke test: GET ${url} answered without a cluster_name: ${body.slice(0, 200)}`);
  return { clusterName };
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
