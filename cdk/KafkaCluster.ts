import { createHash } from 'node:crypto';
import { Aws, CfnOutput, Duration, Stack, Token } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53 from 'aws-cdk-lib/aws-route53';
import { Construct } from 'constructs';
import { RabbitMqInstanceTiers } from './instance-tiers';
import { KAFKA_VERSION_ON_AWS } from './kafka-artifacts';
import { kafkaNodeBootCommands, type KafkaBrokerIdentity } from './user-data/kafka-node';
import { DATA_VOLUME_DEVICE } from './user-data/rabbitmq-node';
import { bootLogWithSignal } from './boot-log';
import {
  addStableNode,
  allowNodeHostMetrics,
  cpuTypeOf,
  createNodeRole,
  nodeSecurityGroup,
  nodeSubnets,
  requireBootTimeout,
  requireInteger,
  resolveZoneName,
} from './broker-node-group';

/** Kafka's client listener (producers, consumers, and replication between brokers). */
export const KAFKA_CLIENT_PORT = 9092;
/** The KRaft controller listener: the metadata quorum, only between brokers. */
export const KAFKA_CONTROLLER_PORT = 9093;

/** The Kafka versions KafkaCluster installs (the jars pinned in kafka-artifacts.ts). */
export const KAFKA_VERSIONS_ON_AWS = [KAFKA_VERSION_ON_AWS] as const;
export type KafkaVersionOnAws = (typeof KAFKA_VERSIONS_ON_AWS)[number];

const MAX_BROKERS = 7;

export interface KafkaClusterProps {
  /**
   * VPC to deploy into; the brokers are spread over its subnets (give it 3 Availability Zones for 3 brokers). Its
   * `enableDnsHostnames` and `enableDnsSupport` must be true, as private hosted zones require
   * (https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/hosted-zone-private-considerations.html); `ec2.Vpc`
   * sets both by default.
   */
  readonly vpc: ec2.IVpc;
  /**
   * Subnets for the brokers; broker i goes to subnet (i - 1) modulo the number of subnets.
   * @default - the VPC's private subnets with egress (the brokers download Java and the jars at boot)
   */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /**
   * Number of brokers, 1 to 7. Every broker is also a KRaft controller (combined mode), so 3 or 5 keep a majority
   * through one or two failures.
   * @default 3
   */
  readonly brokers?: number;
  /**
   * Instance type of the brokers (x86-64 or Graviton: Corretto and the jars run on both).
   * @default RabbitMqInstanceTiers.LOW (m5a.large), the RabbitMQ cluster's default, so the brokers compare like for
   * like
   */
  readonly instanceType?: ec2.InstanceType;
  /**
   * Image of the brokers: Amazon Linux 2023 (the boot script uses dnf and the AWS CLI v2) of the instance type's
   * architecture.
   * @default - the latest Amazon Linux 2023 image, looked up from its public SSM parameter at each deployment
   */
  readonly machineImage?: ec2.IMachineImage;
  /**
   * Kafka version; only the version whose jars are pinned is accepted.
   * @default '4.3.1'
   */
  readonly kafkaVersion?: string;
  /**
   * Peers allowed to reach the client port (9092) of every broker; more with `allowClientsFrom`.
   * @default - none: only the brokers themselves, until a peer is allowed
   */
  readonly allowedPeers?: ec2.IPeer[];
  /**
   * Name of the private hosted zone that names the brokers (`kafka-<i>.<zoneName>`), associated with the VPC only. It
   * must
   * be unique among the zones associated with that VPC (Route 53 refuses a second private zone of the same name there,
   * ConflictingDomainExists: https://docs.aws.amazon.com/Route53/latest/APIReference/API_CreateHostedZone.html); a
   * token
   * (e.g. built from the stack id) is accepted unchecked.
   * @default - `kafka-<8 hex characters of the construct's address>.rmqbench.internal`, unique per construct
   */
  readonly zoneName?: string;
  /**
   * Size of each broker's gp3 data volume (mounted at /var/lib/kafka), in GiB.
   * @default 50
   */
  readonly dataVolumeSizeGiB?: number;
  /**
   * How long CloudFormation waits for each broker to signal that it has installed Kafka and seen the whole quorum.
   * @default Duration.minutes(20)
   */
  readonly bootTimeout?: Duration;
}

