import { loadGeneratorId } from '../loadgen/load-generator-count';
import { median } from '../results/statistics';

/**
 * Broker and host metrics of one repetition: per node and per second, what the broker hosts and the load generator
 * did while PerfTest measured. The same model on every target (local /proc + management API, CloudWatch,
 * Azure Monitor); a target fills what its sources give, so every metric is optional.
 *
 * Definitions (the README's "Broker and host metrics" repeats them):
 * - `cpuPercent`: CPU time used in the second as a percentage of ALL the host's CPUs: 100 = every core busy for the
 *   whole second. The same meaning as EC2's `CPUUtilization` and Azure's "Percentage CPU", so the load-generator
 *   threshold below means the same on every target. Locally the "host" of a node is its broker process (beam.smp)
 *   and of the load generator its PerfTest JVM, each as a share of the machine's CPUs (they share one machine).
 * - `memoryBytes`: resident set size (RSS) of the broker process (locally VmRSS; in the cloud the host's used memory).
 * - `memoryAlarm`: 1 while the broker's memory alarm is raised (publishers blocked), else 0.
 * - `diskWriteBytesPerSecond`: bytes written to storage per second (locally /proc/<pid>/io write_bytes).
 * - `networkBytesPerSecond`: bytes received plus bytes sent per second (in + out, one series).
 * - `queueDepth`: messages ready + unacknowledged, summed over the benchmark queues whose leader is on the node.
 */
export const METRIC_NAMES = [
  'cpuPercent',
  'memoryBytes',
  'memoryAlarm',
  'diskWriteBytesPerSecond',
  'networkBytesPerSecond',
  'queueDepth',
] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

export const METRIC_UNITS = ['percent', 'bytes', 'bytesPerSecond', 'messages', 'boolean'] as const;
export type MetricUnit = (typeof METRIC_UNITS)[number];

/** The unit each metric is stored in; a series with another unit is refused on ingest. */
export const UNIT_OF: Readonly<Record<MetricName, MetricUnit>> = {
  cpuPercent: 'percent',
  memoryBytes: 'bytes',
  memoryAlarm: 'boolean',
  diskWriteBytesPerSecond: 'bytesPerSecond',
  networkBytesPerSecond: 'bytesPerSecond',
  queueDepth: 'messages',
};

/** The node name of the load generator's series (PerfTest, or Kafka's performance tools). */
export const LOAD_GENERATOR_NODE = 'load-generator';

/** The metrics node of one of several load generators (issue 27): `load-generator-lg-2`. */
export const loadGeneratorNode = (id: string) => `${LOAD_GENERATOR_NODE}-${id}`;

/**
 * The metrics node of load generator `host` (an EC2 instance id, an Azure VM's resource id) among its cluster's load
 * generators `hosts`, listed in generator order (lg-1 first): `load-generator` when the cluster has at most one (as
 * before issue 27), that generator's node (`load-generator-lg-2`) when it has several, and `load-generator-<host>` for
 * a host not listed, so that two hosts' series are never added together.
 */
export function loadGeneratorHostNode(host: string | undefined, hosts: readonly string[]): string {
  if (hosts.length <= 1) return LOAD_GENERATOR_NODE;
  const index = host === undefined ? -1 : hosts.indexOf(host);
  return loadGeneratorNode(index >= 0 ? loadGeneratorId(index) : (host ?? 'unknown'));
}

const isLoadGeneratorNode = (node: string) =>
  node === LOAD_GENERATOR_NODE || node.startsWith(`${LOAD_GENERATOR_NODE}-`);

/**
 * `[tSeconds, value]`: tSeconds is seconds since the repetition started (PerfTest's start), PerSecondSample.time's
 * axis.
 */
export type MetricPoint = readonly [number, number];

/** One metric of one node over the repetition. */
export interface MetricSeries {
  /** A broker node (e.g. `rmqbench1@localhost`, an instance id, a VM name) or `load-generator`. */
  readonly node: string;
  readonly metric: MetricName;
  readonly unit: MetricUnit;
  /** Ordered by time. */
  readonly points: readonly MetricPoint[];
}

/** Everything measured beside one repetition. */
export interface RepetitionMetrics {
  /** Where the numbers came from, e.g. `local-proc`, `cloudwatch`, `azure-monitor`. */
  readonly source: string;
  readonly series: readonly MetricSeries[];
}

/** Metrics that do not have the model's shape; ingest records the message on the repetition instead of failing it. */
export class MetricsValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MetricsValidationError';
  }
}

/** A reading of a cumulative counter (CPU jiffies, bytes written) at tSeconds. */
export interface CounterReading {
  readonly tSeconds: number;
  readonly value: number;
}

