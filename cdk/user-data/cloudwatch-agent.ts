import {
  AGENT_INTERVAL_SECONDS,
  AGENT_METRICS,
  CLOUDWATCH_NAMESPACE,
  CLUSTER_DIMENSION,
  INSTANCE_DIMENSION,
  ROLE_DIMENSION,
} from '../../core/metrics/cloudwatch-host-metrics';
import { Token } from 'aws-cdk-lib';
import { shellQuote } from '../shell';

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
  /**
   * The stack name (a token is fine): the controller names a cluster stack by its cluster id. Or `$NAME`, a shell
   * variable the boot script has set to it before these lines: a script that already holds the stack name (the Kafka
   * broker's STACK_NAME) then does not repeat the token, whose resolved length counts against EC2's 16 KB of user data.
   */
  readonly clusterId: string;
  /** Which machine this is: a RabbitMQ node, a Kafka broker or the load generator. */
  readonly role: string;
}

/** A `$NAME` clusterId: a shell variable, not a value. */
const SHELL_VARIABLE = /^\$([A-Za-z_][A-Za-z0-9_]*)$/;

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
  if (!input.role || !/^[a-z][a-z0-9-]*$/.test(input.role))
    throw new Error(`role ${JSON.stringify(input.role)} must be lower-case letters, digits and hyphens`);
  const dimensions = { [CLUSTER_DIMENSION]: input.clusterId, [ROLE_DIMENSION]: input.role };
  const plugin = (name: string) =>
    AGENT_METRICS.filter((metric) => metric.plugin === name).map((metric) => metric.measurement);
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
 *
 * Sized for EC2's 16 KB of user data (a Kafka broker's script is close to it): the configuration is one line of JSON
 * (whitespace means nothing to a JSON parser), and the cluster id is the function's argument, so it appears once in
 * the script (as a token, or as a shell variable the script already set) instead of once per plugin. The here-document
 * is therefore unquoted, for `$1` to expand; every other `$`, `\` and backquote of the JSON (the agent's own
 * `${aws:InstanceId}` placeholder) is escaped, so the agent receives it unchanged (bash(1), "Here Documents": with an
 * unquoted word, "the character sequence \<newline> is ignored, and \ must be used to quote the characters \, $, and
 * `").
 */
export function cloudWatchAgentBootCommands(input: CloudWatchAgentInput): string[] {
  const placeholder = 'RMQBENCH_CLUSTER_ID_ARGUMENT';
  const json = JSON.stringify(cloudWatchAgentConfig({ ...input, clusterId: placeholder }));
  if (json.split(placeholder).length !== new Set(AGENT_METRICS.map((metric) => metric.plugin)).size + 1)
    throw new Error('the agent configuration must name the cluster id once per plugin');
  const escaped = json
    .replace(/[\\$`]/g, (character) => `\\${character}`)
    .split(placeholder)
    .join('$1');
  const variable = SHELL_VARIABLE.exec(input.clusterId);
  if (!variable && !Token.isUnresolved(input.clusterId) && !/^[A-Za-z][A-Za-z0-9-]*$/.test(input.clusterId))
    throw new Error(
      `clusterId ${JSON.stringify(input.clusterId)} must be a stack name (letters, digits, hyphens), a token, ` +
        `or a shell variable ($NAME)`,
    );
  const argument = variable ? `"$${variable[1]}"` : shellQuote(input.clusterId);
  return [
    '# Host metrics (CPU, memory, disk writes, network) every second to CloudWatch, namespace ' +
      CLOUDWATCH_NAMESPACE +
      '; $1 is the cluster id.',
    'rmqbench_start_cloudwatch_agent() {',
    '  dnf install -y amazon-cloudwatch-agent || return 1',
    `  cat > ${CLOUDWATCH_AGENT_CONFIG_PATH} <<${CLOUDWATCH_AGENT_CONFIG_DELIMITER}`,
    escaped,
    CLOUDWATCH_AGENT_CONFIG_DELIMITER,
    `  ${CLOUDWATCH_AGENT_CTL} -a fetch-config -m ec2 -s -c file:${CLOUDWATCH_AGENT_CONFIG_PATH}`,
    '}',
    `rmqbench_start_cloudwatch_agent ${argument} || echo "rmqbench: the CloudWatch agent could not be ` +
      `installed or started: repetitions will record their host metrics as unavailable" >&2`,
  ];
}
