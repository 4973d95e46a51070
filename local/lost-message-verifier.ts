import { ChannelModel, ConfirmChannel, Channel, connect, ConsumeMessage } from 'amqplib';
import type { VerifierCounts } from '../core/failover/failover';

export type { VerifierCounts };

/**
 * The lost-message verifier that runs beside PerfTest in a repetition with a fault: it publishes
 * sequence-numbered persistent messages with publisher confirms and consumes them with manual acks,
 * reconnecting when the broker goes away, so that what a fault cost is counted message by message
 * (Jepsen's and Jack Vanlightly's RabbitMQ tests count the same way: confirmed but never consumed = lost).
 *
 * Why amqplib: it is already a dependency (the smoke test uses it), it runs in the CLI's own Node process
 * (no second JVM beside PerfTest on a 2-core machine), and it exposes exactly the protocol pieces this needs:
 * a confirm channel with a per-message callback (ack or nack), manual basic.ack, basic.qos, and the
 * connection's 'close'/'error' events. It has no automatic recovery, so the reconnect loop below is ours and
 * its count is exact. PerfTest cannot do this: it counts rates, not which message went missing.
 *
 * Messages that were published but not confirmed when a connection dropped are not published again
 * (a producer that republishes them turns the same loss into duplicates); they count as unconfirmed.
 */
export interface VerifierOptions {
  /**
   * The first is where both clients connect (the scenario's own way in); each reconnect tries the next, wrapping
   * around.
   */
  readonly uris: readonly string[];
  readonly queue: string;
  /** Messages published per second. @default 200 */
  readonly ratePerSecond?: number;
  /** At most this many unconfirmed messages in flight. @default 200 */
  readonly confirmWindow?: number;
  /** Wait between two connection attempts. @default 500 */
  readonly reconnectDelayMs?: number;
}

const TICK_MS = 50;

export class LostMessageVerifier {
  private readonly started = Date.now();
  private readonly rate: number;
  private readonly window: number;
  private readonly delayMs: number;
  /** Connection attempts per client: the first uses uris[0], reconnects go round the list. */
  private readonly attempts = { publisher: 0, consumer: 0 };
  private stopping = false;
  private publishing = true;

  private nextSeq = 0;
  /** seq -> connection epoch it was published on; a callback from an older epoch is ignored. */
  private readonly outstanding = new Map<number, number>();
  private readonly confirmed = new Set<number>();
  private readonly consumed = new Set<number>();
  private duplicates = 0;
  /**
   * Recoveries: a client that lost its connection (or, the consumer, its subscription) counts once when it works
   * again, at its first confirm or delivery afterwards. Counting connections instead would count every
   * subscription the broker cancels at once while the queue's node is down (hundreds in a 10 s outage).
   */
  private reconnects = 0;
  private readonly recovering = { publisher: false, consumer: false };
  private readonly buckets: number[] = [];
  private measuring = true;
  private lastDelivery = Date.now();
  private faultAt?: { seconds: number; unconfirmed: number };
  private healAtSeconds?: number;

  private publisher?: { connection: ChannelModel; channel: ConfirmChannel; epoch: number };
  private consumer?: { connection: ChannelModel; channel: Channel };
  private publisherEpoch = 0;
  private timer?: NodeJS.Timeout;
  private credit = 0;
  private readonly loops: Promise<void>[] = [];

  private constructor(private readonly options: VerifierOptions) {
    if (options.uris.length === 0) throw new Error('the verifier needs at least one AMQP URI');
    this.rate = options.ratePerSecond ?? 200;
    this.window = options.confirmWindow ?? 200;
    this.delayMs = options.reconnectDelayMs ?? 500;
  }

  /**
   * Connects its consumer, then its publisher (so that nothing is published before it can be consumed), and starts
   * publishing.
   */
  static async start(options: VerifierOptions): Promise<LostMessageVerifier> {
    const verifier = new LostMessageVerifier(options);
    await verifier.connectConsumer();
    await verifier.connectPublisher();
    verifier.timer = setInterval(() => verifier.tick(), TICK_MS);
    return verifier;
  }