/**
 * Per-second rates from a cumulative counter: one point per consecutive pair, at the later reading's time,
 * (Δvalue / Δt) · scale. A counter that goes down was reset (the process restarted, e.g. a killed node started
 * again): that interval has no rate, and the next one continues from the new counter.
 */
export function ratesFromCounters(readings: readonly CounterReading[], scale = 1): MetricPoint[] {
  const points: MetricPoint[] = [];
  for (let index = 1; index < readings.length; index++) {
    const previous = readings[index - 1]!;
    const current = readings[index]!;
    const elapsed = current.tSeconds - previous.tSeconds;
    const delta = current.value - previous.value;
    if (!(elapsed > 0) || delta < 0) continue;
    points.push([current.tSeconds, (delta / elapsed) * scale]);
  }
  return points;
}

/** Readings of many cumulative counters at once (one per connection or link), keyed by what they count. */
export interface KeyedCounterReading {
  readonly tSeconds: number;
  readonly counters: ReadonlyMap<string, number>;
}

/**
 * The summed per-second rate of counters that come and go (connections, inter-node links): each interval adds the
 * increase of every key present at both ends, so a connection that closes (its counter vanishes) or opens (its
 * counter starts mid-interval) does not show as a drop or a burst. A key whose counter went down was reset and
 * adds nothing.
 */
export function ratesFromKeyedCounters(readings: readonly KeyedCounterReading[]): MetricPoint[] {
  const points: MetricPoint[] = [];
  for (let index = 1; index < readings.length; index++) {
    const previous = readings[index - 1]!;
    const current = readings[index]!;
    const elapsed = current.tSeconds - previous.tSeconds;
    if (!(elapsed > 0)) continue;
    let increase = 0;
    for (const [key, value] of current.counters) {
      const before = previous.counters.get(key);
      if (before !== undefined && value >= before) increase += value - before;
    }
    points.push([current.tSeconds, increase / elapsed]);
  }
  return points;
}

/**
 * cpuPercent from a process's cumulative CPU time in clock ticks (utime + stime of /proc/<pid>/stat):
 * ticks / ticksPerSecond is CPU seconds; divided by elapsed seconds and by the host's CPU count it is the share of
 * all CPUs (100 = every core busy).
 */
export function cpuPercentFromTicks(
  readings: readonly CounterReading[],
  ticksPerSecond: number,
  cpuCount: number,
): MetricPoint[] {
  if (!(ticksPerSecond > 0)) throw new Error(`ticksPerSecond must be positive, got ${ticksPerSecond}`);
  if (!(cpuCount >= 1)) throw new Error(`cpuCount must be at least 1, got ${cpuCount}`);
  return ratesFromCounters(readings, 100 / (ticksPerSecond * cpuCount));
}

/**
 * The finest time grain of Azure Monitor's VM platform metrics: one point per minute, at the minute's start
 * (https://learn.microsoft.com/azure/azure-monitor/reference/supported-metrics/microsoft-compute-virtualmachines-metrics,
 * time grain PT1M). Defined here, not in azure-monitor-metrics.ts (which reads it too), so that the verdict below
 * needs no import of that module.
 */
export const AZURE_INTERVAL_SECONDS = 60;
/** The `source` of host metrics read from Azure Monitor (azure-monitor-metrics.ts). */
export const AZURE_MONITOR_SOURCE = 'azure-monitor';

/** Above this load-generator CPU (median over the measured seconds) the broker's maximum was not measured. */
export const LOAD_GENERATOR_BOUND_PERCENT = 90;

export interface LoadGeneratorVerdict {
  /** Median of the load generator's cpuPercent over the measured seconds (several: the busiest generator's). */
  readonly medianCpuPercent: number;
  readonly bound: boolean;
  /** Several generators, bound: those above the bound, busiest first (core/loadgen/load-generators-verdict.ts). */
  readonly boundGenerators?: readonly { readonly id: string; readonly cpuPercent: number }[];
  /** Several generators, bound: the count that would lift the bound. */
  readonly suggestedLoadGenerators?: number;
  /** Several generators, bound: the report line naming them and the suggested count. */
  readonly line?: string;
}

/**
 * Whether the load generator, not the broker, was the bottleneck: the MEDIAN of its cpuPercent over the measured
 * seconds is above 90 %. The median, so that a JVM warm-up spike or one busy second does not condemn a run, while
 * a load generator saturated for most of it does. `window` (PerfTest's first and last sample time) limits it to
 * the measured seconds; undefined when the repetition has no load-generator CPU in that window.
 */
