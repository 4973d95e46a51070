import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchPartitionLeader, fetchRegisteredBrokers } from './kafka-metadata';
import { javaArgs, KAFKA_BROKER_HEAP, runJavaTool, startKafkaProcess, writeLog4jConfigs } from './kafka-java';
import { ManagedProcess, ProcessRegistry } from './processes';
import { freePorts, waitFor } from './ports';

export interface KafkaClusterOptions {
  readonly nodes: number;
  /** A fresh folder for this cluster's node directories and logs. */
  readonly workDir: string;
  readonly processes: ProcessRegistry;
  /** The folder with the Kafka jars (local/maven-artifacts.ts KAFKA_ARTIFACT). */
  readonly jarsDir: string;
  /** How long the brokers get to boot, elect a controller and register. @default 120000 */
  readonly startTimeoutMs?: number;
  /** Replaces `java` for the brokers (tests use it to simulate a broker that never starts). */
  readonly brokerJavaCommand?: string;
}

export interface KafkaNode {
  readonly nodeId: number;
  readonly brokerPort: number;
  readonly controllerPort: number;
  readonly dir: string;
  readonly dataDir: string;
  readonly configFile: string;
  /** The broker's log (log4j2 to its console). */
  readonly stdoutFile: string;
  process?: ManagedProcess;
}

/**
 * An N-broker Kafka cluster on localhost in KRaft mode, without ZooKeeper: every node is broker and controller
 * (process.roles=broker,controller) with its own directories and free ports, the controllers a static quorum
 * (controller.quorum.voters) of all nodes. Kafka's configuration reference for these keys:
 * https://kafka.apache.org/documentation/#brokerconfigs (process.roles, node.id, controller.quorum.voters,
 * controller.listener.names, listeners, advertised.listeners, log.dirs); a static quorum needs each node's storage
 * formatted with the same cluster id and no --standalone/--initial-controllers (those are for a dynamic quorum:
 * `kafka-storage format --help` in 4.3.1, kafka.tools.StorageTool: "When setting this flag, the
 * controller.quorum.voters config must not be set").
 */
export class LocalKafkaCluster {
  private constructor(
    readonly nodes: readonly KafkaNode[],
    readonly clusterId: string,
    readonly jarsDir: string,
    readonly log4j: { readonly broker: string; readonly tool: string },
    private readonly workDir: string,
    private readonly processes: ProcessRegistry,
    private readonly javaCommand: string,
  ) {}

  static async start(options: KafkaClusterOptions): Promise<LocalKafkaCluster> {
    const ports = await freePorts(options.nodes * 2);
    mkdirSync(options.workDir, { recursive: true });
    const nodes: KafkaNode[] = Array.from({ length: options.nodes }, (_, index) => {
      const dir = join(options.workDir, `kafka${index + 1}`);
      return {
        nodeId: index + 1,
        brokerPort: ports[index * 2]!,
        controllerPort: ports[index * 2 + 1]!,
        dir,
        dataDir: join(dir, 'data'),
        configFile: join(dir, 'server.properties'),
        stdoutFile: join(dir, 'stdout.log'),
      };
    });
    // A Kafka cluster id is a UUID in URL-safe base64 without padding (org.apache.kafka.common.Uuid: 16 bytes, 22
    // characters).
    // kafka-storage's argument parser takes an id that starts with "-" for an option ("--cluster-id: expected one
    // argument"); Kafka's own Uuid.randomUuid() draws again in that case too.
    let clusterId = randomBytes(16).toString('base64url');
    while (clusterId.startsWith('-')) clusterId = randomBytes(16).toString('base64url');
    const log4j = writeLog4jConfigs(options.workDir);
    for (const node of nodes) {
      mkdirSync(node.dir, { recursive: true });
      writeFileSync(node.configFile, serverProperties(node, nodes));
    }
    const cluster = new LocalKafkaCluster(
      nodes,
      clusterId,
      options.jarsDir,
      log4j,
      options.workDir,
      options.processes,
      options.brokerJavaCommand ?? 'java',
    );
    // Ctrl-C stops the processes through the registry, without a teardown: the data goes then too.
    options.processes.afterStop(() => cluster.deleteData());
    try {
      await cluster.formatStorage();
      for (const node of nodes) cluster.spawn(node);
      await cluster.waitUntilFormed(options.startTimeoutMs ?? 120_000);
    } catch (error) {
      // A cluster that never formed is never handed to a teardown: stop it here, data deleted too.
      await cluster.stop().catch(() => undefined);
      throw error;
    }
    return cluster;
  }

