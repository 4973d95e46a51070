import { createHash } from 'node:crypto';
import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { generateBrokerConfig, policyCommandArgs } from '../../core/broker/broker-config';
import { groupScenariosByCluster, validatePlan, type ClusterGroup } from '../../core/plan/plan';
import { supportsClassicMirroring, versionMatches } from '../../core/broker/rabbitmq-version';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { EXPIRES_AT_TAG, RUN_ID_TAG } from './env';

export interface AwsClusterConfig {
  /**
   * S3 URL of the cluster + load generator template, per exact RabbitMQ version it installs (one per RabbitMqRelease
   * the controller ships).
   */
  readonly templateUrls: Readonly<Record<string, string>>;
  /**
   * S3 URL of the Kafka cluster + load generator template, per broker count it launches
   * (KAFKA_CONTROLLER_BROKER_COUNTS). @default - none: Kafka clusters are refused
   */
  readonly kafkaTemplateUrls?: Readonly<Record<string, string>>;
  /**
   * S3 URL of the NATS cluster + load generator template, per node count it launches (NATS_CONTROLLER_NODE_COUNTS).
   * @default - none: NATS clusters are refused
   */
  readonly natsTemplateUrls?: Readonly<Record<string, string>>;
  /** The RabbitMQ version a plan cluster without `rabbitmqVersion` gets (a key of templateUrls). */
  readonly defaultRabbitmqVersion: string;
  /** The role CloudFormation assumes to create the cluster (the functions only pass it). */
  readonly cloudFormationRoleArn: string;
  readonly resultsBucketName: string;
  /** Hours after which the sweeper deletes a cluster whatever its run's state. */
  readonly expiryHours: number;
  /** Minutes a launch may take before the run gives up on the cluster. */
  readonly launchTimeoutMinutes: number;
  /**
   * Where the cluster stack is placed: the controller's VPC, so that the smoke-test function reaches its internal load
   * balancer.
   */
  readonly network: AwsClusterNetwork;
}

/** The controller VPC values a cluster template takes as parameters. */
export interface AwsClusterNetwork {
  readonly vpcId: string;
  /** One private subnet per Availability Zone, as many as the template expects (2). */
  readonly privateSubnetIds: readonly string[];
  /** The Availability Zones of those subnets, in the same order. */
  readonly availabilityZones: readonly string[];
  /** Security group of the smoke-test function, which the cluster admits on AMQP and management. */
  readonly clientSecurityGroupId: string;
}

/** What a plan cluster asks for: the scheduled cluster carries only the node count and the topology type. */
export type PlanClusterSpec = Pick<
  ClusterGroup,
  'nodes' | 'topology' | 'rabbitmqVersion' | 'instanceType' | 'loadGenerators' | 'syncInterval'
> & {
  readonly broker?: ClusterGroup['broker'];
};

/**
 * The plan cluster a scheduled cluster was laid out from (buildSchedule numbers groupScenariosByCluster's groups in
 * order).
 */
export function planClusterOf(plan: unknown, cluster: ScheduledCluster): PlanClusterSpec {
  const group = groupScenariosByCluster(validatePlan(plan, 'the execution input'))[cluster.index];
  if (!group || group.nodes !== cluster.nodes || group.topology.type !== cluster.topology) {
    throw new Error(
      `cluster ${cluster.clusterId} (index ${cluster.index}, ${cluster.nodes} nodes, ${cluster.topology}) ` +
        `is not a cluster of the execution's plan`,
    );
  }
  return {
    ...(group.broker === 'kafka' || group.broker === 'nats' ? { broker: group.broker } : {}),
    nodes: group.nodes,
    topology: group.topology,
    ...(group.rabbitmqVersion ? { rabbitmqVersion: group.rabbitmqVersion } : {}),
    ...(group.instanceType ? { instanceType: group.instanceType } : {}),
    ...(group.loadGenerators ? { loadGenerators: group.loadGenerators } : {}),
    ...(group.syncInterval ? { syncInterval: group.syncInterval } : {}),
  };
}

/**
 * The template (and the exact RabbitMQ version it installs) for a plan cluster's `rabbitmqVersion`; an unsupported
 * version is refused by name.
 */
export function clusterTemplateFor(
  config: AwsClusterConfig,
  rabbitmqVersion: string | undefined,
): { rabbitmqVersion: string; templateUrl: string } {
  const supported = Object.keys(config.templateUrls).sort();
  const installed =
    rabbitmqVersion === undefined
      ? config.defaultRabbitmqVersion
      : supported.find((version) => versionMatches(rabbitmqVersion, version));
  const templateUrl = installed === undefined ? undefined : config.templateUrls[installed];
  if (installed === undefined || templateUrl === undefined) {
    throw new Error(
      `the AWS target has no cluster template for RabbitMQ ` +
        `${rabbitmqVersion ?? `${config.defaultRabbitmqVersion} (the default)`}: ` +
        `it supports ${supported.join(', ')} (rabbitmqVersion "major.minor" or the exact version)`,
    );
  }
  return { rabbitmqVersion: installed, templateUrl };
}

