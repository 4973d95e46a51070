import { Aws, CfnOutput, Duration, Fn, Stack, Token, Validations } from 'aws-cdk-lib';
import * as autoscaling from 'aws-cdk-lib/aws-autoscaling';
import type * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { generateBrokerConfig, type BrokerConfig } from '../core/broker/broker-config';
import type { QueueTopology } from '../core/plan/plan-schema';
import { RabbitMqInstanceTiers } from './instance-tiers';
import { RabbitMqRelease } from './rabbitmq-release';
import { rabbitMqNodeBootCommands } from './user-data/rabbitmq-node';
import { nagResourceText } from './nag-finding';
import { CHECKOV_REASON, skipCheckov } from './checkov';
import { bootLogWithSignal } from './boot-log';
import { nodeBlockDevices, requireInteger } from './broker-node-group';
import { addHostMetricsAgent } from './host-metrics-agent';
import { NODE_ROLE } from '../core/metrics/cloudwatch-host-metrics';

/** Client-facing ports of every node and of the load balancer. */
export const AMQP_PORT = 5672;
export const MANAGEMENT_PORT = 15672;
/** Erlang distribution: epmd, inter-node traffic and the CLI tools' port range. */
export const EPMD_PORT = 4369;
export const DISTRIBUTION_PORT = 25672;
export const CLI_PORT_RANGE = { start: 35672, end: 35682 } as const;

const MAX_NODES = 7;
/** The termination lifecycle hook the nodes' drain watcher completes (unique within the group). */
export const DRAIN_LIFECYCLE_HOOK_NAME = 'rmqbench-drain-before-termination';
/** Seconds `rabbitmq-upgrade drain` may take; the hook's heartbeat allows a minute more before terminating anyway. */
const DRAIN_TIMEOUT_SECONDS = 240;

export interface RabbitMqClusterProps {
  /**
   * VPC to deploy into. Give it 3 Availability Zones: with 3 nodes in 2 zones, losing the zone holding 2 of them
   * leaves 1 of 3, which `pause_minority` pauses (the whole cluster stops serving).
   * @default - a new VPC over 3 Availability Zones (one NAT gateway, flow logs): the first 3 zones of the stack's
   * region
   *   when the stack has an account and region (fewer if the region has fewer), or `Fn::GetAZs` zones 0-2 in an
   *   environment-agnostic stack (which then fails to deploy in a region with fewer than 3 zones: give the stack an
   * env)
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
   * Instance type of the nodes: an x86-64 type (Team RabbitMQ's RPM repositories carry no arm64 Erlang, so ARM
   * (Graviton) types are refused). `RabbitMqInstanceTiers` lists the thesis tiers
   * (LOW m5a.large, HIGH r5.xlarge, COMPUTE_XLARGE/2XLARGE/4XLARGE c5).
   * @default RabbitMqInstanceTiers.LOW (m5a.large)
   */
  readonly instanceType?: ec2.InstanceType;
  /**
   * Image of the nodes: an Amazon Linux 2023 x86-64 image (the boot script uses dnf, the AWS CLI v2 and the el9
   * RabbitMQ repositories). Pin it (e.g. `ec2.MachineImage.genericLinux({ [region]: 'ami-...' })`) to make runs
   * reproducible; the image id is a stack output (`NodeImageId`) either way.
   * @default - the latest Amazon Linux 2023 x86-64 image, looked up from its public SSM parameter at each deployment
   */
  readonly machineImage?: ec2.IMachineImage;
  /**
   * How long CloudFormation waits for every node to signal that it has installed RabbitMQ, started and seen the
   * whole group in its cluster. A node that fails signals at once and fails the stack.
   * @default Duration.minutes(20)
   */
  readonly bootTimeout?: Duration;
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
  /** The broker configuration the nodes run, as core/broker/broker-config.ts generated it. */
  public readonly brokerConfig: BrokerConfig;
  /**
   * Where every node copies the tail of its boot log (stream `<instance id>/boot`) when its boot script ends, also on
   * failure.
   */
  public readonly bootLogGroup: logs.LogGroup;
  /** The AMI id the nodes run (resolved at deployment when the image is looked up). */
  public readonly imageId: string;

