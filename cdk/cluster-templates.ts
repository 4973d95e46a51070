import { Aws, CfnParameter, Fn, Stack, Tags, type App } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { BROKER_COMPONENTS, NODE_NAME_TAG } from '../core/failover/cloud-broker-fault';
import { RabbitMqInstanceTiers } from './instance-tiers';
import { KafkaCluster } from './KafkaCluster';
import { KAFKA_VERSION_ON_AWS } from './kafka-artifacts';
import { LoadGenerator } from './LoadGenerator';
import { NatsCluster } from './NatsCluster';
import { NATS_SERVER_VERSION_ON_CLOUD } from './nats-artifacts';

/**
 * The cluster + load generator templates BenchmarkController ships for the brokers without a count parameter (Kafka,
 * NATS: each node is an instance with its own name, interface and place in the cluster's static configuration), and
 * what every cluster template shares to sit in the controller's VPC. The RabbitMQ templates, one per release with a
 * NodeCount parameter, are built in BenchmarkController.ts.
 */

/**
 * Availability Zones (one private subnet each) of the controller VPC that every cluster stack is spread over: 3, so
 * that
 * losing one zone leaves a majority of a 3-node cluster running (with 2 zones, losing the one holding 2 of 3 nodes
 * leaves
 * 1, which pause_minority pauses). A VPC with only 2 zones is accepted (CLUSTER_MIN_AVAILABILITY_ZONES) and used as is.
 */
export const CLUSTER_AVAILABILITY_ZONE_COUNT = 3;
/** The fewest zones the controller VPC may offer the clusters. */
export const CLUSTER_MIN_AVAILABILITY_ZONES = 2;

/**
 * EC2 instance types the cluster template accepts: family letters, generation digit, attribute letters without g
 * (Graviton),
 * a size. A family of the single letter a (a1, the first Arm family) is excluded; no lookahead, whose support in
 * CloudFormation's AllowedPattern is not documented.
 */
export const CLUSTER_INSTANCE_TYPE_PATTERN = '^([b-z][a-z]*|a[a-z]+)[0-9]+[a-fh-z-]*\\.[a-z0-9-]+$';

/**
 * The parameters every cluster template takes to sit in the controller's VPC (ResultsBucketName, VpcId,
 * PrivateSubnetIds, AvailabilityZones) and the VPC they describe. The constructs need per-subnet values, so the VPC
 * holds the first 2 subnets (present in every accepted list); a template that spreads over all of them uses
 * `subnetIds`.
 */
export function controllerPlacement(stack: Stack, subnetsNote: string) {
  const bucketName = new CfnParameter(stack, 'ResultsBucketName', {
    type: 'String',
    description: 'Raw output bucket of the BenchmarkController',
  });
  const vpcId = new CfnParameter(stack, 'VpcId', {
    type: 'AWS::EC2::VPC::Id',
    description: 'VPC of the BenchmarkController',
  });
  const subnetIds = new CfnParameter(stack, 'PrivateSubnetIds', {
    type: 'List<AWS::EC2::Subnet::Id>',
    description:
      `${CLUSTER_MIN_AVAILABILITY_ZONES} or ${CLUSTER_AVAILABILITY_ZONE_COUNT} private subnets with egress of ` +
      `that VPC, one per Availability Zone${subnetsNote}`,
  });
  const zones = new CfnParameter(stack, 'AvailabilityZones', {
    type: 'List<AWS::EC2::AvailabilityZone::Name>',
    description: 'The Availability Zones of those subnets, in the same order',
  });
  const indexes = Array.from({ length: CLUSTER_MIN_AVAILABILITY_ZONES }, (_, index) => index);
  const vpc = ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId: vpcId.valueAsString,
    availabilityZones: indexes.map((index) => Fn.select(index, zones.valueAsList)),
    privateSubnetIds: indexes.map((index) => Fn.select(index, subnetIds.valueAsList)),
  });
  return { bucketName, subnetIds, vpc };
}

/**
 * Broker counts the controller ships Kafka cluster templates for: one template per count, because each KafkaCluster
 * broker is an instance with its own name, interface and place in the static quorum (controller.quorum.voters), which
 * a count parameter cannot add or remove. Odd counts, as a KRaft quorum wants, and the seeds' 1/3/5 (seed 004).
 */