  private spawn(node: KafkaNode): void {
    node.process = startKafkaProcess(
      this.processes,
      `kafka${node.nodeId}`,
      this.javaCommand,
      javaArgs(this.jarsDir, this.log4j.broker, KAFKA_BROKER_HEAP, 'kafka.Kafka', [node.configFile]),
      { logPath: node.stdoutFile },
    );
  }

  /** Whether the node's broker process runs (a fault has not stopped it). */
  isRunning(node: KafkaNode): boolean {
    return node.process !== undefined && !node.process.hasExited;
  }

  /** A fault: SIGKILL to the broker's JVM; its log directory stays, as on a machine that lost power. */
  async killNode(node: KafkaNode): Promise<void> {
    await node.process?.stop(0, 'SIGKILL');
  }

  /** A fault: a controlled shutdown (SIGTERM: the broker hands its leaderships over), SIGKILL after 30 s. */
  async stopNode(node: KafkaNode): Promise<void> {
    await node.process?.stop(30_000);
  }

  /** Starts a stopped or killed broker again on its log directory and waits until it lists every broker again. */
  async startNode(node: KafkaNode, timeoutMs = 120_000): Promise<void> {
    if (this.isRunning(node)) return;
    this.spawn(node);
    await waitFor(
      async () => {
        if (node.process?.hasExited)
          throw new Error(`Kafka broker ${node.nodeId} exited while restarting.\n${this.logTail(node)}`);
        const brokers = await fetchRegisteredBrokers(node.brokerPort).catch(() => undefined);
        return brokers?.length === this.nodes.length ? true : undefined;
      },
      timeoutMs,
      () =>
        `Kafka broker ${node.nodeId} did not rejoin within ${Math.round(timeoutMs / 1000)} s.\n${this.logTail(node)}`,
      250,
    );
  }

  /** Starts every broker a fault left stopped, so that the next repetition has the whole cluster again. */
  async restartStoppedNodes(): Promise<void> {
    for (const node of this.nodes) if (!this.isRunning(node)) await this.startNode(node);
  }

  /** The node id leading partition 0 of `topic`, asked of the running brokers; undefined while it has none. */
  async partitionLeader(topic: string): Promise<number | undefined> {
    for (const node of this.nodes.filter((candidate) => this.isRunning(candidate))) {
      const leader = await fetchPartitionLeader(node.brokerPort, topic).catch(() => undefined);
      if (leader !== undefined) return leader;
    }
    return undefined;
  }

  /** `host:port` of every broker, for clients' bootstrap.servers. */
  get bootstrapServers(): string {
    return this.nodes.map((node) => `127.0.0.1:${node.brokerPort}`).join(',');
  }

  /** Formats every node's log directory with the cluster id (kafka-storage format), in parallel. */
  private async formatStorage(): Promise<void> {
    const results = await Promise.all(
      this.nodes.map((node) =>
        runJavaTool({
          processes: this.processes,
          name: `kafka-storage-format-${node.nodeId}`,
          jarsDir: this.jarsDir,
          log4jConfig: this.log4j.tool,
          mainClass: 'kafka.tools.StorageTool',
          args: ['format', '--config', node.configFile, '--cluster-id', this.clusterId],
          logPath: join(node.dir, 'format.log'),
          timeoutMs: 60_000,
        }),
      ),
    );
    const failed = results.findIndex((result) => result.exitCode !== 0);
    if (failed >= 0) {
      const result = results[failed]!;
      throw new Error(
        `kafka-storage format of node ${failed + 1} ` +
          `${result.timedOut ? 'timed out' : `exited with code ${result.exitCode}`}:\n` +
          `${indent(tail(result.output, 15))}`,
      );
    }
  }

  /**
   * Ready when every broker answers a Metadata request listing all N brokers (a broker registers through the
   * active controller, so this also needs the quorum to have a leader), then once more from the quorum's side:
   * kafka-metadata-quorum describe --status names a leader and N voters.
   */
  private async waitUntilFormed(timeoutMs: number): Promise<void> {
    const expected = this.nodes.map((node) => node.nodeId).sort();
    await waitFor(
      async () => {
        const crashed = this.nodes.find((node) => node.process?.hasExited);
        if (crashed) throw new Error(`Kafka broker ${crashed.nodeId} exited while starting.\n${this.logTail(crashed)}`);
        const views = await Promise.all(
          this.nodes.map((node) => fetchRegisteredBrokers(node.brokerPort).catch(() => undefined)),
        );
        const complete = views.every(
          (brokers) => brokers && JSON.stringify(brokers.map((b) => b.nodeId).sort()) === JSON.stringify(expected),
        );
        return complete ? true : undefined;
      },
      timeoutMs,
      async () => {
        const views = await Promise.all(
          this.nodes.map((node) => fetchRegisteredBrokers(node.brokerPort).catch(() => undefined)),
        );
        const laggard =
          this.nodes[views.findIndex((brokers) => brokers === undefined || brokers.length < this.nodes.length)] ??
          this.nodes[0]!;
        const registered = Math.max(0, ...views.map((brokers) => brokers?.length ?? 0));
        return (
          `Kafka cluster of ${this.nodes.length} broker(s) did not form within ${Math.round(timeoutMs / 1000)} s ` +
          `(${registered} registered); broker ${laggard.nodeId} log tail:\n${this.logTail(laggard)}`
        );
      },
      250,
    );
    const quorum = await this.describeQuorum();
    if (quorum.leaderId < 0 || quorum.voters.length !== this.nodes.length) {
      throw new Error(
        `the Kafka metadata quorum is not complete: leader ${quorum.leaderId}, voters ` +
          `[${quorum.voters.join(', ')}] of ${this.nodes.length}`,
      );
    }
  }