  private readonly clientPorts: ec2.Port[];

  constructor(scope: Construct, id: string, props: RabbitMqClusterProps = {}) {
    super(scope, id);
    const settings = resolveSettings(props);
    this.nodeCount = settings.nodeCount;
    this.release = settings.release;
    this.topology = settings.topology;

    this.vpc = props.vpc ?? this.createVpc();
    const vpcSubnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS };

    const groups = this.createSecurityGroups();
    this.securityGroup = groups.securityGroup;
    this.loadBalancerSecurityGroup = groups.loadBalancerSecurityGroup;
    const nodePorts = [ec2.Port.tcp(AMQP_PORT), ec2.Port.tcp(MANAGEMENT_PORT)];
    this.clientPorts = settings.tlsPort === undefined ? nodePorts : [...nodePorts, ec2.Port.tcp(settings.tlsPort)];
    const secrets = this.createSecrets();
    this.erlangCookieSecret = secrets.erlangCookieSecret;
    this.adminSecret = secrets.adminSecret;
    this.role = this.createNodeRole();

    // A node signals the group's creation policy.
    this.bootLogGroup = bootLogWithSignal(this, this.role);

    this.brokerConfig = generateBrokerConfig({
      topology: settings.topology,
      rabbitmqVersion: settings.release.rabbitmqVersion,
      peerDiscovery: { backend: 'aws', region: Stack.of(this).region },
      nodeCount: settings.nodeCount,
    });
    // Filled in below, once the group's logical id (which the boot script signals) exists; the metrics agent starts
    // first.
    const userData = ec2.UserData.forLinux();
    addHostMetricsAgent(userData, this.role, { clusterId: Aws.STACK_NAME, role: NODE_ROLE });

    const launch = this.createLaunchTemplate(props, settings, userData);
    this.launchTemplate = launch.launchTemplate;
    this.imageId = launch.imageId;
    this.autoScalingGroup = this.createNodeGroup(settings, vpcSubnets);
    this.addBootCommands(userData, settings);
    const balancer = this.createLoadBalancer(props, settings, vpcSubnets);
    this.loadBalancer = balancer.loadBalancer;
    if (balancer.amqpsEndpoint) this.amqpsEndpoint = balancer.amqpsEndpoint;

    if (!settings.pinCapacity) this.addCpuScaling(settings.scaleOutCpuPercent, settings.scaleInCpuPercent);

    for (const peer of props.allowedPeers ?? []) this.allowClientsFrom(peer);