  private seconds(): number {
    return (Date.now() - this.started) / 1000;
  }

  /** Records the moment of the fault and what was in flight then. */
  markFault(): number {
    const seconds = this.seconds();
    this.faultAt = { seconds, unconfirmed: this.outstanding.size };
    return seconds;
  }

  markHeal(): number {
    this.healAtSeconds = this.seconds();
    return this.healAtSeconds;
  }

  private uri(client: 'publisher' | 'consumer'): string {
    const uri = this.options.uris[this.attempts[client]++ % this.options.uris.length]!;
    // Heartbeats find a peer that died without the kernel closing the socket (https://www.rabbitmq.com/docs/heartbeats:
    // after two missed heartbeats, timeout / 2 apart, the connection is closed). 5 s keeps that quick; far lower values
    // cause false positives (a RabbitMQ maintainer in https://github.com/rabbitmq/rabbitmq-server/issues/1228).
    return uri.includes('?') ? `${uri}&heartbeat=5` : `${uri}?heartbeat=5`;
  }

  private async connectPublisher(): Promise<void> {
    const connection = await connect(this.uri('publisher'));
    const epoch = ++this.publisherEpoch;
    const lost = () => this.onPublisherLost(epoch);
    connection.on('error', () => undefined);
    connection.on('close', lost);
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => undefined);
    channel.on('close', lost);
    this.publisher = { connection, channel, epoch };
  }

  private async connectConsumer(): Promise<void> {
    const connection = await connect(this.uri('consumer'));
    let closed = false;
    const lost = () => {
      if (closed) return;
      closed = true;
      this.consumer = undefined;
      this.recovering.consumer = true;
      void connection.close().catch(() => undefined);
      if (!this.stopping) this.loops.push(this.reconnect('consumer'));
    };
    connection.on('error', () => undefined);
    connection.on('close', lost);
    try {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      channel.on('close', lost);
      await channel.prefetch(200);
      // A null delivery is the broker's basic.cancel (the queue's node went down, or the queue was deleted): nothing
      // more will arrive on this channel, and no close follows, so the consumer reconnects and subscribes again
      // (https://www.rabbitmq.com/docs/consumer-cancel; amqplib 2.3.1 lib/channel.js handleCancel:
      // dispatchMessage(fields, null)).
      await channel.consume(this.options.queue, (message) => (message ? this.onDelivery(channel, message) : lost()), {
        noAck: false,
      });
      this.consumer = { connection, channel };
    } catch (error) {
      // The queue may be unavailable (its node is down): the connection goes, the reconnect loop tries again.
      closed = true;
      await connection.close().catch(() => undefined);
      throw error;
    }
  }

  private onDelivery(channel: Channel, message: ConsumeMessage): void {
    this.recovered('consumer');
    const seq = Number(message.content.toString());
    if (this.consumed.has(seq)) this.duplicates++;
    else this.consumed.add(seq);
    if (this.measuring) {
      const second = Math.floor(this.seconds());
      while (this.buckets.length <= second) this.buckets.push(0);
      this.buckets[second]!++;
    }
    this.lastDelivery = Date.now();
    try {
      channel.ack(message);
    } catch {
      // The channel closed under us; the broker redelivers the message, which is then counted as a duplicate.
    }
  }

  private recovered(client: 'publisher' | 'consumer'): void {
    if (!this.recovering[client]) return;
    this.recovering[client] = false;
    this.reconnects++;
  }

  private onPublisherLost(epoch: number): void {
    if (this.publisher?.epoch !== epoch) return;
    const { connection } = this.publisher;
    this.publisher = undefined;
    this.recovering.publisher = true;
    // What was in flight on the lost connection stays unconfirmed.
    for (const [seq, sentOn] of this.outstanding) if (sentOn === epoch) this.outstanding.delete(seq);
    void connection.close().catch(() => undefined);
    if (!this.stopping && this.publishing) this.loops.push(this.reconnect('publisher'));
  }

  private async reconnect(which: 'publisher' | 'consumer'): Promise<void> {
    while (!this.stopping && (which === 'consumer' || this.publishing)) {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      if (this.stopping) return;
      try {
        if (which === 'publisher') await this.connectPublisher();
        else await this.connectConsumer();
        return;
      } catch {
        // Node down, queue unavailable or refused: try the next URI.
      }
    }
  }

  private tick(): void {
    if (!this.publishing || !this.publisher) return;
    this.credit = Math.min(this.credit + (this.rate * TICK_MS) / 1000, this.rate);
    const { channel, epoch } = this.publisher;
    while (this.credit >= 1 && this.outstanding.size < this.window) {
      const seq = this.nextSeq++;
      this.credit--;
      this.outstanding.set(seq, epoch);
      try {
        channel.sendToQueue(
          this.options.queue,
          Buffer.from(String(seq)),
          { persistent: true, messageId: String(seq) },
          (error: unknown) => {
            if (this.outstanding.get(seq) !== epoch) return;
            this.outstanding.delete(seq);
            if (error === null || error === undefined) {
              this.confirmed.add(seq);
              this.recovered('publisher');
            }
          },
        );
      } catch {
        // The channel is closing: the close handler reconnects.
        this.outstanding.delete(seq);
        return;
      }
    }
  }

  /**
   * Stops publishing, waits for the last confirms, then drains: consumes until every confirmed message has
   * arrived or nothing arrived for `quietMs` (at most `timeoutMs`), and returns the counts.
   */
  async finish(quietMs = 3000, timeoutMs = 30_000): Promise<VerifierCounts> {
    // Whole seconds only: silent seconds at the end are seconds too, the second under way is cut short (a partial
    // count would read as a drop in the receive rate).
    const measuredSeconds = Math.floor(this.seconds());
    while (this.buckets.length < measuredSeconds) this.buckets.push(0);
    this.buckets.length = measuredSeconds;
    this.measuring = false;
    this.publishing = false;
    if (this.timer) clearInterval(this.timer);
    const deadline = Date.now() + timeoutMs;
    const settle = Date.now() + Math.min(5000, timeoutMs);
    while (this.outstanding.size > 0 && Date.now() < settle) await sleep(50);
    const publisher = this.publisher;
    this.publisher = undefined;
    await publisher?.connection.close().catch(() => undefined);
    this.lastDelivery = Math.max(this.lastDelivery, Date.now());
    while (Date.now() < deadline) {
      if ([...this.confirmed].every((seq) => this.consumed.has(seq))) break;
      if (Date.now() - this.lastDelivery > quietMs) break;
      await sleep(100);
    }
    this.stopping = true;
    await this.consumer?.connection.close().catch(() => undefined);
    await Promise.all(this.loops);
    const lostMessages = [...this.confirmed].filter((seq) => !this.consumed.has(seq)).length;
    return {
      published: this.nextSeq,
      confirmed: this.confirmed.size,
      consumed: this.consumed.size,
      lostMessages,
      duplicatedMessages: this.duplicates,
      ...(this.faultAt
        ? { unconfirmedAtFault: this.faultAt.unconfirmed, faultAtSeconds: round3(this.faultAt.seconds) }
        : {}),
      ...(this.healAtSeconds === undefined ? {} : { healAtSeconds: round3(this.healAtSeconds) }),
      reconnects: this.reconnects,
      receivedPerSecond: [...this.buckets],
    };
  }

  /** Closes everything at once (teardown after a failure); no counts. */
  async abort(): Promise<void> {
    this.stopping = true;
    this.publishing = false;
    if (this.timer) clearInterval(this.timer);
    await this.publisher?.connection.close().catch(() => undefined);
    await this.consumer?.connection.close().catch(() => undefined);
    await Promise.all(this.loops);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round3 = (value: number) => Math.round(value * 1000) / 1000;
