import { fixedMessageCount } from '../plan/fixed-work';
import type { Workload } from '../plan/plan-schema';
import { defaultNatsReplicas, NATS_DEFAULTS } from './nats-plan';
import type { NatsLoadExpectations } from './nats-load-output';

/**
 * rmqbench's own NATS load client (local/nats-load/main.go) as the load, not the NATS CLI's `nats bench`: natscli
 * v0.5.0's `nats bench js pub|consume|fetch` print one total rate per client when they end (their --csv has one row
 * per client) and, for asynchronous publishes, the latency of a whole batch operation; neither per-second rates nor
 * an end-to-end latency, which every other broker's results have (per-second samples, consumer and confirm latency
 * percentiles). The client prints one JSON line per second and a summary (core/nats/nats-load-output.ts).
 */

/** Unacknowledged asynchronous publishes per producer (`nats bench js pub async`'s default batch is 500 too). */
export const NATS_PUBLISH_WINDOW = 500;
/** Seconds without a delivery after which the consumers stop once the producers are done. */
export const NATS_DRAIN_SECONDS = 10;

/** The JetStream settings a workload runs with, its defaults applied. */
export interface NatsRunSettings {
  readonly replicas: number;
  readonly storage: string;
  readonly retention: string;
  readonly consumerMode: string;
  readonly ackPolicy: string;
  readonly maxBytes?: number;
  readonly maxMsgs?: number;
  /** Messages each producer sends (fixed work); absent: it sends for durationSeconds. */
  readonly messagesPerProducer?: number;
  /** Messages per second per producer; 0: flat out. */
  readonly ratePerProducer: number;
}

export function natsRunSettings(workload: Workload, nodes: number): NatsRunSettings {
  const total = fixedMessageCount(workload);
  return {
    replicas: workload.replicas ?? defaultNatsReplicas(nodes),
    storage: workload.storage ?? NATS_DEFAULTS.storage,
    retention: workload.retention ?? NATS_DEFAULTS.retention,
    consumerMode: workload.consumerMode ?? NATS_DEFAULTS.consumerMode,
    ackPolicy: workload.ackPolicy ?? NATS_DEFAULTS.ackPolicy,
    ...(workload.maxBytes === undefined ? {} : { maxBytes: workload.maxBytes }),
    ...(workload.maxMsgs === undefined ? {} : { maxMsgs: workload.maxMsgs }),
    ...(total === undefined ? {} : { messagesPerProducer: total / Math.max(1, workload.producers) }),
    ratePerProducer: workload.publishRateLimit ?? 0,
  };
}

/** What the parser expects of one NATS workload's output. */
export function natsLoadExpectations(workload: Workload, settings: NatsRunSettings): NatsLoadExpectations {
  return {
    producers: workload.producers,
    consumers: workload.consumers,
    ...(settings.messagesPerProducer === undefined ? {} : { messagesPerProducer: settings.messagesPerProducer }),
    // Limits may discard messages before the consumers read them: then not every acknowledged one is received.
    ...(settings.maxBytes !== undefined || settings.maxMsgs !== undefined ? { mayDiscard: true } : {}),
    ...(workload.warmUpSeconds ? { warmUpSeconds: workload.warmUpSeconds } : {}),
    ...(workload.fault ? { underFault: true } : {}),
  };
}

/** The load client's arguments for one repetition. */
export function natsLoadArgs(options: {
  /** nats:// URLs of the nodes the clients may connect to. */
  readonly servers: readonly string[];
  readonly stream: string;
  readonly subject: string;
  readonly workload: Workload;
  readonly settings: NatsRunSettings;
}): string[] {
  const { workload, settings } = options;
  return [
    '-servers',
    options.servers.join(','),
    '-stream',
    options.stream,
    '-subject',
    options.subject,
    '-producers',
    String(workload.producers),
    '-consumers',
    String(workload.consumers),
    '-size',
    String(workload.messageSizeBytes),
    '-rate',
    String(settings.ratePerProducer),
    ...(settings.messagesPerProducer === undefined
      ? ['-duration', String(workload.durationSeconds)]
      : ['-messages', String(settings.messagesPerProducer)]),
    '-drain',
    String(NATS_DRAIN_SECONDS),
    '-consumer-mode',
    settings.consumerMode,
    '-ack',
    settings.ackPolicy,
    ...natsStreamArgs(settings),
    '-window',
    String(NATS_PUBLISH_WINDOW),
  ];
}

/** The stream's settings as the load client's flags (its load and its `-verify` mode take the same). */
export function natsStreamArgs(
  settings: Pick<NatsRunSettings, 'storage' | 'replicas' | 'retention' | 'maxBytes' | 'maxMsgs'>,
): string[] {
  return [
    '-storage',
    settings.storage,
    '-replicas',
    String(settings.replicas),
    '-retention',
    settings.retention,
    ...(settings.maxBytes === undefined ? [] : ['-max-bytes', String(settings.maxBytes)]),
    ...(settings.maxMsgs === undefined ? [] : ['-max-msgs', String(settings.maxMsgs)]),
  ];
}