/**
 * An Apache Kafka cluster in KRaft combined mode (every broker is also a controller; no ZooKeeper) on EC2.
 *
 * Each broker has a stable identity: a network interface (and so a private IP) created before its instance, a DNS
 * name `kafka-<i>.<zone>` in a private hosted zone pointing at that interface, and `node.id=<i>`. The quorum voters and
 * advertised listeners use those names, so clients and brokers reach each broker by a name that is known when the
 * template is synthesized. See cdk/README.md ("KafkaCluster") for why, and how it compares with Amazon MSK.
 */
export class KafkaCluster extends Construct {
  /** Security group of the brokers. */
  public readonly securityGroup: ec2.SecurityGroup;
  /** The brokers, in node id order (instances[0] has node.id 1). */
  public readonly instances: ec2.Instance[];
  /** The network interface of each broker (its stable private IP), in node id order. */
  public readonly networkInterfaces: ec2.CfnNetworkInterface[];
  /** The private hosted zone holding the brokers' names. */
  public readonly hostedZone: route53.PrivateHostedZone;
  /** `kafka-1.<zone>:9092,kafka-2.<zone>:9092,...`: Kafka clients' bootstrap.servers. */
  public readonly bootstrapServers: string;
  /** The brokers' DNS names, in node id order. */
  public readonly brokerHostNames: string[];
  /** The cluster id every broker's storage is formatted with (derived from the stack name and construct path). */
  public readonly clusterId: string;
  public readonly brokerCount: number;
  public readonly kafkaVersion: KafkaVersionOnAws;
  public readonly role: iam.Role;
  /**
   * Where every broker copies the tail of its boot log (stream `<instance id>/boot`) when its boot script ends, also on
   * failure.
   */
  public readonly bootLogGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: KafkaClusterProps) {
    super(scope, id);
    const settings = resolveSettings(props, this.node.addr);
    this.brokerCount = settings.brokers;
    this.kafkaVersion = settings.kafkaVersion;
    const stack = Stack.of(this);

    // Replication between brokers uses the client listener; the metadata quorum uses the controller listener.
    this.securityGroup = nodeSecurityGroup(
      this,
      'BrokerSecurityGroup',
      props.vpc,
      'Kafka brokers: clients on 9092 from allowed peers, KRaft controller port only between brokers',
      [
        [KAFKA_CLIENT_PORT, 'Kafka replication between brokers'],
        [KAFKA_CONTROLLER_PORT, 'KRaft controller quorum between brokers'],
      ],
    );

    this.hostedZone = new route53.PrivateHostedZone(this, 'Zone', {
      zoneName: settings.zoneName,
      vpc: props.vpc,
      comment: 'rmqbench Kafka broker names',
    });
    const identities: KafkaBrokerIdentity[] = Array.from({ length: settings.brokers }, (_, index) => ({
      nodeId: index + 1,
      hostName: `kafka-${index + 1}.${settings.zoneName}`,
    }));
    this.brokerHostNames = identities.map((broker) => broker.hostName);
    this.bootstrapServers = identities.map((broker) => `${broker.hostName}:${KAFKA_CLIENT_PORT}`).join(',');
    this.clusterId = kafkaClusterId(`${Token.isUnresolved(stack.stackName) ? '' : stack.stackName}/${this.node.path}`);
    this.role = this.createBrokerRole();
    // A broker signals its own instance's creation policy.
    this.bootLogGroup = bootLogWithSignal(this, this.role);
    this.allowBrokerHostMetrics();

    const subnets = nodeSubnets(props.vpc, settings.vpcSubnets, 'brokers');
    const machineImage =
      props.machineImage ?? ec2.MachineImage.latestAmazonLinux2023({ cpuType: cpuTypeOf(settings.instanceType) });

    this.networkInterfaces = [];
    this.instances = [];
    for (const identity of identities) {
      const subnet = subnets[(identity.nodeId - 1) % subnets.length]!;
      const { networkInterface, instance } = this.addBroker(props, settings, identity, subnet, machineImage);
      this.addBrokerBoot(instance.userData, instance, settings, identity, identities);
      this.networkInterfaces.push(networkInterface);
      this.instances.push(instance);
    }

    for (const peer of props.allowedPeers ?? []) this.allowClientsFrom(peer);

    new CfnOutput(this, 'BootstrapServers', {
      value: this.bootstrapServers,
      description: 'Kafka bootstrap.servers (names resolve inside the VPC only)',
    });
    new CfnOutput(this, 'KafkaClusterId', {
      value: this.clusterId,
      description: 'KRaft cluster id the brokers were formatted with',
    });
    new CfnOutput(this, 'BrokerImageId', {
      value: machineImage.getImage(this).imageId,
      description: 'AMI the brokers run (record it with the results to reproduce a run)',
    });
    new CfnOutput(this, 'BootLogGroupName', {
      value: this.bootLogGroup.logGroupName,
      description: 'CloudWatch Logs group with the tail of every broker boot log (stream <instance id>/boot)',
    });
  }

  /** The broker role: SSM management, boot log and signal. */
  private createBrokerRole(): iam.Role {
    return createNodeRole(this, 'BrokerRole', 'Kafka broker: SSM management, boot log, boot signal, host metrics');
  }

  /** The CloudWatch agent of each broker publishes host metrics under Role kafka-broker. */
  private allowBrokerHostMetrics(): void {
    // The CloudWatch agent of each broker (started by its boot script, user-data/kafka-node.ts) publishes its host
    // metrics under Role kafka-broker, as the RabbitMQ nodes and the load generator do under theirs.
    allowNodeHostMetrics(this.role);
  }

  /**
   * One broker: its network interface and DNS name, created first, and its instance on that interface (signalling its
   * creation policy).
   */
  private addBroker(
    props: KafkaClusterProps,
    settings: KafkaClusterSettings,
    identity: KafkaBrokerIdentity,
    subnet: ec2.ISubnet,
    machineImage: ec2.IMachineImage,
  ) {
    // The boot waits for the whole quorum, which needs every name, so the interface, its address and its name exist
    // before the instance boots. CREATE_COMPLETE means this broker booted and saw the whole quorum.
    return addStableNode(this, {
      id: `Broker${identity.nodeId}`,
      recordName: `kafka-${identity.nodeId}`,
      description: `Kafka broker ${identity.nodeId} (${identity.hostName})`,
      vpc: props.vpc,
      subnet,
      securityGroup: this.securityGroup,
      hostedZone: this.hostedZone,
      role: this.role,
      instanceType: settings.instanceType,
      machineImage,
      dataVolumeSizeGiB: settings.dataVolumeSizeGiB,
      bootTimeout: settings.bootTimeout,
    });
  }

  /** The broker's boot script (user-data/kafka-node.ts), which signals its instance's creation policy. */
  private addBrokerBoot(
    userData: ec2.UserData,
    instance: ec2.Instance,
    settings: KafkaClusterSettings,
    identity: KafkaBrokerIdentity,
    identities: KafkaBrokerIdentity[],
  ): void {
    const stack = Stack.of(this);
    const cfnInstance = instance.node.defaultChild as ec2.CfnInstance;
    userData.addOnExitCommands('rmqbench_boot_finished "$exitCode"');
    userData.addCommands(
      ...kafkaNodeBootCommands({
        self: identity,
        all: identities,
        clientPort: KAFKA_CLIENT_PORT,
        controllerPort: KAFKA_CONTROLLER_PORT,
        clusterId: this.clusterId,
        region: stack.region,
        // The deployed stack's name (a controller deploys the synthesized template under rmqbench-<runId>-c<n>).
        stackName: Aws.STACK_NAME,
        instanceLogicalId: stack.getLogicalId(cfnInstance),
        bootLogGroupName: this.bootLogGroup.logGroupName,
        dataVolumeDevice: DATA_VOLUME_DEVICE,
        clusterFormationTimeoutSeconds: Math.max(60, settings.bootTimeout.toSeconds() - 300),
      }),
    );
  }

  /** Let `peer` reach the client port (9092) of every broker. The controller port stays between brokers. */
  public allowClientsFrom(peer: ec2.IPeer): void {
    this.securityGroup.addIngressRule(peer, ec2.Port.tcp(KAFKA_CLIENT_PORT), 'Kafka clients');
  }
}

