import { randomBytes } from 'node:crypto';
import { KAFKA_TOOL_COMMAND, KAFKA_TOOLS_READY_FILE } from '../../core/perftest/load-generator-paths';

/**
 * What the controller's scripts for a Kafka cluster's load generator share: the tools' main classes, the bootstrap
 * servers check, the wait for the boot to have installed the tools, and the smoke test (SmokeTest runs it; it needs no
 * plan, so the smoke-test bundle stays without the plan model). The repetition script is in
 * lambdas/start-repetition/kafka-script.ts.
 */

/**
 * The main classes behind bin/kafka-topics.sh, kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh
 * (apache/kafka 4.x tools).
 */
export const KAFKA_TOOL_CLASSES = {
  topics: 'org.apache.kafka.tools.TopicCommand',
  producer: 'org.apache.kafka.tools.ProducerPerformance',
  consumer: 'org.apache.kafka.tools.ConsumerPerformance',
  /**
   * bin/kafka-broker-api-versions.sh (apache/kafka 4.x tools: org.apache.kafka.tools.BrokerApiVersionsCommand, in
   * kafka-tools-4.3.1.jar).
   */
  brokerApiVersions: 'org.apache.kafka.tools.BrokerApiVersionsCommand',
} as const;

/**
 * Seconds a script waits for the load generator's boot to finish installing the tools (it installs them after
 * PerfTest).
 */
export const KAFKA_TOOLS_READY_WAIT_SECONDS = 120;

/** Shell-quotes one word for bash. */
export const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The bootstrap servers the cluster stack outputs (`kafka-1.<zone>:9092,...`), checked: they are written into the
 * script.
 */
export function checkedBootstrapServers(value: string): string {
  if (!/^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$/.test(value)) {
    throw new Error(
      `the cluster stack's BootstrapServers output must be host:port pairs separated by commas, got "${value}"`,
    );
  }
  return value;
}

/** Lines that wait for the boot to have installed the tools, or fail saying so. */
export function toolsReadyLines(): string[] {
  return [
    `for attempt in $(seq 1 ${KAFKA_TOOLS_READY_WAIT_SECONDS / 5}); do ` +
      `[ -e ${KAFKA_TOOLS_READY_FILE} ] && break; sleep 5; done`,
    `[ -e ${KAFKA_TOOLS_READY_FILE} ] || { echo "rmqbench: the load generator has not installed the Kafka tools ` +
      `(${KAFKA_TOOLS_READY_FILE} missing after ${KAFKA_TOOLS_READY_WAIT_SECONDS} s): ` +
      `see its boot log, /var/log/cloud-init-output.log" >&2; exit 1; }`,
  ];
}

/**
 * Seconds the smoke-test script may take (the tools' wait, three TopicCommands and a short producer run, JVM starts
 * included).
 */
export const KAFKA_SMOKE_TEST_SECONDS = KAFKA_TOOLS_READY_WAIT_SECONDS + 120;

/**
 * The Kafka cluster's smoke test, run on the load generator (the client the benchmark uses, with its jars, its DNS and
 * its security group): a topic with one partition per broker and min(3, brokers) replicas is created (only a cluster
 * whose brokers have all registered can place them), described (every partition must have a leader), written to
 * with acks=all (every partition leader reached at its advertised listener, every replica in sync), and deleted.
 */
