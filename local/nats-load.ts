import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsLoadArgs, natsLoadExpectations, natsRunSettings, NATS_DRAIN_SECONDS } from '../core/nats/nats-load-args';
import {
  NATS_LOAD_LOG_FILE,
  NATS_LOAD_OUTPUT_FILE,
  natsOutputWithCrash,
  parseNatsProgressLine,
  type NatsLoadExpectations,
} from '../core/nats/nats-load-output';
import type { Workload } from '../core/plan/plan-schema';
import type { LocalNatsCluster } from './nats-cluster';
import type { ManagedProcess, ProcessRegistry } from './processes';
import { jsonLineType } from './process-verifier';

export interface NatsLoadRun {
  /** The client's JSON lines, with any panic of its on stderr after them. */
  readonly output: string;
  readonly expectations: NatsLoadExpectations;
  /** The client's command line (no credentials: the local cluster has none). */
  readonly args: readonly string[];
  /** Set when the client overran its time and was stopped. */
  readonly error?: string;
}

export interface NatsLoadOptions {
  readonly cluster: LocalNatsCluster;
  /** The load client binary (local/nats-binaries.ts). */
  readonly loadBinary: string;
  readonly workload: Workload;
  /** The plan cluster's connection: `direct` connects every client to the first node, `lb` to any of them. */
  readonly connection: string;
  readonly outputDir: string;
  readonly processes: ProcessRegistry;
  /** Seconds the client gets beyond durationSeconds and its drain. @default 60 */
  readonly graceSeconds?: number;
  /** Live progress from the client's interval lines (for the CLI's progress line). */
  readonly onProgress?: (progress: { time: number; sent: number; received: number }) => void;
  /** Called with the stream's name once the client created it and its consumers (its "start" line). */
  readonly onStreamReady?: (stream: string) => void;
  /** Called with the client's process once spawned: the load generator the metrics sampler reads. */
  readonly onStarted?: (process: ManagedProcess) => void;
}

/**
 * One NATS repetition on a local cluster: the load client (local/nats-load/main.go) creates a fresh stream with the
 * workload's settings and one durable consumer, runs its consumers and producers, and deletes the stream; its JSON
 * lines go to `nats-load.jsonl` in the output folder, its stderr to `nats-load.log`. A client that overruns
 * `durationSeconds + drain + graceSeconds` is stopped: its output is then cut short and the repetition fails.
 */
export async function runNatsLoad(options: NatsLoadOptions): Promise<NatsLoadRun> {
  const { cluster, workload } = options;
  mkdirSync(options.outputDir, { recursive: true });
  const settings = natsRunSettings(workload, cluster.nodes.length);
  const suffix = randomBytes(3).toString('hex');
  // Stream names may not hold '.', '*', '>' or spaces; workload names are lower-case letters, digits and dashes.
  const stream = `rmqbench-${workload.name}-${suffix}`;
  const args = natsLoadArgs({
    servers: options.connection === 'direct' ? cluster.clientUrls.slice(0, 1) : cluster.clientUrls,
    stream,
    subject: `rmqbench.${workload.name}.${suffix}`,
    workload,
    settings,
  });
  const outputFile = join(options.outputDir, NATS_LOAD_OUTPUT_FILE);
  const logFile = join(options.outputDir, NATS_LOAD_LOG_FILE);
  const client = options.processes.start('nats-load', options.loadBinary, [...args, '-output', outputFile], {
    logPath: logFile,
    onLine: (line) => {
      if (options.onStreamReady && jsonLineType(line) === 'start') options.onStreamReady(stream);
      const progress = parseNatsProgressLine(line);
      if (progress) options.onProgress?.(progress);
    },
  });
  options.onStarted?.(client);
  const limitSeconds = workload.durationSeconds + NATS_DRAIN_SECONDS + (options.graceSeconds ?? 60);
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    void client.stop(1000);
  }, limitSeconds * 1000);
  await client.exited;
  clearTimeout(timer);
  await client.stop(0);
  const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '');
  // The JSON lines are on stdout too (the log file): the file the client wrote itself has them complete.
  return {
    output: natsOutputWithCrash(read(outputFile), read(logFile)),
    expectations: natsLoadExpectations(workload, settings),
    args: ['rmqbench-nats-load', ...args],
    ...(late
      ? {
          error:
            `the NATS load client did not finish within ${limitSeconds} s ` +
            `(durationSeconds + ${NATS_DRAIN_SECONDS} s drain + 60) and was stopped`,
        }
      : {}),
  };
}
