import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsServerConfig, type NatsServerNode } from '../core/nats/nats-server-config';
import { ManagedProcess, ProcessRegistry } from './processes';
import { freePorts, waitFor } from './ports';

export interface NatsClusterOptions {
  readonly nodes: number;
  /** A fresh folder for this cluster's node directories and logs. */
  readonly workDir: string;
  readonly processes: ProcessRegistry;
  /** The nats-server binary (local/nats-binaries.ts NATS_SERVER_BINARY). */
  readonly serverBinary: string;
  /** jetstream.sync_interval of every node. @default - nats-server's (2m) */
  readonly syncInterval?: string;
  /** How long the nodes get to start, form the cluster and elect a JetStream meta leader. @default 60000 */
  readonly startTimeoutMs?: number;
}

export interface NatsNode extends NatsServerNode {
  /** 1-based. */
  readonly index: number;
  readonly dir: string;
  /** jetstream.store_dir: streams and Raft logs, deleted at teardown. */
  readonly storeDir: string;
  readonly configFile: string;
  /** The server's log (it logs to stderr). */
  readonly logFile: string;
  process?: ManagedProcess;
}

/** What a node's /jsz says of the JetStream meta group (absent on a single node, which runs standalone). */
export interface NatsMetaCluster {
  readonly name?: string;
  readonly leader?: string;
  readonly cluster_size?: number;
}

/** The cluster's name in every node's configuration. */
export const NATS_CLUSTER_NAME = 'rmqbench';

/**
 * An N-node NATS JetStream cluster on localhost: every node a nats-server with its own free client, route and
 * monitoring ports, its own store directory, and routes to all the others (core/nats/nats-server-config.ts). Ready
 * when every node's `/healthz?js-enabled-only=true` answers ok and, with more than one node, every node's `/jsz`
 * names the same JetStream meta leader of a meta group of N (monitoring endpoints:
 * https://docs.nats.io/running-a-nats-service/nats_admin/monitoring). A single node runs JetStream standalone.
 */
export class LocalNatsCluster {
  private constructor(
    readonly nodes: readonly NatsNode[],
    readonly workDir: string,
    private readonly processes: ProcessRegistry,
    private readonly serverBinary: string,
  ) {}

  static async start(options: NatsClusterOptions): Promise<LocalNatsCluster> {
    const ports = await freePorts(options.nodes * 3);
    mkdirSync(options.workDir, { recursive: true });
    const nodes: NatsNode[] = Array.from({ length: options.nodes }, (_, offset) => {
      const index = offset + 1;
      const dir = join(options.workDir, `nats${index}`);
      return {
        index,
        name: `nats${index}`,
        host: '127.0.0.1',
        clientPort: ports[offset * 3]!,
        clusterPort: ports[offset * 3 + 1]!,
        monitorPort: ports[offset * 3 + 2]!,
        dir,
        storeDir: join(dir, 'jetstream'),
        configFile: join(dir, 'nats-server.conf'),
        logFile: join(dir, 'nats-server.log'),
      };
    });
    for (const node of nodes) {
      mkdirSync(node.dir, { recursive: true });
      writeFileSync(
        node.configFile,
        natsServerConfig({
          node,
          cluster: nodes,
          clusterName: NATS_CLUSTER_NAME,
          storeDir: node.storeDir,
          ...(options.syncInterval === undefined ? {} : { syncInterval: options.syncInterval }),
        }),
      );
    }
    const cluster = new LocalNatsCluster(nodes, options.workDir, options.processes, options.serverBinary);
    // Ctrl-C stops the processes through the registry, without a teardown: the data goes then too.
    options.processes.afterStop(() => cluster.deleteData());
    try {
      for (const node of nodes) cluster.spawn(node);
      await cluster.waitUntilReady(options.startTimeoutMs ?? 60_000);
    } catch (error) {
      // A cluster that never formed is never handed to a teardown: stop it here, data deleted too.
      await cluster.stop().catch(() => undefined);
      throw error;
    }
    return cluster;
  }

  private spawn(node: NatsNode): void {
    node.process = this.processes.start(node.name, this.serverBinary, ['-c', node.configFile], {
      logPath: node.logFile,
    });
  }

  /** Whether the node's nats-server process runs (a fault has not stopped it). */
  isRunning(node: NatsNode): boolean {
    return node.process !== undefined && !node.process.hasExited;
  }

  /** A fault: SIGKILL to the node's nats-server; its store stays, as on a machine that lost power. */
  async killNode(node: NatsNode): Promise<void> {
    await node.process?.stop(0, 'SIGKILL');
  }

  /** A fault: a graceful stop (SIGTERM: nats-server shuts down cleanly), SIGKILL after 10 s. */
  async stopNode(node: NatsNode): Promise<void> {
    await node.process?.stop(10_000);
  }

  /**
   * Starts a stopped or killed node again with its configuration and store, and waits until its `/healthz` is ok:
   * JetStream enabled and its streams and consumers current with their leaders
   * (https://docs.nats.io/running-a-nats-service/nats_admin/monitoring#health).
   */
  async startNode(node: NatsNode, timeoutMs = 60_000): Promise<void> {
    if (this.isRunning(node)) return;
    this.spawn(node);
    await waitFor(
      async () => {
        if (node.process?.hasExited)
          throw new Error(`nats-server ${node.name} exited while restarting.\n${this.logTail(node)}`);
        const health = await monitor<{ status?: string }>(node, '/healthz');
        return health?.status === 'ok' ? true : undefined;
      },
      timeoutMs,
      () =>
        `NATS node ${node.name} did not report healthy within ${Math.round(timeoutMs / 1000)} s ` +
        `of its restart.\n${this.logTail(node)}`,
      200,
    );
  }