/**
 * The cluster template's parameters (synthesizeClusterTemplates in cdk/BenchmarkController.ts declares them): the
 * controller network, the node count and the broker policies of the plan cluster, as core/broker/broker-config.ts
 * generates
 * them (`rabbitmqctl` argument vectors, applied by every node once it has started).
 */
export function clusterStackParameters(config: AwsClusterConfig, spec: PlanClusterSpec, rabbitmqVersion: string) {
  const { network } = config;
  if (network.privateSubnetIds.length !== network.availabilityZones.length) {
    throw new Error(
      `the cluster network needs one Availability Zone per private subnet, ` +
        `got subnets ${network.privateSubnetIds.join(',')} and zones ${network.availabilityZones.join(',')}`,
    );
  }
  if (spec.topology.type === 'mirrored' && !supportsClassicMirroring(rabbitmqVersion)) {
    throw new Error(
      `topology "mirrored" needs RabbitMQ 3.x, and this cluster would run RabbitMQ ` +
        `${rabbitmqVersion}${spec.rabbitmqVersion ? '' : ' (the default)'}: ` +
        `set its rabbitmqVersion to a 3.x version the AWS target supports, or use "quorum"`,
    );
  }
  const brokerConfig = generateBrokerConfig({
    topology: spec.topology,
    rabbitmqVersion,
    peerDiscovery: { backend: 'aws' },
    nodeCount: spec.nodes,
  });
  return [
    { ParameterKey: 'ResultsBucketName', ParameterValue: config.resultsBucketName },
    { ParameterKey: 'VpcId', ParameterValue: network.vpcId },
    { ParameterKey: 'PrivateSubnetIds', ParameterValue: network.privateSubnetIds.join(',') },
    { ParameterKey: 'AvailabilityZones', ParameterValue: network.availabilityZones.join(',') },
    { ParameterKey: 'SmokeTestSecurityGroupId', ParameterValue: network.clientSecurityGroupId },
    { ParameterKey: 'NodeCount', ParameterValue: String(spec.nodes) },
    { ParameterKey: 'BrokerPolicies', ParameterValue: JSON.stringify(brokerConfig.policies.map(policyCommandArgs)) },
    // Without one the template's default type is used; the workflow's ValidatePlan requires it for aws runs.
    ...(spec.instanceType === undefined ? [] : [{ ParameterKey: 'InstanceType', ParameterValue: spec.instanceType }]),
    // Several load generators (issue 27); without it the template's default, 1, launches one, as before.
    ...((spec.loadGenerators ?? 1) > 1
      ? [{ ParameterKey: 'LoadGeneratorCount', ParameterValue: String(spec.loadGenerators) }]
      : []),
  ];
}

/** The Kafka template for a plan cluster's broker count; a count without a template is refused by name. */
export function kafkaClusterTemplateFor(config: AwsClusterConfig, brokers: number): string {
  return countTemplateFor(config.kafkaTemplateUrls, brokers, 'Kafka', 'broker(s)');
}

/** The NATS template for a plan cluster's node count; a count without a template is refused by name. */
export function natsClusterTemplateFor(config: AwsClusterConfig, nodes: number): string {
  return countTemplateFor(config.natsTemplateUrls, nodes, 'NATS', 'server(s)');
}

function countTemplateFor(
  templates: Readonly<Record<string, string>> = {},
  count: number,
  broker: string,
  unit: string,
): string {
  const templateUrl = templates[String(count)];
  if (templateUrl === undefined) {
    const counts = Object.keys(templates)
      .map(Number)
      .sort((a, b) => a - b);
    throw new Error(
      `the AWS target has no ${broker} cluster template for ${count} ${unit}: it launches ` +
        `${
          counts.length > 0
            ? counts.join(', ')
            : `no ${broker} cluster (this controller was deployed without ${broker} templates)`
        } ` +
        `(the plan cluster's nodes)`,
    );
  }
  return templateUrl;
}

/**
 * The Kafka cluster template's parameters (buildKafkaClusterStack in cdk/BenchmarkController.ts declares them): the
 * controller network and the brokers' instance type.
 */
export function kafkaClusterStackParameters(config: AwsClusterConfig, spec: PlanClusterSpec) {
  const { network } = config;
  if (network.privateSubnetIds.length !== network.availabilityZones.length) {
    throw new Error(
      `the cluster network needs one Availability Zone per private subnet, ` +
        `got subnets ${network.privateSubnetIds.join(',')} and zones ${network.availabilityZones.join(',')}`,
    );
  }
  return [
    { ParameterKey: 'ResultsBucketName', ParameterValue: config.resultsBucketName },
    { ParameterKey: 'VpcId', ParameterValue: network.vpcId },
    { ParameterKey: 'PrivateSubnetIds', ParameterValue: network.privateSubnetIds.join(',') },
    { ParameterKey: 'AvailabilityZones', ParameterValue: network.availabilityZones.join(',') },
    ...(spec.instanceType === undefined ? [] : [{ ParameterKey: 'InstanceType', ParameterValue: spec.instanceType }]),
    // Several load generators (issue 27); without it the template's default, 1, launches one, as before.
    ...((spec.loadGenerators ?? 1) > 1
      ? [{ ParameterKey: 'LoadGeneratorCount', ParameterValue: String(spec.loadGenerators) }]
      : []),
  ];
}

