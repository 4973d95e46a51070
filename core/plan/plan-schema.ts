// A namespace import lets esbuild drop what the schemas do not use (about 360 KB less in each Lambda bundle that
// validates plans).
import * as z from 'zod';
import { capacitySchema } from '../capacity/capacity-schema';
import { brokerSchema, kafkaWorkloadFieldsShape } from '../kafka/kafka-plan';
import { natsClusterFieldsShape, natsWorkloadFieldsShape } from '../nats/nats-plan';
import { DEFAULT_LOAD_GENERATORS, MAX_LOAD_GENERATORS } from '../loadgen/load-generator-count';

/**
 * The benchmark plan model: clusters × workloads × repetitions.
 *
 * Every object is strict, so a misspelt field is an error rather than a silently ignored setting.
 * Sizes are in bytes, durations in seconds and rates in messages per second, as the field names say.
 */

const positiveInt = (max?: number) => {
  const base = z.number().int().min(1);
  return max === undefined ? base : base.max(max);
};

/** `major.minor` or `major.minor.patch`, e.g. "3.13" or "4.1.2". */
export const rabbitmqVersionSchema = z
  .string()
  .regex(/^\d+\.\d+(\.\d+)?$/, 'expected a RabbitMQ version such as "3.13" or "4.1.2"');

export const queueTopologySchema = z.discriminatedUnion('type', [
  z.strictObject({
    /** Classic queue on one node (no replication). */
    type: z.literal('classic'),
  }),
  z.strictObject({
    /** Raft-replicated quorum queue. */
    type: z.literal('quorum'),
    /** Number of replicas; defaults to every node of the cluster (at most 7). */
    replicationFactor: positiveInt(7).optional(),
  }),
  z.strictObject({
    /** Replicated, append-only stream. */
    type: z.literal('stream'),
    /** Number of replicas; defaults to every node of the cluster (at most 7). */
    replicationFactor: positiveInt(7).optional(),
  }),
  z.strictObject({
    /** Classic queue mirrored with an `ha-mode` policy (removed in RabbitMQ 4.0). */
    type: z.literal('mirrored'),
    /**
     * `all` mirrors to every node; a number N keeps exactly N copies (master + N-1 mirrors; 2 is the "N+1" topology).
     */
    mirrorTo: z.union([z.literal('all'), positiveInt(7)]).default('all'),
  }),
]);

/** How PerfTest reaches the cluster. */
export const connectionModeSchema = z.enum(['lb', 'direct', 'leader', 'follower']);

const instanceTypeSchema = z
  .string()
  .regex(
    /^[A-Za-z][A-Za-z0-9._-]{1,63}$/,
    'expected an instance type such as "c5.xlarge" (AWS) or "Standard_F4s_v2" (Azure)',
  );

/** A setting given per cloud target; the local target ignores it, and a target it leaves out has none. */
export const perTargetSchema = <T extends z.ZodType>(value: T) =>
  z.strictObject({ aws: value.optional(), azure: value.optional() });

/**
 * A region code: AWS (`eu-west-1`, https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html)
 * or an Azure location's programmatic name (`northeurope`, https://learn.microsoft.com/azure/reliability/regions-list).
 */
export const regionSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{2,30}$/, 'expected a region code such as "eu-west-1" (AWS) or "northeurope" (Azure)');

