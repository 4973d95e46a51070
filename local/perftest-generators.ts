/**
 * The PerfTest processes of one RabbitMQ repetition on the local target: one for the whole workload, or one per load
 * generator (issue 27) with its share of the workload (core/loadgen/workload-split.ts), started together, each in a
 * folder of its own and sampled as a node of its own.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadGeneratorNode, LOAD_GENERATOR_NODE } from '../core/metrics/host-metrics';
import { generatorExpectations, type RawGeneratorOutput } from '../core/loadgen/generators-result';
import { splitWorkload, type LoadGeneratorShare } from '../core/loadgen/workload-split';
import { buildPerfTestArgs, redactPerfTestArgs, type PerfTestInvocation } from '../core/perftest/perftest-args';
import type { Scenario } from '../core/plan/plan';
import { runPerfTestProcess, type PerfTestProgress, type PerfTestRun } from './perftest-process';
import { livePids, type ManagedProcess, type ProcessRegistry } from './processes';

/** One PerfTest process to run: the whole workload (no share) or one generator's share. */
export interface GeneratorLaunch {
  readonly share?: LoadGeneratorShare;
  readonly args: readonly string[];
  readonly outputDir: string;
  readonly csvPath: string;
  /** Set once spawned (the metrics sampler reads its /proc). */
  process?: ManagedProcess;
  /**
   * When its PerfTest's clock started, epoch ms: the arrival of its first 1 s progress line less that line's time
   * (JVM start and connection set-up differ between processes; spawning them together does not align their clocks).
   * Until that line: the spawn time.
   */
  startedAtMs?: number;
}

/** The processes of a repetition: one, or one per load generator of the scenario's cluster. */
export function plannedGenerators(
  scenario: Scenario,
  invocation: Omit<PerfTestInvocation, 'workload' | 'csvPath' | 'share'>,
  outputDir: string,
): { launches: GeneratorLaunch[]; split?: string } {
  const { workload } = scenario;
  const count = scenario.cluster.loadGenerators;
  if (count <= 1) {
    const csvPath = join(outputDir, 'perftest.csv');
    return { launches: [{ args: buildPerfTestArgs({ ...invocation, workload, csvPath }), outputDir, csvPath }] };
  }
  const split = splitWorkload(workload, count);
  const launches = split.generators.map((share): GeneratorLaunch => {
    const dir = join(outputDir, share.id);
    mkdirSync(dir, { recursive: true });
    const csvPath = join(dir, 'perftest.csv');
    return { share, args: buildPerfTestArgs({ ...invocation, workload, csvPath, share }), outputDir: dir, csvPath };
  });
  return { launches, split: split.description };
}

/** The metrics sampler's load-generator nodes: `load-generator`, or `load-generator-lg-1`, … */
export function generatorNodes(launches: readonly GeneratorLaunch[]) {
  return launches.map((launch) => ({
    node: launch.share ? loadGeneratorNode(launch.share.id) : LOAD_GENERATOR_NODE,
    pids: () => livePids(launch.process),
  }));
}

/**
 * Runs every launch at once and waits for all. Progress is the sum of the generators' latest seconds, reported when
 * the first generator reports.
 */
export function runGenerators(
  launches: readonly GeneratorLaunch[],
  options: {
    readonly jarsDir: string;
    readonly durationSeconds: number;
    readonly processes: ProcessRegistry;
    readonly finalLinePattern?: RegExp;
    readonly onProgress?: (progress: PerfTestProgress) => void;
  },
): Promise<PerfTestRun[]> {
  const latest = launches.map((): PerfTestProgress => ({ time: 0, sent: 0, received: 0 }));
  return Promise.all(
    launches.map((launch, index) => {
      let clockKnown = false;
      return runPerfTestProcess({
        jarsDir: options.jarsDir,
        args: launch.args,
        outputDir: launch.outputDir,
        csvPath: launch.csvPath,
        durationSeconds: options.durationSeconds,
        processes: options.processes,
        ...(options.finalLinePattern ? { finalLinePattern: options.finalLinePattern } : {}),
        onStarted: (process) => {
          launch.process = process;
          launch.startedAtMs = Date.now();
        },
        onProgress: (progress) => {
          if (!clockKnown) launch.startedAtMs = Date.now() - progress.time * 1000;
          clockKnown = true;
          latest[index] = progress;
          if (index === 0) options.onProgress?.(sumProgress(latest));
        },
      });
    }),
  );
}

function sumProgress(latest: readonly PerfTestProgress[]): PerfTestProgress {
  return {
    time: latest[0]!.time,
    sent: latest.reduce((sum, progress) => sum + progress.sent, 0),
    received: latest.reduce((sum, progress) => sum + progress.received, 0),
  };
}

/** Each generator's output as ingest takes it (RawRepetition.loadGenerators.outputs). */
export function generatorOutputs(
  scenario: Scenario,
  launches: readonly GeneratorLaunch[],
  runs: readonly PerfTestRun[],
): RawGeneratorOutput[] {
  return launches.map((launch, index) => {
    const share = launch.share!;
    return {
      id: share.id,
      producers: share.producers,
      consumers: share.consumers,
      queues: share.queues.names,
      startedAtMs: launch.startedAtMs ?? 0,
      perfTestArgs: redactPerfTestArgs(launch.args),
      expectations: generatorExpectations(scenario.workload, share),
      stdout: runs[index]!.stdout,
      csv: runs[index]!.csv,
    };
  });
}
