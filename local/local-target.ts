import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { cpus, hostname } from 'node:os';
import { join } from 'node:path';
import type { RawRepetition } from '../core/results/ingest';
import { perfTestExpectations } from '../core/perftest/perftest-output';
import { workloadQueueArguments } from '../core/broker/broker-config';
import { VERIFIER_QUEUE, type FaultOutcome } from '../core/failover/failover';
import type { ClusterGroup, Plan, Scenario } from '../core/plan/plan';
import type { FaultSpec } from '../core/plan/plan-schema';
import { plainRabbitmqVersion } from '../core/plan/plan-target';
import { PERFTEST_VERSION, benchmarkQueueNames, redactPerfTestArgs } from '../core/perftest/perftest-args';
import { honoursLazyQueueMode, supportsClassicMirroring, versionMatches } from '../core/broker/rabbitmq-version';
import { LOCAL_PARTITION_REFUSAL } from '../core/plan/target-rules';
import { LocalLoadBalancer } from './haproxy';
import { KafkaClusterHandle, launchKafka } from './kafka-target';
import { applyKafkaFault, healKafkaFault, startKafkaRepetition } from './kafka-faults';
import { NatsClusterHandle, launchNats } from './nats-target';
import { applyNatsFault, healNatsFault, startNatsRepetition } from './nats-faults';
import { NATS_SERVER_VERSION } from '../core/nats/nats-versions';
import { KAFKA_VERSION, PERFTEST_ARTIFACT, ensureArtifact } from './maven-artifacts';
import type { PerfTestProgress, PerfTestRun } from './perftest-process';
import {
  generatorNodes,
  generatorOutputs,
  plannedGenerators,
  runGenerators,
  type GeneratorLaunch,
} from './perftest-generators';
import { HostMetricsSampler } from './host-metrics-sampler';
import type { ProcessRegistry } from './processes';
import { LostMessageVerifier } from './lost-message-verifier';
import { LocalNode, LocalRabbitCluster, installedRabbitmqVersion } from './rabbitmq-cluster';

export { VERIFIER_QUEUE };

/** What the fault steps ask of a lost-message verifier: RabbitMQ's (AMQP, in-process) and NATS's (a process). */
export interface FaultVerifier {
  markFault(): number;
  markHeal(): number;
  abort(): Promise<void>;
}

/** A repetition whose PerfTest (and, with a fault, the verifier) runs in the background. */
export interface StartedRepetition {
  /** Settles once PerfTest has ended and the verifier has drained, with the raw output to ingest. */
  readonly raw: Promise<RawRepetition>;
  /** Present when the scenario has a fault. */
  readonly verifier?: FaultVerifier;
  /** Filled in by `applyFault`: the node the fault hit. */
  readonly fault?: { spec: FaultSpec; nodeName?: string };
}

/** A RabbitMQ cluster started for a group of scenarios, with its load balancer once one is needed. */
export interface RabbitClusterHandle {
  readonly broker: 'rabbitmq';
  readonly group: ClusterGroup;
  readonly cluster: LocalRabbitCluster;
  readonly workDir: string;
  loadBalancer?: LocalLoadBalancer;
}

/** A cluster the local target started: RabbitMQ nodes, Kafka brokers (local/kafka-target.ts) or NATS servers. */
export type LocalClusterHandle = RabbitClusterHandle | KafkaClusterHandle | NatsClusterHandle;

export interface LocalTargetOptions {
  readonly processes: ProcessRegistry;
  /** Folder for node directories and raw PerfTest output of this run. */
  readonly runDir: string;
  readonly cacheDir: string;
  /** @default 120000 */
  readonly clusterStartTimeoutMs?: number;
  /** Replaces the rabbitmq-server command (tests use it to simulate a broker that never starts). */
  readonly rabbitmqServerCommand?: string;
  /** Replaces the PerfTest jars folder (tests point it at a PerfTest that exits early). */
  readonly perfTestJarsDir?: string;
  /** Replaces `java` for Kafka brokers (tests use it to simulate a broker that never starts). */
  readonly kafkaBrokerJavaCommand?: string;
  /** Replaces the nats-server binary (tests use it to simulate a server that never becomes ready). */
  readonly natsServerCommand?: string;
}

/**
 * The local target: RabbitMQ nodes on localhost, HAProxy as the load balancer, the real PerfTest; or, for a
 * cluster with `broker: kafka`, a KRaft Kafka cluster and Kafka's own performance tools; or, with `broker: nats`, a
 * NATS JetStream cluster and rmqbench's NATS load client (local/nats-target.ts).
 * Its three steps (launch, run a repetition, tear down) are the ones the cloud workflow performs.
 */
