import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { RawRepetition } from '../core/results/ingest';
import { createTopicArgs, kafkaRunSettings } from '../core/kafka/kafka-perf-args';
import type { BrokerRepetitionOptions } from './broker-repetition';
import {
  applyBrokerFault,
  withFailover,
  healBrokerFault,
  type BrokerFaultState,
  type FaultableCluster,
  type HeldRepetition,
} from './broker-faults';
import type { KafkaNode } from './kafka-cluster';
import { javaArgs, KAFKA_TOOL_HEAP } from './kafka-java';
import { runKafkaRepetition, type KafkaClusterHandle } from './kafka-target';
import { ProcessLostMessageVerifier } from './process-verifier';

/** A Kafka repetition started in the background, with its verifier and fault when the workload has one. */
export interface StartedKafkaRepetition {
  readonly raw: Promise<RawRepetition>;
  readonly verifier?: ProcessLostMessageVerifier;
  readonly fault?: BrokerFaultState;
}

/** The verifier's source (Java's single-file launch runs it): beside dist/ once built, beside this file under jest. */
export function kafkaVerifierSource(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'local', 'kafka-verifier', 'KafkaLostMessageVerifier.java');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir)
      throw new Error(`local/kafka-verifier/KafkaLostMessageVerifier.java not found above ${from}`);
  }
}

/**
 * StartRepetition on a Kafka cluster. With a fault: first the lost-message verifier
 * (local/kafka-verifier/KafkaLostMessageVerifier.java, on the Kafka client of the cluster's release) on a topic of its
 * own (one partition, the workload's replication factor and acks), then the load. When the load ends, the verifier
 * drains and reads its partition once more, and its counts join the raw output; a broker the fault left down is
 * started again. "leader" is the broker leading the verifier's partition; the load's partitions may be led by others
 * (Kafka spreads partition leaders over the brokers), so the load's rates show the fault only where they share it.
 */
export async function startKafkaRepetition(
  options: BrokerRepetitionOptions<KafkaClusterHandle>,
): Promise<StartedKafkaRepetition> {
  const { handle, scenario } = options;
  const spec = scenario.workload.fault;
  if (!spec) return { raw: runKafkaRepetition(options) };
  const { kafka } = handle;
  const settings = kafkaRunSettings(scenario.workload, kafka.nodes.length);
  const suffix = randomBytes(3).toString('hex');
  const topic = `rmqbench-verifier-${suffix}`;
  // One partition, the workload's replication factor and min.insync.replicas.
  await kafka.topicCommand(createTopicArgs(topic, { ...settings, partitions: 1 }), `topic-create-${topic}.log`);
  const control = join(options.outputDir, 'kafka-verifier.control');
  writeFileSync(control, '');
  const args = ['--bootstrap-server', kafka.bootstrapServers, '--topic', topic, '--control', control];
  const verifier = await ProcessLostMessageVerifier.start({
    broker: 'Kafka',
    command: 'java',
    args: javaArgs(kafka.jarsDir, kafka.log4j.tool, KAFKA_TOOL_HEAP, kafkaVerifierSource(), [
      ...args,
      '--acks',
      settings.acks,
      '--rate',
      '200',
    ]),
    resource: topic,
    control: { kind: 'file', path: control },
    outputDir: options.outputDir,
    processes: options.processes,
    // The JVM compiles the source before it runs: a few seconds on a busy machine.
    timeoutMs: 120_000,
  });
  const fault: BrokerFaultState = { spec };
  const deleteTopic = () =>
    kafka.topicCommand(['--delete', '--topic', topic], `topic-delete-${topic}.log`).catch(() => undefined);
  const raw = withFailover(runKafkaRepetition(options), verifier, fault, async () => {
    try {
      await kafka.restartStoppedNodes();
    } finally {
      await deleteTopic();
    }
  });
  return { raw, verifier, fault };
}

/** The Kafka cluster as the shared fault steps see it (local/broker-faults.ts): nodes named `kafka<node id>`. */
function faultable(handle: KafkaClusterHandle): FaultableCluster<KafkaNode> {
  const { kafka } = handle;
  return {
    nodes: kafka.nodes,
    nameOf: (node) => `kafka${node.nodeId}`,
    isRunning: (node) => kafka.isRunning(node),
    leaderOf: async (topic) => {
      const leader = await kafka.partitionLeader(topic);
      return leader === undefined ? undefined : `kafka${leader}`;
    },
    killNode: (node) => kafka.killNode(node),
    stopNode: (node) => kafka.stopNode(node),
    startNode: (node) => kafka.startNode(node),
  };
}

/** InjectFault on a Kafka cluster: `leader` is the broker leading the verifier's partition. */
export const applyKafkaFault = (handle: KafkaClusterHandle, started: HeldRepetition) =>
  applyBrokerFault(faultable(handle), started);

/** HealFault on a Kafka cluster: the broker starts again on its log directory and rejoins. */
export const healKafkaFault = (handle: KafkaClusterHandle, started: HeldRepetition) =>
  healBrokerFault(faultable(handle), started);