export function loadGeneratorVerdict(
  metrics: RepetitionMetrics | undefined,
  window?: { readonly from: number; readonly to: number },
  node = LOAD_GENERATOR_NODE,
): LoadGeneratorVerdict | undefined {
  const series = metrics?.series.find((candidate) => candidate.node === node && candidate.metric === 'cpuPercent');
  if (!series) return undefined;
  // Azure Monitor's points are whole minutes placed at their start (azure-monitor-metrics.ts): a minute counts when it
  // overlaps the measured seconds, else a repetition shorter than a few minutes would often hold no point at all.
  const spanSeconds = metrics!.source.split('+').includes(AZURE_MONITOR_SOURCE) ? AZURE_INTERVAL_SECONDS : 0;
  const values = series.points
    .filter(
      ([t]) =>
        !window ||
        (spanSeconds > 0 ? t < window.to && t + spanSeconds > window.from : t >= window.from && t <= window.to),
    )
    .map(([, value]) => value);
  if (values.length === 0) return undefined;
  const medianCpuPercent = median(values);
  return { medianCpuPercent, bound: medianCpuPercent > LOAD_GENERATOR_BOUND_PERCENT };
}

/** The verdict line a report prints for a scenario with `bound` of `of` repetitions load-generator bound. */
export function loadGeneratorBoundLine(bound: number, of: number): string {
  return (
    `load-generator bound (load generator CPU median above ${LOAD_GENERATOR_BOUND_PERCENT} % ` +
    `in ${bound} of ${of} repetition${of === 1 ? '' : 's'}): the broker's maximum was not measured`
  );
}

/** Per node: what a one-line summary shows (human `show`). */
export interface NodeMetricsSummary {
  readonly node: string;
  readonly maxCpuPercent?: number;
  readonly medianCpuPercent?: number;
  readonly maxMemoryBytes?: number;
  /** Present when the node has a memoryAlarm series: whether it was raised in any second. */
  readonly memoryAlarm?: boolean;
}

/** Per node, in the order nodes first appear; the load generator last. */
export function summarizeNodes(metrics: RepetitionMetrics): NodeMetricsSummary[] {
  const nodes = [...new Set(metrics.series.map((series) => series.node))].sort(
    (a, b) => Number(isLoadGeneratorNode(a)) - Number(isLoadGeneratorNode(b)),
  );
  return nodes.map((node) => {
    const values = (metric: MetricName) =>
      metrics.series
        .filter((series) => series.node === node && series.metric === metric)
        .flatMap((series) => series.points.map(([, value]) => value));
    const cpu = values('cpuPercent');
    const memory = values('memoryBytes');
    const alarm = metrics.series.some((series) => series.node === node && series.metric === 'memoryAlarm');
    return {
      node,
      ...(cpu.length > 0 ? { maxCpuPercent: Math.max(...cpu), medianCpuPercent: median(cpu) } : {}),
      ...(memory.length > 0 ? { maxMemoryBytes: Math.max(...memory) } : {}),
      ...(alarm ? { memoryAlarm: values('memoryAlarm').some((value) => value > 0) } : {}),
    };
  });
}

/**
 * Validates metrics from outside (a target's collector, S3, the store) and returns them typed.
 * Throws MetricsValidationError naming the first field that is wrong.
 */