export const KAFKA_CONTROLLER_BROKER_COUNTS: readonly number[] = [1, 3, 5];
/** The file name of a broker count's Kafka cluster template in synthesizeClusterTemplates' folder. */
export const kafkaClusterTemplateFileName = (brokers: number) =>
  `cluster-kafka-${KAFKA_VERSION_ON_AWS}-${brokers}-brokers.template.json`;
/** KAFKA_CLUSTER_TEMPLATE_URL_<broker count> (the launch function reads the count back from the name). */
export const kafkaClusterTemplateUrlVariable = (brokers: number) => `KAFKA_CLUSTER_TEMPLATE_URL_${brokers}`;
export const kafkaClusterTemplateStackName = (brokers: number) => `Kafka${brokers}Brokers`;

/**
 * One Kafka cluster + load generator template (`Kafka<brokers>Brokers`): a KafkaCluster of `brokers` brokers and a
 * LoadGenerator with the Kafka tools, in the controller's VPC like the RabbitMQ templates (parameters
 * ResultsBucketName,
 * VpcId, PrivateSubnetIds, AvailabilityZones and InstanceType; no smoke-test security group: the Kafka smoke test runs
 * on
 * the load generator). The brokers are spread over the first 2 subnets (broker i in subnet (i - 1) mod 2): the list
 * may hold only 2, and a CloudFormation template cannot select a third conditionally. Each stack's private hosted zone
 * is named after its stack id (`<stack uuid>.rmqbench.internal`), so the zones of the clusters a run launches at once
 * in
 * the one VPC never share a name. Every broker signals its own instance's creation policy once it has seen the whole
 * quorum, so CREATE_COMPLETE means a formed cluster.
 */
export function buildKafkaClusterStack(app: App, brokers: number, nodeImageParameterName: string): void {
  const { stack, vpc, bucketName, instanceType, node } = privateClusterTemplate(
    app,
    kafkaClusterTemplateStackName(brokers),
    { kind: 'Kafka', nodes: 'brokers' },
    nodeImageParameterName,
  );
  const kafka = new KafkaCluster(stack, 'Kafka', { vpc, brokers, ...node });
  placeInstances(kafka.instances, instanceType);
  tagNodes(kafka.instances, 'kafka');
  kafka.allowClientsFrom(addLoadGenerator(stack, vpc, bucketName, { kafkaTools: true }).securityGroup);
}

/**
 * Node counts the controller ships NATS cluster templates for: one template per count, as for Kafka, because every
 * server names all its routes in its configuration (cdk/user-data/nats-node.ts). Seed 004's 1/3/5: a JetStream meta
 * group wants an odd count, and replicas are at most 5.
 */
export const NATS_CONTROLLER_NODE_COUNTS: readonly number[] = [1, 3, 5];
/** The file name of a node count's NATS cluster template in synthesizeClusterTemplates' folder. */
export const natsClusterTemplateFileName = (nodes: number) =>
  `cluster-nats-${NATS_SERVER_VERSION_ON_CLOUD}-${nodes}-nodes.template.json`;
/** NATS_CLUSTER_TEMPLATE_URL_<node count> (the launch function reads the count back from the name). */
export const natsClusterTemplateUrlVariable = (nodes: number) => `NATS_CLUSTER_TEMPLATE_URL_${nodes}`;
export const natsClusterTemplateStackName = (nodes: number) => `Nats${nodes}Nodes`;
/**
 * What the SyncInterval parameter accepts: "always" or a Go duration of whole units (core/nats/nats-plan.ts
 * syncIntervalSchema, which also refuses a zero duration, validates the plan first; no lookahead here, whose support
 * in CloudFormation's AllowedPattern is not documented).
 */
export const SYNC_INTERVAL_PARAMETER_PATTERN = '^(always|([0-9]+(ms|s|m|h))+)$';

/**
 * One NATS cluster + load generator template (`Nats<nodes>Nodes`): a NatsCluster of `nodes` servers and a LoadGenerator
 * with the Go toolchain for rmqbench's NATS load client, placed as the Kafka template is (servers over the first 2
 * subnets, a private hosted zone named after the stack id). Parameters beside the placement: InstanceType (the plan
 * cluster's) and SyncInterval (its `syncInterval`, nats-server's jetstream.sync_interval, a server setting). Every
 * server signals its own instance's creation policy once it has seen the whole meta group with a leader, so
 * CREATE_COMPLETE means a formed cluster.
 */
