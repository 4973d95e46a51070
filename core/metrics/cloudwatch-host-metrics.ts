import {
  loadGeneratorHostNode,
  LOAD_GENERATOR_NODE,
  UNIT_OF,
  type MetricName,
  type MetricPoint,
  type MetricSeries,
  type RepetitionMetrics,
} from './host-metrics';

/**
 * What the CloudWatch agent on the AWS cluster's nodes and load generator publishes (cdk/user-data/cloudwatch-agent.ts
 * writes the agent configuration from these names), and how IngestRepetition turns it into the metrics model of
 * core/metrics/host-metrics.ts. Shared by the boot script and the reader so that the two cannot drift apart.
 */

/**
 * The agent's namespace; the instance roles may put metrics into this namespace only (cloudwatch:namespace condition).
 */
export const CLOUDWATCH_NAMESPACE = 'rmqbench';
/** Dimensions every rmqbench metric carries besides the agent's own (cpu, name, interface). */
export const CLUSTER_DIMENSION = 'ClusterId';
export const ROLE_DIMENSION = 'Role';
export const INSTANCE_DIMENSION = 'InstanceId';
/** Values of the Role dimension. */
export const NODE_ROLE = 'rabbitmq-node';
/**
 * A Kafka broker on AWS (cdk/KafkaCluster.ts): a cluster node like a RabbitMQ node, with series under its instance id.
 */
export const KAFKA_BROKER_ROLE = 'kafka-broker';
/** A nats-server of a JetStream cluster on AWS (cdk/NatsCluster.ts), a cluster node like a Kafka broker. */
export const NATS_SERVER_ROLE = 'nats-server';
export const LOAD_GENERATOR_ROLE = 'load-generator';
/** The roles of a cluster's broker nodes, each a node of its own in the metrics model. */
export const BROKER_NODE_ROLES: readonly string[] = [NODE_ROLE, KAFKA_BROKER_ROLE, NATS_SERVER_ROLE];
/**
 * Seconds between two agent samples. Below 60 the agent publishes high-resolution metrics
 * (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-Agent-Configuration-File-Details.html, agent
 * section: "If you set this value below 60 seconds, each metric is collected as a high-resolution metric"); its schema
 * allows 1 to 172800 (aws/amazon-cloudwatch-agent translator/config/schema.json, timeIntervalDefinition). CloudWatch
 * keeps data of a period below 60 s for 3 hours
 * (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#Metric, "Metrics retention"),
 * long enough: IngestRepetition reads a repetition's metrics right after it ends.
 */
export const AGENT_INTERVAL_SECONDS = 1;

/**
 * The agent metrics read, by their CloudWatch metric name (plugin_measurement), with the statistic that makes one
 * value per period, and the model metric they become. diskio and net are cumulative counters that the agent turns
 * into deltas per sample (aws/amazon-cloudwatch-agent translator/translate/otel/processor/cumulativetodeltaprocessor:
 * "we calculate the delta values for customers"), so their Sum over a period divided by the period is bytes per second.
 */
export const AGENT_METRICS = [
  { plugin: 'cpu', measurement: 'usage_active', name: 'cpu_usage_active', stat: 'Average', metric: 'cpuPercent' },
  { plugin: 'mem', measurement: 'used', name: 'mem_used', stat: 'Average', metric: 'memoryBytes' },
  {
    plugin: 'diskio',
    measurement: 'write_bytes',
    name: 'diskio_write_bytes',
    stat: 'Sum',
    metric: 'diskWriteBytesPerSecond',
  },
  { plugin: 'net', measurement: 'bytes_sent', name: 'net_bytes_sent', stat: 'Sum', metric: 'networkBytesPerSecond' },
  { plugin: 'net', measurement: 'bytes_recv', name: 'net_bytes_recv', stat: 'Sum', metric: 'networkBytesPerSecond' },
] as const satisfies readonly {
  plugin: string;
  measurement: string;
  name: string;
  stat: 'Average' | 'Sum';
  metric: MetricName;
}[];

export type AgentMetricName = (typeof AGENT_METRICS)[number]['name'];

/** A listed metric: its name and dimensions, as ListMetrics returns them. */
export interface ListedMetric {
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
}

/**
 * Whether a listed metric counts: whole block devices only (a partition's bytes are also its disk's: nvme0n1p1 would
 * count twice with nvme0n1), every interface but loopback (traffic between processes of one host is not network).
 */
