// A namespace import lets esbuild drop what the schemas do not use (see core/plan/plan-schema.ts).
import * as z from 'zod';
import type { PlanIssue } from '../plan/errors';
import {
  brokerOnlyFieldIssues,
  nonRabbitMqClusterIssues,
  rabbitMqOnlySettings,
  type RabbitMqSettingsOfWorkload,
} from '../plan/broker-field-rules';

/**
 * The Kafka side of the plan model: which broker a cluster runs (core/nats/nats-plan.ts has NATS's side), the workload
 * fields Kafka's producer
 * and consumer take (what seeds 002 and 004 vary), and the rules that keep RabbitMQ-only and Kafka-only
 * settings apart. Kept out of plan-schema.ts so that the two brokers' fields stay readable.
 */

export const brokerSchema = z.enum(['rabbitmq', 'kafka', 'nats']);
export type Broker = z.infer<typeof brokerSchema>;

/** Producer `acks`: https://kafka.apache.org/documentation/#producerconfigs_acks ("0", "1", "all"; -1 is "all"). */
export const KAFKA_ACKS = ['0', '1', 'all'] as const;
/**
 * Producer `compression.type`: https://kafka.apache.org/documentation/#producerconfigs_compression.type (gzip left out:
 * the seeds do not vary it).
 */
export const KAFKA_COMPRESSION = ['none', 'snappy', 'lz4', 'zstd'] as const;

/** What a Kafka workload uses when it leaves a Kafka field out. */
export const KAFKA_DEFAULTS = {
  partitions: 1,
  /** Kafka's producer default since 3.0 (KIP-679). */
  acks: 'all',
  /** Kafka's producer defaults: batch.size 16384, linger.ms 5 since 4.0 (KIP-1030), compression.type none. */
  batchSizeBytes: 16_384,
  lingerMs: 5,
  compression: 'none',
} as const;

/** The replication factor a Kafka workload gets without one: three copies where the cluster has them. */
export function defaultReplicationFactor(nodes: number): number {
  return Math.min(3, nodes);
}

const positiveInt = (max: number) => z.number().int().min(1).max(max);

/**
 * Workload fields only a Kafka cluster uses. Optional without defaults, so that a RabbitMQ workload does
 * not carry them and a Kafka workload shows what it set; the run applies KAFKA_DEFAULTS.
 */
export const kafkaWorkloadFieldsShape = {
  /** Partitions of the benchmark topic. @default 1 */
  partitions: positiveInt(10_000).optional(),
  /** Copies of each partition; at most the cluster's broker count. @default min(3, nodes) */
  replicationFactor: positiveInt(7).optional(),
  /**
   * The topic's min.insync.replicas: with acks=all a write is acknowledged only once this many replicas (the leader
   * included) have it, and refused (NotEnoughReplicas) while fewer are in sync; at most replicationFactor. With the
   * default of 1 an acks=all write can be acknowledged by the leader alone once the others fell out of sync.
   * @default - the brokers' default, 1
   */
  minInsyncReplicas: positiveInt(7).optional(),
  /** Producer acks: "0", "1" or "all" (YAML numbers 0 and 1 are read as "0" and "1"). @default "all" */
  acks: z.preprocess((value) => (typeof value === 'number' ? String(value) : value), z.enum(KAFKA_ACKS)).optional(),
  /** Producer batch.size in bytes (0 turns batching off). @default 16384 */
  batchSizeBytes: z
    .number()
    .int()
    .min(0)
    .max(64 * 1024 * 1024)
    .optional(),
  /** Producer linger.ms. @default 5 */
  lingerMs: z.number().int().min(0).max(60_000).optional(),
  /** Producer compression.type. @default "none" */
  compression: z.enum(KAFKA_COMPRESSION).optional(),
} as const;

export type KafkaWorkloadField = keyof typeof kafkaWorkloadFieldsShape;
export const kafkaWorkloadFieldNames = Object.keys(kafkaWorkloadFieldsShape) as KafkaWorkloadField[];

/** The fields checked here, whatever else a workload has. */
export interface KafkaRelevantWorkload extends RabbitMqSettingsOfWorkload {
  readonly producers: number;
  readonly consumers: number;
  readonly messageSizeBytes: number;
  readonly publishRateLimit?: number | undefined;
  readonly partitions?: number | undefined;
  readonly replicationFactor?: number | undefined;
  readonly minInsyncReplicas?: number | undefined;
  readonly acks?: string | undefined;
  readonly batchSizeBytes?: number | undefined;
  readonly lingerMs?: number | undefined;
  readonly compression?: string | undefined;
  readonly messageCount?: number | undefined;
  readonly totalBytes?: number | undefined;
  readonly warmUpSeconds?: number | undefined;
  readonly capacity?: unknown;
}

export interface KafkaRelevantCluster {
  readonly name: string;
  readonly nodes: number;
  readonly broker: Broker;
  readonly rabbitmqVersion?: unknown;
  readonly topology: { readonly type: string };
  readonly connection: string;
  readonly loadGenerators?: number;
}