export const clusterSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,40}$/, 'expected lower-case letters, digits and dashes (at most 41)'),
  /** The broker the cluster runs: RabbitMQ, Kafka in KRaft mode, or NATS JetStream (every target). */
  broker: brokerSchema.default('rabbitmq'),
  /** Number of RabbitMQ nodes (Kafka brokers, nats-server nodes). */
  nodes: positiveInt(7),
  /**
   * RabbitMQ version the cloud targets install; the local target checks the installed version against a plain one.
   * One per target (`{ aws: "3.13", azure: "3.13" }`) pins the clouds (a mirrored cluster needs 3.x there, where the
   * default is 4.1 on AWS) and leaves the local target to the version it has.
   */
  rabbitmqVersion: z.union([rabbitmqVersionSchema, perTargetSchema(rabbitmqVersionSchema)]).optional(),
  topology: queueTopologySchema.default({ type: 'classic' }),
  /**
   * lb: through a load balancer; direct: to the first node; leader/follower: to the node that leads / does not lead the
   * queues.
   */
  connection: connectionModeSchema.default('lb'),
  /**
   * Instance type of the nodes on a cloud target: an AWS instance type (`c5.xlarge`) or an Azure VM size
   * (`Standard_F4s_v2`, or without the `Standard_` prefix), or one per target (`{ aws: r5.xlarge, azure:
   * Standard_E4s_v5 }`), so that one plan runs on every target as it is (core/plan/plan-target.ts). Required by the
   * aws and azure targets, which refuse a type the price catalog does not know (core/plan/target-rules.ts); the local
   * target ignores it.
   */
  instanceType: z.union([instanceTypeSchema, perTargetSchema(instanceTypeSchema)]).optional(),
  /**
   * The targets the cluster runs on; the others leave it and its scenarios out (core/plan/plan-target.ts). For a
   * matrix of machines that a cloud runs and the local target, whose nodes are all alike, would only repeat: thesis
   * chapter 6's nine AWS clusters run as one locally.
   * @default every target: local, aws and azure
   */
  targets: z
    .array(z.enum(['local', 'aws', 'azure'], 'expected local, aws or azure'))
    .min(1, 'expected at least one target')
    .refine((targets) => new Set(targets).size === targets.length, 'expected each target once')
    .optional(),
  /**
   * Load-generating machines (locally: PerfTest processes) that share each workload when one cannot saturate the
   * brokers: the queues, with their producers and consumers, are split among them (core/loadgen/workload-split.ts).
   * RabbitMQ only so far. At most MAX_LOAD_GENERATORS (10; core/loadgen/load-generator-count.ts says why).
   * @default 1
   */
  loadGenerators: z
    .number()
    .int('expected a whole number of load generators')
    .min(1, 'expected at least 1 load generator')
    .max(MAX_LOAD_GENERATORS, `expected at most ${MAX_LOAD_GENERATORS} load generators per cluster`)
    .default(DEFAULT_LOAD_GENERATORS),
  /** NATS cluster fields (core/nats/nats-plan.ts); other brokers refuse them. */
  ...natsClusterFieldsShape,
});

