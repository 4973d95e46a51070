import { Aws, CfnOutput, Duration, Stack, Token } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53 from 'aws-cdk-lib/aws-route53';
import { Construct } from 'constructs';
import { RabbitMqInstanceTiers } from './instance-tiers';
import { NATS_SERVER_VERSION_ON_CLOUD, NATS_SERVER_VERSIONS_ON_CLOUD, natsServerTarball } from './nats-artifacts';
import { natsNodeBootCommands, type NatsServerIdentity } from './user-data/nats-node';
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

/** NATS clients (publishers, consumers, the JetStream API). */
export const NATS_CLIENT_PORT = 4222;
/** Cluster routes between servers (JetStream's replication and meta group travel over them). */
export const NATS_CLUSTER_PORT = 6222;
/** The HTTP monitoring endpoint (/healthz, /jsz, /varz). */
export const NATS_MONITORING_PORT = 8222;

const MAX_SERVERS = 7;
/**
 * A sync_interval nats-server accepts: "always", or a Go duration (time.ParseDuration, as server/opts.go parseDuration
 * reads it) of whole numbers with units; a subset that keeps the value readable in results.
 */
const SYNC_INTERVAL_PATTERN = /^(always|([1-9][0-9]*(ms|s|m|h))+)$/;

export interface NatsClusterProps {
  /**
   * VPC to deploy into; the servers are spread over its subnets. Its `enableDnsHostnames` and `enableDnsSupport`
   * must be true, as private hosted zones require; `ec2.Vpc` sets both by default.
   */
  readonly vpc: ec2.IVpc;
  /**
   * Subnets for the servers; server i goes to subnet (i - 1) modulo the number of subnets.
   * @default - the VPC's private subnets with egress (the servers download the release tarball at boot)
   */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /**
   * Number of nats-servers, 1 to 7. JetStream's meta group is a Raft group of every server, so 3 or 5 keep a majority
   * through one or two failures; a stream's replicas (1, 3 or 5) cannot exceed it.
   * @default 3
   */
  readonly nodes?: number;
  /**
   * Instance type of the servers (x86-64 or Graviton: the release has a tarball for each).
   * @default RabbitMqInstanceTiers.LOW (m5a.large), the RabbitMQ cluster's default, so the brokers compare like for
   * like
   */
  readonly instanceType?: ec2.InstanceType;
  /**
   * Image of the servers: Amazon Linux 2023 of the instance type's architecture.
   * @default - the latest Amazon Linux 2023 image, looked up from its public SSM parameter at each deployment
   */
  readonly machineImage?: ec2.IMachineImage;
  /**
   * nats-server version; only a version whose release tarballs are pinned by checksum (cdk/nats-artifacts.ts).
   * @default '2.15.0'
   */
  readonly natsServerVersion?: string;
  /**
   * JetStream's sync_interval: how often a server fsyncs its stream files, as a duration ('2m', '10s', '500ms'), or
   * 'always' to fsync after every write. Acknowledged messages not yet synced can be lost when servers fail together.
   * @default '2m' (nats-server's own default)
   */
  readonly syncInterval?: string;
  /**
   * Peers allowed to reach the client port (4222) of every server; more with `allowClientsFrom`.
   * @default - none: only the servers themselves, until a peer is allowed
   */
  readonly allowedPeers?: ec2.IPeer[];
  /**
   * Name of the private hosted zone that names the servers (`nats-<i>.<zoneName>`), associated with the VPC only; it
   * must be unique among the zones associated with that VPC. A token is accepted unchecked.
   * @default - `nats-<8 hex characters of the construct's address>.rmqbench.internal`, unique per construct
   */
  readonly zoneName?: string;
  /**
   * Size of each server's gp3 data volume (JetStream's store_dir, mounted at /var/lib/nats), in GiB.
   * @default 50
   */
  readonly dataVolumeSizeGiB?: number;
  /**
   * How long CloudFormation waits for each server to signal that it has installed nats-server and seen the whole
   * JetStream meta group with a leader.
   * @default Duration.minutes(15)
   */
  readonly bootTimeout?: Duration;
}

/**
 * A NATS JetStream cluster on EC2: N nats-servers with JetStream on a gp3 data volume, joined by cluster routes.
 *
 * Each server has a stable identity, as KafkaCluster's brokers do: a network interface (and so a private IP) created
 * before its instance, a DNS name `nats-<i>.<zone>` in a private hosted zone pointing at that interface, and
 * `server_name: nats-<i>`. The routes name every server by that DNS name, so every server's configuration is known when
 * the template is synthesized. See cdk/README.md ("NatsCluster").
 */
