import { mkdirSync } from 'node:fs';
import type { RawRepetition } from '../core/results/ingest';
import type { ClusterGroup } from '../core/plan/plan';
import { LocalKafkaCluster } from './kafka-cluster';
import { runKafkaLoad } from './kafka-load';
import { fetchRegisteredBrokers } from './kafka-metadata';
import { ensureArtifact, KAFKA_ARTIFACT } from './maven-artifacts';
import { livePids, type ProcessRegistry } from './processes';
import { sampledBrokerRepetition, type BrokerRepetitionOptions } from './broker-repetition';

/** A local Kafka cluster started for a group of scenarios. */
export interface KafkaClusterHandle {
  readonly broker: 'kafka';
  readonly group: ClusterGroup;
  readonly kafka: LocalKafkaCluster;
  readonly workDir: string;
}

/** What the local target passes on to its Kafka half. */
export interface KafkaTargetOptions {
  readonly processes: ProcessRegistry;
  readonly cacheDir: string;
  readonly startTimeoutMs?: number;
  /** Replaces `java` for the brokers (tests simulate a broker that never starts). */
  readonly brokerJavaCommand?: string;
}

/** LaunchCluster for `broker: kafka`: the jars (fetched once), then an N-broker KRaft cluster. */
export async function launchKafka(
  group: ClusterGroup,
  workDir: string,
  options: KafkaTargetOptions,
): Promise<KafkaClusterHandle> {
  mkdirSync(workDir, { recursive: true });
  const jarsDir = await ensureArtifact(options.cacheDir, KAFKA_ARTIFACT);
  const kafka = await LocalKafkaCluster.start({
    nodes: group.nodes,
    workDir,
    processes: options.processes,
    jarsDir,
    ...(options.startTimeoutMs ? { startTimeoutMs: options.startTimeoutMs } : {}),
    ...(options.brokerJavaCommand ? { brokerJavaCommand: options.brokerJavaCommand } : {}),
  });
  return { broker: 'kafka', group, kafka, workDir };
}

/** SmokeTest for Kafka: every broker still lists all N brokers as registered. */
export async function smokeTestKafka(handle: KafkaClusterHandle): Promise<{ roundTripMs: number }> {
  const started = Date.now();
  for (const node of handle.kafka.nodes) {
    const brokers = await fetchRegisteredBrokers(node.brokerPort);
    if (brokers.length !== handle.kafka.nodes.length) {
      throw new Error(
        `smoke test: Kafka broker ${node.nodeId} lists ${brokers.length} of ${handle.kafka.nodes.length} ` +
          `brokers as registered`,
      );
    }
  }
  return { roundTripMs: Date.now() - started };
}

/** One repetition with Kafka's performance tools, returned as raw output for the shared ingest. */
export async function runKafkaRepetition(options: BrokerRepetitionOptions<KafkaClusterHandle>): Promise<RawRepetition> {
  const { scenario } = options;
  return sampledBrokerRepetition({
    runId: options.runId,
    scenario,
    repetition: options.repetition,
    nodes: options.handle.kafka.nodes.map((node) => ({
      node: `kafka${node.nodeId}`,
      pids: () => livePids(node.process),
    })),
    expectations: { confirms: false },
    load: (onToolStarted) =>
      runKafkaLoad({
        cluster: options.handle.kafka,
        workload: scenario.workload,
        outputDir: options.outputDir,
        processes: options.processes,
        onToolStarted,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      }),
    output: (run) => ({ kafka: { output: run.output, expectations: run.expectations } }),
  });
}
