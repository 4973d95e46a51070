// A namespace import lets esbuild drop what the schemas do not use (see core/plan/plan-schema.ts).
import * as z from 'zod';
import type { PlanIssue } from '../plan/errors';
import { kafkaWorkloadFieldNames, type Broker } from '../kafka/kafka-plan';
import {
  brokerOnlyFieldIssues,
  nonRabbitMqClusterIssues,
  rabbitMqOnlySettings,
  type RabbitMqSettingsOfWorkload,
} from '../plan/broker-field-rules';

/**
 * The NATS JetStream side of the plan model (`broker: nats`): the cluster's sync interval, the workload fields that
 * change the benchmark stream and its consumer, and the rules that keep RabbitMQ-only, Kafka-only and NATS-only
 * settings apart. Modelled on core/kafka/kafka-plan.ts. JetStream's stream and consumer settings:
 * https://docs.nats.io/nats-concepts/jetstream/streams and https://docs.nats.io/nats-concepts/jetstream/consumers.
 */

/** Stream replicas JetStream runs well: an odd count keeps a Raft majority (R2 and R4 tolerate no more failures). */
export const NATS_REPLICAS = [1, 3, 5] as const;
export const NATS_STORAGE = ['file', 'memory'] as const;
export const NATS_RETENTION = ['limits', 'interest', 'workqueue'] as const;
export const NATS_CONSUMER_MODES = ['pull', 'push'] as const;
export const NATS_ACK_POLICIES = ['explicit', 'none', 'all'] as const;

/**
 * The load client carries each message's send time in the first 8 bytes of its body (local/nats-load/main.go), as
 * PerfTest carries its own in 12.
 */
export const NATS_MIN_MESSAGE_SIZE = 8;

/** What a NATS workload uses when it leaves a NATS field out. */
export const NATS_DEFAULTS = {
  /** JetStream's defaults: file storage, limits retention; its pull consumers with explicit acks. */
  storage: 'file',
  retention: 'limits',
  consumerMode: 'pull',
  ackPolicy: 'explicit',
} as const;

/** nats-server's jetstream.sync_interval default (server/filestore.go defaultSyncInterval: 2 minutes). */
export const NATS_DEFAULT_SYNC_INTERVAL = '2m';

/** The stream replicas a NATS workload gets without any: three copies where the cluster has them (as Kafka's). */
export function defaultNatsReplicas(nodes: number): number {
  return nodes >= 3 ? 3 : 1;
}

/**
 * `always` (an fsync after every write) or a Go duration of whole units, e.g. "2m", "10s", "500ms", "1m30s": what
 * nats-server's sync_interval takes (server/opts.go: "always", else time.ParseDuration).
 */
export const syncIntervalSchema = z
  .string()
  .refine(
    (value) => value === 'always' || (/^(\d+(ms|s|m|h))+$/.test(value) && /[1-9]/.test(value)),
    'expected "always" or a duration above 0 such as "2m", "10s" or "500ms"',
  );

/** Cluster fields only a NATS cluster uses (plan-schema.ts clusterSchema spreads them). */
export const natsClusterFieldsShape = {
  /**
   * NATS only: nats-server's jetstream.sync_interval, how often file storage is flushed to disk: a duration ("2m",
   * the server's default; "10s") or "always" (an fsync after every write). A server setting, so one per cluster.
   * @default "2m" (nats-server's own)
   */
  syncInterval: syncIntervalSchema.optional(),
} as const;

const positiveInt = (max: number) => z.number().int().min(1).max(max);

/**
 * Workload fields only a NATS cluster uses: the benchmark stream's and its consumer's settings. Optional without
 * defaults, so that other brokers' workloads do not carry them; the run applies NATS_DEFAULTS.
 */
export const natsWorkloadFieldsShape = {
  /**
   * NATS: copies of the stream (1, 3 or 5), at most the cluster's nodes.
   * @default 3 where the cluster has 3 nodes or more, else 1
   */
  replicas: z
    .number()
    .int()
    .refine((value) => (NATS_REPLICAS as readonly number[]).includes(value), 'expected 1, 3 or 5 stream replicas')
    .optional(),
  /** NATS: the stream's storage, `file` or `memory`. @default "file" */
  storage: z.enum(NATS_STORAGE).optional(),
  /** NATS: the stream's max_bytes (oldest messages discarded beyond it). @default - unlimited */
  maxBytes: positiveInt(2 ** 50).optional(),
  /** NATS: the stream's max_msgs (oldest messages discarded beyond it). @default - unlimited */
  maxMsgs: positiveInt(2 ** 50).optional(),
  /**
   * NATS: the stream's retention: `limits`, `interest` or `workqueue` (which needs ackPolicy explicit).
   * @default "limits"
   */
  retention: z.enum(NATS_RETENTION).optional(),
  /** NATS: `pull` consumers (fetching from the durable consumer) or `push` (a deliver group). @default "pull" */
  consumerMode: z.enum(NATS_CONSUMER_MODES).optional(),
  /** NATS: the consumer's ack policy: `explicit` (every message), `none` or `all` (every 100th). @default "explicit" */
  ackPolicy: z.enum(NATS_ACK_POLICIES).optional(),
} as const;

export type NatsWorkloadField = keyof typeof natsWorkloadFieldsShape;
export const natsWorkloadFieldNames = Object.keys(natsWorkloadFieldsShape) as NatsWorkloadField[];

/** The fields checked here, whatever else a workload has. */
export interface NatsRelevantWorkload extends RabbitMqSettingsOfWorkload {
  readonly producers: number;
  readonly consumers: number;
  readonly messageSizeBytes: number;
  readonly messageCount?: number | undefined;
  readonly totalBytes?: number | undefined;
  readonly capacity?: unknown;
  readonly replicas?: number | undefined;
  readonly retention?: string | undefined;
  readonly ackPolicy?: string | undefined;
  readonly [field: string]: unknown;
}