export function kafkaSmokeTestScript(options: { bootstrapServers: string; brokers: number; suffix?: string }): string {
  const bootstrapServers = checkedBootstrapServers(options.bootstrapServers);
  if (!Number.isInteger(options.brokers) || options.brokers < 1)
    throw new Error(`brokers must be a positive integer, got ${options.brokers}`);
  const topic = `rmqbench-smoke-${options.suffix ?? randomBytes(4).toString('hex')}`;
  const replicas = Math.min(3, options.brokers);
  const records = options.brokers * 10;
  const topics = (args: string[]) =>
    `${KAFKA_TOOL_COMMAND} ${KAFKA_TOOL_CLASSES.topics} ` +
    `${['--bootstrap-server', bootstrapServers, ...args].map(quote).join(' ')}`;
  return [
    'set -uo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK" || exit 1',
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    ...toolsReadyLines(),
    `${topics([
      '--create',
      '--topic',
      topic,
      '--partitions',
      String(options.brokers),
      '--replication-factor',
      String(replicas),
    ])}` +
      ` > create.txt 2>&1 || { echo "smoke test: could not create a topic with ${options.brokers} partitions ` +
      `and ${replicas} replicas:" >&2; tail -n 5 create.txt >&2; exit 1; }`,
    `${topics(['--describe', '--topic', topic])} > describe.txt 2>&1`,
    // TopicCommand prints one line per partition, "Partition: <n>\tLeader: <id>\t..." (a partition without a leader
    // shows Leader: none or -1).
    `LED=$(grep -cE 'Partition: [0-9]+[[:space:]]+Leader: [0-9]+' describe.txt)`,
    `[ "$LED" -eq ${options.brokers} ] || { echo "smoke test: $LED of ${options.brokers} partitions of ${topic} ` +
      `have a leader:" >&2; tail -n ${options.brokers + 2} describe.txt >&2; ` +
      `${topics(['--delete', '--topic', topic])} > /dev/null 2>&1; exit 1; }`,
    `${KAFKA_TOOL_COMMAND} ${KAFKA_TOOL_CLASSES.producer} ` +
      `${[
        '--bootstrap-server',
        bootstrapServers,
        '--topic',
        topic,
        '--num-records',
        String(records),
        '--record-size',
        '100',
        '--throughput',
        '-1',
        '--command-property',
        'acks=all',
      ]
        .map(quote)
        .join(' ')}` +
      ` > produce.txt 2>&1`,
    `grep -qE '^${records} records sent, .* 99\\.9th\\.$' produce.txt || ` +
      `{ echo "smoke test: ${records} records were not all acknowledged (acks=all):" >&2; tail -n 5 produce.txt >&2; ` +
      `${topics(['--delete', '--topic', topic])} > /dev/null 2>&1; exit 1; }`,
    `${topics(['--delete', '--topic', topic])} > delete.txt 2>&1 || echo "smoke test: could not delete ${topic}" >&2`,
    `echo "smoke test: ${options.brokers} partition leaders, ${records} records acknowledged by ${replicas} replicas"`,
  ].join('\n');
}

/** Seconds the readiness script may take (the tools' wait, one JVM start and the brokers' answers). */
export const KAFKA_READINESS_SECONDS = KAFKA_TOOLS_READY_WAIT_SECONDS + 60;
/**
 * Seconds BrokerApiVersionsCommand may take inside that (a JVM start and one Metadata + ApiVersions round per broker).
 */
const KAFKA_READINESS_TOOL_SECONDS = 45;

/**
 * Whether every broker has registered with the KRaft quorum and answers, asked from the load generator:
 * BrokerApiVersionsCommand (bin/kafka-broker-api-versions.sh) takes the broker list from a Metadata request
 * (apache/kafka tools/src/main/java/org/apache/kafka/tools/BrokerApiVersionsCommand.java: findAllBrokers,
 * `MetadataRequest.Builder.allTopics()` → `buildCluster().nodes()`), which lists the brokers the quorum has registered,
 * and prints one block per broker, `<Node> -> (<api versions>)` or `<Node> -> ERROR: <message>` when that broker did
 * not
 * answer; a Node prints as `<host>:<port> (id: <n> rack: <r> ...)`. The script succeeds when it lists `brokers`
 * distinct ids and none with ERROR; otherwise it fails naming what it saw. `timeout` bounds the tool, whose wait for a
 * non-empty broker list (awaitBrokers) has no limit of its own.
 */
export function kafkaReadinessScript(options: { bootstrapServers: string; brokers: number }): string {
  const bootstrapServers = checkedBootstrapServers(options.bootstrapServers);
  if (!Number.isInteger(options.brokers) || options.brokers < 1)
    throw new Error(`brokers must be a positive integer, got ${options.brokers}`);
  return [
    'set -uo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK" || exit 1',
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    ...toolsReadyLines(),
    `timeout ${KAFKA_READINESS_TOOL_SECONDS} ${KAFKA_TOOL_COMMAND} ${KAFKA_TOOL_CLASSES.brokerApiVersions} ` +
      `${['--bootstrap-server', bootstrapServers].map(quote).join(' ')} > versions.txt 2>&1`,
    `SEEN=$(grep -oE '\\(id: [0-9]+ rack: ' versions.txt | sort -u | wc -l)`,
    `DOWN=$(grep -cE '\\(id: [0-9]+ rack: .* -> ERROR' versions.txt)`,
    `[ "$SEEN" -eq ${options.brokers} ] && [ "$DOWN" -eq 0 ] || ` +
      `{ echo "readiness: $SEEN of ${options.brokers} brokers registered, $DOWN not answering:" >&2; ` +
      `grep -E '\\(id: ' versions.txt | cut -c1-200 >&2; tail -n 3 versions.txt | cut -c1-300 >&2; exit 1; }`,
    `echo "readiness: ${options.brokers} of ${options.brokers} brokers registered"`,
  ].join('\n');
}
