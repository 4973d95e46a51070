import { AGENT_INTERVAL_SECONDS, AGENT_METRICS, CLOUDWATCH_NAMESPACE, CLUSTER_DIMENSION, INSTANCE_DIMENSION, ROLE_DIMENSION } from '../../core/cloudwatch-host-metrics';
import { writeFileCommand } from '../shell';

/** Where the boot script writes the agent configuration (the path AWS recommends for a hand-written file). */
export const CLOUDWATCH_AGENT_CONFIG_PATH = '/opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json';
export const CLOUDWATCH_AGENT_CTL = '/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl';
/** Here-document delimiter of the configuration; the tests locate the written file by it. */
export const CLOUDWATCH_AGENT_CONFIG_DELIMITER = 'RMQBENCH_CLOUDWATCH_AGENT_CONFIG';
/**
 * Seconds the agent may buffer samples before it publishes them. The default is 60; IngestRepetition reads a
 * repetition's metrics right after it ends, so its last seconds must already be in CloudWatch.
 */
export const AGENT_FLUSH_SECONDS = 10;

export interface CloudWatchAgentInput {
  /** The stack name (a token is fine): the controller names a cluster stack by its cluster id. */
  readonly clusterId: string;
  /** Which machine this is: a RabbitMQ node or the load generator. */
  readonly role: string;
}

/**
 * The agent configuration (fields as documented in "Manually create or edit the CloudWatch agent configuration file",
 * docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-Agent-Configuration-File-Details.html, and the
 * agent's schema, aws/amazon-cloudwatch-agent translator/config/schema.json):
 * - `metrics.append_dimensions` accepts only the fixed EC2 keys (schema: "we only support fixed key value pair now:
 *   ImageId, InstanceId, InstanceType, AutoScalingGroupName"): InstanceId names the instance;
 * - each plugin's own `append_dimensions` (generalAppendDimensionsDefinition: any key, at most 30) adds the cluster id
 *   and the role, so that IngestRepetition finds a cluster's metrics by ClusterId;
 * - cpu without `resources` and with `totalcpu` reports one cpu-total series: usage_active is the share of all CPUs;
 * - diskio and net per device and interface (IngestRepetition adds whole disks and non-loopback interfaces).
 */
export function cloudWatchAgentConfig(input: CloudWatchAgentInput): object {
  const dimensions = { [CLUSTER_DIMENSION]: input.clusterId, [ROLE_DIMENSION]: input.role };
  const plugin = (name: string) => AGENT_METRICS.filter((metric) => metric.plugin === name).map((metric) => metric.measurement);
  return {
    agent: { metrics_collection_interval: AGENT_INTERVAL_SECONDS, run_as_user: 'cwagent', omit_hostname: true },
    metrics: {
      namespace: CLOUDWATCH_NAMESPACE,
      force_flush_interval: AGENT_FLUSH_SECONDS,
      append_dimensions: { [INSTANCE_DIMENSION]: '${aws:InstanceId}' },
      metrics_collected: {
        cpu: { measurement: plugin('cpu'), totalcpu: true, append_dimensions: dimensions },
        mem: { measurement: plugin('mem'), append_dimensions: dimensions },
        diskio: { measurement: plugin('diskio'), resources: ['*'], append_dimensions: dimensions },
        net: { measurement: plugin('net'), resources: ['*'], append_dimensions: dimensions },
      },
    },
  };
}

/**
 * Boot-script lines that install and start the CloudWatch agent (Amazon Linux 2023). The package comes from the
 * Amazon Linux 2023 repository (amazon-cloudwatch-agent is part of it since release 2022.0.20220728,
 * amazonlinux/amazon-linux-2023 issue #132), which dnf checks against the Amazon Linux signing key, and the
 * repository is locked to the image's release, so the image pins the agent version. Host metrics are an addition to a
 * benchmark, not a condition of it: an agent that does not install or start is reported in the boot log, and the
 * repetitions record "metrics unavailable" instead of failing.
 */
export function cloudWatchAgentBootCommands(input: CloudWatchAgentInput): string[] {
  return [
    '# Host metrics (CPU, memory, disk writes, network) every second to CloudWatch, namespace ' + CLOUDWATCH_NAMESPACE + '.',
    'rmqbench_start_cloudwatch_agent() {',
    '  dnf install -y amazon-cloudwatch-agent || return 1',
    writeFileCommand(CLOUDWATCH_AGENT_CONFIG_PATH, `${JSON.stringify(cloudWatchAgentConfig(input), null, 2)}\n`, CLOUDWATCH_AGENT_CONFIG_DELIMITER),
    `  ${CLOUDWATCH_AGENT_CTL} -a fetch-config -m ec2 -s -c file:${CLOUDWATCH_AGENT_CONFIG_PATH}`,
    '}',
    'rmqbench_start_cloudwatch_agent || echo "rmqbench: the CloudWatch agent could not be installed or started: repetitions will record their host metrics as unavailable" >&2',
  ];
}
