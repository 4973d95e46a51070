import { fixedMessageCount } from '../plan/fixed-work';
import { defaultReplicationFactor, KAFKA_DEFAULTS } from './kafka-plan';
import type { Workload } from '../plan/plan-schema';
import type { KafkaPerfExpectations } from './kafka-perf-output';
import { kafkaCapacityExpectations } from './kafka-capacity';

/**
 * Kafka's own performance tools from org.apache.kafka:kafka-tools, as the load: ProducerPerformance and
 * ConsumerPerformance (org.apache.kafka.tools, the classes behind bin/kafka-producer-perf-test.sh and
 * bin/kafka-consumer-perf-test.sh). They come from Maven Central like PerfTest; OpenMessaging Benchmark's Kafka
 * driver is not published to Maven Central (it is built from its repository), so it cannot be fetched the way
 * the local target fetches everything else. Flags as in the 4.3.1 tools' --help and their source,
 * tools/src/main/java/org/apache/kafka/tools/{ProducerPerformance,ConsumerPerformance}.java in apache/kafka.
 */

/** Per-interval report period of both tools, so that their rows are per-second samples like PerfTest's CSV. */
export const KAFKA_REPORTING_INTERVAL_MS = 1000;
/**
 * How long a consumer waits for the next record before it gives up (ConsumerPerformance --timeout). Its clock starts
 * before it has joined its group (measured here: 3-8 s to join on two busy cores), and the producers start only
 * after that, so the wait must cover the join plus a producer JVM's start. A lone consumer ends by its count, so its
 * timeout only detects records that never come: a minute. With several consumers in one group none can know its
 * share of the records in advance, so each asks for all of them and ends by this timeout once the topic is drained:
 * 20 s, which each such repetition then waits at its end.
 */
export function consumerIdleTimeoutMs(consumers: number): number {
  return consumers === 1 ? 60_000 : 20_000;
}

/**
 * A per-producer rate (records/s) that no ProducerPerformance reaches: a workload bounded by `durationSeconds` alone
 * asks each producer for durationSeconds × this many records, far more than the duration can carry, and the producers
 * are stopped at the duration. ProducerPerformance 4.3.1 has no time limit of its own: it sends until its
 * --num-records (the `for (long i = 0; i < config.numRecords; i++)` loop, ProducerPerformance.java line 91 in the
 * 4.3.1 jar's line table) and prints its summary only after that loop (lines 121-131). A huge count costs no memory:
 * Stats samples the latencies of at most 500,000 records (`sampling = numRecords / Math.min(numRecords, 500000)`,
 * Stats' constructor, lines 421-437). At most 8.64e12 records (24 h), well within a Java long and a JS safe integer.
 */
export const KAFKA_UNREACHABLE_RECORDS_PER_SECOND = 100_000_000;

/** The Kafka settings a workload runs with, its defaults applied. */
export interface KafkaRunSettings {
  readonly partitions: number;
  readonly replicationFactor: number;
  /** The topic's min.insync.replicas when the workload sets it; absent: the brokers' default. */
  readonly minInsyncReplicas?: number;
  readonly acks: string;
  readonly batchSizeBytes: number;
  readonly lingerMs: number;
  readonly compression: string;
  /** Records each producer sends. */
  readonly recordsPerProducer: number;
  /** ProducerPerformance --throughput per producer: records/s, or -1 for no limit. */
  readonly throughput: number;
  /**
   * With warmUpSeconds (and so a publishRateLimit, core/kafka/kafka-plan.ts): the records each producer sends in the
   * warm-up, ProducerPerformance --warmup-records (KIP-1052, Kafka 4.1+): left out of its "steady state" summary.
   */
  readonly warmupRecords?: number;
  /**
   * A workload with neither a fixed amount of work nor a rate (only `durationSeconds`): the producers send flat out,
   * with an unreachable --num-records (KAFKA_UNREACHABLE_RECORDS_PER_SECOND), and the producers and consumers are
   * stopped after these seconds, as PerfTest's `-z` stops RabbitMQ's.
   */
  readonly stopAfterSeconds?: number;
}