export function validateRepetitionMetrics(input: unknown): RepetitionMetrics {
  const fail = (path: string, message: string, value?: unknown): never => {
    const shown = value === undefined ? '' : ` (got ${truncate(JSON.stringify(value))})`;
    throw new MetricsValidationError(`metrics${path}: ${message}${shown}`);
  };
  if (!isObject(input)) return fail('', 'must be an object with source and series', input);
  if (typeof input.source !== 'string' || input.source === '')
    fail('.source', 'must be a non-empty string', input.source);
  if (!Array.isArray(input.series)) return fail('.series', 'must be an array', input.series);
  const seen = new Set<string>();
  const series = input.series.map((candidate: unknown, index): MetricSeries => {
    const path = `.series[${index}]`;
    if (!isObject(candidate)) return fail(path, 'must be an object with node, metric, unit and points', candidate);
    const { node, metric, unit, points } = candidate;
    if (typeof node !== 'string' || node === '') fail(`${path}.node`, 'must be a non-empty string', node);
    if (!(METRIC_NAMES as readonly unknown[]).includes(metric))
      fail(`${path}.metric`, `must be one of ${METRIC_NAMES.join(', ')}`, metric);
    const name = metric as MetricName;
    if (unit !== UNIT_OF[name]) fail(`${path}.unit`, `${name} is measured in ${UNIT_OF[name]}`, unit);
    const key = `${String(node)}\u0000${name}`;
    if (seen.has(key)) fail(path, `a second ${name} series for node ${String(node)}`);
    seen.add(key);
    if (!Array.isArray(points)) return fail(`${path}.points`, 'must be an array of [tSeconds, value]', points);
    let previous = Number.NEGATIVE_INFINITY;
    points.forEach((point: unknown, at) => {
      if (
        !Array.isArray(point) ||
        point.length !== 2 ||
        !point.every((part) => typeof part === 'number' && Number.isFinite(part))
      ) {
        fail(`${path}.points[${at}]`, 'must be [tSeconds, value], two finite numbers', point);
      }
      const [t, value] = point as [number, number];
      if (t < previous) fail(`${path}.points[${at}]`, `tSeconds must not go back in time (after ${previous})`, point);
      if (value < 0) fail(`${path}.points[${at}]`, `${name} cannot be negative`, point);
      if (name === 'memoryAlarm' && value !== 0 && value !== 1)
        fail(`${path}.points[${at}]`, 'memoryAlarm is 0 or 1', point);
      previous = t;
    });
    return {
      node: node as string,
      metric: name,
      unit: UNIT_OF[name],
      points: (points as [number, number][]).map(([t, value]) => [t, value] as const),
    };
  });
  return { source: input.source as string, series };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function truncate(text: string | undefined): string {
  if (text === undefined) return 'undefined';
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Points per stored chunk. DynamoDB sizes a number at 1 byte per two significant digits + 1 (at most 20 bytes for
 * 38 digits; a JavaScript double has at most 17), a list at 3 bytes + its elements + 1 byte per element
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html). A point
 * [t, value] is thus at most 3 + 2 · (20 + 1) + 1 = 46 bytes, and 2,000 points at most ~92 KB: well below the
 * 400 KB item limit with node names and keys. test/core/host-metrics.test.ts sizes a marshalled worst-case item.
 */
export const METRIC_POINTS_PER_CHUNK = 2000;

/**
 * Splits series into chunks of at most `maxPoints` points in all (a long series is cut into pieces that keep
 * node, metric and unit); `mergeMetricChunks` puts them back together in order.
 */
export function chunkMetricSeries(
  series: readonly MetricSeries[],
  maxPoints = METRIC_POINTS_PER_CHUNK,
): MetricSeries[][] {
  if (!(maxPoints >= 1)) throw new Error(`maxPoints must be at least 1, got ${maxPoints}`);
  const chunks: MetricSeries[][] = [];
  let current: MetricSeries[] = [];
  let room = maxPoints;
  for (const one of series) {
    let offset = 0;
    do {
      if (room === 0) {
        chunks.push(current);
        current = [];
        room = maxPoints;
      }
      const take = Math.min(room, one.points.length - offset);
      current.push({ ...one, points: one.points.slice(offset, offset + take) });
      offset += take;
      room -= take;
      // A series with no points still travels (as an empty piece), so that the record says it was collected.
    } while (offset < one.points.length);
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** The inverse of chunkMetricSeries: pieces of the same node and metric joined in chunk order. */
export function mergeMetricChunks(chunks: readonly (readonly MetricSeries[])[]): MetricSeries[] {
  const merged = new Map<string, { node: string; metric: MetricName; unit: MetricUnit; points: MetricPoint[] }>();
  for (const piece of chunks.flat()) {
    const key = `${piece.node}\u0000${piece.metric}`;
    const existing = merged.get(key);
    if (existing) existing.points.push(...piece.points);
    else merged.set(key, { node: piece.node, metric: piece.metric, unit: piece.unit, points: [...piece.points] });
  }
  return [...merged.values()];
}

/**
 * One node's line in `rmqbench show`: `rmqbench1@localhost: CPU max 23.5 %, median 19.0 %; RSS max 190 MB; memory alarm
 * no`.
 * MB are 10^6 bytes; what a node has no series for is left out.
 */
export function formatNodeSummary(summary: NodeMetricsSummary): string {
  const parts: string[] = [];
  if (summary.maxCpuPercent !== undefined)
    parts.push(`CPU max ${summary.maxCpuPercent.toFixed(1)} %, median ${summary.medianCpuPercent!.toFixed(1)} %`);
  if (summary.maxMemoryBytes !== undefined)
    parts.push(`RSS max ${Math.round(summary.maxMemoryBytes / 1_000_000).toLocaleString('en-US')} MB`);
  if (summary.memoryAlarm !== undefined) parts.push(`memory alarm ${summary.memoryAlarm ? 'yes' : 'no'}`);
  return `${summary.node}: ${parts.join('; ') || 'no CPU, memory or alarm series'}`;
}
