import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BENCHMARK_QUEUE_PATTERN, BrokerPolicy, generateBrokerConfig } from '../core/broker/broker-config';
import type { QueueTopology } from '../core/plan/plan-schema';
import type { SampledNode } from './host-metrics-sampler';
import { nodeBootEnvironment, NodeBootEvalOptions } from './node-boot-eval';
import { debianPluginsDir, writeNodePluginsDir } from './plugins-dir';
import { BROKER_METRICS_PATHS, BrokerReading, brokerReading } from './management-metrics';
import { livePids, ManagedProcess, ProcessRegistry } from './processes';
import { freePorts, sleep, waitFor } from './ports';

export const RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server';
const RABBITMQ_LIB = '/usr/lib/rabbitmq/lib';

/** The version of Debian's rabbitmq-server, read from its install folder; undefined when not installed. */
export function installedRabbitmqVersion(libDir = RABBITMQ_LIB): string | undefined {
  if (!existsSync(libDir)) return undefined;
  const folder = readdirSync(libDir).find((name) => /^rabbitmq_server-\d/.test(name));
  return folder?.replace('rabbitmq_server-', '');
}

export interface LocalClusterOptions {
  readonly nodes: number;
  readonly topology: QueueTopology;
  /** A fresh folder for this cluster's node directories and logs. */
  readonly workDir: string;
  readonly processes: ProcessRegistry;
  /** How long the nodes get to boot and form the cluster. @default 120000 */
  readonly startTimeoutMs?: number;
  /** @default '/usr/lib/rabbitmq/bin/rabbitmq-server' */
  readonly serverCommand?: string;
  /**
   * Extra Erlang VM arguments for every node (RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS,
   * https://www.rabbitmq.com/docs/configure#customise-environment), e.g. to compare scheduler settings in
   * `npm run bench:cluster-start`. @default - none
   */
  readonly erlangArgs?: string;
  /**
   * Load the modules of RabbitMQ and its enabled plugins in one batch before each node boots
   * (local/node-boot-eval.ts): the same code, loaded sooner and faster. @default true
   */
  readonly preloadModules?: boolean;
  /**
   * Give each node a plugins folder of only the applications it runs (local/plugins-dir.ts), so that it reads fewer
   * configuration schemas while it boots. @default true
   */
  readonly trimPluginsDir?: boolean;
}

export interface LocalNode {
  readonly name: string;
  readonly amqpPort: number;
  readonly managementPort: number;
  readonly distPort: number;
  readonly dir: string;
  readonly logFile: string;
  readonly stdoutFile: string;
  process?: ManagedProcess;
}

/**
 * Local only: the first node is the cluster's seed and the others join it once it has booted. Left to classic-config
 * peer discovery, the nodes boot together and whichever first takes the discovery lock finds no peer running yet,
 * retries (discovery_retry_limit times, discovery_retry_interval apart) and only then boots alone as the seed, while
 * the others wait on the lock (measured: 1.0 s of an 8.5 s cluster start at 10 retries 100 ms apart, 5.0 s of 16.5 s
 * at the defaults, 10 retries 500 ms apart). So:
 * - the seed lists no peer: RabbitMQ boots it at once as a blank standalone node ("Discovered no peer nodes to cluster
 *   with"), and its discovery lock covers no other node, so no joining node's lock can hold it up;
 * - the others list every node and start their VMs at the same time, but wait before RabbitMQ boots until the seed's
 *   AMQP listener answers (the seed gate, local/node-boot-eval.ts): a node that joined a seed still booting failed
 *   with schema_integrity_check_failed, and one that held the lock while the seed waited for it booted a second
 *   cluster after its retries (both seen here). They still retry 100 ms apart, 100 times, should the seed be slow.
 * A node started again after a fault has its data and skips peer discovery, so neither applies to restarts.
 * Keys and defaults: https://www.rabbitmq.com/docs/3.13/cluster-formation ("discovery_retry_limit",
 * "discovery_retry_interval"), present in 3.10.8's schema (plugins/rabbit-3.10.8/priv/schema/rabbit.schema).
 */