/**
 * A KRaft cluster id derived from `seed`: the first 16 bytes of its SHA-256 in URL-safe base64 without padding (22
 * characters), the form org.apache.kafka.common.Uuid.fromString decodes (apache/kafka clients/.../common/Uuid.java:
 * Base64.getUrlDecoder, "expected 16 bytes"). Like Uuid.randomUuid it avoids the reserved ids 0 and 1 and a leading "-"
 * (which the command line would take for an option), rehashing until neither applies.
 */
export function kafkaClusterId(seed: string): string {
  for (let attempt = 0; ; attempt++) {
    const bytes = createHash('sha256')
      .update(attempt === 0 ? seed : `${seed}#${attempt}`)
      .digest()
      .subarray(0, 16);
    const id = bytes.toString('base64url');
    const reserved = bytes.subarray(0, 15).every((byte) => byte === 0) && bytes[15]! <= 1;
    if (!id.startsWith('-') && !reserved) return id;
  }
}

interface KafkaClusterSettings {
  readonly brokers: number;
  readonly instanceType: ec2.InstanceType;
  readonly kafkaVersion: KafkaVersionOnAws;
  readonly zoneName: string;
  readonly dataVolumeSizeGiB: number;
  readonly bootTimeout: Duration;
  readonly vpcSubnets: ec2.SubnetSelection;
}