    this.amqpEndpoint = `amqp://${this.loadBalancer.loadBalancerDnsName}:${AMQP_PORT}`;
    this.managementUrl = `http://${this.loadBalancer.loadBalancerDnsName}:${MANAGEMENT_PORT}`;
    new CfnOutput(this, 'AmqpEndpoint', { value: this.amqpEndpoint, description: 'AMQP endpoint (load balancer)' });
    if (this.amqpsEndpoint)
      new CfnOutput(this, 'AmqpsEndpoint', {
        value: this.amqpsEndpoint,
        description: 'AMQPS endpoint (load balancer)',
      });
    new CfnOutput(this, 'ManagementUrl', { value: this.managementUrl, description: 'RabbitMQ management UI' });
    new CfnOutput(this, 'AdminSecretArn', {
      value: this.adminSecret.secretArn,
      description: 'Secret holding the administrator user name and password',
    });
    new CfnOutput(this, 'AutoScalingGroupName', {
      value: this.autoScalingGroup.autoScalingGroupName,
      description: 'Auto Scaling group of the nodes',
    });
    new CfnOutput(this, 'NodeImageId', {
      value: this.imageId,
      description: 'AMI the nodes run (record it with the results to reproduce a run)',
    });
    new CfnOutput(this, 'BootLogGroupName', {
      value: this.bootLogGroup.logGroupName,
      description: 'CloudWatch Logs group with the tail of every node boot log (stream <instance id>/boot)',
    });
  }

  /**
   * The nodes' group (Erlang distribution only between members) and the load balancer's (AMQP and management to the
   * nodes).
   */
  private createSecurityGroups() {
    const securityGroup = new ec2.SecurityGroup(this, 'NodeSecurityGroup', {
      vpc: this.vpc,
      description: 'RabbitMQ nodes: clients on AMQP/management, Erlang distribution only between members',
      allowAllOutbound: true,
    });
    for (const port of [
      ec2.Port.tcp(EPMD_PORT),
      ec2.Port.tcp(DISTRIBUTION_PORT),
      ec2.Port.tcpRange(CLI_PORT_RANGE.start, CLI_PORT_RANGE.end),
    ]) {
      securityGroup.addIngressRule(securityGroup, port, 'Erlang distribution between cluster members');
    }
    const loadBalancerSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', {
      vpc: this.vpc,
      description: 'RabbitMQ load balancer: AMQP and management from allowed peers',
      allowAllOutbound: false,
    });
    const nodePorts = [ec2.Port.tcp(AMQP_PORT), ec2.Port.tcp(MANAGEMENT_PORT)];
    for (const port of nodePorts) {
      loadBalancerSecurityGroup.addEgressRule(securityGroup, port, 'To the nodes');
      securityGroup.addIngressRule(
        loadBalancerSecurityGroup,
        port,
        'From the load balancer (traffic and health checks)',
      );
    }
    return { securityGroup, loadBalancerSecurityGroup };
  }

  /** The Erlang cookie and the administrator credentials, generated by Secrets Manager. */
  private createSecrets() {
    const erlangCookieSecret = new secretsmanager.Secret(this, 'ErlangCookie', {
      description: 'Erlang cookie shared by the RabbitMQ nodes',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
    });
    const adminSecret = new secretsmanager.Secret(this, 'AdminCredentials', {
      description: 'RabbitMQ administrator user name and password',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ username: 'rmqbench-admin' }),
        generateStringKey: 'password',
        passwordLength: 32,
        excludePunctuation: true,
        includeSpace: false,
      },
    });
    for (const secret of [erlangCookieSecret, adminSecret]) {
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'Rotating the Erlang cookie or the admin password needs a coordinated change on every running node; ' +
          'the cluster is redeployed instead.',
      });
      skipCheckov(secret, [{ id: 'CKV_AWS_149', comment: CHECKOV_REASON.awsManagedEncryption }]);
    }
    return { erlangCookieSecret, adminSecret };
  }

  /** The node role: SSM, peer discovery, reading the cluster secrets. */
  private createNodeRole(): iam.Role {
    const role = new iam.Role(this, 'NodeRole', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      description: 'RabbitMQ node: SSM management, peer discovery, reading the cluster secrets',
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonSSMManagedInstanceCore')],
    });
    // The AWS peer discovery backend lists its own Auto Scaling group's members; these Describe calls
    // support no resource-level permissions.
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'RabbitMqAwsPeerDiscovery',
        actions: [
          'autoscaling:DescribeAutoScalingInstances',
          'autoscaling:DescribeAutoScalingGroups',
          'ec2:DescribeInstances',
        ],
        resources: ['*'],
      }),
    );
    this.erlangCookieSecret.grantRead(role);
    this.adminSecret.grantRead(role);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]',
      reason: 'AWS-maintained minimum policy for Session Manager access, which replaces SSH.',
    });
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Peer discovery calls autoscaling:Describe* and ec2:DescribeInstances, and the metrics agent ' +
        'cloudwatch:PutMetricData (limited to the rmqbench namespace by condition), none of which support ' +
        'resource-level permissions.',
    });
    return role;
  }

  /** The nodes' launch template (IMDSv2, encrypted root and data volumes) and the image it runs. */
  private createLaunchTemplate(props: RabbitMqClusterProps, settings: ClusterSettings, userData: ec2.UserData) {
    const machineImage =
      props.machineImage ?? ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.X86_64 });
    const launchTemplate = new ec2.LaunchTemplate(this, 'LaunchTemplate', {
      instanceType: settings.instanceType,
      machineImage,
      role: this.role,
      securityGroup: this.securityGroup,
      userData,
      requireImdsv2: true,
      httpPutResponseHopLimit: 1,
      detailedMonitoring: true,
      // A replaced node starts blank and rejoins; its predecessor's state is cleaned up by peer discovery.
      blockDevices: nodeBlockDevices(settings.dataVolumeSizeGiB),
    });
    return { launchTemplate, imageId: machineImage.getImage(this).imageId };
  }

  /** The Auto Scaling group of the nodes, its drain hook and the hook's policy. */
  private createNodeGroup(settings: ClusterSettings, vpcSubnets: ec2.SubnetSelection): autoscaling.AutoScalingGroup {
    const group = new autoscaling.AutoScalingGroup(this, 'Nodes', {
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
      // CREATE_COMPLETE (and a finished rolling update) means every node booted and saw the whole group clustered:
      // each node signals once its script has ended, FAILURE on any error (see user-data/rabbitmq-node.ts).
      signals: autoscaling.Signals.waitForCount(settings.nodeCount, { timeout: settings.bootTimeout }),
      // One node at a time, so that quorum queues keep their majority while nodes are replaced.
      updatePolicy: autoscaling.UpdatePolicy.rollingUpdate({
        maxBatchSize: 1,
        minInstancesInService: Math.min(settings.nodeCount, settings.maxCapacity - 1),
      }),
    });
    // Scale-in and replacement wait for the node to drain (its watcher completes the hook; CONTINUE after the heartbeat
    // anyway).
    group.addLifecycleHook('DrainBeforeTermination', {
      lifecycleHookName: DRAIN_LIFECYCLE_HOOK_NAME,
      lifecycleTransition: autoscaling.LifecycleTransition.INSTANCE_TERMINATING,
      heartbeatTimeout: Duration.seconds(DRAIN_TIMEOUT_SECONDS + 60),
      defaultResult: autoscaling.DefaultResult.CONTINUE,
    });
    // A policy of its own: the role's default policy must not wait for the group, whose creation waits for the nodes.
    new iam.Policy(this, 'DrainPolicy', {
      roles: [this.role],
      statements: [
        new iam.PolicyStatement({
          sid: 'CompleteDrainHook',
          actions: ['autoscaling:CompleteLifecycleAction'],
          resources: [group.autoScalingGroupArn],
        }),
      ],
    });
    Validations.of(this).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceText(this, group.autoScalingGroupArn)}]`,
      reason:
        'An Auto Scaling group ARN contains a generated UUID that is known only after creation; the grant ' +
        'names the group.',
    });
    return group;
  }

  /** The node boot script, once the group's logical id (which it signals) exists. */
  private addBootCommands(userData: ec2.UserData, settings: ClusterSettings): void {
    userData.addOnExitCommands('rmqbench_boot_finished "$exitCode"');
    userData.addCommands(
      ...rabbitMqNodeBootCommands({
        brokerConfig: this.brokerConfig,
        release: settings.release,
        region: Stack.of(this).region,
        erlangCookieSecretArn: this.erlangCookieSecret.secretArn,
        adminSecretArn: this.adminSecret.secretArn,
        // The deployed stack's own name: the controller deploys the synthesized cluster template under a name of its
        // own (rmqbench-<runId>-c<n>, lambdas/shared/aws-launch.ts), not the name the template was synthesized with.
        stackName: Aws.STACK_NAME,
        autoScalingGroupLogicalId: Stack.of(this).getLogicalId(
          this.autoScalingGroup.node.defaultChild as autoscaling.CfnAutoScalingGroup,
        ),
        bootLogGroupName: this.bootLogGroup.logGroupName,
        drainLifecycleHookName: DRAIN_LIFECYCLE_HOOK_NAME,
        clusterFormationTimeoutSeconds: Math.max(60, settings.bootTimeout.toSeconds() - 300),
        drainTimeoutSeconds: DRAIN_TIMEOUT_SECONDS,
      }),
    );
    Validations.of(this.autoScalingGroup).acknowledge({
      id: 'AwsSolutions-AS3',
      reason:
        'Scaling events are recorded in the group activity history; add notifications to autoScalingGroup when ' +
        'a topic should receive them.',
    });
  }

  /** The Network Load Balancer, its AMQP and management target groups and listeners (and AMQPS with a certificate). */
  private createLoadBalancer(props: RabbitMqClusterProps, settings: ClusterSettings, vpcSubnets: ec2.SubnetSelection) {
    let amqpsEndpoint: string | undefined;
    const loadBalancer = new elbv2.NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc: this.vpc,
      vpcSubnets: settings.internetFacing ? { subnetType: ec2.SubnetType.PUBLIC } : vpcSubnets,
      internetFacing: settings.internetFacing,
      crossZoneEnabled: settings.crossZoneEnabled,
      securityGroups: [this.loadBalancerSecurityGroup],
    });
    Validations.of(loadBalancer).acknowledge({
      id: 'AwsSolutions-ELB2',
      reason:
        'Network Load Balancer access logs record only TLS connections; enable them with ' +
        'loadBalancer.logAccessLogs when a TLS listener is used.',
    });
    skipCheckov(loadBalancer, [
      {
        id: 'CKV_AWS_91',
        comment:
          'Network Load Balancer access logs record only TLS connections; enable them with ' +
          'loadBalancer.logAccessLogs when a TLS listener is used.',
      },
    ]);

    const { amqpTargets, managementTargets } = this.createTargetGroups();
    amqpTargets.addTarget(this.autoScalingGroup);
    managementTargets.addTarget(this.autoScalingGroup);
    loadBalancer.addListener('Amqp', {
      port: AMQP_PORT,
      protocol: elbv2.Protocol.TCP,
      defaultTargetGroups: [amqpTargets],
    });
    loadBalancer.addListener('Management', {
      port: MANAGEMENT_PORT,
      protocol: elbv2.Protocol.TCP,
      defaultTargetGroups: [managementTargets],
    });
    if (settings.tlsPort !== undefined && props.tlsCertificate) {
      loadBalancer.addListener('Amqps', {
        port: settings.tlsPort,
        protocol: elbv2.Protocol.TLS,
        certificates: [elbv2.ListenerCertificate.fromCertificateManager(props.tlsCertificate)],
        sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
        defaultTargetGroups: [amqpTargets],
      });
      amqpsEndpoint = `amqps://${loadBalancer.loadBalancerDnsName}:${settings.tlsPort}`;
    }
    return { loadBalancer, amqpsEndpoint };
  }

  /** The load balancer's target groups (AMQP, management), each with the health check that means "serves it". */
  private createTargetGroups() {
    // "Healthy" means "serves AMQP": RabbitMQ opens its AMQP listener last, once the node has booted and joined.
    const healthCheck: elbv2.HealthCheck = {
      protocol: elbv2.Protocol.TCP,
      port: String(AMQP_PORT),
      interval: Duration.seconds(10),
      healthyThresholdCount: 3,
      unhealthyThresholdCount: 3,
    };
    // The management target group checks the management listener itself, so a dead management plugin takes the node
    // out of that group. Every HTTP API endpoint, the health checks included, requires basic authentication
    // (rabbitmq-website versioned_docs/version-4.1/http-api-reference.md, "Overview"), which a load balancer health
    // check cannot send; the UI's start page at / is served without it.
    const managementHealthCheck: elbv2.HealthCheck = {
      protocol: elbv2.Protocol.HTTP,
      port: String(MANAGEMENT_PORT),
      path: '/',
      healthyHttpCodes: '200',
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
      healthCheck: managementHealthCheck,
      deregistrationDelay: Duration.seconds(30),
    });
    return { amqpTargets, managementTargets };
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
    // The two step-scaling policies and alarms `scaleOnMetric` would make (the same construct ids, so the same
    // template), built here because StepScalingPolicy always hands its actions a `cooldown` key, deprecated for step
    // scaling ("cooldown is not valid with step scaling action"), and aws-cdk-lib then warns on every synthesis.
    const scaling = new Construct(this.autoScalingGroup, 'CpuScaling');
    const stepAction = (id: string, adjustment: autoscaling.AdjustmentTier) => {
      const action = new autoscaling.StepScalingAction(scaling, id, {
        autoScalingGroup: this.autoScalingGroup,
        adjustmentType: autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        metricAggregationType: autoscaling.MetricAggregationType.AVERAGE,
        // A new node needs minutes to install, join and take queue replicas before its CPU means anything.
        estimatedInstanceWarmup: Duration.minutes(10),
      });
      action.addAdjustment(adjustment);
      return action;
    };
    const alarm = (
      id: string,
      description: string,
      threshold: number,
      comparisonOperator: cloudwatch.ComparisonOperator,
      action: autoscaling.StepScalingAction,
    ) =>
      new cloudwatch.Alarm(scaling, id, {
        metric: cpu,
        alarmDescription: description,
        comparisonOperator,
        evaluationPeriods: 2,
        threshold,
      }).addAlarmAction(new cloudwatchActions.AutoScalingAction(action));
    // At or below scale-in CPU for two periods: one node fewer; at or above scale-out CPU: one more.
    alarm(
      'LowerAlarm',
      'Lower threshold scaling alarm',
      scaleInCpuPercent,
      cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
      stepAction('LowerPolicy', { adjustment: -1, upperBound: 0 }),
    );
    alarm(
      'UpperAlarm',
      'Upper threshold scaling alarm',
      scaleOutCpuPercent,
      cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      stepAction('UpperPolicy', { adjustment: 1, lowerBound: 0 }),
    );
  }

  private createVpc(): ec2.IVpc {
    // An environment-agnostic stack knows only 2 placeholder zones (CDK's Stack.availabilityZones), which would put
    // 3 nodes into 2 zones; ask CloudFormation for the region's first 3 zones instead.
    const agnostic = Stack.of(this).availabilityZones.some((zone) => Token.isUnresolved(zone));
    const vpc = new ec2.Vpc(this, 'Vpc', {
      ...(agnostic ? { availabilityZones: [0, 1, 2].map((index) => Fn.select(index, Fn.getAzs())) } : { maxAzs: 3 }),
      natGateways: 1,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'nodes', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
      ],
    });
    const flowLog = vpc.addFlowLog('FlowLog');
    skipCheckov(flowLog.node.findChild('LogGroup'), [{ id: 'CKV_AWS_158', comment: CHECKOV_REASON.logGroupKms }]);
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
  readonly bootTimeout: Duration;
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
  const { pinCapacity, minCapacity, maxCapacity } = resolveCapacity(props, nodeCount);
  const scaleOutCpuPercent = props.scaleOutCpuPercent ?? 60;
  const scaleInCpuPercent = props.scaleInCpuPercent ?? 30;
  requireInteger('scaleOutCpuPercent', scaleOutCpuPercent, 1, 100);
  requireInteger('scaleInCpuPercent', scaleInCpuPercent, 0, 99);
  if (scaleInCpuPercent >= scaleOutCpuPercent) {
    throw new Error(
      `scaleInCpuPercent (${scaleInCpuPercent}) must be lower than scaleOutCpuPercent (${scaleOutCpuPercent})`,
    );
  }
  const instanceType = props.instanceType ?? RabbitMqInstanceTiers.LOW;
  if (instanceType.architecture === ec2.InstanceArchitecture.ARM_64) {
    // rabbitmq-website versioned_docs/version-4.1/install-rpm.md: "These repository mirrors only provide 64-bit x86
    // (amd64) packages of Erlang"; arm64 builds are only direct downloads, and not made for every patch release
    // (rabbitmq/erlang-rpm README.md).
    throw new Error(
      `instanceType ${instanceType.toString()} is an ARM (Graviton) type, but Team RabbitMQ's RPM repositories ` +
        `provide x86-64 Erlang packages only: use an x86-64 type such as m5a.large, r5.xlarge or c5.xlarge ` +
        `(RabbitMqInstanceTiers)`,
    );
  }
  const bootTimeout = props.bootTimeout ?? Duration.minutes(20);
  if (bootTimeout.toSeconds() < 300 || bootTimeout.toSeconds() > 3600) {
    throw new Error(
      `bootTimeout must be from 5 to 60 minutes (installing and joining takes minutes), got ` +
        `${bootTimeout.toHumanString()}`,
    );
  }
  const dataVolumeSizeGiB = props.dataVolumeSizeGiB ?? 50;
  requireInteger('dataVolumeSizeGiB', dataVolumeSizeGiB, 1, 16_384);
  const release = props.release ?? RabbitMqRelease.V4_1;
  const topology: QueueTopology = props.topology ?? { type: 'quorum' };
  if (topology.type === 'mirrored' && !release.supportsClassicMirroring) {
    throw new Error(
      `topology "mirrored" needs a RabbitMQ 3.x release, but release is RabbitMQ ${release.rabbitmqVersion} ` +
        `(classic mirroring was removed in 4.0): use topology { type: 'quorum' } or release RabbitMqRelease.V3_13`,
    );
  }
  const tlsPort = resolveTlsPort(props);
  return {
    nodeCount,
    minCapacity,
    maxCapacity,
    pinCapacity,
    scaleOutCpuPercent,
    scaleInCpuPercent,
    instanceType,
    bootTimeout,
    dataVolumeSizeGiB,
    release,
    topology,
    internetFacing: props.internetFacing ?? false,
    crossZoneEnabled: props.crossZoneEnabled ?? true,
    tlsPort,
  };
}