export class LocalTarget {
  readonly name = 'local' as const;

  constructor(private readonly options: LocalTargetOptions) {}

  /** Refuses a plan this machine cannot run, before anything starts. */
  preflight(plan: Plan): void {
    // A plan of Kafka and NATS clusters only needs no RabbitMQ (their jars and binaries are fetched or built at
    // launch).
    if (plan.clusters.every((cluster) => cluster.broker !== 'rabbitmq')) return;
    const installed = installedRabbitmqVersion();
    if (!installed)
      throw new Error(
        'rabbitmq-server is not installed; run: sudo apt-get install -y rabbitmq-server (or rmqbench doctor)',
      );
    plan.clusters.forEach((cluster, index) => {
      // A per-target version pins the clouds only (core/plan/plan-target.ts).
      const asked = plainRabbitmqVersion(cluster);
      if (asked && !versionMatches(asked, installed)) {
        throw new Error(
          `clusters[${index}] (${cluster.name}) asks for RabbitMQ ${asked}, but the local target runs Debian's ` +
            `rabbitmq-server ${installed}; remove rabbitmqVersion or run it on a cloud target`,
        );
      }
      if (cluster.topology.type === 'mirrored' && !supportsClassicMirroring(installed)) {
        throw new Error(
          `clusters[${index}] (${cluster.name}) uses classic mirroring, which the installed RabbitMQ ` +
            `${installed} no longer has`,
        );
      }
    });
    const lazy = plan.scenarios.find((scenario) => scenario.workload.queueMode === 'lazy');
    if (lazy && !honoursLazyQueueMode(installed)) {
      throw new Error(
        `scenario ${lazy.id} asks for lazy queues (queueMode: lazy), which the installed RabbitMQ ${installed} ` +
          `ignores (3.12 and later)`,
      );
    }
    plan.workloads.forEach((workload, index) => {
      if (workload.fault?.action === 'partition')
        throw new Error(`workloads[${index}].fault.action: ${LOCAL_PARTITION_REFUSAL}`);
    });
  }

  environment(): Record<string, string> {
    // `java -version` writes to stderr.
    const versionOutput = spawnSync('java', ['-version'], { encoding: 'utf8' });
    const java = `${versionOutput.stderr ?? ''}${versionOutput.stdout ?? ''}`.split('\n')[0]?.trim() || 'unknown';
    return {
      rabbitmqVersion: installedRabbitmqVersion() ?? 'not installed',
      perfTestVersion: PERFTEST_VERSION,
      kafkaVersion: KAFKA_VERSION,
      natsServerVersion: NATS_SERVER_VERSION,
      host: hostname(),
      cpus: String(cpus().length),
      cpuModel: cpus()[0]?.model ?? 'unknown',
      java,
      instanceType: 'localhost',
    };
  }

  /** Fetches PerfTest (once, cached) so that the first repetition does not pay for the download. */
  async prepare(): Promise<void> {
    if (!this.options.perfTestJarsDir) await ensureArtifact(this.options.cacheDir, PERFTEST_ARTIFACT);
  }

  async launch(group: ClusterGroup, index: number): Promise<LocalClusterHandle> {
    const workDir = join(this.options.runDir, 'clusters', `cluster-${index + 1}`);
    if (group.broker === 'kafka') {
      return launchKafka(group, workDir, {
        processes: this.options.processes,
        cacheDir: this.options.cacheDir,
        ...(this.options.clusterStartTimeoutMs ? { startTimeoutMs: this.options.clusterStartTimeoutMs } : {}),
        ...(this.options.kafkaBrokerJavaCommand ? { brokerJavaCommand: this.options.kafkaBrokerJavaCommand } : {}),
      });
    }
    if (group.broker === 'nats') {
      return launchNats(group, workDir, {
        processes: this.options.processes,
        cacheDir: this.options.cacheDir,
        ...(this.options.clusterStartTimeoutMs ? { startTimeoutMs: this.options.clusterStartTimeoutMs } : {}),
        ...(this.options.natsServerCommand ? { serverCommand: this.options.natsServerCommand } : {}),
      });
    }
    return this.launchRabbitMq(group, index);
  }

  /** LaunchCluster for RabbitMQ (also for callers that need the RabbitMQ handle itself). */
  async launchRabbitMq(group: ClusterGroup, index: number): Promise<RabbitClusterHandle> {
    const workDir = join(this.options.runDir, 'clusters', `cluster-${index + 1}`);
    mkdirSync(workDir, { recursive: true });
    const cluster = await LocalRabbitCluster.start({
      nodes: group.nodes,
      topology: group.topology,
      workDir,
      processes: this.options.processes,
      ...(this.options.clusterStartTimeoutMs ? { startTimeoutMs: this.options.clusterStartTimeoutMs } : {}),
      ...(this.options.rabbitmqServerCommand ? { serverCommand: this.options.rabbitmqServerCommand } : {}),
    });
    return { broker: 'rabbitmq', group, cluster, workDir };
  }