  /** Starts every node a fault left stopped, so that the next repetition has the whole cluster again. */
  async restartStoppedNodes(): Promise<void> {
    for (const node of this.nodes) if (!this.isRunning(node)) await this.startNode(node);
  }

  /**
   * The server_name of the stream's leader as the running nodes report it (`/jsz?streams=true`: each node lists the
   * streams it holds a replica of, with the Raft group's leader), or undefined while it has none.
   */
  async streamLeader(stream: string): Promise<string | undefined> {
    for (const node of this.nodes.filter((candidate) => this.isRunning(candidate))) {
      const jsz = await monitor<JszStreams>(node, '/jsz?streams=true');
      for (const account of jsz?.account_details ?? []) {
        const detail = (account.stream_detail ?? []).find((candidate) => candidate.name === stream);
        if (detail?.cluster?.leader) return detail.cluster.leader;
      }
    }
    return undefined;
  }

  /** nats:// URLs of every node's client port. */
  get clientUrls(): string[] {
    return this.nodes.map((node) => `nats://${node.host}:${node.clientPort}`);
  }

  /** Whether the node answers `/healthz?js-enabled-only=true` with status ok. */
  async jetStreamEnabled(node: NatsNode): Promise<boolean> {
    const health = await monitor<{ status?: string }>(node, '/healthz?js-enabled-only=true');
    return health?.status === 'ok';
  }

  /** The node's view of the JetStream meta group (`/jsz`), or undefined when it does not answer. */
  async metaCluster(node: NatsNode): Promise<NatsMetaCluster | undefined> {
    const jsz = await monitor<{ meta_cluster?: NatsMetaCluster }>(node, '/jsz');
    return jsz && (jsz.meta_cluster ?? {});
  }

  /** The meta leader every node names, once all of them answer and agree; undefined until then. */
  async metaLeader(): Promise<string | undefined> {
    const views = await Promise.all(this.nodes.map((node) => this.metaCluster(node)));
    const leaders = new Set(views.map((view) => view?.leader));
    const [leader] = [...leaders];
    const complete = views.every((view) => view?.cluster_size === this.nodes.length);
    return leaders.size === 1 && leader && complete ? leader : undefined;
  }

  private async waitUntilReady(timeoutMs: number): Promise<void> {
    await waitFor(
      async () => {
        const crashed = this.nodes.find((node) => node.process?.hasExited);
        if (crashed) throw new Error(`nats-server ${crashed.name} exited while starting.\n${this.logTail(crashed)}`);
        const enabled = await Promise.all(this.nodes.map((node) => this.jetStreamEnabled(node)));
        if (!enabled.every(Boolean)) return undefined;
        if (this.nodes.length === 1) return true;
        return (await this.metaLeader()) === undefined ? undefined : true;
      },
      timeoutMs,
      async () => {
        const enabled = await Promise.all(this.nodes.map((node) => this.jetStreamEnabled(node)));
        const laggard = this.nodes[enabled.indexOf(false)] ?? this.nodes[0]!;
        const views = await Promise.all(this.nodes.map((node) => this.metaCluster(node)));
        const leaders = views.map((view, index) => `${this.nodes[index]!.name}: ${view?.leader || 'none'}`);
        return (
          `NATS cluster of ${this.nodes.length} node(s) did not become ready ` +
          `within ${Math.round(timeoutMs / 1000)} s ` +
          `(JetStream enabled on ${enabled.filter(Boolean).length}; meta leader per node: ${leaders.join(', ')}); ` +
          `${laggard.name} log tail:\n${this.logTail(laggard)}`
        );
      },
      100,
    );
  }

  /** The last lines of a node's log, for error messages. */
  logTail(node: NatsNode, lines = 15): string {
    const text = existsSync(node.logFile) ? readFileSync(node.logFile, 'utf8') : '';
    const tail = text.trimEnd().split('\n').slice(-lines);
    return `--- ${node.logFile}\n${text ? tail.map((line) => `  ${line}`).join('\n') : '  (no output)'}`;
  }

  /**
   * Stops every node (SIGTERM, then SIGKILL after 2 s) and deletes the store directories; configuration and logs
   * stay in the run folder.
   */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.process?.stop(2000)));
    this.deleteData();
  }

  private deleteData(): void {
    for (const node of this.nodes) rmSync(node.storeDir, { recursive: true, force: true });
  }
}

/** What `/jsz?streams=true` says of the streams a node holds (the fields read here). */
interface JszStreams {
  readonly account_details?: readonly {
    readonly stream_detail?: readonly { readonly name?: string; readonly cluster?: { readonly leader?: string } }[];
  }[];
}

/** GET a monitoring endpoint as JSON; undefined when the node does not answer (yet) or answers garbage. */
async function monitor<T>(node: NatsNode, path: string): Promise<T | undefined> {
  try {
    const response = await fetch(`http://${node.host}:${node.monitorPort}${path}`, {
      signal: AbortSignal.timeout(2000),
    });
    return (await response.json()) as T;
  } catch {
    return undefined;
  }
}
