import type { RawRepetition } from '../core/results/ingest';
import { LOAD_GENERATOR_NODE } from '../core/metrics/host-metrics';
import type { Scenario } from '../core/plan/plan';
import { HostMetricsSampler } from './host-metrics-sampler';
import { livePids, type ManagedProcess, type ProcessRegistry } from './processes';

/** What a repetition on a local Kafka or NATS cluster is given (the cluster handle's type varies). */
export interface BrokerRepetitionOptions<Handle> {
  readonly handle: Handle;
  readonly runId: string;
  readonly scenario: Scenario;
  readonly repetition: number;
  readonly outputDir: string;
  readonly processes: ProcessRegistry;
  readonly onProgress?: (progress: { time: number; sent: number; received: number }) => void;
}

/** What a broker's own load client returned: its arguments and, when it failed, why. */
interface BrokerLoadRun {
  readonly args: readonly string[];
  readonly error?: string;
}

/**
 * Runs one repetition with a broker's own load client (`load`, told how to report each process it starts) while
 * sampling CPU, RSS and disk writes of the broker's `nodes` and of the load client (there is no management API, so no
 * queue depth), and returns it as raw output for the shared ingest: the common fields, then `output(run)` (the
 * broker's own output and expectations), the load client's error and the host metrics.
 */
export async function sampledBrokerRepetition<Run extends BrokerLoadRun>(options: {
  readonly runId: string;
  readonly scenario: Scenario;
  readonly repetition: number;
  readonly nodes: readonly { readonly node: string; readonly pids: () => number[] }[];
  readonly expectations: { readonly confirms: boolean; readonly fixedMessages?: number };
  readonly load: (onStarted: (client: ManagedProcess) => void) => Promise<Run>;
  readonly output: (run: Run) => Pick<RawRepetition, 'kafka' | 'nats'>;
}): Promise<RawRepetition> {
  const { scenario } = options;
  const startedAtMs = Date.now();
  const clients: ManagedProcess[] = [];
  const sampler = HostMetricsSampler.start({
    nodes: [...options.nodes, { node: LOAD_GENERATOR_NODE, pids: () => livePids(...clients) }],
    startedAtMs,
  });
  let run;
  try {
    run = await options.load((client) => clients.push(client));
  } catch (error) {
    await sampler.stop();
    throw error;
  }
  const collected = await sampler.stop();
  const { fixedMessages } = options.expectations;
  return {
    runId: options.runId,
    scenarioId: scenario.id,
    repetition: options.repetition,
    startedAt: new Date(startedAtMs).toISOString(),
    finishedAt: new Date().toISOString(),
    perfTestArgs: run.args,
    expectations: {
      durationSeconds: scenario.workload.durationSeconds,
      producers: scenario.workload.producers,
      consumers: scenario.workload.consumers,
      confirms: options.expectations.confirms,
      ...(fixedMessages === undefined ? {} : { fixedMessages }),
    },
    stdout: '',
    csv: '',
    ...options.output(run),
    ...(run.error ? { targetError: run.error } : {}),
    metrics: collected.metrics,
    ...(collected.error ? { metricsError: collected.error } : {}),
  };
}