function localFormation(seed: boolean): string {
  return seed
    ? '\n'
    : '\n# rmqbench local target: the seed node (the first) has booted when this node looks for it\n' +
        'cluster_formation.discovery_retry_interval = 100\ncluster_formation.discovery_retry_limit = 100\n';
}

/**
 * Local only: the management API's queue depths and connection byte counters are refreshed every statistics
 * interval (5000 ms by default), so per-second metrics (local/host-metrics-sampler.ts) need 1000 ms. Key and default:
 * https://www.rabbitmq.com/docs/management#statistics-interval and the installed schema
 * (plugins/rabbit-3.10.8/priv/schema/rabbit.schema: "{collect_statistics_interval, 5000}").
 */
const LOCAL_STATISTICS =
  '# rmqbench local target: statistics every second, for the per-second broker ' +
  'metrics\ncollect_statistics_interval = 1000\n';

const CREDENTIALS = 'guest:guest'; // the default user, accepted only on loopback
const AUTH_HEADER = `Basic ${Buffer.from(CREDENTIALS).toString('base64')}`;

/**
 * An N-node RabbitMQ cluster on localhost: one rabbitmq-server process per node with its own
 * directories and free ports, a private epmd, a generated Erlang cookie, and the broker
 * configuration from core/broker/broker-config.ts (the same generator the cloud templates use).
 */
export class LocalRabbitCluster {
  private constructor(
    readonly nodes: readonly LocalNode[],
    readonly epmdPort: number,
    readonly rabbitmqVersion: string,
    readonly queueArguments: Readonly<Record<string, string | number>>,
    private readonly policies: readonly BrokerPolicy[],
    private readonly epmd: ManagedProcess,
    private readonly processes: ProcessRegistry,
    private readonly serverCommand: string,
    private readonly erlangArgs: string | undefined,
    /** The applications whose modules each node loads in one batch before it boots; none when not preloading. */
    private readonly preloadApplications: readonly string[],
    /** RABBITMQ_PLUGINS_DIR for every node; undefined for the installed default. */
    private readonly pluginsDir: string | undefined,
  ) {}

  static async start(options: LocalClusterOptions): Promise<LocalRabbitCluster> {
    const version = installedRabbitmqVersion();
    const serverCommand = options.serverCommand ?? RABBITMQ_SERVER;
    if (!version || !existsSync(serverCommand)) {
      throw new Error(
        `rabbitmq-server is not installed (${serverCommand} missing); install it with: sudo apt-get install -y ` +
          `rabbitmq-server`,
      );
    }
    const ports = await freePorts(1 + options.nodes * 3);
    const epmdPort = ports[0]!;
    const nodes: LocalNode[] = Array.from({ length: options.nodes }, (_, index) => {
      const dir = join(options.workDir, `node${index + 1}`);
      const name = `rmqbench${index + 1}@localhost`;
      return {
        name,
        amqpPort: ports[1 + index * 3]!,
        managementPort: ports[2 + index * 3]!,
        distPort: ports[3 + index * 3]!,
        dir,
        logFile: join(dir, 'log', `${name}.log`),
        stdoutFile: join(dir, 'stdout.log'),
      };
    });
    const cookie = randomBytes(24).toString('hex');
    const configs = nodes.map((node) =>
      generateBrokerConfig({
        topology: options.topology,
        rabbitmqVersion: version,
        peerDiscovery: { backend: 'classic', nodes: node === nodes[0] ? [] : nodes.map((n) => n.name) },
        nodeCount: options.nodes,
        amqpPort: node.amqpPort,
        managementPort: node.managementPort,
        bindAddress: '127.0.0.1',
      }),
    );
    nodes.forEach((node, index) =>
      writeNodeFiles(
        node,
        `${configs[index]!.rabbitmqConf}${localFormation(index === 0)}${LOCAL_STATISTICS}`,
        configs[index]!.enabledPluginsFile,
        cookie,
      ),
    );

    const epmd = options.processes.start('epmd', 'epmd', ['-port', String(epmdPort), '-address', '127.0.0.1'], {
      logPath: join(options.workDir, 'epmd.log'),
    });
    // rabbit and the enabled plugins: the applications each node preloads and finds in its plugins folder.
    const applications = ['rabbit', ...configs[0]!.enabledPlugins];
    const cluster = new LocalRabbitCluster(
      nodes,
      epmdPort,
      version,
      configs[0]!.queueArguments,
      configs[0]!.policies,
      epmd,
      options.processes,
      serverCommand,
      options.erlangArgs,
      options.preloadModules === false ? [] : applications,
      options.trimPluginsDir === false
        ? undefined
        : writeNodePluginsDir(join(options.workDir, 'plugins'), debianPluginsDir(RABBITMQ_LIB, version), applications),
    );
    // Ctrl-C stops the processes through the registry, without a teardown: the data goes then too.
    options.processes.afterStop(() => cluster.deleteData());
    for (const node of nodes) cluster.startNodeProcess(node, node === nodes[0] ? 'seed' : 'joiner');
    try {
      await cluster.waitUntilFormed(options.startTimeoutMs ?? 120_000);
      await cluster.applyPolicies();
    } catch (error) {
      // A cluster that never formed is never handed to a teardown: stop it here, data deleted too.
      await cluster.stop().catch(() => undefined);
      throw error;
    }
    return cluster;
  }

