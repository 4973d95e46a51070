import {
  cpuPercentFromTicks,
  MetricPoint,
  MetricSeries,
  ratesFromCounters,
  ratesFromKeyedCounters,
  RepetitionMetrics,
  UNIT_OF,
  type MetricName,
} from '../core/metrics/host-metrics';
import { BrokerReading } from './management-metrics';
import { clockTicksPerSecond, hostCpuCount, ProcessReading, readProcess } from './proc-stats';

/** A node whose processes are sampled: a broker node, or `load-generator` (PerfTest's JVM, Kafka's tool JVMs). */
export interface SampledNode {
  readonly node: string;
  /** The processes that are the node now (asked on every tick: a restarted node has a new pid, tools come and go). */
  readonly pids: () => readonly number[];
}

export interface HostMetricsSamplerOptions {
  readonly nodes: readonly SampledNode[];
  /** One poll of the broker's own numbers (the RabbitMQ management API); absent for Kafka. */
  readonly pollBroker?: (tSeconds: number) => Promise<BrokerReading>;
  /** The repetition's start (PerfTest's start): tSeconds are counted from it. */
  readonly startedAtMs: number;
  /** @default 1000 */
  readonly intervalMs?: number;
  /** @default - /proc of this machine */
  readonly readProcess?: (pid: number) => ProcessReading | undefined;
  /** @default - sysconf(_SC_CLK_TCK) */
  readonly ticksPerSecond?: number;
  /** @default - the CPUs this process may use */
  readonly cpuCount?: number;
  /** Where the numbers come from, stored with them. @default 'local-proc' */
  readonly source?: string;
}

interface ProcessSample {
  readonly tSeconds: number;
  /** The pids summed: a change means other processes, whose counters start again. */
  readonly identity: string;
  readonly cpuTicks: number;
  readonly rssBytes: number;
  readonly writeBytes: number;
}

/**
 * Samples, once per interval from the repetition's start, the CPU, RSS and disk writes of each node's processes
 * (/proc) and, for RabbitMQ, each node's memory alarm, queue depth and network bytes (management API); `stop`
 * returns them as RepetitionMetrics. It never throws into the repetition: a source that fails is left out of the
 * seconds it failed in and described in `error`.
 */
export class HostMetricsSampler {
  private readonly samples = new Map<string, ProcessSample[]>();
  private readonly brokerReadings: BrokerReading[] = [];
  private readonly failures = new Map<string, { count: number; first: string }>();
  private brokerPoll: Promise<void> | undefined;
  private ticks = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly read: (pid: number) => ProcessReading | undefined;
  private readonly intervalMs: number;

  private constructor(private readonly options: HostMetricsSamplerOptions) {
    this.read = options.readProcess ?? ((pid) => readProcess(pid));
    this.intervalMs = options.intervalMs ?? 1000;
    for (const node of options.nodes) this.samples.set(node.node, []);
  }

  static start(options: HostMetricsSamplerOptions): HostMetricsSampler {
    const sampler = new HostMetricsSampler(options);
    sampler.tick();
    return sampler;
  }

