import { mkdirSync } from 'node:fs';
import type { RawRepetition } from '../core/results/ingest';
import { LOAD_GENERATOR_NODE } from '../core/metrics/host-metrics';
import type { ClusterGroup, Scenario } from '../core/plan/plan';
import { LocalKafkaCluster } from './kafka-cluster';
import { runKafkaLoad } from './kafka-load';
import { fetchRegisteredBrokers } from './kafka-metadata';
import { ensureArtifact, KAFKA_ARTIFACT } from './maven-artifacts';
import { HostMetricsSampler } from './host-metrics-sampler';
import { livePids, type ManagedProcess, type ProcessRegistry } from './processes';

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
export async function runKafkaRepetition(options: {
  readonly handle: KafkaClusterHandle;
  readonly runId: string;
  readonly scenario: Scenario;
  readonly repetition: number;
  readonly outputDir: string;
  readonly processes: ProcessRegistry;
  readonly onProgress?: (progress: { time: number; sent: number; received: number }) => void;
}): Promise<RawRepetition> {
  const { scenario } = options;
  const startedAtMs = Date.now();
  const startedAt = new Date(startedAtMs).toISOString();
  const tools: ManagedProcess[] = [];
  // Kafka has no management API here: CPU, RSS and disk writes of the broker JVMs and the tools (no queue depth).
  const sampler = HostMetricsSampler.start({
    nodes: [
      ...options.handle.kafka.nodes.map((node) => ({
        node: `kafka${node.nodeId}`,
        pids: () => livePids(node.process),
      })),
      { node: LOAD_GENERATOR_NODE, pids: () => livePids(...tools) },
    ],
    startedAtMs,
  });
  let run;
  try {
    run = await runKafkaLoad({
      cluster: options.handle.kafka,
      workload: scenario.workload,
      outputDir: options.outputDir,
      processes: options.processes,
      onToolStarted: (tool) => tools.push(tool),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  } catch (error) {
    await sampler.stop();
    throw error;
  }
  const collected = await sampler.stop();
  return {
    runId: options.runId,
    scenarioId: scenario.id,
    repetition: options.repetition,
    startedAt,
    finishedAt: new Date().toISOString(),
    perfTestArgs: run.args,
    expectations: {
      durationSeconds: scenario.workload.durationSeconds,
      producers: scenario.workload.producers,
      consumers: scenario.workload.consumers,
      confirms: false,
    },
    stdout: '',
    csv: '',
    kafka: { output: run.output, expectations: run.expectations },
    ...(run.error ? { targetError: run.error } : {}),
    metrics: collected.metrics,
    ...(collected.error ? { metricsError: collected.error } : {}),
  };
}