export function buildNatsClusterStack(app: App, nodes: number, nodeImageParameterName: string): void {
  const { stack, vpc, bucketName, instanceType, node } = privateClusterTemplate(
    app,
    natsClusterTemplateStackName(nodes),
    { kind: 'NATS', nodes: 'servers' },
    nodeImageParameterName,
  );
  const syncInterval = new CfnParameter(stack, 'SyncInterval', {
    type: 'String',
    default: '2m',
    allowedPattern: SYNC_INTERVAL_PARAMETER_PATTERN,
    constraintDescription: 'must be "always" or a duration such as 2m, 10s or 500ms',
    description: "nats-server's jetstream.sync_interval (the plan cluster's syncInterval)",
  });
  const nats = new NatsCluster(stack, 'Nats', { vpc, nodes, ...node, syncInterval: syncInterval.valueAsString });
  placeInstances(nats.instances, instanceType);
  tagNodes(nats.instances, 'nats');
  nats.allowClientsFrom(addLoadGenerator(stack, vpc, bucketName, { natsTools: true }).securityGroup);
}

/**
 * What a Kafka and a NATS template share: the stack in the controller's VPC (the nodes over its first 2 subnets), the
 * InstanceType parameter of the plan cluster's nodes, and the nodes' pinned image and private zone, named after the
 * stack id so that the zones of the clusters a run launches at once in the one VPC never share a name.
 */
function privateClusterTemplate(
  app: App,
  stackName: string,
  broker: { kind: string; nodes: string },
  nodeImageParameterName: string,
) {
  const stack = new Stack(app, stackName);
  const { bucketName, vpc } = controllerPlacement(stack, ` (the ${broker.nodes} use the first 2)`);
  const instanceType = new CfnParameter(stack, 'InstanceType', {
    type: 'String',
    default: RabbitMqInstanceTiers.LOW.toString(),
    // x86-64 only, as for RabbitMQ: the controller pins one x86-64 Amazon Linux 2023 image for every cluster node.
    allowedPattern: CLUSTER_INSTANCE_TYPE_PATTERN,
    constraintDescription:
      'must be an x86-64 EC2 instance type such as c5.xlarge (the controller pins an x86-64 node image)',
    description: `EC2 instance type of the ${broker.kind} ${broker.nodes} (the plan cluster's instanceType)`,
  });
  const node = {
    machineImage: ec2.MachineImage.fromSsmParameter(nodeImageParameterName, { os: ec2.OperatingSystemType.LINUX }),
    // The stack id's last part, a UUID: a DNS label unique to this stack
    // (arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid>).
    zoneName: Fn.join('', [Fn.select(2, Fn.split('/', Aws.STACK_ID)), '.rmqbench.internal']),
  };
  return { stack, vpc, bucketName: bucketName.valueAsString, instanceType, node };
}

/** Built with the default type; the plan cluster's type comes from the InstanceType parameter. */
function placeInstances(instances: readonly ec2.Instance[], instanceType: CfnParameter): void {
  for (const instance of instances)
    (instance.node.defaultChild as ec2.CfnInstance).instanceType = instanceType.valueAsString;
}

/**
 * Tags each node with its component and node name (`kafka-<node.id>`, `nats-<n>`: the constructs number them from 1 in
 * this order), by which the fault step finds them and its role may run commands on them
 * (core/failover/cloud-broker-fault.ts BROKER_COMPONENTS).
 */
function tagNodes(instances: readonly ec2.Instance[], broker: 'kafka' | 'nats'): void {
  instances.forEach((instance, index) => {
    Tags.of(instance).add('rmqbench:component', BROKER_COMPONENTS[broker]);
    Tags.of(instance).add(NODE_NAME_TAG, `${broker}-${index + 1}`);
  });
}

/** The template's load generator with the broker's tools, writing under runs/ of the results bucket. */
function addLoadGenerator(
  stack: Stack,
  vpc: ec2.IVpc,
  bucketName: string,
  tools: { kafkaTools?: boolean; natsTools?: boolean },
): LoadGenerator {
  const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', {
    vpc,
    resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', bucketName),
    resultsPrefix: 'runs/',
    ...tools,
  });
  Tags.of(loadGenerator).add('rmqbench:component', 'load-generator');
  return loadGenerator;
}
