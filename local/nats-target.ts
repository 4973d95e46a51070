import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RawRepetition } from '../core/results/ingest';
import type { ClusterGroup } from '../core/plan/plan';
import { defaultNatsReplicas } from '../core/nats/nats-plan';
import { fixedMessageCount } from '../core/plan/fixed-work';
import { LocalNatsCluster } from './nats-cluster';
import { runNatsLoad } from './nats-load';
import { ensureNatsBinaries, type NatsBinaries } from './nats-binaries';
import { livePids, type ProcessRegistry } from './processes';
import { sampledBrokerRepetition, type BrokerRepetitionOptions } from './broker-repetition';

/** A local NATS JetStream cluster started for a group of scenarios. */
export interface NatsClusterHandle {
  readonly broker: 'nats';
  readonly group: ClusterGroup;
  readonly nats: LocalNatsCluster;
  readonly workDir: string;
  readonly binaries: NatsBinaries;
  readonly processes: ProcessRegistry;
}

/** What the local target passes on to its NATS half. */
export interface NatsTargetOptions {
  readonly processes: ProcessRegistry;
  readonly cacheDir: string;
  readonly startTimeoutMs?: number;
  /** Replaces the nats-server binary (tests simulate a server that never becomes ready). */
  readonly serverCommand?: string;
}

/** LaunchCluster for `broker: nats`: the binaries (built once), then an N-node JetStream cluster. */
export async function launchNats(
  group: ClusterGroup,
  workDir: string,
  options: NatsTargetOptions,
): Promise<NatsClusterHandle> {
  mkdirSync(workDir, { recursive: true });
  const binaries = await ensureNatsBinaries(options.cacheDir);
  const nats = await LocalNatsCluster.start({
    nodes: group.nodes,
    workDir,
    processes: options.processes,
    serverBinary: options.serverCommand ?? binaries.server,
    ...(group.syncInterval === undefined ? {} : { syncInterval: group.syncInterval }),
    ...(options.startTimeoutMs ? { startTimeoutMs: options.startTimeoutMs } : {}),
  });
  return { broker: 'nats', group, nats, workDir, binaries, processes: options.processes };
}

/**
 * Runs the NATS CLI against the cluster to its end (registered, so Ctrl-C stops it too); throws, naming `purpose`,
 * when it fails.
 */
export async function natsCli(
  handle: NatsClusterHandle,
  server: string,
  args: readonly string[],
  purpose = 'smoke test',
): Promise<string> {
  const logPath = join(handle.workDir, `natscli-${Date.now()}-${randomBytes(2).toString('hex')}.log`);
  const cli = handle.processes.start('natscli', handle.binaries.cli, ['--no-context', '--server', server, ...args], {
    logPath,
  });
  const timer = setTimeout(() => void cli.stop(1000), 30_000);
  const status = await cli.exited;
  clearTimeout(timer);
  await cli.stop(0);
  const output = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
  if (status.code !== 0)
    throw new Error(`${purpose}: nats ${args.join(' ')} failed (exit ${status.code}): ${output.trim().slice(-500)}`);
  return output;
}

/**
 * SmokeTest for NATS, the cloud's check (one message published and read back) with the NATS CLI: a replicated
 * stream created through the first node, a message published to it with a JetStream acknowledgement through the
 * last, read back through the middle one, the stream removed.
 */
export async function smokeTestNats(handle: NatsClusterHandle): Promise<{ roundTripMs: number }> {
  const started = Date.now();
  const urls = handle.nats.clientUrls;
  const token = randomBytes(8).toString('hex');
  const stream = `rmqbench-smoke-${token}`;
  const subject = `rmqbench.smoke.${token}`;
  const replicas = String(defaultNatsReplicas(urls.length));
  await natsCli(handle, urls[0]!, [
    'stream',
    'add',
    stream,
    '--subjects',
    subject,
    '--storage',
    'memory',
    '--replicas',
    replicas,
    '--defaults',
  ]);
  try {
    await natsCli(handle, urls.at(-1)!, ['pub', '--jetstream', subject, token]);
    const got = JSON.parse(
      await natsCli(handle, urls[Math.floor(urls.length / 2)]!, ['stream', 'get', stream, '1', '--json']),
    ) as { data?: string };
    const body = Buffer.from(got.data ?? '', 'base64').toString('utf8');
    if (body !== token) throw new Error(`smoke test: read back "${body}" from stream ${stream}, published "${token}"`);
  } finally {
    await natsCli(handle, urls[0]!, ['stream', 'rm', stream, '--force']).catch(() => undefined);
  }
  return { roundTripMs: Date.now() - started };
}

/** One repetition with the NATS load client, returned as raw output for the shared ingest. */
export async function runNatsRepetition(
  options: BrokerRepetitionOptions<NatsClusterHandle>,
  /** Called with the load stream's name once the client created it (local/nats-faults.ts aligns its leader). */
  onStreamReady?: (stream: string) => void,
): Promise<RawRepetition> {
  const { scenario, handle } = options;
  const fixedMessages = fixedMessageCount(scenario.workload);
  return sampledBrokerRepetition({
    runId: options.runId,
    scenario,
    repetition: options.repetition,
    nodes: handle.nats.nodes.map((node) => ({ node: node.name, pids: () => livePids(node.process) })),
    expectations: { confirms: true, ...(fixedMessages === undefined ? {} : { fixedMessages }) },
    load: (onStarted) =>
      runNatsLoad({
        cluster: handle.nats,
        loadBinary: handle.binaries.load,
        workload: scenario.workload,
        connection: scenario.cluster.connection,
        outputDir: options.outputDir,
        processes: options.processes,
        onStarted,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(onStreamReady ? { onStreamReady } : {}),
      }),
    output: (run) => ({ nats: { output: run.output, expectations: run.expectations } }),
  });
}