/** Cluster fields that mean nothing to Kafka, refused on a Kafka cluster so that no one believes they took effect. */
export function checkKafkaCluster(cluster: KafkaRelevantCluster, at: string): PlanIssue[] {
  if (cluster.broker !== 'kafka') return [];
  return nonRabbitMqClusterIssues(cluster, at, 'kafka', {
    replicates: "partitions with the workload's replicationFactor",
    connection:
      'Kafka clients bootstrap from every broker and then talk to each partition leader; ' +
      'use "lb" or "direct" (both mean: bootstrap from all brokers)',
    loadClient: 'its producer and consumer tools',
  });
}

/** RabbitMQ-only settings with a non-default value, and the reason each means nothing to Kafka. */
function rabbitmqOnlySettings(workload: KafkaRelevantWorkload): { field: string; value: unknown; why: string }[] {
  const found: { field: string; value: unknown; why: string }[] = rabbitMqOnlySettings(workload, {
    queues: 'a Kafka workload uses one topic; use partitions',
    persistent: 'Kafka always writes to its log; use acks and replicationFactor',
    confirmWindow: 'Kafka acknowledges per acks; use acks',
    autoAck: 'Kafka consumers commit offsets, they do not acknowledge messages',
    prefetch: 'Kafka consumers fetch, they have no prefetch',
    multiAckEvery: 'Kafka consumers do not acknowledge messages',
    consumerRateLimit: "Kafka's ConsumerPerformance has no rate limit",
    exchange: 'Kafka has no exchanges; consumer groups decide who reads what',
    queueMode: 'Kafka has no queue modes; it always writes to its log',
    maxLength: 'Kafka retains by size or time (topic retention), not by a message count',
    overflow: 'Kafka has no queue length limit to overflow',
  });
  // A warm-up is left out by --warmup-records at a publishRateLimit (ProducerPerformance counts records, KIP-1052), or,
  // for a workload with only durationSeconds, by the seconds of per-second windows (core/kafka/kafka-perf-output.ts
  // stoppedProducer); fixed work refuses a warm-up for every broker (core/plan/plan.ts checkWarmUp).
  return found;
}

/** The workload × cluster combinations that cannot run: fields of the other broker, or more replicas than brokers. */
export function checkWorkloadBroker(
  cluster: KafkaRelevantCluster,
  workload: KafkaRelevantWorkload,
  path: string,
): PlanIssue[] {
  const issues: PlanIssue[] = [];
  // A NATS cluster's workloads are checked by core/nats/nats-plan.ts checkNatsWorkload (Kafka's fields included).
  if (cluster.broker === 'nats') return issues;
  if (cluster.broker === 'kafka') {
    for (const setting of rabbitmqOnlySettings(workload)) {
      issues.push({
        path: `${path}.${setting.field}`,
        message: `is RabbitMQ-only and cluster "${cluster.name}" runs Kafka: ${setting.why}`,
        value: setting.value,
      });
    }
    if (workload.replicationFactor !== undefined && workload.replicationFactor > cluster.nodes) {
      issues.push({
        path: `${path}.replicationFactor`,
        message: `must be at most the number of brokers of cluster "${cluster.name}" (${cluster.nodes})`,
        value: workload.replicationFactor,
      });
    }
    const replicas = workload.replicationFactor ?? defaultReplicationFactor(cluster.nodes);
    if (workload.minInsyncReplicas !== undefined && workload.minInsyncReplicas > replicas) {
      issues.push({
        path: `${path}.minInsyncReplicas`,
        message:
          `must be at most the topic's replication factor (${replicas} on cluster "${cluster.name}"): ` +
          'no acks=all write could ever be acknowledged',
        value: workload.minInsyncReplicas,
      });
    }
    // Without messageCount, totalBytes, publishRateLimit or a capacity ladder, a Kafka workload runs for
    // durationSeconds: its producers are stopped there (core/kafka/kafka-perf-args.ts
    // KAFKA_UNREACHABLE_RECORDS_PER_SECOND).
    if (
      workload.messageCount !== undefined &&
      workload.producers > 0 &&
      workload.messageCount % workload.producers !== 0
    ) {
      issues.push({
        path: `${path}.messageCount`,
        message: `must be a multiple of producers (${workload.producers}): each producer sends the same share`,
        value: workload.messageCount,
      });
    }
    if (workload.messageSizeBytes === 0) {
      issues.push({
        path: `${path}.messageSizeBytes`,
        message:
          `cluster "${cluster.name}" runs Kafka, ` + `whose ProducerPerformance needs a record size of at least 1 byte`,
        value: 0,
      });
    }
    if (workload.producers === 0) {
      issues.push({
        path: `${path}.producers`,
        message:
          `cluster "${cluster.name}" runs Kafka: ` +
          `a workload needs at least one producer (consumers read what it sends)`,
        value: 0,
      });
    }
    return issues;
  }
  issues.push(
    ...brokerOnlyFieldIssues({ owner: 'kafka', cluster, path, fields: kafkaWorkloadFieldNames, values: workload }),
  );
  return issues;
}