export function countsTowardHostMetric(metric: ListedMetric): boolean {
  if (metric.name === 'diskio_write_bytes')
    return /^(nvme\d+n\d+|xvd[a-z]+|sd[a-z]+|vd[a-z]+)$/.test(metric.dimensions.name ?? '');
  if (metric.name === 'net_bytes_sent' || metric.name === 'net_bytes_recv')
    return (metric.dimensions.interface ?? 'lo') !== 'lo';
  return AGENT_METRICS.some((agent) => agent.name === metric.name);
}

/**
 * The model node of a listed metric: the instance id of a RabbitMQ node or Kafka broker (the name the report's CPU
 * chart and the load-generator-bound verdict use for a broker node), `load-generator` for the load generator, and with
 * several (`loadGenerators`: the stack's load generator instance ids in generator order) each its own node
 * (loadGeneratorHostNode), whose CPU is not added to another's.
 */
export function nodeOf(metric: ListedMetric, loadGenerators: readonly string[] = []): string | undefined {
  const role = metric.dimensions[ROLE_DIMENSION];
  if (role === LOAD_GENERATOR_ROLE) return loadGeneratorHostNode(metric.dimensions[INSTANCE_DIMENSION], loadGenerators);
  if (role !== undefined && BROKER_NODE_ROLES.includes(role)) return metric.dimensions[INSTANCE_DIMENSION];
  return undefined;
}

/**
 * The CPU and memory metrics each known instance's agent publishes, with their exact dimensions (the agent
 * configuration of cdk/user-data/cloudwatch-agent.ts: InstanceId, ClusterId and Role; cpu-total for the cpu plugin's
 * `totalcpu`): read directly by GetMetricData, because ListMetrics shows a new metric up to 15 minutes after its first
 * point ("After you create a metric, allow up to 15 minutes for the metric to appear. To see metric statistics sooner,
 * use GetMetricData", https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html), and every
 * cluster stack's metrics are new. An instance whose role is not known (a Kafka broker or NATS server: no component
 * tag) is asked under each broker role; a role it does not have only returns no points. Disk and network metrics carry
 * device names only ListMetrics knows.
 */
export function expectedAgentMetrics(
  clusterId: string,
  instances: readonly { readonly instanceId: string; readonly role?: string }[],
): ListedMetric[] {
  return instances.flatMap(({ instanceId, role }) =>
    (role ? [role] : BROKER_NODE_ROLES.filter((one) => one !== NODE_ROLE)).flatMap((one) => {
      const dimensions = { [INSTANCE_DIMENSION]: instanceId, [CLUSTER_DIMENSION]: clusterId, [ROLE_DIMENSION]: one };
      return [
        { name: 'cpu_usage_active', dimensions: { ...dimensions, cpu: 'cpu-total' } },
        { name: 'mem_used', dimensions },
      ];
    }),
  );
}

/** One GetMetricData result: the listed metric it was asked for and the values per period start. */
export interface FetchedSeries {
  readonly metric: ListedMetric;
  readonly timestamps: readonly Date[];
  readonly values: readonly number[];
}

/**
 * The model's series from GetMetricData results: per node and model metric, the values of every listed metric that
 * counts toward it are added per period (two disks, two interfaces, sent + received), converted to per second where
 * the statistic is a Sum, and placed at seconds since `startedAt` (the period's start; points before it are dropped).
 */
export function hostMetricsFromCloudWatch(
  fetched: readonly FetchedSeries[],
  startedAt: Date,
  periodSeconds: number,
  loadGenerators: readonly string[] = [],
): RepetitionMetrics {
  const sums = new Map<string, { node: string; metric: MetricName; byTime: Map<number, number> }>();
  for (const one of fetched) {
    const agent = AGENT_METRICS.find((candidate) => candidate.name === one.metric.name);
    const node = nodeOf(one.metric, loadGenerators);
    if (!agent || !node || !countsTowardHostMetric(one.metric)) continue;
    const key = `${node}\u0000${agent.metric}`;
    const entry = sums.get(key) ?? { node, metric: agent.metric, byTime: new Map<number, number>() };
    sums.set(key, entry);
    one.timestamps.forEach((timestamp, index) => {
      const t = Math.round((timestamp.getTime() - startedAt.getTime()) / 1000);
      const value = one.values[index];
      if (t < 0 || value === undefined || !Number.isFinite(value)) return;
      const perSecond = agent.stat === 'Sum' ? value / periodSeconds : value;
      entry.byTime.set(t, (entry.byTime.get(t) ?? 0) + perSecond);
    });
  }
  const series: MetricSeries[] = [...sums.values()]
    // A metric asked for directly that has no point in the window (a role the instance does not have) is no series.
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
  return { source: 'cloudwatch', series };
}
