import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { cloudVerifierResource } from '../../core/failover/cloud-broker-fault';
import { VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import type { KafkaRunSettings } from '../../core/kafka/kafka-perf-args';
import type { natsStreamArgs } from '../../core/nats/nats-load-args';
import type { Scenario } from '../../core/plan/plan';
import { natsVerifierArgs } from '../../core/nats/nats-verifier-output';
import { KAFKA_TOOL_COMMAND } from '../../core/perftest/load-generator-paths';
import { quote } from './kafka-load-generator';

/**
 * The lost-message verifier of a Kafka or NATS repetition with a fault on a cloud load generator (AWS Run Command and
 * Azure managed Run Command alike): the local target's verifiers (local/kafka-verifier/KafkaLostMessageVerifier.java,
 * local/nats-load/verify.go) in their cloud mode, where they finish by themselves after the workload's duration
 * (nothing on the load generator knows when the fault step acts) and print their start (epoch ms) and the unconfirmed
 * count of each second, so that IngestRepetition places the fault step's wall-clock times on their timeline
 * (core/failover/cloud-verifier.ts), as for the RabbitMQ verifier (lambdas/start-repetition/verifier-lines.ts).
 *
 * Each works on a topic or stream of its own named per repetition (core/failover/cloud-broker-fault.ts
 * cloudVerifierResource), which it creates itself once its clock runs, so that the fault step, which waits for that
 * resource to have a leader, never hits the node before the verifier counts; it deletes it when it ends. Its output
 * goes to VERIFIER_OUTPUT_FILE (JSON lines: ready, then counts), which the script uploads; nothing it does fails the
 * script.
 */

/** Seconds a verifier may take beyond the duration: a JVM compiling its source, the last acks, the drain. */
export const BROKER_VERIFIER_GRACE_SECONDS = 75;

/** The Java source's name, which source-file mode runs. */
const KAFKA_VERIFIER_FILE = 'KafkaLostMessageVerifier.java';

/**
 * The Kafka verifier's source: `kafka-verifier/` beside the bundle (scripts/bundle-lambdas.mjs copies it there; code
 * split into chunks/ finds it one level up), else the package's local/kafka-verifier.
 */
export function kafkaVerifierSourceFile(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    for (const candidate of [join(dir, 'kafka-verifier'), join(dir, 'local', 'kafka-verifier')])
      if (existsSync(join(candidate, KAFKA_VERIFIER_FILE))) return join(candidate, KAFKA_VERIFIER_FILE);
    if (dirname(dir) === dir)
      throw new Error(`the Kafka verifier's source (local/kafka-verifier) not found from ${from}`);
  }
}

const checkedSeconds = (seconds: number) => {
  if (!(Number.isInteger(seconds) && seconds > 0))
    throw new Error(`the verifier's seconds must be a positive integer, got ${seconds}`);
  return seconds;
};

/** Lines that start a verifier command in the background (VERIFIER_PID), its output in VERIFIER_OUTPUT_FILE. */
const backgroundLines = (seconds: number, command: string) => [
  `timeout --kill-after=10 ${seconds + BROKER_VERIFIER_GRACE_SECONDS} ${command} > ${VERIFIER_OUTPUT_FILE} 2>&1 & ` +
    'VERIFIER_PID=$!',
];

/**
 * Lines that start the Kafka verifier: the source travels gzipped and base64-encoded (about 3 KB) and runs in Java's
 * source-file mode through the load generator's `kafka-tool` wrapper (`java ... -cp '<Kafka tools>/lib/*' "$@"`, the
 * jars of the cluster's Kafka release; a first argument ending in .java selects source-file mode, JEP 330). Its topic
 * has one partition and the workload's replication factor, min.insync.replicas and acks.
 */
export function kafkaVerifierStartLines(options: {
  readonly bootstrapServers: string;
  readonly index: number;
  readonly seconds: number;
  readonly settings: Pick<KafkaRunSettings, 'replicationFactor' | 'minInsyncReplicas' | 'acks'>;
  readonly source?: string;
}): string[] {
  const source = options.source ?? readFileSync(kafkaVerifierSourceFile(), 'utf8');
  const { settings } = options;
  const args = [
    ...['--bootstrap-server', options.bootstrapServers, '--topic', cloudVerifierResource(options.index)],
    ...['--create-topic', '--replication-factor', String(settings.replicationFactor)],
    ...(settings.minInsyncReplicas === undefined ? [] : ['--min-insync-replicas', String(settings.minInsyncReplicas)]),
    ...['--acks', settings.acks, '--rate', '200', '--duration-seconds', String(checkedSeconds(options.seconds))],
  ];
  return [
    `printf '%s' ${quote(gzipSync(Buffer.from(source, 'utf8'), { level: 9 }).toString('base64'))} | base64 -d | ` +
      `gunzip > ${KAFKA_VERIFIER_FILE}`,
    ...backgroundLines(options.seconds, `${KAFKA_TOOL_COMMAND} ${KAFKA_VERIFIER_FILE} ${args.map(quote).join(' ')}`),
  ];
}

/**
 * Lines that start the NATS verifier: the load client the script has built (`$NATS_LOAD`, nats-load-generator.ts) in
 * its `-verify` mode, on a stream with the workload's JetStream settings.
 */
export function natsVerifierStartLines(options: {
  readonly servers: readonly string[];
  readonly index: number;
  readonly seconds: number;
  readonly settings: Parameters<typeof natsStreamArgs>[0];
}): string[] {
  const stream = cloudVerifierResource(options.index);
  const args = [
    ...natsVerifierArgs({
      servers: options.servers,
      stream,
      subject: `rmqbench.verifier.${options.index}`,
      settings: options.settings,
    }),
    ...['-verify-seconds', String(checkedSeconds(options.seconds))],
  ];
  return backgroundLines(options.seconds, `"$NATS_LOAD" ${args.map(quote).join(' ')}`);
}

/** Lines that wait for the verifier; its exit status, when not 0, is appended to its output for ingest to name. */
export function waitBrokerVerifierLines(): string[] {
  return [
    `if [ -n "\${VERIFIER_PID:-}" ]; then wait "$VERIFIER_PID"; VERIFIER_STATUS=$?; ` +
      `[ "$VERIFIER_STATUS" = 0 ] || echo "rmqbench verifier: exited with status $VERIFIER_STATUS" >> ` +
      `${VERIFIER_OUTPUT_FILE}; fi`,
  ];
}

/** A repetition's verifier parts: its start lines, its wait lines and the file it leaves; none without a fault. */
export interface BrokerFaultVerifier {
  readonly start: string[];
  readonly wait: string[];
  readonly files: string[];
}

/**
 * The verifier of `scenario`'s fault, started by `start(index, seconds)` (kafkaVerifierStartLines,
 * natsVerifierStartLines) for the workload's duration; none without a fault. `index` (ScheduledRepetition.index) names
 * its topic or stream.
 */
export function brokerFaultVerifier(
  scenario: Scenario,
  index: number | undefined,
  resource: 'Kafka topic' | 'NATS stream',
  start: (index: number, seconds: number) => string[],
): BrokerFaultVerifier {
  if (!scenario.workload.fault) return { start: [], wait: [], files: [] };
  if (index === undefined)
    throw new Error(`a repetition with a fault needs its index (it names the verifier's ${resource})`);
  return {
    start: start(index, scenario.workload.durationSeconds),
    wait: waitBrokerVerifierLines(),
    files: [VERIFIER_OUTPUT_FILE],
  };
}