/** The node group's bounds: pinned at nodeCount, or nodeCount within [minCapacity, maxCapacity]. */
function resolveCapacity(props: RabbitMqClusterProps, nodeCount: number) {
  const pinCapacity = props.pinCapacity ?? false;
  if (
    pinCapacity &&
    ((props.minCapacity !== undefined && props.minCapacity !== nodeCount) ||
      (props.maxCapacity !== undefined && props.maxCapacity !== nodeCount))
  ) {
    throw new Error(
      `pinCapacity fixes the cluster at nodeCount (${nodeCount}) nodes, but minCapacity is ` +
        `${props.minCapacity} and maxCapacity is ${props.maxCapacity}: remove them or set them to ${nodeCount}`,
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
    throw new Error(
      `nodeCount (${nodeCount}) must lie between minCapacity (${minCapacity}) and maxCapacity (${maxCapacity})`,
    );
  }
  return { pinCapacity, minCapacity, maxCapacity };
}

/** The AMQPS listener's port: only with a certificate, 5671 by default, apart from the AMQP and management ports. */
function resolveTlsPort(props: RabbitMqClusterProps): number | undefined {
  if (props.tlsPort !== undefined && !props.tlsCertificate) {
    throw new Error(
      `tlsPort (${props.tlsPort}) needs tlsCertificate: set tlsCertificate to an ACM certificate, or remove tlsPort`,
    );
  }
  const tlsPort = props.tlsCertificate ? (props.tlsPort ?? 5671) : undefined;
  if (tlsPort !== undefined) {
    requireInteger('tlsPort', tlsPort, 1, 65_535);
    if (tlsPort === AMQP_PORT || tlsPort === MANAGEMENT_PORT) {
      throw new Error(
        `tlsPort (${tlsPort}) must differ from the AMQP (${AMQP_PORT}) and management (${MANAGEMENT_PORT}) ports`,
      );
    }
  }
  return tlsPort;
}