  /** The KRaft quorum as kafka-metadata-quorum describe --status reports it. */
  async describeQuorum(): Promise<{ leaderId: number; voters: number[] }> {
    const result = await runJavaTool({
      processes: this.processes,
      name: 'kafka-metadata-quorum',
      jarsDir: this.jarsDir,
      log4jConfig: this.log4j.tool,
      mainClass: 'org.apache.kafka.tools.MetadataQuorumCommand',
      args: ['--bootstrap-server', this.bootstrapServers, 'describe', '--status'],
      logPath: join(this.workDir, `metadata-quorum-${Date.now()}.log`),
      timeoutMs: 60_000,
    });
    const leader = /^LeaderId:\s+(-?\d+)/m.exec(result.output);
    const voters = /^CurrentVoters:\s+(.*)$/m.exec(result.output);
    if (result.exitCode !== 0 || !leader || !voters) {
      throw new Error(
        `kafka-metadata-quorum describe --status failed (exit ${result.exitCode}):\n${indent(tail(result.output, 10))}`,
      );
    }
    const ids = [...voters[1]!.matchAll(/"id":\s*(\d+)/g)].map((match) => Number(match[1]));
    return { leaderId: Number(leader[1]), voters: ids.sort((a, b) => a - b) };
  }

  /** Runs TopicCommand (create or delete) against the cluster; throws with its output when it fails. */
  async topicCommand(args: readonly string[], logName: string): Promise<void> {
    const result = await runJavaTool({
      processes: this.processes,
      name: 'kafka-topics',
      jarsDir: this.jarsDir,
      log4jConfig: this.log4j.tool,
      mainClass: 'org.apache.kafka.tools.TopicCommand',
      args: ['--bootstrap-server', this.bootstrapServers, ...args],
      logPath: join(this.workDir, logName),
      timeoutMs: 60_000,
    });
    if (result.exitCode !== 0)
      throw new Error(
        `kafka-topics ${args.join(' ')} failed (exit ${result.exitCode}):\n${indent(tail(result.output, 10))}`,
      );
  }

  /** The last lines of a broker's log, for error messages. */
  logTail(node: KafkaNode, lines = 15): string {
    const text = existsSync(node.stdoutFile) ? readFileSync(node.stdoutFile, 'utf8') : '';
    return `--- ${node.stdoutFile}\n${text ? indent(tail(text, lines)) : '  (no output)'}`;
  }

  /**
   * Stops every broker without a controlled shutdown (the data is thrown away) and deletes the log
   * directories; configuration and broker logs stay in the run folder.
   */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.process?.stop(500)));
    this.deleteData();
  }

  private deleteData(): void {
    for (const node of this.nodes) rmSync(node.dataDir, { recursive: true, force: true });
  }
}

/** One node's server.properties: combined roles, a static quorum of all nodes, loopback listeners. */
export function serverProperties(node: KafkaNode, all: readonly KafkaNode[]): string {
  const copies = Math.min(3, all.length);
  return [
    '# Written by rmqbench (local target): a combined broker+controller in KRaft mode.',
    'process.roles=broker,controller',
    `node.id=${node.nodeId}`,
    `controller.quorum.voters=${all.map((other) => `${other.nodeId}@127.0.0.1:${other.controllerPort}`).join(',')}`,
    `listeners=PLAINTEXT://127.0.0.1:${node.brokerPort},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${node.brokerPort}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${node.dataDir}`,
    // Internal topics as replicated as the cluster allows; consumer groups start without the 3 s join delay.
    `offsets.topic.replication.factor=${copies}`,
    `transaction.state.log.replication.factor=${copies}`,
    'transaction.state.log.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    // Benchmark topics are created with the workload's partitions and replication factor, never implicitly.
    'auto.create.topics.enable=false',
    '',
  ].join('\n');
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