  /** Runs one PerfTest repetition of a scenario and returns its raw output for ingestion. */
  async runRepetition(
    handle: LocalClusterHandle,
    runId: string,
    scenario: Scenario,
    repetition: number,
    onProgress?: (progress: PerfTestProgress) => void,
  ): Promise<RawRepetition> {
    return (await this.startRepetition(handle, runId, scenario, repetition, onProgress)).raw;
  }

  /**
   * Prepares the queues, starts the lost-message verifier when the scenario has a fault, and starts PerfTest in the
   * background: what the workflow's StartRepetition does, so that the fault states can run beside it.
   */
  async startRepetition(
    handle: LocalClusterHandle,
    runId: string,
    scenario: Scenario,
    repetition: number,
    onProgress?: (progress: PerfTestProgress) => void,
  ): Promise<StartedRepetition> {
    const outputDir = join(this.options.runDir, 'raw', safeFileName(scenario.id), `rep-${repetition}`);
    mkdirSync(outputDir, { recursive: true });
    if (handle.broker === 'kafka' || handle.broker === 'nats') {
      const common = {
        runId,
        scenario,
        repetition,
        outputDir,
        processes: this.options.processes,
        ...(onProgress ? { onProgress } : {}),
      };
      if (handle.broker === 'nats') return startNatsRepetition({ handle, ...common });
      return startKafkaRepetition({ handle, ...common });
    }
    const { cluster } = handle;
    const { workload } = scenario;
    await cluster.deleteBenchmarkQueues();
    const { uris, predeclared, home } = await this.connectionFor(handle, scenario);
    const invocation = {
      topology: scenario.cluster.topology,
      queueArguments: cluster.queueArguments,
      uris,
      predeclared,
    };
    const { launches, split } = plannedGenerators(scenario, invocation, outputDir);
    const jarsDir = this.options.perfTestJarsDir ?? (await ensureArtifact(this.options.cacheDir, PERFTEST_ARTIFACT));
    const verifier = workload.fault ? await startVerifier(cluster, uris, home) : undefined;
    const fault: { spec: FaultSpec; nodeName?: string } | undefined = workload.fault
      ? { spec: workload.fault }
      : undefined;
    const startedAtMs = Date.now();
    // Beside PerfTest from its start (the samples' time axis) until it ends, on every path.
    const sampler = HostMetricsSampler.start({
      nodes: [...cluster.sampledNodes(), ...generatorNodes(launches)],
      pollBroker: (tSeconds) => cluster.brokerReading(tSeconds),
      startedAtMs,
    });
    const running = runGenerators(launches, {
      jarsDir,
      durationSeconds: workload.durationSeconds,
      processes: this.options.processes,
      ...(finalSummaryLine(workload) ? { finalLinePattern: finalSummaryLine(workload)! } : {}),
      ...(onProgress ? { onProgress } : {}),
    });
    const raw = this.finishRepetition(
      { runId, scenario, repetition, handle, startedAtMs, launches, running, sampler },
      {
        ...(split ? { split } : {}),
        ...(verifier ? { verifier } : {}),
        ...(fault ? { fault } : {}),
      },
    );
    return { raw, ...(verifier ? { verifier } : {}), ...(fault ? { fault } : {}) };
  }