export function kafkaRunSettings(workload: Workload, brokers: number): KafkaRunSettings {
  const producers = Math.max(workload.producers, 1);
  // The same fixed work as on RabbitMQ (messageCount, or totalBytes ÷ messageSizeBytes); else a rate for
  // durationSeconds.
  const total = fixedMessageCount(workload);
  // A capacity ladder runs one producer run per step (core/kafka/kafka-capacity.ts): every step's records.
  const ladder = workload.capacity ? kafkaCapacityExpectations(workload.capacity, producers).steps : undefined;
  // Neither records nor a rate: run for durationSeconds and stop there.
  const byDuration = !ladder && total === undefined && workload.publishRateLimit === undefined;
  const recordsPerProducer = ladder
    ? ladder.reduce((sum, step) => sum + step.recordsPerProducer, 0)
    : total !== undefined
      ? total / producers
      : byDuration
        ? KAFKA_UNREACHABLE_RECORDS_PER_SECOND * workload.durationSeconds
        : workload.publishRateLimit! * workload.durationSeconds;
  if (!Number.isInteger(recordsPerProducer) || recordsPerProducer <= 0) {
    throw new Error(
      `workload ${workload.name} gives each producer ${recordsPerProducer} records; ` +
        `set messageCount (a multiple of producers), totalBytes or publishRateLimit`,
    );
  }
  return {
    partitions: workload.partitions ?? KAFKA_DEFAULTS.partitions,
    replicationFactor: workload.replicationFactor ?? defaultReplicationFactor(brokers),
    ...(workload.minInsyncReplicas === undefined ? {} : { minInsyncReplicas: workload.minInsyncReplicas }),
    acks: workload.acks ?? KAFKA_DEFAULTS.acks,
    batchSizeBytes: workload.batchSizeBytes ?? KAFKA_DEFAULTS.batchSizeBytes,
    lingerMs: workload.lingerMs ?? KAFKA_DEFAULTS.lingerMs,
    compression: workload.compression ?? KAFKA_DEFAULTS.compression,
    recordsPerProducer,
    throughput: ladder?.[0]?.perProducerRate ?? workload.publishRateLimit ?? -1,
    ...(workload.warmUpSeconds && workload.publishRateLimit
      ? { warmupRecords: Math.min(recordsPerProducer - 1, workload.publishRateLimit * workload.warmUpSeconds) }
      : {}),
    ...(byDuration ? { stopAfterSeconds: workload.durationSeconds } : {}),
  };
}

/** What the parser expects of one Kafka workload's output, on every target. */
export function kafkaPerfExpectations(workload: Workload, settings: KafkaRunSettings): KafkaPerfExpectations {
  return {
    producers: workload.producers,
    consumers: workload.consumers,
    recordsPerProducer: settings.recordsPerProducer,
    ...(workload.capacity ? { capacity: kafkaCapacityExpectations(workload.capacity, workload.producers) } : {}),
    // The warm-up left out: by --warmup-records at a rate, or by the seconds of windows of a run stopped at its
    // duration.
    ...((settings.warmupRecords !== undefined || settings.stopAfterSeconds !== undefined) && workload.warmUpSeconds
      ? { warmUpSeconds: workload.warmUpSeconds }
      : {}),
    ...(settings.stopAfterSeconds !== undefined ? { stoppedAtSeconds: settings.stopAfterSeconds } : {}),
  };
}

/** TopicCommand arguments that create the benchmark topic. */
export function createTopicArgs(
  topic: string,
  settings: Pick<KafkaRunSettings, 'partitions' | 'replicationFactor' | 'minInsyncReplicas'>,
): string[] {
  return [
    '--create',
    '--topic',
    topic,
    '--partitions',
    String(settings.partitions),
    '--replication-factor',
    String(settings.replicationFactor),
    // A topic-level configuration (TopicCommand --config <name>=<value>), so no broker setting changes.
    ...(settings.minInsyncReplicas === undefined
      ? []
      : ['--config', `min.insync.replicas=${settings.minInsyncReplicas}`]),
  ];
}

/** ProducerPerformance arguments for one producer. */
export function producerPerformanceArgs(options: {
  readonly bootstrapServers: string;
  readonly topic: string;
  readonly settings: KafkaRunSettings;
  readonly messageSizeBytes: number;
  readonly clientId: string;
}): string[] {
  const { settings } = options;
  return [
    '--bootstrap-server',
    options.bootstrapServers,
    '--topic',
    options.topic,
    '--num-records',
    String(settings.recordsPerProducer),
    '--record-size',
    String(options.messageSizeBytes),
    '--throughput',
    String(settings.throughput),
    '--reporting-interval',
    String(KAFKA_REPORTING_INTERVAL_MS),
    // Before --command-property, whose values run to the end of the line.
    ...(settings.warmupRecords === undefined ? [] : ['--warmup-records', String(settings.warmupRecords)]),
    // --command-property replaces --producer-props in 4.x (the tool warns that --producer-props is deprecated).
    '--command-property',
    `acks=${settings.acks}`,
    `batch.size=${settings.batchSizeBytes}`,
    `linger.ms=${settings.lingerMs}`,
    `compression.type=${settings.compression}`,
    `client.id=${options.clientId}`,
  ];
}

/** ConsumerPerformance arguments for one consumer of the group. */
export function consumerPerformanceArgs(options: {
  readonly bootstrapServers: string;
  readonly topic: string;
  readonly group: string;
  /** Every record the producers send: a lone consumer ends when it has them all. */
  readonly totalRecords: number;
  /** How many consumers the group has (sets the idle timeout). */
  readonly consumers: number;
  /** Overrides the idle timeout (a capacity ladder may stop before every record was sent). */
  readonly timeoutMs?: number;
}): string[] {
  return [
    '--bootstrap-server',
    options.bootstrapServers,
    '--topic',
    options.topic,
    '--group',
    options.group,
    '--num-records',
    String(options.totalRecords),
    '--timeout',
    String(options.timeoutMs ?? consumerIdleTimeoutMs(options.consumers)),
    // Per-interval rows instead of the one summary line: the tool prints one or the other, and the rows give per-second
    // samples.
    '--show-detailed-stats',
    '--reporting-interval',
    String(KAFKA_REPORTING_INTERVAL_MS),
  ];
}
