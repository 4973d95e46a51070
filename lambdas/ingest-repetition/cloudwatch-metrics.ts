import {
  GetMetricDataCommand,
  ListMetricsCommand,
  type CloudWatchClient,
  type Metric,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import {
  AGENT_INTERVAL_SECONDS,
  AGENT_METRICS,
  CLOUDWATCH_NAMESPACE,
  CLUSTER_DIMENSION,
  countsTowardHostMetric,
  expectedAgentMetrics,
  hostMetricsFromCloudWatch,
  nodeOf,
  type FetchedSeries,
  type ListedMetric,
} from '../../core/metrics/cloudwatch-host-metrics';
import type { RepetitionMetrics } from '../../core/metrics/host-metrics';

/**
 * GetMetricData takes at most 500 queries per call
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html, MetricDataQueries).
 */
const MAX_QUERIES_PER_CALL = 500;
/**
 * Pages read at most, per call kind: a cluster has a few dozen metrics and a repetition a few thousand points per
 * metric.
 */
const MAX_PAGES = 50;

/**
 * The host metrics of one repetition of a cluster stack, from what the CloudWatch agent on its nodes and load generator
 * published (cdk/user-data/cloudwatch-agent.ts): ListMetrics finds the cluster's metrics by their ClusterId dimension
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html: Dimensions filter,
 * RecentlyActive PT3H), GetMetricData reads each at the agent's 1 s period over the repetition's window (a period of 1
 * is allowed for high-resolution metrics less than 3 hours old; API_GetMetricData.html, "Period" of MetricStat), and
 * core/metrics/cloudwatch-host-metrics.ts maps them to the metrics model (`loadGenerators`: the stack's load generator
 * instance ids, in generator order). The CPU and memory of `instances` (the stack's instances, with the agent's Role
 * where known) are read by name too, as ListMetrics may not list them yet. Throws when there is nothing to read, with
 * why.
 */
export async function cloudWatchHostMetrics(
  cloudwatch: CloudWatchClient,
  clusterId: string,
  window: { startedAt: string; finishedAt: string },
  loadGenerators: readonly string[] = [],
  instances: readonly { readonly instanceId: string; readonly role?: string }[] = [],
): Promise<RepetitionMetrics> {
  const startedAt = new Date(window.startedAt);
  const finishedAt = new Date(window.finishedAt);
  if (!(finishedAt.getTime() > startedAt.getTime()))
    throw new Error(`the repetition's window ${window.startedAt} .. ${window.finishedAt} is empty`);
  // What ListMetrics lists, and the CPU and memory of every known instance asked for by name: a new metric is listed
  // up to 15 minutes late (expectedAgentMetrics), and every cluster stack's metrics are new. Once per name and
  // dimension set, whatever the pages hold (moto lists a metric once per data point) and both sources name.
  const byKey = new Map<string, ListedMetric>();
  for (const metric of [
    ...(await listClusterMetrics(cloudwatch, clusterId)),
    ...expectedAgentMetrics(clusterId, instances),
  ])
    byKey.set(`${metric.name}|${JSON.stringify(Object.entries(metric.dimensions).sort())}`, metric);
  const wanted = [...byKey.values()].filter((metric) => nodeOf(metric) !== undefined && countsTowardHostMetric(metric));
  const noMetrics = new Error(
    `CloudWatch has no ${CLOUDWATCH_NAMESPACE} metrics with ${CLUSTER_DIMENSION}=${clusterId} in the repetition's ` +
      'window (did the CloudWatch agent start? see the boot log)',
  );
  if (wanted.length === 0) throw noMetrics;
  const fetched = await readMetrics(cloudwatch, wanted, startedAt, finishedAt);
  // Several load generators: each instance's series under its generator's node (core/metrics/host-metrics.ts).
  const metrics = hostMetricsFromCloudWatch(fetched, startedAt, AGENT_INTERVAL_SECONDS, loadGenerators);
  if (metrics.series.length === 0) throw noMetrics;
  return metrics;
}

async function listClusterMetrics(cloudwatch: CloudWatchClient, clusterId: string): Promise<ListedMetric[]> {
  const metrics: ListedMetric[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await cloudwatch.send(
      new ListMetricsCommand({
        Namespace: CLOUDWATCH_NAMESPACE,
        Dimensions: [{ Name: CLUSTER_DIMENSION, Value: clusterId }],
        RecentlyActive: 'PT3H',
        NextToken: token,
      }),
    );
    for (const metric of page.Metrics ?? []) metrics.push(listedMetric(metric));
    token = page.NextToken;
  } while (token && ++pages < MAX_PAGES);
  return metrics;
}

function listedMetric(metric: Metric): ListedMetric {
  return {
    name: metric.MetricName ?? '',
    dimensions: Object.fromEntries(
      (metric.Dimensions ?? []).map((dimension) => [dimension.Name ?? '', dimension.Value ?? '']),
    ),
  };
}

async function readMetrics(
  cloudwatch: CloudWatchClient,
  listed: readonly ListedMetric[],
  startedAt: Date,
  finishedAt: Date,
): Promise<FetchedSeries[]> {
  // Whole seconds around the window, so that the first and the last second are both read.
  const start = new Date(Math.floor(startedAt.getTime() / 1000) * 1000);
  const end = new Date(Math.ceil(finishedAt.getTime() / 1000) * 1000 + 1000);
  const byId = new Map<string, { metric: ListedMetric; timestamps: Date[]; values: number[] }>();
  const queries: MetricDataQuery[] = listed.map((metric, index) => {
    const id = `m${index}`;
    byId.set(id, { metric, timestamps: [], values: [] });
    const stat = AGENT_METRICS.find((agent) => agent.name === metric.name)!.stat;
    return {
      Id: id,
      ReturnData: true,
      MetricStat: {
        Metric: {
          Namespace: CLOUDWATCH_NAMESPACE,
          MetricName: metric.name,
          Dimensions: Object.entries(metric.dimensions).map(([Name, Value]) => ({ Name, Value })),
        },
        Period: AGENT_INTERVAL_SECONDS,
        Stat: stat,
      },
    };
  });
  for (let offset = 0; offset < queries.length; offset += MAX_QUERIES_PER_CALL) {
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await cloudwatch.send(
        new GetMetricDataCommand({
          MetricDataQueries: queries.slice(offset, offset + MAX_QUERIES_PER_CALL),
          StartTime: start,
          EndTime: end,
          ScanBy: 'TimestampAscending',
          NextToken: token,
        }),
      );
      for (const result of page.MetricDataResults ?? []) {
        const entry = byId.get(result.Id ?? '');
        if (!entry) continue;
        entry.timestamps.push(...(result.Timestamps ?? []));
        entry.values.push(...(result.Values ?? []));
      }
      token = page.NextToken;
    } while (token && ++pages < MAX_PAGES);
  }
  return [...byId.values()];
}
