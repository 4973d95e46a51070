import { CfnOutput, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as autoscaling from 'aws-cdk-lib/aws-autoscaling';
import type * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { generateBrokerConfig, type BrokerConfig } from '../core/broker-config';
import type { QueueTopology } from '../core/plan-schema';
import { RabbitMqInstanceTiers } from './instance-tiers';
import { RabbitMqRelease } from './rabbitmq-release';
import { DATA_VOLUME_DEVICE, rabbitMqNodeBootCommands } from './user-data/rabbitmq-node';

/** Client-facing ports of every node and of the load balancer. */
export const AMQP_PORT = 5672;
export const MANAGEMENT_PORT = 15672;
/** Erlang distribution: epmd, inter-node traffic and the CLI tools' port range. */
export const EPMD_PORT = 4369;
export const DISTRIBUTION_PORT = 25672;
export const CLI_PORT_RANGE = { start: 35672, end: 35682 } as const;

const MAX_NODES = 7;

export interface RabbitMqClusterProps {
  /**
   * VPC to deploy into.
   * @default - a new VPC over up to 3 Availability Zones, with one NAT gateway and flow logs
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Subnets for the nodes (and for the load balancer when it is internal).
   * @default - the VPC's private subnets with egress
   */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /**
   * Number of RabbitMQ nodes (the Auto Scaling group's desired capacity), 1 to 7.
   * @default 3
   */
  readonly nodeCount?: number;
  /**
   * Smallest number of nodes the scaling policy may scale in to.
   * @default - nodeCount
   */
  readonly minCapacity?: number;
  /**
   * Largest number of nodes the scaling policy may scale out to (at most 7).
   * @default - nodeCount + 2, at most 7
   */
  readonly maxCapacity?: number;
  /**
   * Pin the cluster at exactly `nodeCount` nodes and create no scaling policy, as the thesis did
   * while benchmarking (a scaling event in the middle of a run changes what is measured).
   * @default false
   */
  readonly pinCapacity?: boolean;
  /**
   * Average CPU (percent) above which a node is added.
   * @default 60
   */
  readonly scaleOutCpuPercent?: number;
  /**
   * Average CPU (percent) below which a node is removed.
   * @default 30
   */
  readonly scaleInCpuPercent?: number;
  /**
   * Instance type of the nodes. `RabbitMqInstanceTiers` lists the thesis tiers
   * (LOW m5a.large, HIGH r5.xlarge, COMPUTE_XLARGE/2XLARGE/4XLARGE c5).
   * @default RabbitMqInstanceTiers.LOW (m5a.large)
   */
  readonly instanceType?: ec2.InstanceType;
  /**
   * Size of each node's gp3 data volume (mounted at /var/lib/rabbitmq), in GiB.
   * @default 50
   */
  readonly dataVolumeSizeGiB?: number;
  /**
   * Pinned RabbitMQ and Erlang versions.
   * @default RabbitMqRelease.V4_1
   */
  readonly release?: RabbitMqRelease;
  /**
   * Queue topology the brokers are configured for (policies and queue arguments).
   * `mirrored` needs a 3.x release.
   * @default { type: 'quorum' } (replicated to every node)
   */
  readonly topology?: QueueTopology;
  /**
   * Peers allowed to reach AMQP (and AMQPS) and the management UI, on the load balancer and the nodes.
   * More can be added later with `allowClientsFrom`.
   * @default - none: nothing can connect until a peer is allowed
   */
  readonly allowedPeers?: ec2.IPeer[];
  /**
   * Whether the Network Load Balancer is internet-facing (placed in public subnets).
   * @default false
   */
  readonly internetFacing?: boolean;
  /**
   * Whether the load balancer spreads connections over nodes in every zone rather than its own.
   * @default true
   */
  readonly crossZoneEnabled?: boolean;
  /**
   * Certificate for an AMQPS listener on the load balancer; TLS ends there and is forwarded to 5672.
   * @default - no TLS listener
   */
  readonly tlsCertificate?: acm.ICertificate;
  /**
   * Port of the AMQPS listener. Needs `tlsCertificate`.
   * @default 5671 when tlsCertificate is set
   */
  readonly tlsPort?: number;
}

/**
 * A highly available RabbitMQ cluster: an Auto Scaling group of nodes that form a cluster on their own
 * (AWS peer discovery), behind a Network Load Balancer.
 */
export class RabbitMqCluster extends Construct {
  /** The nodes. */
  public readonly autoScalingGroup: autoscaling.AutoScalingGroup;
  public readonly launchTemplate: ec2.LaunchTemplate;
  public readonly loadBalancer: elbv2.NetworkLoadBalancer;
  /** Security group of the nodes. */
  public readonly securityGroup: ec2.SecurityGroup;
  /** Security group of the load balancer. */
  public readonly loadBalancerSecurityGroup: ec2.SecurityGroup;
  /** The Erlang cookie shared by the nodes. */
  public readonly erlangCookieSecret: secretsmanager.Secret;
  /** `{"username": ..., "password": ...}` of the RabbitMQ administrator. */
  public readonly adminSecret: secretsmanager.Secret;
  public readonly vpc: ec2.IVpc;
  public readonly role: iam.Role;
  /** `amqp://<load balancer DNS name>:5672` */
  public readonly amqpEndpoint: string;
  /** `amqps://<load balancer DNS name>:<tlsPort>`, when a TLS listener exists. */
  public readonly amqpsEndpoint?: string;
  /** `http://<load balancer DNS name>:15672` */
  public readonly managementUrl: string;
  public readonly nodeCount: number;
  public readonly release: RabbitMqRelease;
  public readonly topology: QueueTopology;
  /** The broker configuration the nodes run, as core/broker-config.ts generated it. */
  public readonly brokerConfig: BrokerConfig;

  private readonly clientPorts: ec2.Port[];

  constructor(scope: Construct, id: string, props: RabbitMqClusterProps = {}) {
    super(scope, id);
    const settings = resolveSettings(props);
    this.nodeCount = settings.nodeCount;
    this.release = settings.release;
    this.topology = settings.topology;

    this.vpc = props.vpc ?? this.createVpc();
    const vpcSubnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS };

    this.securityGroup = new ec2.SecurityGroup(this, 'NodeSecurityGroup', {
      vpc: this.vpc,
      description: 'RabbitMQ nodes: clients on AMQP/management, Erlang distribution only between members',
      allowAllOutbound: true,
    });
    for (const port of [ec2.Port.tcp(EPMD_PORT), ec2.Port.tcp(DISTRIBUTION_PORT), ec2.Port.tcpRange(CLI_PORT_RANGE.start, CLI_PORT_RANGE.end)]) {
      this.securityGroup.addIngressRule(this.securityGroup, port, 'Erlang distribution between cluster members');
    }
    this.loadBalancerSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', {
      vpc: this.vpc,
      description: 'RabbitMQ load balancer: AMQP and management from allowed peers',
      allowAllOutbound: false,
    });
    const nodePorts = [ec2.Port.tcp(AMQP_PORT), ec2.Port.tcp(MANAGEMENT_PORT)];
    for (const port of nodePorts) {
      this.loadBalancerSecurityGroup.addEgressRule(this.securityGroup, port, 'To the nodes');
      this.securityGroup.addIngressRule(this.loadBalancerSecurityGroup, port, 'From the load balancer (traffic and health checks)');
    }
    this.clientPorts = settings.tlsPort === undefined ? nodePorts : [...nodePorts, ec2.Port.tcp(settings.tlsPort)];

    this.erlangCookieSecret = new secretsmanager.Secret(this, 'ErlangCookie', {
      description: 'Erlang cookie shared by the RabbitMQ nodes',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
    });
    this.adminSecret = new secretsmanager.Secret(this, 'AdminCredentials', {
      description: 'RabbitMQ administrator user name and password',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ username: 'rmqbench-admin' }),
        generateStringKey: 'password',
        passwordLength: 32,
        excludePunctuation: true,
        includeSpace: false,
      },
    });
    for (const secret of [this.erlangCookieSecret, this.adminSecret]) {
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason: 'Rotating the Erlang cookie or the admin password needs a coordinated change on every running node; the cluster is redeployed instead.',
      });
    }

    this.role = new iam.Role(this, 'NodeRole', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      description: 'RabbitMQ node: SSM management, peer discovery, reading the cluster secrets',
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonSSMManagedInstanceCore')],
    });
    // The AWS peer discovery backend lists its own Auto Scaling group's members; these Describe calls
    // support no resource-level permissions.
    this.role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'RabbitMqAwsPeerDiscovery',
        actions: ['autoscaling:DescribeAutoScalingInstances', 'autoscaling:DescribeAutoScalingGroups', 'ec2:DescribeInstances'],
        resources: ['*'],
      }),
    );
    this.erlangCookieSecret.grantRead(this.role);
    this.adminSecret.grantRead(this.role);
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]',
      reason: 'AWS-maintained minimum policy for Session Manager access, which replaces SSH.',
    });
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'Peer discovery calls autoscaling:Describe* and ec2:DescribeInstances, which support no resource-level permissions.',
    });

    this.brokerConfig = generateBrokerConfig({
      topology: settings.topology,
      rabbitmqVersion: settings.release.rabbitmqVersion,
      peerDiscovery: { backend: 'aws', region: Stack.of(this).region },
      nodeCount: settings.nodeCount,
    });
    const userData = ec2.UserData.forLinux();
    userData.addCommands(
      ...rabbitMqNodeBootCommands({
        brokerConfig: this.brokerConfig,
        release: settings.release,
        region: Stack.of(this).region,
        erlangCookieSecretArn: this.erlangCookieSecret.secretArn,
        adminSecretArn: this.adminSecret.secretArn,
      }),
    );

    this.launchTemplate = new ec2.LaunchTemplate(this, 'LaunchTemplate', {
      instanceType: settings.instanceType,
      machineImage: ec2.MachineImage.latestAmazonLinux2023({
        cpuType: settings.instanceType.architecture === ec2.InstanceArchitecture.ARM_64 ? ec2.AmazonLinuxCpuType.ARM_64 : ec2.AmazonLinuxCpuType.X86_64,
      }),
      role: this.role,
      securityGroup: this.securityGroup,
      userData,
      requireImdsv2: true,
      httpPutResponseHopLimit: 1,
      detailedMonitoring: true,
      blockDevices: [
        { deviceName: '/dev/xvda', volume: ec2.BlockDeviceVolume.ebs(20, { volumeType: ec2.EbsDeviceVolumeType.GP3, encrypted: true }) },
        {
          deviceName: DATA_VOLUME_DEVICE,
          // A replaced node starts blank and rejoins; its predecessor's state is cleaned up by peer discovery.
          volume: ec2.BlockDeviceVolume.ebs(settings.dataVolumeSizeGiB, {
            volumeType: ec2.EbsDeviceVolumeType.GP3,
            encrypted: true,
            deleteOnTermination: true,
          }),
        },
      ],
    });

    this.autoScalingGroup = new autoscaling.AutoScalingGroup(this, 'Nodes', {
      vpc: this.vpc,
      vpcSubnets,
      launchTemplate: this.launchTemplate,
      minCapacity: settings.minCapacity,
      maxCapacity: settings.maxCapacity,
      desiredCapacity: settings.nodeCount,
      // Installing and joining takes minutes; the load balancer's verdict counts only after that.
      healthChecks: autoscaling.HealthChecks.withAdditionalChecks({
        additionalTypes: [autoscaling.AdditionalHealthCheckType.ELB],
        gracePeriod: Duration.minutes(15),
      }),
      cooldown: Duration.minutes(5),
    });
    Validations.of(this.autoScalingGroup).acknowledge({
      id: 'AwsSolutions-AS3',
      reason: 'Scaling events are recorded in the group activity history; add notifications to autoScalingGroup when a topic should receive them.',
    });

    this.loadBalancer = new elbv2.NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc: this.vpc,
      vpcSubnets: settings.internetFacing ? { subnetType: ec2.SubnetType.PUBLIC } : vpcSubnets,
      internetFacing: settings.internetFacing,
      crossZoneEnabled: settings.crossZoneEnabled,
      securityGroups: [this.loadBalancerSecurityGroup],
    });
    Validations.of(this.loadBalancer).acknowledge({
      id: 'AwsSolutions-ELB2',
      reason: 'Network Load Balancer access logs record only TLS connections; enable them with loadBalancer.logAccessLogs when a TLS listener is used.',
    });

    // "Healthy" means "serves AMQP": RabbitMQ opens its AMQP listener last, once the node has booted
    // and joined, so every target group checks that port.
    const healthCheck: elbv2.HealthCheck = {
      protocol: elbv2.Protocol.TCP,
      port: String(AMQP_PORT),
      interval: Duration.seconds(10),
      healthyThresholdCount: 3,
      unhealthyThresholdCount: 3,
    };
    const amqpTargets = new elbv2.NetworkTargetGroup(this, 'AmqpTargets', {
      vpc: this.vpc,
      port: AMQP_PORT,
      protocol: elbv2.Protocol.TCP,
      targetType: elbv2.TargetType.INSTANCE,
      healthCheck,
      deregistrationDelay: Duration.seconds(30),
    });
    const managementTargets = new elbv2.NetworkTargetGroup(this, 'ManagementTargets', {
      vpc: this.vpc,
      port: MANAGEMENT_PORT,
      protocol: elbv2.Protocol.TCP,
      targetType: elbv2.TargetType.INSTANCE,
      healthCheck,
      deregistrationDelay: Duration.seconds(30),
    });
    amqpTargets.addTarget(this.autoScalingGroup);
    managementTargets.addTarget(this.autoScalingGroup);
    this.loadBalancer.addListener('Amqp', { port: AMQP_PORT, protocol: elbv2.Protocol.TCP, defaultTargetGroups: [amqpTargets] });
    this.loadBalancer.addListener('Management', { port: MANAGEMENT_PORT, protocol: elbv2.Protocol.TCP, defaultTargetGroups: [managementTargets] });
    if (settings.tlsPort !== undefined && props.tlsCertificate) {
      this.loadBalancer.addListener('Amqps', {
        port: settings.tlsPort,
        protocol: elbv2.Protocol.TLS,
        certificates: [elbv2.ListenerCertificate.fromCertificateManager(props.tlsCertificate)],
        sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
        defaultTargetGroups: [amqpTargets],
      });
      this.amqpsEndpoint = `amqps://${this.loadBalancer.loadBalancerDnsName}:${settings.tlsPort}`;
    }

    if (!settings.pinCapacity) this.addCpuScaling(settings.scaleOutCpuPercent, settings.scaleInCpuPercent);

    for (const peer of props.allowedPeers ?? []) this.allowClientsFrom(peer);

    this.amqpEndpoint = `amqp://${this.loadBalancer.loadBalancerDnsName}:${AMQP_PORT}`;
    this.managementUrl = `http://${this.loadBalancer.loadBalancerDnsName}:${MANAGEMENT_PORT}`;
    new CfnOutput(this, 'AmqpEndpoint', { value: this.amqpEndpoint, description: 'AMQP endpoint (load balancer)' });
    if (this.amqpsEndpoint) new CfnOutput(this, 'AmqpsEndpoint', { value: this.amqpsEndpoint, description: 'AMQPS endpoint (load balancer)' });
    new CfnOutput(this, 'ManagementUrl', { value: this.managementUrl, description: 'RabbitMQ management UI' });
    new CfnOutput(this, 'AdminSecretArn', { value: this.adminSecret.secretArn, description: 'Secret holding the administrator user name and password' });
    new CfnOutput(this, 'AutoScalingGroupName', { value: this.autoScalingGroup.autoScalingGroupName, description: 'Auto Scaling group of the nodes' });
  }

  /**
   * Let `peer` reach AMQP, AMQPS (when configured) and the management UI, on the load balancer and
   * directly on the nodes (benchmarks connect to a queue's leader or follower by address).
   */
  public allowClientsFrom(peer: ec2.IPeer): void {
    for (const port of this.clientPorts) {
      this.loadBalancerSecurityGroup.addIngressRule(peer, port, 'RabbitMQ clients');
    }
    for (const port of [ec2.Port.tcp(AMQP_PORT), ec2.Port.tcp(MANAGEMENT_PORT)]) {
      this.securityGroup.addIngressRule(peer, port, 'RabbitMQ clients, direct to a node');
    }
  }

  private addCpuScaling(scaleOutCpuPercent: number, scaleInCpuPercent: number): void {
    const cpu = new cloudwatch.Metric({
      namespace: 'AWS/EC2',
      metricName: 'CPUUtilization',
      dimensionsMap: { AutoScalingGroupName: this.autoScalingGroup.autoScalingGroupName },
      statistic: cloudwatch.Stats.AVERAGE,
      period: Duration.minutes(5),
    });
    this.autoScalingGroup.scaleOnMetric('CpuScaling', {
      metric: cpu,
      adjustmentType: autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
      scalingSteps: [
        { upper: scaleInCpuPercent, change: -1 },
        { lower: scaleOutCpuPercent, change: +1 },
      ],
      evaluationPeriods: 2,
      // A new node needs minutes to install, join and take queue replicas before its CPU means anything.
      estimatedInstanceWarmup: Duration.minutes(10),
    });
  }

  private createVpc(): ec2.IVpc {
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 3,
      natGateways: 1,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'nodes', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
      ],
    });
    vpc.addFlowLog('FlowLog');
    return vpc;
  }
}