  /** Waits for the repetition's PerfTest processes, stops what ran beside them, and returns the raw output. */
  private async finishRepetition(
    started: {
      readonly runId: string;
      readonly scenario: Scenario;
      readonly repetition: number;
      readonly handle: RabbitClusterHandle;
      readonly startedAtMs: number;
      readonly launches: readonly GeneratorLaunch[];
      readonly running: Promise<PerfTestRun[]>;
      readonly sampler: HostMetricsSampler;
    },
    extras: {
      readonly split?: string;
      readonly verifier?: LostMessageVerifier;
      readonly fault?: { spec: FaultSpec; nodeName?: string };
    },
  ): Promise<RawRepetition> {
    const { scenario, handle, launches, sampler } = started;
    const { cluster } = handle;
    const { workload } = scenario;
    const { split, verifier, fault } = extras;
    let runs;
    try {
      runs = await started.running;
    } catch (error) {
      await sampler.stop();
      await verifier?.abort();
      throw error;
    }
    const collected = await sampler.stop();
    const counts = await verifier?.finish();
    const finishedAt = new Date().toISOString();
    // A fault that was not healed leaves a node down: the next repetition gets the whole cluster again.
    if (fault) await cluster.restartStoppedNodes();
    await cluster.deleteBenchmarkQueues().catch(() => undefined);
    const faultOutcome: FaultOutcome | undefined = fault
      ? { action: fault.spec.action, node: fault.spec.node, ...(fault.nodeName ? { nodeName: fault.nodeName } : {}) }
      : undefined;
    const targetError = generatorsFailure(launches, runs, workload.durationSeconds);
    return {
      runId: started.runId,
      scenarioId: scenario.id,
      repetition: started.repetition,
      startedAt: new Date(started.startedAtMs).toISOString(),
      finishedAt,
      perfTestArgs: redactPerfTestArgs(launches[0]!.args),
      expectations: perfTestExpectations(workload),
      ...(split
        ? { stdout: '', csv: '', loadGenerators: { split, outputs: generatorOutputs(scenario, launches, runs) } }
        : { stdout: runs[0]!.stdout, csv: runs[0]!.csv }),
      ...(targetError ? { targetError } : {}),
      ...(counts && faultOutcome ? { failover: { counts, fault: faultOutcome } } : {}),
      metrics: collected.metrics,
      ...(collected.error ? { metricsError: collected.error } : {}),
    };
  }

  /**
   * InjectFault: finds the node (`leader`: the one leading the verifier's queue now), applies the action, tells the
   * verifier when.
   */
  async applyFault(
    handle: LocalClusterHandle,
    started: StartedRepetition,
  ): Promise<{ nodeName: string; appliedAtSeconds: number }> {
    if (handle.broker === 'nats') return applyNatsFault(handle, started);
    if (handle.broker === 'kafka') return applyKafkaFault(handle, started);
    const { fault, verifier } = started;
    if (!fault || !verifier) throw new Error('this repetition has no fault to apply');
    if (fault.spec.action === 'partition') throw new Error(LOCAL_PARTITION_REFUSAL);
    const node = await this.faultNode(handle, fault.spec.node);
    fault.nodeName = node.name;
    const appliedAtSeconds = verifier.markFault();
    switch (fault.spec.action) {
      case 'kill':
        await handle.cluster.killNode(node);
        break;
      case 'stop':
        await handle.cluster.stopNode(node);
        break;
      case 'restart':
        await handle.cluster.stopNode(node);
        await handle.cluster.startNode(node);
        break;
    }
    return { nodeName: node.name, appliedAtSeconds };
  }

  /** HealFault: starts the killed or stopped node again with its data and waits until it has rejoined. */
  async healFault(
    handle: LocalClusterHandle,
    started: StartedRepetition,
  ): Promise<{ nodeName: string; healedAtSeconds: number }> {
    if (handle.broker === 'nats') return healNatsFault(handle, started);
    if (handle.broker === 'kafka') return healKafkaFault(handle, started);
    const { fault, verifier } = started;
    if (!fault?.nodeName || !verifier) throw new Error('this repetition has no applied fault to heal');
    const node = handle.cluster.nodeByName(fault.nodeName);
    const healedAtSeconds = verifier.markHeal();
    await handle.cluster.startNode(node);
    return { nodeName: node.name, healedAtSeconds };
  }

  private async faultNode(handle: RabbitClusterHandle, which: FaultSpec['node']): Promise<LocalNode> {
    const { cluster } = handle;
    if (typeof which === 'number') return cluster.nodes[which]!;
    const leader = await cluster.queueNode(VERIFIER_QUEUE);
    if (which === 'leader') return cluster.nodeByName(leader);
    const follower = cluster.nodes.find((node) => node.name !== leader && !node.process?.hasExited);
    if (!follower)
      throw new Error(
        `queue ${VERIFIER_QUEUE} is led by ${leader} and no other node runs, so there is no follower to fault`,
      );
    return follower;
  }

