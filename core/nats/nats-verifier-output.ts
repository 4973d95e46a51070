/**
 * The NATS lost-message verifier (local/nats-load/verify.go, `-verify`): its arguments. Its output is read by
 * core/failover/verifier-output.ts, as the Kafka verifier's is.
 */
import { natsStreamArgs } from './nats-load-args';

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