  /**
   * Starts a node's rabbitmq-server. While the cluster forms, the seed preloads first, then the joining nodes (which
   * then wait for the seed to have booted); a node started again later has no role and waits for nothing.
   */
  private startNodeProcess(node: LocalNode, formationRole?: 'seed' | 'joiner'): void {
    node.process = this.processes.start(node.name, this.serverCommand, [], {
      env: this.nodeEnv(node, formationRole),
      logPath: node.stdoutFile,
    });
  }

  /** The first node whose broker process is running: where management calls go while another node is down. */
  liveNode(): LocalNode {
    const live = this.nodes.find((node) => node.process !== undefined && !node.process.hasExited);
    if (!live) throw new Error(`no node of this cluster is running (${this.nodes.map((n) => n.name).join(', ')})`);
    return live;
  }

  /** Fault `kill`: SIGKILL to the node's broker (beam.smp, its process group and children), no shutdown at all. */
  async killNode(node: LocalNode): Promise<void> {
    await node.process?.stop(0, 'SIGKILL');
  }

  /**
   * Fault `stop`: SIGTERM, which the Erlang VM (since OTP 19.3) turns into init:stop(), an orderly shutdown of every
   * application, RabbitMQ's included (https://github.com/erlang/otp/pull/1315: "SIGTERM (from 19.3) will halt Erlang
   * via
   * init:stop/0"; the default handler lib/kernel/src/erl_signal_handler.erl; RabbitMQ leaves SIGTERM to it:
   * deps/rabbitmq_prelaunch/src/rabbit_prelaunch_sighandler.erl,
   * https://www.erlang.org/doc/apps/kernel/kernel_app.html#os-signal-event-handler).
   * SIGKILL only if it has not exited after 60 s.
   */
  async stopNode(node: LocalNode): Promise<void> {
    await node.process?.stop(60_000);
  }

  /**
   * Starts a stopped or killed node again with its own data and waits until the whole cluster runs and answers again.
   */
  async startNode(node: LocalNode, timeoutMs = 120_000): Promise<void> {
    if (node.process && !node.process.hasExited) throw new Error(`node ${node.name} is still running`);
    this.startNodeProcess(node);
    await this.waitUntilFormed(timeoutMs);
  }

  /**
   * Starts every node that is not running (after a fault that was not healed), so that the next repetition has the
   * whole cluster.
   */
  async restartStoppedNodes(): Promise<string[]> {
    const stopped = this.nodes.filter((node) => node.process?.hasExited);
    for (const node of stopped) this.startNodeProcess(node);
    if (stopped.length > 0) await this.waitUntilFormed(120_000);
    return stopped.map((node) => node.name);
  }

