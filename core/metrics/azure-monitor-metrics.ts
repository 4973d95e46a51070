import {
  AZURE_INTERVAL_SECONDS,
  AZURE_MONITOR_SOURCE,
  LOAD_GENERATOR_NODE,
  UNIT_OF,
  type MetricName,
  type MetricPoint,
  type MetricSeries,
  type RepetitionMetrics,
} from './host-metrics';

/**
 * Host metrics of an Azure repetition from Azure Monitor's platform metrics, which Azure collects for every VM and
 * scale set without an agent. Names, aggregations, dimensions and time grains as "Supported metrics for
 * Microsoft.Compute/virtualMachineScaleSets" and ".../virtualMachines" list them
 * (https://learn.microsoft.com/azure/azure-monitor/reference/supported-metrics/microsoft-compute-virtualmachinescalesets-metrics):
 * PT1M grain; on a scale set each metric splits by the VMName dimension.
 *
 * Memory: the platform metric is "Available Memory Bytes" ("Amount of physical memory, in bytes, immediately available
 * for allocation to a process or for system use in the Virtual Machine", Average, PT1M, VMName on scale sets: the same
 * two supported-metrics pages). On Linux the guest's Hyper-V balloon driver reports MemAvailable to the host
 * (drivers/hv/hv_balloon.c post_status: num_avail = si_mem_available()), which we take that metric to be. The metrics
 * API does not return the VM's total, so `memoryBytes` (used) = the VM size's memory (core/cost/azure-vm-sizes.ts) −
 * available, given per response as `memoryTotalBytes`; without it the response's memory is not mapped. The size tables'
 * memory is more than the guest's MemTotal (firmware and kernel reservations), so this reads higher than the guest's
 * own
 * MemTotal − MemAvailable by that constant difference (docs/metrics.md, "Host metrics on AWS and Azure").
 */

/**
 * Microsoft.Insights/metrics API version (azure-rest-api-specs
 * specification/monitor/resource-manager/Microsoft.Insights/stable/2023-10-01/metrics_API.json).
 */
export const AZURE_MONITOR_API_VERSION = '2023-10-01';
export { AZURE_INTERVAL_SECONDS } from './host-metrics';
/** The scale-set dimension that names the instance (the API returns dimension names in lower case, e.g. "vmname"). */
export const VM_NAME_DIMENSION = 'VMName';

export const AZURE_METRICS = [
  // Average over the minute of the share of the VM's allocated compute units in use: all its vCPUs.
  { name: 'Percentage CPU', aggregation: 'average', metric: 'cpuPercent' },
  // Total bytes in the minute (Aggregation "Total"): divided by 60 for bytes per second.
  { name: 'Disk Write Bytes', aggregation: 'total', metric: 'diskWriteBytesPerSecond' },
  { name: 'Network In Total', aggregation: 'total', metric: 'networkBytesPerSecond' },
  { name: 'Network Out Total', aggregation: 'total', metric: 'networkBytesPerSecond' },
  // Average over the minute of the memory available to the guest: used = the response's memoryTotalBytes − it.
  { name: 'Available Memory Bytes', aggregation: 'average', metric: 'memoryBytes', usedFromAvailable: true },
] as const satisfies readonly {
  name: string;
  aggregation: 'average' | 'total';
  metric: MetricName;
  usedFromAvailable?: true;
}[];

/**
 * The response body of GET {resourceUri}/providers/Microsoft.Insights/metrics (the "Response" definition of
 * metrics_API.json), the parts read.
 */
export interface AzureMetricsResponse {
  readonly value?: readonly {
    readonly name?: { readonly value?: string };
    readonly timeseries?: readonly {
      readonly metadatavalues?: readonly { readonly name?: { readonly value?: string }; readonly value?: string }[];
      readonly data?: readonly { readonly timeStamp?: string; readonly average?: number; readonly total?: number }[];
    }[];
  }[];
}