  /** Stops sampling (idempotent), waits for a poll in flight, and returns what was measured. */
  async stop(): Promise<{ metrics: RepetitionMetrics; error?: string }> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.brokerPoll;
    const error = [...this.failures.entries()]
      .map(([source, { count, first }]) => `${source} failed in ${count} of ${this.ticks} second(s) (first: ${first})`)
      .join('; ');
    return { metrics: this.metrics(), ...(error ? { error } : {}) };
  }

  private tick(): void {
    if (this.stopped) return;
    const tSeconds = Math.round((Date.now() - this.options.startedAtMs) / 10) / 100;
    this.ticks++;
    for (const node of this.options.nodes) this.guard('/proc', () => this.sampleProcesses(node, tSeconds));
    if (this.options.pollBroker && !this.brokerPoll) {
      // One poll at a time: a broker busy enough to answer late skips seconds instead of piling up requests.
      this.brokerPoll = this.options
        .pollBroker(tSeconds)
        .then((reading) => void this.brokerReadings.push(reading))
        .catch((error: unknown) => this.fail('management API', error))
        .finally(() => (this.brokerPoll = undefined));
    }
    // Scheduled against the start, not the previous tick, so that ticks do not drift behind whole seconds.
    const next =
      this.options.startedAtMs +
      (Math.floor((Date.now() - this.options.startedAtMs) / this.intervalMs) + 1) * this.intervalMs;
    // Never what keeps the CLI alive: every path stops the sampler, and a crash should not wait for it.
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - Date.now())).unref();
  }

  private sampleProcesses(node: SampledNode, tSeconds: number): void {
    const pids = [...node.pids()].sort((a, b) => a - b);
    if (pids.length === 0) return;
    const readings = pids.map((pid) => this.read(pid));
    // A process that is gone (killed by a fault, exited) makes this second unknown for the node, not a zero.
    if (readings.some((reading) => reading === undefined)) return;
    const sum = (key: keyof ProcessReading) => readings.reduce((total, reading) => total + reading![key], 0);
    this.samples.get(node.node)!.push({
      tSeconds,
      identity: pids.join(','),
      cpuTicks: sum('cpuTicks'),
      rssBytes: sum('rssBytes'),
      writeBytes: sum('writeBytes'),
    });
  }

  private guard(source: string, read: () => void): void {
    try {
      read();
    } catch (error) {
      this.fail(source, error);
    }
  }

  private fail(source: string, error: unknown): void {
    const known = this.failures.get(source);
    if (known) known.count++;
    else this.failures.set(source, { count: 1, first: error instanceof Error ? error.message : String(error) });
  }

  private metrics(): RepetitionMetrics {
    const ticksPerSecond = this.options.ticksPerSecond ?? clockTicksPerSecond();
    const cpuCount = this.options.cpuCount ?? hostCpuCount();
    const series: MetricSeries[] = [];
    const add = (node: string, metric: MetricName, points: readonly MetricPoint[]) =>
      series.push({ node, metric, unit: UNIT_OF[metric], points });
    for (const [node, samples] of this.samples) {
      if (samples.length === 0) continue;
      const segments = bySameProcesses(samples);
      add(
        node,
        'cpuPercent',
        segments.flatMap((segment) =>
          cpuPercentFromTicks(
            segment.map((s) => ({ tSeconds: s.tSeconds, value: s.cpuTicks })),
            ticksPerSecond,
            cpuCount,
          ),
        ),
      );
      add(
        node,
        'memoryBytes',
        samples.map((s) => [s.tSeconds, s.rssBytes] as const),
      );
      add(
        node,
        'diskWriteBytesPerSecond',
        segments.flatMap((segment) =>
          ratesFromCounters(segment.map((s) => ({ tSeconds: s.tSeconds, value: s.writeBytes }))),
        ),
      );
    }
    const brokerNodes = [
      ...new Set(
        this.brokerReadings.flatMap((reading) => [
          ...reading.queueDepth.keys(),
          ...reading.memoryAlarm.keys(),
          ...reading.networkCounters.keys(),
        ]),
      ),
    ].sort();
    for (const node of brokerNodes) {
      const present = <T>(pick: (reading: BrokerReading) => T | undefined) =>
        this.brokerReadings.flatMap((reading) => {
          const value = pick(reading);
          return value === undefined ? [] : [{ tSeconds: reading.tSeconds, value }];
        });
      add(
        node,
        'memoryAlarm',
        present((reading) => reading.memoryAlarm.get(node)).map(({ tSeconds, value }) => [tSeconds, value] as const),
      );
      add(
        node,
        'queueDepth',
        present((reading) => reading.queueDepth.get(node)).map(({ tSeconds, value }) => [tSeconds, value] as const),
      );
      add(
        node,
        'networkBytesPerSecond',
        ratesFromKeyedCounters(
          present((reading) => reading.networkCounters.get(node)).map(({ tSeconds, value }) => ({
            tSeconds,
            counters: value,
          })),
        ),
      );
    }
    return { source: this.options.source ?? 'local-proc', series };
  }
}

/** Consecutive samples of the same processes: counters are compared only within one. */
function bySameProcesses(samples: readonly ProcessSample[]): ProcessSample[][] {
  const segments: ProcessSample[][] = [];
  for (const sample of samples) {
    const last = segments.at(-1);
    if (last && last[0]!.identity === sample.identity) last.push(sample);
    else segments.push([sample]);
  }
  return segments;
}
