import type { Broker } from '../kafka/kafka-plan';
import type { PlanIssue } from './errors';

/**
 * The rules that keep each broker's plan fields apart, shared by core/kafka/kafka-plan.ts and core/nats/nats-plan.ts:
 * a field of one broker on a cluster of another, RabbitMQ-only workload settings and cluster fields on a Kafka or NATS
 * cluster. Each broker's module says why a field means nothing to it; the messages are built here.
 */

export const BROKER_NAMES: Record<Broker, string> = { rabbitmq: 'RabbitMQ', kafka: 'Kafka', nats: 'NATS' };

/** One issue for each of `fields` that `values` sets while `cluster` runs a broker other than `owner`. */
export function brokerOnlyFieldIssues<Field extends string>(options: {
  readonly owner: Broker;
  readonly cluster: { readonly name: string; readonly broker: Broker };
  readonly path: string;
  readonly fields: readonly Field[];
  readonly values: { readonly [field in Field]?: unknown } | { readonly [field: string]: unknown };
  /** Follows "is <owner>-only", e.g. " (nats-server's jetstream.sync_interval)". */
  readonly note?: string;
  /** Ends the message of `field`, e.g. ": use replicas". */
  readonly hint?: (field: Field) => string;
}): PlanIssue[] {
  const { cluster } = options;
  return options.fields.flatMap((field) => {
    const value = options.values[field];
    if (value === undefined) return [];
    return [
      {
        path: `${options.path}.${field}`,
        message:
          `is ${BROKER_NAMES[options.owner]}-only${options.note ?? ''} and cluster "${cluster.name}" runs ` +
          `${BROKER_NAMES[cluster.broker]} (broker: ${cluster.broker})${options.hint?.(field) ?? ''}`,
        value,
      },
    ];
  });
}

/** The RabbitMQ workload settings another broker refuses when they differ from their defaults. */
export type RabbitMqOnlySetting =
  | 'queues'
  | 'persistent'
  | 'confirmWindow'
  | 'autoAck'
  | 'prefetch'
  | 'multiAckEvery'
  | 'consumerRateLimit'
  | 'exchange'
  | 'queueMode'
  | 'maxLength'
  | 'overflow';

/** The fields of a workload the RabbitMQ-only rules read. */
export interface RabbitMqSettingsOfWorkload {
  readonly queues: number;
  readonly persistent: boolean;
  readonly autoAck: boolean;
  readonly confirmWindow?: number | undefined;
  readonly prefetch?: number | undefined;
  readonly multiAckEvery?: number | undefined;
  readonly consumerRateLimit?: number | undefined;
  readonly exchange?: { readonly type: string } | undefined;
  readonly queueMode?: string | undefined;
  readonly maxLength?: number | undefined;
  readonly overflow?: string | undefined;
}

/** RabbitMQ-only settings with a non-default value, each with `why` it means nothing to the cluster's broker. */
export function rabbitMqOnlySettings(
  workload: RabbitMqSettingsOfWorkload,
  why: Record<RabbitMqOnlySetting, string>,
): { field: RabbitMqOnlySetting; value: unknown; why: string }[] {
  const set: [RabbitMqOnlySetting, unknown, boolean][] = [
    ['queues', workload.queues, workload.queues !== 1],
    ['persistent', true, workload.persistent],
    ['confirmWindow', workload.confirmWindow, workload.confirmWindow !== undefined],
    ['autoAck', false, !workload.autoAck],
    ['prefetch', workload.prefetch, workload.prefetch !== undefined],
    ['multiAckEvery', workload.multiAckEvery, workload.multiAckEvery !== undefined],
    ['consumerRateLimit', workload.consumerRateLimit, workload.consumerRateLimit !== undefined],
    ['exchange', workload.exchange, workload.exchange !== undefined && workload.exchange.type !== 'direct'],
    ['queueMode', workload.queueMode, workload.queueMode !== undefined],
    ['maxLength', workload.maxLength, workload.maxLength !== undefined],
    ['overflow', workload.overflow, workload.overflow !== undefined],
  ];
  return set.filter(([, , differs]) => differs).map(([field, value]) => ({ field, value, why: why[field] }));
}

/** The cluster fields checked on a Kafka or NATS cluster. */
export interface NonRabbitMqCluster {
  readonly rabbitmqVersion?: unknown;
  readonly topology: { readonly type: string };
  readonly connection: string;
  readonly loadGenerators?: number;
}

/**
 * Cluster fields that mean nothing to `broker` (Kafka or NATS), refused so that no one believes they took effect: a
 * RabbitMQ version, a queue topology, a leader or follower connection, several load generators. `explain` says what
 * the broker does instead.
 */
export function nonRabbitMqClusterIssues(
  cluster: NonRabbitMqCluster,
  at: string,
  broker: Broker,
  explain: {
    /** Ends "a <broker> cluster replicates ...", e.g. "its stream with the workload's replicas". */
    readonly replicates: string;
    /** The whole message on a leader or follower connection. */
    readonly connection: string;
    /** Follows "a <broker> cluster runs ...", e.g. "its load client". */
    readonly loadClient: string;
  },
): PlanIssue[] {
  const name = BROKER_NAMES[broker];
  const issues: PlanIssue[] = [];
  if (cluster.rabbitmqVersion !== undefined) {
    issues.push({
      path: `${at}.rabbitmqVersion`,
      message: `a ${name} cluster has no RabbitMQ version; remove it or use broker: rabbitmq`,
      value: cluster.rabbitmqVersion,
    });
  }
  if (cluster.topology.type !== 'classic') {
    issues.push({
      path: `${at}.topology.type`,
      message: `queue topologies are RabbitMQ's; a ${name} cluster replicates ${explain.replicates}`,
      value: cluster.topology.type,
    });
  }
  if (cluster.connection === 'leader' || cluster.connection === 'follower') {
    issues.push({ path: `${at}.connection`, message: explain.connection, value: cluster.connection });
  }
  if (cluster.loadGenerators !== undefined && cluster.loadGenerators > 1) {
    issues.push({
      path: `${at}.loadGenerators`,
      message:
        'several load generators are RabbitMQ-only so far (the workload is split by queue); ' +
        `a ${name} cluster runs ${explain.loadClient} on one load generator: use 1 or leave it out`,
      value: cluster.loadGenerators,
    });
  }
  return issues;
}