export interface NatsRelevantCluster {
  readonly name: string;
  readonly nodes: number;
  readonly broker: Broker;
  readonly rabbitmqVersion?: unknown;
  readonly topology: { readonly type: string };
  readonly connection: string;
  readonly loadGenerators?: number;
  readonly syncInterval?: string | undefined;
}

/** Cluster fields that mean nothing to JetStream on a NATS cluster, and the NATS field on the others, by field. */
export function checkNatsCluster(cluster: NatsRelevantCluster, at: string): PlanIssue[] {
  if (cluster.broker !== 'nats') {
    return brokerOnlyFieldIssues({
      owner: 'nats',
      cluster,
      path: at,
      fields: ['syncInterval'],
      values: cluster,
      note: " (nats-server's jetstream.sync_interval)",
    });
  }
  return nonRabbitMqClusterIssues(cluster, at, 'nats', {
    replicates: "its stream with the workload's replicas",
    connection:
      'NATS clients connect to any node and the cluster routes messages to the stream leader; ' +
      'use "lb" (every node, the client picks one at random) or "direct" (the first node)',
    loadClient: 'its load client',
  });
}

/** RabbitMQ-only settings with a non-default value, and what JetStream has instead. */
function rabbitmqOnlySettings(workload: NatsRelevantWorkload): { field: string; value: unknown; why: string }[] {
  return rabbitMqOnlySettings(workload, {
    queues: 'a NATS workload uses one stream',
    persistent: 'JetStream persists per the stream: use storage (file or memory)',
    confirmWindow:
      'the load client publishes asynchronously with a fixed window of 500 unacknowledged messages per producer',
    autoAck: 'use ackPolicy (explicit, none or all)',
    prefetch: 'pull consumers fetch batches of up to 500 messages',
    multiAckEvery: 'use ackPolicy: all',
    consumerRateLimit: 'the NATS load client consumes as fast as it can',
    exchange: "NATS has no exchanges; the producers publish to the stream's subject",
    queueMode: 'use storage (file or memory)',
    maxLength: 'use maxMsgs (or maxBytes)',
    overflow: 'a JetStream stream at its limits discards its oldest messages',
  });
}

/**
 * A workload on a NATS cluster: no other broker's field, replicas within the node count, what the load client needs
 * (a producer, 8 bytes of body, an even share per producer); on any other cluster: no NATS-only field.
 */
export function checkNatsWorkload(
  cluster: NatsRelevantCluster,
  workload: NatsRelevantWorkload,
  path: string,
): PlanIssue[] {
  if (cluster.broker !== 'nats') {
    return brokerOnlyFieldIssues({ owner: 'nats', cluster, path, fields: natsWorkloadFieldNames, values: workload });
  }
  const issues: PlanIssue[] = rabbitmqOnlySettings(workload).map((setting) => ({
    path: `${path}.${setting.field}`,
    message: `is RabbitMQ-only and cluster "${cluster.name}" runs NATS: ${setting.why}`,
    value: setting.value,
  }));
  issues.push(
    ...brokerOnlyFieldIssues({
      owner: 'kafka',
      cluster,
      path,
      fields: kafkaWorkloadFieldNames,
      values: workload,
      hint: (field) =>
        field === 'replicationFactor'
          ? ': use replicas'
          : field === 'partitions'
            ? ': a NATS workload uses one stream'
            : '',
    }),
  );
  issues.push(...loadClientIssues(cluster, workload, path));
  return issues;
}

/** What JetStream and the load client need of a workload on a NATS cluster. */
function loadClientIssues(cluster: NatsRelevantCluster, workload: NatsRelevantWorkload, path: string): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const add = (field: string, message: string, value?: unknown) =>
    issues.push({ path: `${path}.${field}`, message, ...(value === undefined ? {} : { value }) });
  if (workload.replicas !== undefined && workload.replicas > cluster.nodes)
    add(
      'replicas',
      `must be at most the number of nodes of cluster "${cluster.name}" (${cluster.nodes})`,
      workload.replicas,
    );
  if (workload.retention === 'workqueue' && workload.ackPolicy !== undefined && workload.ackPolicy !== 'explicit')
    add(
      'ackPolicy',
      `a workqueue stream needs explicit acks (nats-server: "workqueue stream requires explicit ack")`,
      workload.ackPolicy,
    );
  if (workload.capacity !== undefined)
    add(
      'capacity',
      `cluster "${cluster.name}" runs NATS, whose load client has no capacity ladder yet (Kafka and RabbitMQ do)`,
      'capacity',
    );
  if (workload.producers === 0)
    add(
      'producers',
      `cluster "${cluster.name}" runs NATS: a workload needs at least one producer (consumers read what it sends)`,
      0,
    );
  if (workload.messageSizeBytes < NATS_MIN_MESSAGE_SIZE)
    add(
      'messageSizeBytes',
      `cluster "${cluster.name}" runs NATS, whose load client carries the send time in the first ` +
        `${NATS_MIN_MESSAGE_SIZE} bytes of each message: use at least ${NATS_MIN_MESSAGE_SIZE}`,
      workload.messageSizeBytes,
    );
  if (workload.messageCount !== undefined && workload.totalBytes !== undefined)
    add('totalBytes', 'give either messageCount or totalBytes, not both', workload.totalBytes);
  if (workload.messageCount !== undefined && workload.producers > 0 && workload.messageCount % workload.producers !== 0)
    add(
      'messageCount',
      `must be a multiple of producers (${workload.producers}): each producer sends the same share`,
      workload.messageCount,
    );
  return issues;
}