  private nodeEnv(node: LocalNode, formationRole: 'seed' | 'joiner' | undefined): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      LANG: 'C.UTF-8',
      HOME: node.dir,
      ERL_EPMD_PORT: String(this.epmdPort),
      ERL_EPMD_ADDRESS: '127.0.0.1',
      ERL_INETRC: join(node.dir, INETRC_FILE),
      RABBITMQ_CONF_ENV_FILE: join(node.dir, 'rabbitmq-env.conf'),
      RABBITMQ_NODENAME: node.name,
      RABBITMQ_DIST_PORT: String(node.distPort),
      RABBITMQ_MNESIA_BASE: join(node.dir, 'mnesia'),
      RABBITMQ_LOG_BASE: join(node.dir, 'log'),
      RABBITMQ_CONFIG_FILE: join(node.dir, 'rabbitmq.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(node.dir, 'advanced.config'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(node.dir, 'enabled_plugins'),
      ...(this.pluginsDir ? { RABBITMQ_PLUGINS_DIR: this.pluginsDir } : {}),
      RABBITMQ_PID_FILE: join(node.dir, 'rabbitmq.pid'),
      // Without it, rabbitmq-server runs the VM in the background of a shell that waits for it, so
      // beam.smp is a grandchild of rmqbench: when the shell is killed first, beam.smp becomes an
      // orphan that only PID 1 reaps. With it, the script execs the VM (still with -noinput), and
      // beam.smp is rmqbench's own child. The script's test: if [ "$RABBITMQ_ALLOW_INPUT" -o
      // "$RUNNING_UNDER_SYSTEMD" -o "$detached" ], in /usr/lib/rabbitmq/bin/rabbitmq-server (Debian
      // 3.10.8) as upstream: https://github.com/rabbitmq/rabbitmq-server/blob/main/deps/rabbit/scripts/rabbitmq-server
      detached: 'true',
      ...(this.erlangArgs ? { RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: this.erlangArgs } : {}),
      ...nodeBootEnvironment({
        preloadApplications: this.preloadApplications,
        ...(formationRole === 'joiner' ? { waitForPort: this.nodes[0]!.amqpPort } : {}),
        ...this.preloadTurn(formationRole),
      }),
    };
  }

  /**
   * Preloading takes turns while the cluster forms: three VMs loading a thousand modules each at once on two cores
   * leave the seed, which everything waits for, a third of the machine. So the seed preloads alone and announces it in
   * a file, and the joining nodes preload while it boots.
   */
  private preloadTurn(formationRole: 'seed' | 'joiner' | undefined): NodeBootEvalOptions {
    if (this.preloadApplications.length === 0 || formationRole === undefined) return {};
    const announced = join(this.nodes[0]!.dir, SEED_PRELOADED_FILE);
    return formationRole === 'seed' ? { announcePreloadFile: announced } : { waitForFile: announced };
  }

  amqpUri(node: LocalNode): string {
    return `amqp://${CREDENTIALS}@127.0.0.1:${node.amqpPort}`;
  }

  managementUrl(node: LocalNode = this.nodes[0]!): string {
    return `http://127.0.0.1:${node.managementPort}`;
  }

  /** One poll of the broker's per-node numbers for the metrics sampler (the first running node answers for all). */
  async brokerReading(tSeconds: number): Promise<BrokerReading> {
    const [nodes, alarms, connections, queues] = await Promise.all([
      this.api('GET', BROKER_METRICS_PATHS.nodes),
      // 503 is this health check's answer while an alarm is in effect, with the alarms in its body.
      this.api('GET', BROKER_METRICS_PATHS.alarms, undefined, undefined, [503]),
      this.api('GET', BROKER_METRICS_PATHS.connections),
      this.api('GET', BROKER_METRICS_PATHS.queues),
    ]);
    return brokerReading(tSeconds, { nodes, alarms, connections, queues });
  }

  /** The sampled processes of each node: its beam.smp while it runs (a restarted node has a new pid). */
  sampledNodes(): SampledNode[] {
    return this.nodes.map((node) => ({ node: node.name, pids: () => livePids(node.process) }));
  }

  nodeByName(name: string): LocalNode {
    const node = this.nodes.find((candidate) => candidate.name === name);
    if (!node)
      throw new Error(`node ${name} is not part of this cluster (${this.nodes.map((n) => n.name).join(', ')})`);
    return node;
  }

  private async waitUntilFormed(timeoutMs: number): Promise<void> {
    const expected = this.nodes.map((node) => node.name).sort();
    await waitFor(
      async () => {
        const crashed = this.nodes.find((node) => node.process?.hasExited);
        if (crashed) throw new Error(`RabbitMQ node ${crashed.name} exited while starting.\n${this.logTail(crashed)}`);
        const running = await this.api<{ name: string; running: boolean }[]>('GET', '/api/nodes').catch(
          () => undefined,
        );
        const names = running
          ?.filter((node) => node.running)
          .map((node) => node.name)
          .sort();
        if (!names || JSON.stringify(names) !== JSON.stringify(expected)) return undefined;
        // A node counts as running before its own management listener is up; wait for every node's API.
        const answering = await Promise.all(
          this.nodes.map((node) =>
            this.api('GET', '/api/overview', undefined, node).then(
              () => true,
              () => false,
            ),
          ),
        );
        return answering.every(Boolean) ? true : undefined;
      },
      timeoutMs,
      async () => {
        const ready = await Promise.all(
          this.nodes.map((node) =>
            this.api('GET', '/api/overview', undefined, node).then(
              () => true,
              () => false,
            ),
          ),
        );
        const laggard = this.nodes[ready.indexOf(false)] ?? this.nodes[0]!;
        return (
          `RabbitMQ cluster of ${this.nodes.length} node(s) did not form within ${Math.round(timeoutMs / 1000)} ` +
          `s (${ready.filter(Boolean).length} answering); node ${laggard.name} log ` +
          `tail:\n${this.logTail(laggard)}`
        );
      },
      // Each poll is one local HTTP request; 250 ms instead of 500 ms saves 125 ms on average.
      250,
    );
  }

  /** The last lines of a node's log and of its console output, for error messages. */
  logTail(node: LocalNode, lines = 15): string {
    const tail = (file: string) =>
      existsSync(file)
        ? readFileSync(file, 'utf8')
            .trimEnd()
            .split('\n')
            .slice(-lines)
            .map((line) => `  ${line}`)
            .join('\n')
        : '  (no file)';
    return `--- ${node.logFile}\n${tail(node.logFile)}\n--- ${node.stdoutFile}\n${tail(node.stdoutFile)}`;
  }

  /** The first node, or while a fault has it down, the first node that runs. */
  private defaultApiNode(): LocalNode {
    const first = this.nodes[0]!;
    return first.process?.hasExited ? (this.nodes.find((node) => !node.process?.hasExited) ?? first) : first;
  }

  /** Calls the management HTTP API of a node (the first running one by default). */
  async api<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    node: LocalNode = this.defaultApiNode(),
    alsoAccepted: readonly number[] = [],
  ): Promise<T> {
    const response = await fetch(`${this.managementUrl(node)}${path}`, {
      method,
      headers: { authorization: AUTH_HEADER, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok && !alsoAccepted.includes(response.status))
      throw new Error(
        `${method} ${path} on ${node.name} answered ${response.status}: ${(await response.text()).slice(0, 200)}`,
      );
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private async applyPolicies(): Promise<void> {
    for (const policy of this.policies) {
      await this.api('PUT', `/api/policies/%2F/${encodeURIComponent(policy.name)}`, {
        pattern: policy.pattern,
        'apply-to': policy.applyTo,
        priority: policy.priority,
        definition: policy.definition,
      });
    }
  }

  /** Policies currently set on the default virtual host. */
  async listPolicies(): Promise<{ name: string; pattern: string; definition: Record<string, unknown> }[]> {
    return this.api('GET', '/api/policies/%2F');
  }

  /**
   * Declares queues through `node` (so it leads them), with the topology's arguments plus `extraArguments`, and returns
   * the node that leads each one.
   */
  async declareQueues(
    names: readonly string[],
    durable: boolean,
    node: LocalNode,
    extraArguments: Readonly<Record<string, string | number>> = {},
  ): Promise<Map<string, string>> {
    const leaders = new Map<string, string>();
    for (const name of names) {
      await this.api(
        'PUT',
        `/api/queues/%2F/${encodeURIComponent(name)}`,
        { durable, auto_delete: false, arguments: { ...this.queueArguments, ...extraArguments } },
        node,
      );
    }
    for (const name of names) {
      const leader = await waitFor(
        async () =>
          (await this.api<{ node?: string; leader?: string }>('GET', `/api/queues/%2F/${encodeURIComponent(name)}`))
            .node,
        15_000,
        () => `queue ${name} has no leader after 15 s`,
        200,
      );
      leaders.set(name, leader);
    }
    return leaders;
  }

  /**
   * The node a queue lives on (a quorum queue's leader, a mirrored queue's master), asked of a running node; waits
   * up to `timeoutMs` while it has none (an election after an earlier fault).
   */
  async queueNode(name: string, timeoutMs = 15_000): Promise<string> {
    return waitFor(
      async () =>
        (
          await this.api<{ node?: string }>(
            'GET',
            `/api/queues/%2F/${encodeURIComponent(name)}`,
            undefined,
            this.liveNode(),
          )
        ).node || undefined,
      timeoutMs,
      () => `queue ${name} has had no leader for ${Math.round(timeoutMs / 1000)} s`,
      200,
    );
  }

  /**
   * Deletes every benchmark queue, so that each repetition starts from empty queues, after closing the client
   * connections a finished load generator left (closeLeftoverConnections).
   */
  async deleteBenchmarkQueues(): Promise<void> {
    await this.closeLeftoverConnections();
    const queues = await this.api<{ name: string }[]>('GET', '/api/queues/%2F?columns=name');
    const benchmarkQueue = new RegExp(BENCHMARK_QUEUE_PATTERN);
    for (const queue of queues.filter((q) => benchmarkQueue.test(q.name))) {
      await this.api('DELETE', `/api/queues/%2F/${encodeURIComponent(queue.name)}`).catch(() => undefined);
    }
  }

  /** Connections closeLeftoverConnections closed and the management API still listed at its last call. */
  private readonly closedConnections = new Set<string>();

  /**
   * Closes every client connection still open on the cluster; returns how many it closed. Called between
   * repetitions, when every client that should be connected has stopped: what is left is a connection a proxy kept
   * open after its client exited. HAProxy does so with a publisher's: it goes on forwarding what it had buffered for
   * as long as the broker's flow control takes to read it (measured: 11 s, and one for the rest of a quickstart run).
   * Such a connection publishes into the next repetition's queue, and, while its queue is deleted, keeps appending to
   * the quorum queue's log: the deletion then waited RabbitMQ's whole 5 s DELETE_TIMEOUT (rabbit_quorum_queue.erl; Ra
   * 2.2.0's terminating leader waits for an acknowledgement its followers, stopping, no longer send:
   * ra_server_proc.erl terminating_leader/3).
   *
   * The broker acts on a close at once; the management API's listing follows later: a connection closed here left it
   * in 140-180 ms, but it still listed, for up to 2.5 s, those a just-finished PerfTest had closed itself, which it
   * cannot tell apart. So this waits up to `settleMs` for the listing to drop them and then goes on either way, and
   * does not close again a name it already closed (the next repetition's call would otherwise wait for them again).
   */
  async closeLeftoverConnections(settleMs = 300): Promise<number> {
    const listed = async () =>
      (await this.api<{ name: string }[]>('GET', '/api/connections?columns=name')).map((c) => c.name);
    const names = await listed();
    // A name the listing has dropped may come back as a new connection from the same port.
    for (const name of this.closedConnections) if (!names.includes(name)) this.closedConnections.delete(name);
    const leftover = names.filter((name) => !this.closedConnections.has(name));
    for (const name of leftover) {
      this.closedConnections.add(name);
      // 404: it closed on its own since the listing.
      await this.api('DELETE', `/api/connections/${encodeURIComponent(name)}`, undefined, undefined, [404]);
    }
    const deadline = Date.now() + settleMs;
    while (leftover.length > 0 && Date.now() < deadline && (await listed()).some((name) => leftover.includes(name))) {
      await sleep(100);
    }
    return leftover.length;
  }

  /**
   * Stops every node without a graceful shutdown (SIGKILL: the data is deleted next, and a SIGTERM's orderly shutdown
   * took longer than the 500 ms grace it once had) and deletes what only the broker needed: its data (mnesia: queues,
   * message stores, 400-800 MB per quickstart run) and the Erlang cookie. The node logs, console output and
   * configuration stay in the run folder. The cookie goes at once; the data in the background (0.5 s after a
   * quickstart run, which then overlaps the store's last writes and the reaping of the nodes' processes), and the run
   * waits for it before it ends (`ProcessRegistry.stopAll`, through the cleanup `start` registered).
   */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.process?.stop(0, 'SIGKILL')));
    await sleep(50);
    await this.epmd.stop(1000);
    this.deleteData().catch(() => undefined); // a failure is reported by stopAll, which waits for the same deletion
  }

  /** Deletes the nodes' cookie and data, once: every call returns the same deletion. */
  private deleteData(): Promise<void> {
    for (const node of this.nodes) rmSync(join(node.dir, '.erlang.cookie'), { force: true });
    this.dataDeletion ??= Promise.all(
      this.nodes.map((node) => rm(join(node.dir, 'mnesia'), { recursive: true, force: true })),
    ).then(() => undefined);
    return this.dataDeletion;
  }

  private dataDeletion: Promise<void> | undefined;
}