export const workloadFieldsShape = {
  /** Total number of producers (spread evenly over the queues). */
  producers: z.number().int().min(0).max(10_000).default(1),
  /** Total number of consumers (spread evenly over the queues). */
  consumers: z.number().int().min(0).max(10_000).default(1),
  queues: positiveInt(10_000).default(1),
  messageSizeBytes: z
    .number()
    .int()
    .min(0)
    .max(128 * 1024 * 1024)
    .default(12),
  durationSeconds: positiveInt(24 * 3600).default(60),
  persistent: z.boolean().default(false),
  /** Publisher-confirm window (max unconfirmed messages per producer); omitted means no confirms. */
  confirmWindow: positiveInt().optional(),
  autoAck: z.boolean().default(true),
  /** Consumer prefetch (basic.qos); omitted means unlimited. */
  prefetch: positiveInt(65_535).optional(),
  /** Acknowledge every N messages with multiple=true (manual ack only). */
  multiAckEvery: positiveInt().optional(),
  /** Publishing rate limit per producer, msg/s. */
  publishRateLimit: positiveInt().optional(),
  /** Consuming rate limit per consumer, msg/s. */
  consumerRateLimit: positiveInt().optional(),
  /** Kafka workload fields (core/kafka/kafka-plan.ts); a RabbitMQ cluster refuses them. */
  ...kafkaWorkloadFieldsShape,
  /** NATS JetStream workload fields (core/nats/nats-plan.ts); RabbitMQ and Kafka clusters refuse them. */
  ...natsWorkloadFieldsShape,
  /**
   * The exchange producers publish to, which every benchmark queue is bound to: `direct` (PerfTest's own, each queue
   * bound by its name), `fanout` (every message to every queue: seed 002's fan-out experiment) or `topic`.
   * @default { type: 'direct' }
   */
  exchange: z.strictObject({ type: z.enum(['direct', 'fanout', 'topic']) }).default({ type: 'direct' }),
  /**
   * Classic queue mode (`x-queue-mode`): `lazy` moves messages to disk early. RabbitMQ ignores it from 3.12 on, so a
   * plan that would run there is refused.
   */
  queueMode: z.enum(['default', 'lazy']).optional(),
  /**
   * Queue length limit in messages (`x-max-length`): ready messages beyond it are dropped or refused, see `overflow`.
   */
  maxLength: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .optional(),
  /** What happens at `maxLength` (`x-overflow`). @default 'drop-head' (RabbitMQ's default) */
  overflow: z.enum(['drop-head', 'reject-publish', 'reject-publish-dlx']).optional(),
  /**
   * A fixed amount of work instead of a duration: messages to send in total, spread evenly over the producers
   * (a multiple of producers). The run ends when they are sent and consumed, and its time is measured;
   * `durationSeconds` is then the limit, past which the repetition fails. Without it (or `totalBytes`, or a
   * publishRateLimit), a Kafka workload runs flat out for `durationSeconds` and is stopped there (docs/kafka.md).
   */
  messageCount: positiveInt(1_000_000_000).optional(),
  /**
   * The fixed work as bytes of message body in total (seed 004 sends 7 GB per test): messageCount = totalBytes ÷
   * messageSizeBytes, rounded up to a multiple of producers.
   */
  totalBytes: z
    .number()
    .int()
    .min(1)
    .max(10 ** 13)
    .optional(),
  /**
   * Seconds at the start of each repetition left out of its summary rates and latency percentiles, which are then
   * computed from PerfTest's per-second samples (core/results/warm-up.ts): JIT, connection set-up and the first queue
   * declarations stop colouring short runs. @default 0 (PerfTest's own summary of the whole run)
   */
  warmUpSeconds: z.number().int().min(0).max(3600).optional(),
  /**
   * Capacity mode: the highest publish rate this workload sustains with consumer latency p99 within a bound, searched
   * over a ladder of rates in one PerfTest run (core/capacity/capacity-plan.ts). The repetition's duration is the
   * ladder's (steps × stepSeconds), so durationSeconds is not given. @default - publishers run flat out
   */
  capacity: capacitySchema.optional(),
} as const;

export type WorkloadField = keyof typeof workloadFieldsShape;
export const workloadFieldNames = Object.keys(workloadFieldsShape) as WorkloadField[];

/**
 * What a fault does to its node: SIGKILL the broker, stop it gracefully, restart it (stop, then start), or cut its
 * inter-node traffic.
 */
export const faultActionSchema = z.enum(['kill', 'stop', 'restart', 'partition']);

/**
 * A fault injected into every repetition of a workload: `action` on `node` at `atSeconds` after PerfTest starts;
 * `healAtSeconds` starts a killed or stopped node again (or reconnects a partitioned one). Cross-field rules
 * (atSeconds < durationSeconds, the node index within the cluster, ...) are in core/plan/plan.ts.
 */
export const faultSchema = z.strictObject({
  action: faultActionSchema,
  /**
   * `leader`: the node leading the benchmark queue when the fault happens; `follower`: another node; a number: that
   * node (0-based).
   */
  node: z.union([z.enum(['leader', 'follower']), z.number().int().min(0).max(6)]),
  atSeconds: z.number().positive(),
  healAtSeconds: z.number().positive().optional(),
});