/**
 * The query of one metrics request: the repetition's window widened to whole minutes, every mapped metric, split by
 * VMName on a scale set.
 */
export function azureMetricsQuery(window: { startedAt: Date; finishedAt: Date }, splitByVmName: boolean): string {
  const minute = AZURE_INTERVAL_SECONDS * 1000;
  const start = new Date(Math.floor(window.startedAt.getTime() / minute) * minute).toISOString();
  const end = new Date(Math.ceil(window.finishedAt.getTime() / minute) * minute).toISOString();
  const parameters: [string, string][] = [
    ['api-version', AZURE_MONITOR_API_VERSION],
    ['timespan', `${start}/${end}`],
    ['interval', 'PT1M'],
    ['metricnames', AZURE_METRICS.map((metric) => metric.name).join(',')],
    ['aggregation', 'average,total'],
    ...(splitByVmName ? [['$filter', `${VM_NAME_DIMENSION} eq '*'`] as [string, string]] : []),
  ];
  return parameters.map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`).join('&');
}

/**
 * One metrics response and what it is of: `node` for a single VM (absent for a scale set, split by VMName),
 * `memoryTotalBytes` its VMs' memory.
 */
export interface AzureMetricsSource {
  readonly body: AzureMetricsResponse;
  readonly node?: string;
  readonly memoryTotalBytes?: number;
}

/**
 * The model's series from metrics responses: a scale set's series per VM (its VMName), a single VM's under the node it
 * was read for (a Kafka broker's VM name, `load-generator`); values of metrics that map to the same model metric
 * (network in + out) are added per minute, totals divided by the minute; memoryBytes is memoryTotalBytes − "Available
 * Memory Bytes" (not mapped for a response without memoryTotalBytes). A minute that began before the repetition is
 * placed at 0.
 */
export function hostMetricsFromAzureMonitor(
  responses: readonly AzureMetricsSource[],
  startedAt: Date,
): RepetitionMetrics {
  const sums = new Map<string, { node: string; metric: MetricName; byTime: Map<number, number> }>();
  for (const { body, node: fixedNode, memoryTotalBytes } of responses) {
    for (const metricResult of body.value ?? []) {
      const mapping = AZURE_METRICS.find(
        (candidate) => candidate.name.toLowerCase() === (metricResult.name?.value ?? '').toLowerCase(),
      );
      if (!mapping) continue;
      const usedFromAvailable = 'usedFromAvailable' in mapping;
      if (usedFromAvailable && memoryTotalBytes === undefined) continue;
      for (const series of metricResult.timeseries ?? []) {
        const vmName = series.metadatavalues?.find(
          (entry) => (entry.name?.value ?? '').toLowerCase() === VM_NAME_DIMENSION.toLowerCase(),
        )?.value;
        const node = fixedNode ?? vmName;
        if (!node) continue;
        const key = `${node}\u0000${mapping.metric}`;
        const entry = sums.get(key) ?? { node, metric: mapping.metric, byTime: new Map<number, number>() };
        sums.set(key, entry);
        for (const point of series.data ?? []) {
          const raw = mapping.aggregation === 'average' ? point.average : point.total;
          // A minute without data has no aggregation value: no point rather than a zero.
          if (raw === undefined || !Number.isFinite(raw) || !point.timeStamp) continue;
          const t = Math.max(0, Math.round((Date.parse(point.timeStamp) - startedAt.getTime()) / 1000));
          const value = usedFromAvailable
            ? memoryTotalBytes! - raw
            : mapping.aggregation === 'total'
              ? raw / AZURE_INTERVAL_SECONDS
              : raw;
          entry.byTime.set(t, (entry.byTime.get(t) ?? 0) + value);
        }
      }
    }
  }
  // A metric without a single value in the window (Azure answers its minutes without an aggregation value) is no
  // series.
  const series: MetricSeries[] = [...sums.values()]
    .filter(({ byTime }) => byTime.size > 0)
    .map(({ node, metric, byTime }) => ({
      node,
      metric,
      unit: UNIT_OF[metric],
      points: [...byTime.entries()].sort(([a], [b]) => a - b).map(([t, value]): MetricPoint => [t, Math.max(0, value)]),
    }))
    .sort((a, b) =>
      a.node === b.node
        ? a.metric.localeCompare(b.metric)
        : Number(a.node === LOAD_GENERATOR_NODE) - Number(b.node === LOAD_GENERATOR_NODE) ||
          a.node.localeCompare(b.node),
    );
  return { source: AZURE_MONITOR_SOURCE, series };
}

/**
 * Seconds the workflow waits on azure after a cluster's last repetition before it reads their host metrics again
 * (state-machines/phases.ts, before teardown): up to 60 s until the minute in which the repetition ended is over (a
 * PT1M
 * point exists only then), the documented "under a minute" until it is in the metrics database
 * (learn.microsoft.com/azure/azure-monitor/logs/data-ingestion-time), and 60 s of margin of our own.
 */
export const AZURE_METRICS_SETTLE_SECONDS = 180;

/**
 * The words that end azureMetricsLateness's message: how the re-read before teardown finds the repetitions to read
 * again.
 */
export const AZURE_METRICS_LATE = '(platform metrics arrive late)';

/**
 * Azure Monitor's platform metrics become queryable some time after their minute: "Azure platform metrics are available
 * in under a minute in the metrics database" (learn.microsoft.com/azure/azure-monitor/logs/data-ingestion-time, "Azure
 * metrics, resource logs, activity log"; MicrosoftDocs/azure-monitor-docs
 * articles/azure-monitor/logs/data-ingestion-time.md),
 * and a PT1M point exists only once its minute is over ("collects platform metrics from Azure resources at a one-minute
 * frequency", articles/azure-monitor/metrics/data-platform-metrics.md). Read right after the repetition, the last
 * minutes
 * are missing. This says so when the last point of any series (with a value) lies before the repetition's last whole
 * minute (the one ending at the last full minute before finishedAt; for a repetition within one or two minutes, its
 * first
 * minute): "Azure Monitor had data up to <end of that series' last minute> of a repetition that ended at <finishedAt>
 * (platform metrics arrive late)"; undefined when every series reaches it. A metric with no value at all in the window
 * is not judged: it may be one the VM does not report (IngestRepetition stores no series for it either).
 */
export function azureMetricsLateness(
  responses: readonly AzureMetricsSource[],
  window: { startedAt: Date; finishedAt: Date },
): string | undefined {
  const minute = AZURE_INTERVAL_SECONDS * 1000;
  const firstMinute = Math.floor(window.startedAt.getTime() / minute) * minute;
  const lastWholeMinute = Math.max(firstMinute, Math.floor(window.finishedAt.getTime() / minute) * minute - minute);
  let earliestLast: number | undefined;
  for (const { body } of responses) {
    for (const metricResult of body.value ?? []) {
      const mapping = AZURE_METRICS.find(
        (candidate) => candidate.name.toLowerCase() === (metricResult.name?.value ?? '').toLowerCase(),
      );
      if (!mapping) continue;
      for (const series of metricResult.timeseries ?? []) {
        const times = (series.data ?? [])
          .filter(
            (point) =>
              point.timeStamp && Number.isFinite(mapping.aggregation === 'average' ? point.average : point.total),
          )
          .map((point) => Date.parse(point.timeStamp!));
        if (times.length === 0) continue;
        const last = Math.max(...times);
        earliestLast = earliestLast === undefined ? last : Math.min(earliestLast, last);
      }
    }
  }
  if (earliestLast === undefined || earliestLast >= lastWholeMinute) return undefined;
  return (
    `Azure Monitor had data up to ${new Date(earliestLast + minute).toISOString()} of a repetition ` +
    `that ended at ${window.finishedAt.toISOString()} ${AZURE_METRICS_LATE}`
  );
}