/**
 * The NATS cluster template's parameters (buildNatsClusterStack in cdk/cluster-templates.ts declares them): those of
 * the Kafka template, and the plan cluster's syncInterval.
 */
export function natsClusterStackParameters(config: AwsClusterConfig, spec: PlanClusterSpec) {
  return [
    ...kafkaClusterStackParameters(config, spec),
    ...(spec.syncInterval === undefined ? [] : [{ ParameterKey: 'SyncInterval', ParameterValue: spec.syncInterval }]),
  ];
}

/** The template and parameters of a plan cluster, by its broker. */
function stackTemplate(config: AwsClusterConfig, spec: PlanClusterSpec) {
  if (spec.broker === 'kafka')
    return {
      templateUrl: kafkaClusterTemplateFor(config, spec.nodes),
      parameters: kafkaClusterStackParameters(config, spec),
    };
  if (spec.broker === 'nats')
    return {
      templateUrl: natsClusterTemplateFor(config, spec.nodes),
      parameters: natsClusterStackParameters(config, spec),
    };
  const { rabbitmqVersion, templateUrl } = clusterTemplateFor(config, spec.rabbitmqVersion);
  return { templateUrl, parameters: clusterStackParameters(config, spec, rabbitmqVersion) };
}

/**
 * CreateStack's ClientRequestToken: 1-128 characters, [a-zA-Z0-9][-a-zA-Z0-9]* (API_CreateStack.html,
 * ClientRequestToken).
 */
const CLIENT_REQUEST_TOKEN = /^[a-zA-Z0-9][-a-zA-Z0-9]{0,127}$/;

/**
 * CreateStack's ClientRequestToken for a run's cluster: the cluster id, shortened, and a digest of the exact run id and
 * cluster id. The cluster id alone is not enough: it keeps only letters, digits and dashes of the run id and drops a
 * leading date, so two runs can share it, and a token that matches an existing stack's makes CloudFormation treat the
 * request as a retry, handing one run's cluster to another; with the digest, that CreateStack fails
 * AlreadyExistsException.
 */
export function createStackToken(runId: string, clusterId: string): string {
  const digest = createHash('sha256').update(`${runId}\n${clusterId}`).digest('hex').slice(0, 16);
  const token = `${clusterId.slice(0, 128 - digest.length - 1)}-${digest}`;
  if (!CLIENT_REQUEST_TOKEN.test(token))
    throw new Error(
      `cluster id ${clusterId} cannot start a CreateStack ClientRequestToken ` +
        `(1-128 of [-a-zA-Z0-9], starting alphanumeric)`,
    );
  return token;
}

export async function launchStack(
  cfn: CloudFormationClient,
  config: AwsClusterConfig,
  runId: string,
  cluster: ScheduledCluster,
  spec: PlanClusterSpec,
  now = new Date(),
) {
  if (spec.nodes !== cluster.nodes)
    throw new Error(`cluster ${cluster.clusterId} has ${cluster.nodes} nodes, but its plan cluster ${spec.nodes}`);
  // The same workflow for both brokers: only the template and its parameters differ; the tags, and so teardown and the
  // sweeper, are the same.
  const { templateUrl, parameters } = stackTemplate(config, spec);
  const expiresAt = new Date(now.getTime() + config.expiryHours * 3_600_000).toISOString();
  await cfn.send(
    new CreateStackCommand({
      StackName: cluster.clusterId,
      TemplateURL: templateUrl,
      RoleARN: config.cloudFormationRoleArn,
      Capabilities: ['CAPABILITY_IAM'],
      Parameters: parameters,
      // Stack tags propagate to every taggable resource of the stack.
      Tags: [
        { Key: RUN_ID_TAG, Value: runId },
        { Key: EXPIRES_AT_TAG, Value: expiresAt },
      ],
      // A token derived from the run and the cluster: an SDK retry of a CreateStack CloudFormation already accepted, or
      // the
      // workflow's retry of the whole launch, is then recognised as the same request instead of failing with
      // AlreadyExistsException (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html,
      // ClientRequestToken: "Specify this token if you plan to retry requests"; 1-128 characters,
      // [a-zA-Z0-9][-a-zA-Z0-9]*).
      // The SDK does not fill it in: it is no idempotency-token member.
      ClientRequestToken: createStackToken(runId, cluster.clusterId),
      // DO_NOTHING keeps a stack that failed to create, with its events, until TeardownCluster deletes it: DELETE would
      // erase the failed resource's reason before CheckClusterReady reads it
      // (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html, OnFailure).
      OnFailure: 'DO_NOTHING',
    }),
  );
  return {
    clusterId: cluster.clusterId,
    readyBy: new Date(now.getTime() + config.launchTimeoutMinutes * 60_000).toISOString(),
    expiresAt,
  };
}