/** Applies every default and rejects out-of-range props, naming them. */
function resolveSettings(props: KafkaClusterProps, address: string): KafkaClusterSettings {
  if (!props || !props.vpc) throw new Error('vpc is required: pass the VPC the brokers (and their clients) run in');
  const brokers = props.brokers ?? 3;
  requireInteger('brokers', brokers, 1, MAX_BROKERS);
  const kafkaVersion = props.kafkaVersion ?? KAFKA_VERSION_ON_AWS;
  if (!(KAFKA_VERSIONS_ON_AWS as readonly string[]).includes(kafkaVersion)) {
    throw new Error(
      `kafkaVersion ${JSON.stringify(kafkaVersion)} is not supported: allowed values are ` +
        `${KAFKA_VERSIONS_ON_AWS.map((v) => `'${v}'`).join(', ')} (the versions whose jars are pinned by ` +
        `checksum)`,
    );
  }
  const zoneName = resolveZoneName(props.zoneName, 'kafka', address);
  const dataVolumeSizeGiB = props.dataVolumeSizeGiB ?? 50;
  requireInteger('dataVolumeSizeGiB', dataVolumeSizeGiB, 1, 16_384);
  const bootTimeout = props.bootTimeout ?? Duration.minutes(20);
  requireBootTimeout(bootTimeout, ' (installing Java and the jars and forming the quorum takes minutes)');
  return {
    brokers,
    instanceType: props.instanceType ?? RabbitMqInstanceTiers.LOW,
    kafkaVersion: kafkaVersion as KafkaVersionOnAws,
    zoneName,
    dataVolumeSizeGiB,
    bootTimeout,
    vpcSubnets: props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
  };
}
