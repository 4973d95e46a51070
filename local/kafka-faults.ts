import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { RawRepetition } from '../core/results/ingest';
import type { FaultSpec } from '../core/plan/plan-schema';
import { kafkaRunSettings } from '../core/kafka/kafka-perf-args';
import { LOCAL_PARTITION_REFUSAL } from '../core/plan/target-rules';
import type { BrokerRepetitionOptions } from './broker-repetition';
import type { KafkaNode } from './kafka-cluster';
import { javaArgs, KAFKA_TOOL_HEAP } from './kafka-java';
import { runKafkaRepetition, type KafkaClusterHandle } from './kafka-target';
import { waitFor } from './ports';
import { ProcessLostMessageVerifier } from './process-verifier';

/** The fault of a running repetition; `nodeName` is filled in when it is applied. */
export interface KafkaFaultState {
  readonly spec: FaultSpec;
  nodeName?: string;
}

/** A Kafka repetition started in the background, with its verifier and fault when the workload has one. */
export interface StartedKafkaRepetition {
  readonly raw: Promise<RawRepetition>;
  readonly verifier?: ProcessLostMessageVerifier;
  readonly fault?: KafkaFaultState;
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
  await kafka.topicCommand(
    ['--create', '--topic', topic, '--partitions', '1', '--replication-factor', String(settings.replicationFactor)],
    `topic-create-${topic}.log`,
  );
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
  const fault: KafkaFaultState = { spec };
  const deleteTopic = () =>
    kafka.topicCommand(['--delete', '--topic', topic], `topic-delete-${topic}.log`).catch(() => undefined);
  const raw = runKafkaRepetition(options).then(
    async (run) => {
      const counts = await verifier.finish();
      await kafka.restartStoppedNodes();
      await deleteTopic();
      const outcome = { action: spec.action, node: spec.node, ...(fault.nodeName ? { nodeName: fault.nodeName } : {}) };
      return { ...run, failover: { counts, fault: outcome } };
    },
    async (error: unknown) => {
      await verifier.abort();
      await kafka.restartStoppedNodes().catch(() => undefined);
      await deleteTopic();
      throw error;
    },
  );
  return { raw, verifier, fault };
}

/** A started repetition as the workflow's fault steps hold it (its verifier may be another broker's). */
interface HeldRepetition {
  readonly verifier?: object;
  readonly fault?: KafkaFaultState;
}

function kafkaFault(
  started: HeldRepetition,
  step: string,
): { verifier: ProcessLostMessageVerifier; fault: KafkaFaultState } {
  const { verifier, fault } = started;
  if (!fault || !(verifier instanceof ProcessLostMessageVerifier))
    throw new Error(`this repetition has no fault to ${step}`);
  return { verifier, fault };
}

/** The broker a fault hits: `leader` leads the verifier's partition now, `follower` is another running broker. */
async function faultNode(handle: KafkaClusterHandle, topic: string, which: FaultSpec['node']): Promise<KafkaNode> {
  const { kafka } = handle;
  if (typeof which === 'number') return kafka.nodes[which]!;
  const leader = await waitFor(
    () => kafka.partitionLeader(topic),
    10_000,
    () => `the verifier's partition ${topic}-0 has had no leader for 10 s, so there is no ${which} to fault`,
    200,
  );
  if (which === 'leader') return kafka.nodeById(leader);
  const follower = kafka.nodes.find((node) => node.nodeId !== leader && kafka.isRunning(node));
  if (!follower) throw new Error(`partition ${topic}-0 is led by broker ${leader} and no other runs: no follower`);
  return follower;
}

/** InjectFault on a Kafka cluster: kill, stop or restart the broker; the verifier marks the moment. */
export async function applyKafkaFault(
  handle: KafkaClusterHandle,
  started: HeldRepetition,
): Promise<{ nodeName: string; appliedAtSeconds: number }> {
  const { fault, verifier } = kafkaFault(started, 'apply');
  if (fault.spec.action === 'partition') throw new Error(LOCAL_PARTITION_REFUSAL);
  const node = await faultNode(handle, verifier.resource, fault.spec.node);
  fault.nodeName = `kafka${node.nodeId}`;
  const appliedAtSeconds = verifier.markFault();
  switch (fault.spec.action) {
    case 'kill':
      await handle.kafka.killNode(node);
      break;
    case 'stop':
      await handle.kafka.stopNode(node);
      break;
    case 'restart':
      await handle.kafka.stopNode(node);
      await handle.kafka.startNode(node);
      break;
  }
  return { nodeName: fault.nodeName, appliedAtSeconds };
}

/** HealFault on a Kafka cluster: the broker starts again on its log directory and rejoins. */
export async function healKafkaFault(
  handle: KafkaClusterHandle,
  started: HeldRepetition,
): Promise<{ nodeName: string; healedAtSeconds: number }> {
  const { fault, verifier } = kafkaFault(started, 'heal');
  if (!fault.nodeName) throw new Error('this repetition has no applied fault to heal');
  const node = handle.kafka.nodeById(Number(fault.nodeName.replace(/^kafka/, '')));
  const healedAtSeconds = verifier.markHeal();
  await handle.kafka.startNode(node);
  return { nodeName: fault.nodeName, healedAtSeconds };
}