  private async connectionFor(
    handle: RabbitClusterHandle,
    scenario: Scenario,
  ): Promise<{ uris: string[]; predeclared: boolean; home?: LocalNode }> {
    const { cluster } = handle;
    const first = cluster.nodes[0]!;
    if (scenario.workload.fault && (scenario.cluster.connection === 'lb' || scenario.cluster.connection === 'direct')) {
      // With a fault, the benchmark queues are declared through one node beforehand, so that they and the verifier's
      // queue share one leader ("kill the leader" hits both) instead of wherever PerfTest's connection landed.
      const home = await this.declareQueuesOnOneLeader(handle, scenario, first);
      if (scenario.cluster.connection === 'direct') return { uris: [cluster.amqpUri(first)], predeclared: true, home };
      handle.loadBalancer ??= await LocalLoadBalancer.start(cluster.nodes, handle.workDir, this.options.processes);
      return { uris: [`amqp://guest:guest@127.0.0.1:${handle.loadBalancer.amqpPort}`], predeclared: true, home };
    }
    switch (scenario.cluster.connection) {
      case 'lb': {
        handle.loadBalancer ??= await LocalLoadBalancer.start(cluster.nodes, handle.workDir, this.options.processes);
        return { uris: [`amqp://guest:guest@127.0.0.1:${handle.loadBalancer.amqpPort}`], predeclared: false };
      }
      case 'direct':
        return { uris: [cluster.amqpUri(first)], predeclared: false };
      case 'leader':
      case 'follower': {
        const leader = await this.declareQueuesOnOneLeader(handle, scenario, first);
        const node =
          scenario.cluster.connection === 'leader' ? leader : cluster.nodes.find((candidate) => candidate !== leader)!;
        return { uris: [cluster.amqpUri(node)], predeclared: true, home: leader };
      }
    }
  }

  /** Declares the scenario's queues through one node and returns the node that leads all of them. */
  private async declareQueuesOnOneLeader(
    handle: RabbitClusterHandle,
    scenario: Scenario,
    through: LocalNode,
  ): Promise<LocalNode> {
    const { workload, cluster: spec } = scenario;
    const durable = workload.persistent || spec.topology.type === 'quorum' || spec.topology.type === 'stream';
    const leaders = await handle.cluster.declareQueues(
      benchmarkQueueNames(workload.queues),
      durable,
      through,
      workloadQueueArguments(workload),
    );
    const distinct = new Set(leaders.values());
    if (distinct.size !== 1) {
      throw new Error(
        `the queues of ${scenario.id} are led by several nodes (${[...distinct].join(', ')}), so ` +
          `"${spec.connection}" is ambiguous`,
      );
    }
    return handle.cluster.nodeByName([...distinct][0]!);
  }

  async teardown(handle: LocalClusterHandle): Promise<void> {
    if (handle.broker === 'kafka') return handle.kafka.stop();
    if (handle.broker === 'nats') return handle.nats.stop();
    await handle.loadBalancer?.stop();
    await handle.cluster.stop();
  }
}

/** The line PerfTest prints last in its summary for this workload. */
function finalSummaryLine(workload: Scenario['workload']): RegExp | undefined {
  if (workload.confirmWindow !== undefined) return /confirm latency min\/median\/75th\/95th\/99th \d/;
  if (workload.producers > 0 && workload.consumers > 0) return /consumer latency min\/median\/75th\/95th\/99th \d/;
  return undefined;
}

function safeFileName(id: string): string {
  return id.replace(/[^A-Za-z0-9._=-]+/g, '_');
}

/**
 * The lost-message verifier of a scenario with a fault, its queue where the benchmark queues live (so that "leader" is
 * the same node for both).
 */
async function startVerifier(
  cluster: LocalRabbitCluster,
  uris: readonly string[],
  home: LocalNode | undefined,
): Promise<LostMessageVerifier> {
  await cluster.declareQueues([VERIFIER_QUEUE], true, home ?? cluster.nodes[0]!);
  // The scenario's own way in first; every node after it, as a client with a list of hosts would reconnect.
  return LostMessageVerifier.start({
    uris: [...uris, ...cluster.nodes.map((node) => cluster.amqpUri(node))],
    queue: VERIFIER_QUEUE,
  });
}

/** Why a PerfTest run counts as failed (overran its time, or exited non-zero before its final summary), if it does. */
function perfTestFailure(run: PerfTestRun, durationSeconds: number): string | undefined {
  if (run.timedOut) return `PerfTest did not finish within ${durationSeconds + 60} s and was stopped`;
  return run.exitCode !== 0 && !run.stoppedAfterSummary ? `PerfTest exited with code ${run.exitCode}` : undefined;
}

/** The failures of a repetition's PerfTest processes, each named by its load generator when there are several. */
function generatorsFailure(
  launches: readonly GeneratorLaunch[],
  runs: readonly PerfTestRun[],
  durationSeconds: number,
): string | undefined {
  const failures = runs.flatMap((run, index) => {
    const failure = perfTestFailure(run, durationSeconds);
    const id = launches[index]!.share?.id;
    return failure ? [id ? `load generator ${id}: ${failure}` : failure] : [];
  });
  return failures.length > 0 ? failures.join('; ') : undefined;
}