/** One workload as PerfTest will run it (after sweeps are expanded). */
export const workloadSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,40}$/, 'expected lower-case letters, digits and dashes (at most 41)'),
  ...workloadFieldsShape,
  /**
   * A fault injected while each repetition runs, with the lost-message verifier beside PerfTest (see docs/faults.md).
   */
  fault: faultSchema.optional(),
});

/** A workload as written in a plan: the fields above plus an optional cartesian sweep over any of them. */
export const workloadInPlanSchema = workloadSchema.extend({
  /**
   * The plan clusters this workload runs on, by name. @default - every cluster. A plan that compares brokers needs it:
   * a Kafka workload (one topic) and a RabbitMQ one (a queue per consumer) cannot run on each other's clusters.
   */
  clusters: z.array(z.string()).min(1).optional(),
  sweep: z
    .partialRecord(z.enum(workloadFieldNames as [WorkloadField, ...WorkloadField[]]), z.array(z.unknown()).min(1))
    .optional(),
});

/**
 * Adaptive repetitions: run a scenario at least `min` and at most `max` times, and stop once the 95 % confidence
 * interval of its receive rate has a half-width within `ciPercent` % of the mean
 * (core/results/adaptive-repetitions.ts).
 */
export const adaptiveRepetitionsSchema = z
  .strictObject({
    min: positiveInt(100),
    max: positiveInt(100),
    ciPercent: z.number().gt(0, 'must be above 0 (a percentage of the mean)').lt(100, 'must be below 100'),
  })
  .superRefine((value, context) => {
    if (value.min < 2)
      context.addIssue({
        code: 'custom',
        path: ['min'],
        message: 'must be at least 2: a confidence interval needs two repetitions',
        input: value.min,
      });
    if (value.min > value.max)
      context.addIssue({
        code: 'custom',
        path: ['max'],
        message: `must be at least min (${value.min})`,
        input: value.max,
      });
  });

export const planSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,60}$/, 'expected lower-case letters, digits and dashes (at most 61)'),
  description: z.string().optional(),
  /** Where the plan comes from (paper, table) - shown in reports. */
  reproduces: z.string().optional(),
  /**
   * Repetitions of every scenario: a number (1-100), or `{ min, max, ciPercent }` to stop a scenario once its receive
   * rate has settled (adaptiveRepetitionsSchema).
   */
  repetitions: z
    .union([positiveInt(100), adaptiveRepetitionsSchema], {
      error: 'expected a number of repetitions (1 to 100) or { min, max, ciPercent }',
    })
    .default(1),
  pauseSecondsBetweenRepetitions: z.number().min(0).max(3600).default(0),
  /**
   * Where the clusters run on each cloud target (`{ aws: eu-west-1, azure: northeurope }`), or one code for the target
   * whose format it has. The estimate prices the run there; a run is refused on a controller deployed elsewhere
   * (clusters launch in the controller's region or Azure location). @default - the controller's region, and the newest
   * price of any region in an estimate
   */
  region: z.union([regionSchema, perTargetSchema(regionSchema)]).optional(),
  /** Cloud targets refuse the plan when its estimated cost (core/cost/estimate.ts) exceeds this many US dollars. */
  maxCostUsd: z.number().positive().optional(),
  clusters: z.array(clusterSchema).min(1),
  workloads: z.array(workloadInPlanSchema).min(1),
});

export type QueueTopology = z.infer<typeof queueTopologySchema>;
export type ConnectionMode = z.infer<typeof connectionModeSchema>;
export type ClusterSpec = z.infer<typeof clusterSchema>;
export type Workload = z.infer<typeof workloadSchema>;
export type FaultSpec = z.infer<typeof faultSchema>;
export type FaultAction = z.infer<typeof faultActionSchema>;
export type WorkloadInPlan = z.infer<typeof workloadInPlanSchema>;
export type ParsedPlan = z.infer<typeof planSchema>;