interface ClusterSettings {
  readonly nodeCount: number;
  readonly minCapacity: number;
  readonly maxCapacity: number;
  readonly pinCapacity: boolean;
  readonly scaleOutCpuPercent: number;
  readonly scaleInCpuPercent: number;
  readonly instanceType: ec2.InstanceType;
  readonly dataVolumeSizeGiB: number;
  readonly release: RabbitMqRelease;
  readonly topology: QueueTopology;
  readonly internetFacing: boolean;
  readonly crossZoneEnabled: boolean;
  readonly tlsPort: number | undefined;
}

/** Applies every default and rejects conflicting or out-of-range props, naming them. */
function resolveSettings(props: RabbitMqClusterProps): ClusterSettings {
  const nodeCount = props.nodeCount ?? 3;
  requireInteger('nodeCount', nodeCount, 1, MAX_NODES);
  const pinCapacity = props.pinCapacity ?? false;
  if (pinCapacity && ((props.minCapacity !== undefined && props.minCapacity !== nodeCount) || (props.maxCapacity !== undefined && props.maxCapacity !== nodeCount))) {
    throw new Error(
      `pinCapacity fixes the cluster at nodeCount (${nodeCount}) nodes, but minCapacity is ${props.minCapacity} and maxCapacity is ${props.maxCapacity}: remove them or set them to ${nodeCount}`,
    );
  }
  const minCapacity = pinCapacity ? nodeCount : (props.minCapacity ?? nodeCount);
  const maxCapacity = pinCapacity ? nodeCount : (props.maxCapacity ?? Math.min(nodeCount + 2, MAX_NODES));
  requireInteger('minCapacity', minCapacity, 1, MAX_NODES);
  requireInteger('maxCapacity', maxCapacity, 1, MAX_NODES);
  if (minCapacity > maxCapacity) {
    throw new Error(`minCapacity (${minCapacity}) must not exceed maxCapacity (${maxCapacity})`);
  }
  if (nodeCount < minCapacity || nodeCount > maxCapacity) {
    throw new Error(`nodeCount (${nodeCount}) must lie between minCapacity (${minCapacity}) and maxCapacity (${maxCapacity})`);
  }
  const scaleOutCpuPercent = props.scaleOutCpuPercent ?? 60;
  const scaleInCpuPercent = props.scaleInCpuPercent ?? 30;
  requireInteger('scaleOutCpuPercent', scaleOutCpuPercent, 1, 100);
  requireInteger('scaleInCpuPercent', scaleInCpuPercent, 0, 99);
  if (scaleInCpuPercent >= scaleOutCpuPercent) {
    throw new Error(`scaleInCpuPercent (${scaleInCpuPercent}) must be lower than scaleOutCpuPercent (${scaleOutCpuPercent})`);
  }
  const dataVolumeSizeGiB = props.dataVolumeSizeGiB ?? 50;
  requireInteger('dataVolumeSizeGiB', dataVolumeSizeGiB, 1, 16_384);
  const release = props.release ?? RabbitMqRelease.V4_1;
  const topology: QueueTopology = props.topology ?? { type: 'quorum' };
  if (topology.type === 'mirrored' && !release.supportsClassicMirroring) {
    throw new Error(
      `topology "mirrored" needs a RabbitMQ 3.x release, but release is RabbitMQ ${release.rabbitmqVersion} (classic mirroring was removed in 4.0): use topology { type: 'quorum' } or release RabbitMqRelease.V3_13`,
    );
  }
  if (props.tlsPort !== undefined && !props.tlsCertificate) {
    throw new Error(`tlsPort (${props.tlsPort}) needs tlsCertificate: set tlsCertificate to an ACM certificate, or remove tlsPort`);
  }
  const tlsPort = props.tlsCertificate ? (props.tlsPort ?? 5671) : undefined;
  if (tlsPort !== undefined) {
    requireInteger('tlsPort', tlsPort, 1, 65_535);
    if (tlsPort === AMQP_PORT || tlsPort === MANAGEMENT_PORT) {
      throw new Error(`tlsPort (${tlsPort}) must differ from the AMQP (${AMQP_PORT}) and management (${MANAGEMENT_PORT}) ports`);
    }
  }
  return {
    nodeCount,
    minCapacity,
    maxCapacity,
    pinCapacity,
    scaleOutCpuPercent,
    scaleInCpuPercent,
    instanceType: props.instanceType ?? RabbitMqInstanceTiers.LOW,
    dataVolumeSizeGiB,
    release,
    topology,
    internetFacing: props.internetFacing ?? false,
    crossZoneEnabled: props.crossZoneEnabled ?? true,
    tlsPort,
  };
}

function requireInteger(prop: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${prop} must be an integer from ${min} to ${max}, got ${value}`);
  }
}