export class NatsCluster extends Construct {
  /** Security group of the servers. */
  public readonly securityGroup: ec2.SecurityGroup;
  /** The servers, in index order (instances[0] is nats-1). */
  public readonly instances: ec2.Instance[];
  /** The network interface of each server (its stable private IP), in index order. */
  public readonly networkInterfaces: ec2.CfnNetworkInterface[];
  /** The private hosted zone holding the servers' names. */
  public readonly hostedZone: route53.PrivateHostedZone;
  /** `nats://nats-1.<zone>:4222,nats://nats-2.<zone>:4222,...`: a NATS client's server list. */
  public readonly serverUrls: string;
  /** The servers' DNS names, in index order. */
  public readonly serverHostNames: string[];
  public readonly nodeCount: number;
  public readonly natsServerVersion: string;
  public readonly syncInterval: string;
  public readonly role: iam.Role;
  /** Where every server copies the tail of its boot log (stream `<instance id>/boot`) when its boot script ends. */
  public readonly bootLogGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: NatsClusterProps) {
    super(scope, id);
    const settings = resolveSettings(props, this.node.addr);
    this.nodeCount = settings.nodes;
    this.natsServerVersion = settings.natsServerVersion;
    this.syncInterval = settings.syncInterval;

    this.securityGroup = nodeSecurityGroup(
      this,
      'ServerSecurityGroup',
      props.vpc,
      'NATS servers: clients on 4222 from allowed peers, routes 6222 and monitoring 8222 between servers',
      [
        [NATS_CLUSTER_PORT, 'NATS cluster routes'],
        [NATS_MONITORING_PORT, 'NATS monitoring between servers'],
      ],
    );

    this.hostedZone = new route53.PrivateHostedZone(this, 'Zone', {
      zoneName: settings.zoneName,
      vpc: props.vpc,
      comment: 'rmqbench NATS server names',
    });
    const identities: NatsServerIdentity[] = Array.from({ length: settings.nodes }, (_, index) => ({
      index: index + 1,
      serverName: `nats-${index + 1}`,
      hostName: `nats-${index + 1}.${settings.zoneName}`,
    }));
    this.serverHostNames = identities.map((server) => server.hostName);
    this.serverUrls = identities.map((server) => `nats://${server.hostName}:${NATS_CLIENT_PORT}`).join(',');
    this.role = this.createServerRole();
    this.bootLogGroup = bootLogWithSignal(this, this.role);

    const subnets = nodeSubnets(props.vpc, settings.vpcSubnets, 'servers');
    const cpuType = cpuTypeOf(settings.instanceType);
    const machineImage = props.machineImage ?? ec2.MachineImage.latestAmazonLinux2023({ cpuType });

    this.networkInterfaces = [];
    this.instances = [];
    for (const identity of identities) {
      const subnet = subnets[(identity.index - 1) % subnets.length]!;
      const { networkInterface, instance } = this.addServer(props, settings, identity, subnet, machineImage);
      this.addServerBoot(instance, settings, identity, identities, cpuType);
      this.networkInterfaces.push(networkInterface);
      this.instances.push(instance);
    }

    for (const peer of props.allowedPeers ?? []) this.allowClientsFrom(peer);
    this.addOutputs(machineImage);
  }

  private addOutputs(machineImage: ec2.IMachineImage): void {
    new CfnOutput(this, 'ServerUrls', {
      value: this.serverUrls,
      description: 'NATS server URLs (names resolve inside the VPC only)',
    });
    new CfnOutput(this, 'ServerImageId', {
      value: machineImage.getImage(this).imageId,
      description: 'AMI the servers run (record it with the results to reproduce a run)',
    });
    new CfnOutput(this, 'BootLogGroupName', {
      value: this.bootLogGroup.logGroupName,
      description: 'CloudWatch Logs group with the tail of every server boot log (stream <instance id>/boot)',
    });
  }

  /** The server role: SSM management, boot log and signal, host metrics. */
  private createServerRole(): iam.Role {
    const role = createNodeRole(this, 'ServerRole', 'NATS server: SSM management, boot log, boot signal, host metrics');
    // The CloudWatch agent of each server (user-data/nats-node.ts) publishes host metrics under Role nats-server.
    allowNodeHostMetrics(role);
    return role;
  }

  /** One server: its network interface and DNS name, created first, and its instance on that interface. */
  private addServer(
    props: NatsClusterProps,
    settings: NatsClusterSettings,
    identity: NatsServerIdentity,
    subnet: ec2.ISubnet,
    machineImage: ec2.IMachineImage,
  ) {
    // The routes name every server, so its interface, address and name exist before the instance boots. Its
    // CREATE_COMPLETE means this server booted and saw the whole meta group with a leader.
    return addStableNode(this, {
      id: `Server${identity.index}`,
      recordName: identity.serverName,
      description: `NATS server ${identity.index} (${identity.hostName})`,
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

  /** The server's boot script (user-data/nats-node.ts), which signals its instance's creation policy. */
  private addServerBoot(
    instance: ec2.Instance,
    settings: NatsClusterSettings,
    identity: NatsServerIdentity,
    identities: NatsServerIdentity[],
    cpuType: ec2.AmazonLinuxCpuType,
  ): void {
    const stack = Stack.of(this);
    const cfnInstance = instance.node.defaultChild as ec2.CfnInstance;
    instance.userData.addOnExitCommands('rmqbench_boot_finished "$exitCode"');
    instance.userData.addCommands(
      ...natsNodeBootCommands({
        self: identity,
        all: identities,
        clusterName: 'rmqbench-nats',
        clientPort: NATS_CLIENT_PORT,
        clusterPort: NATS_CLUSTER_PORT,
        monitoringPort: NATS_MONITORING_PORT,
        syncInterval: settings.syncInterval,
        tarball: natsServerTarball(
          settings.natsServerVersion,
          cpuType === ec2.AmazonLinuxCpuType.ARM_64 ? 'arm64' : 'amd64',
        ),
        region: stack.region,
        stackName: Aws.STACK_NAME,
        instanceLogicalId: stack.getLogicalId(cfnInstance),
        bootLogGroupName: this.bootLogGroup.logGroupName,
        dataVolumeDevice: DATA_VOLUME_DEVICE,
        clusterFormationTimeoutSeconds: Math.max(60, settings.bootTimeout.toSeconds() - 180),
      }),
    );
  }

  /** Let `peer` reach the client port (4222) of every server. Routes and monitoring stay between servers. */
  public allowClientsFrom(peer: ec2.IPeer): void {
    this.securityGroup.addIngressRule(peer, ec2.Port.tcp(NATS_CLIENT_PORT), 'NATS clients');
  }
}

interface NatsClusterSettings {
  readonly nodes: number;
  readonly instanceType: ec2.InstanceType;
  readonly natsServerVersion: string;
  readonly syncInterval: string;
  readonly zoneName: string;
  readonly dataVolumeSizeGiB: number;
  readonly bootTimeout: Duration;
  readonly vpcSubnets: ec2.SubnetSelection;
}

/** Applies every default and rejects out-of-range props, naming them. */
function resolveSettings(props: NatsClusterProps, address: string): NatsClusterSettings {
  if (!props || !props.vpc) throw new Error('vpc is required: pass the VPC the servers (and their clients) run in');
  const nodes = props.nodes ?? 3;
  requireInteger('nodes', nodes, 1, MAX_SERVERS);
  const natsServerVersion = props.natsServerVersion ?? NATS_SERVER_VERSION_ON_CLOUD;
  if (!NATS_SERVER_VERSIONS_ON_CLOUD.includes(natsServerVersion)) {
    throw new Error(
      `natsServerVersion ${JSON.stringify(natsServerVersion)} is not supported: allowed values are ` +
        `${NATS_SERVER_VERSIONS_ON_CLOUD.map((v) => `'${v}'`).join(', ')} (the versions whose release tarballs are ` +
        'pinned by checksum)',
    );
  }
  const syncInterval = props.syncInterval ?? '2m';
  // A token (the controller's SyncInterval parameter) is checked by its template's AllowedPattern instead.
  if (!Token.isUnresolved(syncInterval) && !SYNC_INTERVAL_PATTERN.test(syncInterval)) {
    throw new Error(
      `syncInterval ${JSON.stringify(syncInterval)} must be 'always' or a duration of whole numbers with units ` +
        `ms, s, m or h, e.g. '2m', '10s', '1m30s'`,
    );
  }
  const zoneName = resolveZoneName(props.zoneName, 'nats', address);
  const dataVolumeSizeGiB = props.dataVolumeSizeGiB ?? 50;
  requireInteger('dataVolumeSizeGiB', dataVolumeSizeGiB, 1, 16_384);
  const bootTimeout = props.bootTimeout ?? Duration.minutes(15);
  requireBootTimeout(bootTimeout);
  return {
    nodes,
    instanceType: props.instanceType ?? RabbitMqInstanceTiers.LOW,
    natsServerVersion,
    syncInterval,
    zoneName,
    dataVolumeSizeGiB,
    bootTimeout,
    vpcSubnets: props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
  };
}