/** The file, in the seed node's folder, that says its preload is done (LocalRabbitCluster.preloadTurn). */
const SEED_PRELOADED_FILE = 'preloaded';

/** The node's Erlang inet configuration (ERL_INETRC), in its folder. */
const INETRC_FILE = 'erl_inetrc';

/**
 * "localhost" from the file, other names as before. A VM resolves its own host name (the node names are
 * name@localhost) by native lookup by default, and a native lookup starts the port program inet_gethost, which forks a
 * worker of its own: when the node stops, the two outlive their parent as zombies that only PID 1 reaps (here after
 * about 2 s, which stopAll waited for). With "localhost" in the file, no native lookup and no inet_gethost. ERL_INETRC,
 * `{host, IP, Aliases}` and `{lookup, [file, native]}` ("native lookup (system calls) is always the default resolver
 * method"): https://www.erlang.org/doc/apps/erts/inet_cfg
 */
const LOCALHOST_INETRC = '{host, {127,0,0,1}, ["localhost"]}.\n{lookup, [file, native]}.\n';

function writeNodeFiles(node: LocalNode, rabbitmqConf: string, enabledPluginsFile: string, cookie: string): void {
  mkdirSync(join(node.dir, 'log'), { recursive: true });
  mkdirSync(join(node.dir, 'mnesia'), { recursive: true });
  writeFileSync(join(node.dir, 'rabbitmq-env.conf'), '');
  writeFileSync(join(node.dir, 'rabbitmq.conf'), rabbitmqConf);
  writeFileSync(join(node.dir, 'enabled_plugins'), enabledPluginsFile);
  writeFileSync(join(node.dir, INETRC_FILE), LOCALHOST_INETRC);
  const cookiePath = join(node.dir, '.erlang.cookie');
  writeFileSync(cookiePath, cookie, { mode: 0o400 });
  chmodSync(cookiePath, 0o400);
}
