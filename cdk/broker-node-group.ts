import { Duration, Token, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as route53 from 'aws-cdk-lib/aws-route53';
import type { Construct } from 'constructs';
import { DATA_VOLUME_DEVICE } from './user-data/rabbitmq-node';
import { CHECKOV_REASON, skipCheckov } from './checkov';
import { allowHostMetrics } from './host-metrics-agent';

/**
 * The parts KafkaCluster and NatsCluster share: nodes with a stable identity (a network interface and a DNS name in a
 * private hosted zone, created before the instance), an encrypted root and gp3 data volume, a role managed through SSM
 * that publishes host metrics, and the validation of the props both constructs have.
 */

/** Throws, naming `prop`, unless `value` is an integer from `min` to `max`. */
export function requireInteger(prop: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${prop} must be an integer from ${min} to ${max}, got ${value}`);
  }
}

/** The Amazon Linux CPU type of an instance type's architecture. */
export function cpuTypeOf(instanceType: ec2.InstanceType): ec2.AmazonLinuxCpuType {
  return instanceType.architecture === ec2.InstanceArchitecture.ARM_64
    ? ec2.AmazonLinuxCpuType.ARM_64
    : ec2.AmazonLinuxCpuType.X86_64;
}

/**
 * The private hosted zone's name: `zoneName`, checked unless it is a token, or `<prefix>-<8 hex characters of the
 * construct's address>.rmqbench.internal`, unique per construct.
 */
export function resolveZoneName(zoneName: string | undefined, prefix: string, address: string): string {
  const resolved = zoneName ?? `${prefix}-${address.slice(0, 8)}.rmqbench.internal`;
  // RFC 1035 host names: labels of letters, digits and hyphens, 1-63 characters, not starting or ending with a hyphen.
  if (
    !Token.isUnresolved(resolved) &&
    (!/^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$/.test(resolved) || resolved.length > 200)
  ) {
    throw new Error(
      `zoneName ${JSON.stringify(resolved)} must be a lower-case DNS name of at least two labels (letters, ` +
        `digits, hyphens), e.g. '${prefix}.bench.internal'`,
    );
  }
  return resolved;
}

/** Throws unless `bootTimeout` is from 5 to 60 minutes; `why` (e.g. ' (installing ... takes minutes)') follows. */
export function requireBootTimeout(bootTimeout: Duration, why = ''): void {
  if (bootTimeout.toSeconds() < 300 || bootTimeout.toSeconds() > 3600) {
    throw new Error(`bootTimeout must be from 5 to 60 minutes${why}, got ${bootTimeout.toHumanString()}`);
  }
}

/** A node role managed through SSM (Session Manager replaces SSH). */
export function createNodeRole(scope: Construct, id: string, description: string): iam.Role {
  const role = new iam.Role(scope, id, {
    assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
    description,
    managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonSSMManagedInstanceCore')],
  });
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]',
    reason: 'AWS-maintained minimum policy for Session Manager access, which replaces SSH.',
  });
  return role;
}

/** Lets the CloudWatch agent of each node (started by its boot script) publish host metrics with `role`. */
export function allowNodeHostMetrics(role: iam.Role): void {
  allowHostMetrics(role);
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'cloudwatch:PutMetricData supports no resource-level permissions; a cloudwatch:namespace condition ' +
      'limits it to the rmqbench namespace.',
  });
}

/** A node's encrypted gp3 volumes: a 20 GiB root and a data volume at DATA_VOLUME_DEVICE, deleted with the node. */
export function nodeBlockDevices(dataVolumeSizeGiB: number): ec2.BlockDevice[] {
  return [
    {
      deviceName: '/dev/xvda',
      volume: ec2.BlockDeviceVolume.ebs(20, { volumeType: ec2.EbsDeviceVolumeType.GP3, encrypted: true }),
    },
    {
      deviceName: DATA_VOLUME_DEVICE,
      volume: ec2.BlockDeviceVolume.ebs(dataVolumeSizeGiB, {
        volumeType: ec2.EbsDeviceVolumeType.GP3,
        encrypted: true,
        deleteOnTermination: true,
      }),
    },
  ];
}

/** One node of a group with stable identities. */
export interface StableNodeOptions {
  /** Construct id of the instance; its interface and DNS record are `<id>Interface` and `<id>Name`. */
  readonly id: string;
  /** The record's name in `hostedZone` (e.g. `nats-1`). */
  readonly recordName: string;
  /** The interface's description. */
  readonly description: string;
  readonly vpc: ec2.IVpc;
  readonly subnet: ec2.ISubnet;
  readonly securityGroup: ec2.ISecurityGroup;
  readonly hostedZone: route53.IHostedZone;
  readonly role: iam.IRole;
  readonly instanceType: ec2.InstanceType;
  readonly machineImage: ec2.IMachineImage;
  readonly dataVolumeSizeGiB: number;
  /** How long CloudFormation waits for the node's boot script to signal its creation policy. */
  readonly bootTimeout: Duration;
}

/**
 * A node with a stable identity: its network interface and DNS name, created first (they exist before the instance
 * boots and stay the node's for the life of the stack), and its instance on that interface, whose creation policy
 * waits for one signal from the boot script.
 */
export function addStableNode(scope: Construct, options: StableNodeOptions) {
  const networkInterface = new ec2.CfnNetworkInterface(scope, `${options.id}Interface`, {
    subnetId: options.subnet.subnetId,
    groupSet: [options.securityGroup.securityGroupId],
    description: options.description,
  });
  const record = new route53.ARecord(scope, `${options.id}Name`, {
    zone: options.hostedZone,
    recordName: options.recordName,
    target: route53.RecordTarget.fromIpAddresses(networkInterface.attrPrimaryPrivateIpAddress),
    ttl: Duration.seconds(60),
  });
  const instance = new ec2.Instance(scope, options.id, {
    vpc: options.vpc,
    vpcSubnets: { subnets: [options.subnet] },
    instanceType: options.instanceType,
    machineImage: options.machineImage,
    role: options.role,
    securityGroup: options.securityGroup,
    userData: ec2.UserData.forLinux(),
    // IMDSv2 as the instance's own MetadataOptions: requireImdsv2 would add a launch template named
    // <id>LaunchTemplate, a name that must be unique in the account and region, so a second cluster stack (the
    // controller launches several at once) would fail to create it (aws-cdk-lib cx-api/FEATURE_FLAGS.md,
    // @aws-cdk/aws-ec2:uniqueImdsv2TemplateName: deploying the same stack twice to one account and region "would
    // always fail as the generated Launch Template names were the same"; that flag is off in a plain App).
    httpTokens: ec2.HttpTokens.REQUIRED,
    httpPutResponseHopLimit: 1,
    detailedMonitoring: true,
    propagateTagsToVolumeOnCreation: true,
    blockDevices: nodeBlockDevices(options.dataVolumeSizeGiB),
  });
  skipCheckov(instance, [{ id: 'CKV_AWS_46', comment: CHECKOV_REASON.userDataWithoutSecrets }]);
  // The instance's primary interface is the pre-created one (AWS::EC2::Instance NetworkInterfaces, DeviceIndex 0, in
  // the CloudFormation reference: aws-properties-ec2-instance-networkinterface); SubnetId, SecurityGroupIds and the
  // Availability Zone then come from the interface and are not set on the instance.
  const cfnInstance = instance.node.defaultChild as ec2.CfnInstance;
  cfnInstance.addPropertyDeletionOverride('SubnetId');
  cfnInstance.addPropertyDeletionOverride('AvailabilityZone');
  cfnInstance.addPropertyDeletionOverride('SecurityGroupIds');
  cfnInstance.addPropertyOverride('NetworkInterfaces', [
    { DeviceIndex: '0', NetworkInterfaceId: networkInterface.ref },
  ]);
  instance.node.addDependency(record);
  // SUCCESS from the boot script's exit command, or FAILURE on any error, which fails the stack at once.
  cfnInstance.cfnOptions.creationPolicy = {
    resourceSignal: { count: 1, timeout: `PT${options.bootTimeout.toSeconds()}S` },
  };
  Validations.of(instance).acknowledge({
    id: 'AwsSolutions-EC29',
    reason:
      'A benchmark cluster is deleted with its stack after the run; termination protection would block that ' +
      'teardown.',
  });
  return { networkInterface, instance };
}

/**
 * The nodes' security group: all outbound, and inbound from the group itself on each of `internalPorts` (port and
 * rule description), the ports only nodes of the cluster reach; clients are allowed later, by peer.
 */
export function nodeSecurityGroup(
  scope: Construct,
  id: string,
  vpc: ec2.IVpc,
  description: string,
  internalPorts: readonly (readonly [port: number, description: string])[],
): ec2.SecurityGroup {
  const securityGroup = new ec2.SecurityGroup(scope, id, { vpc, description, allowAllOutbound: true });
  for (const [port, ruleDescription] of internalPorts) {
    securityGroup.addIngressRule(securityGroup, ec2.Port.tcp(port), ruleDescription);
  }
  return securityGroup;
}

/** The subnets `selection` picks in `vpc`, at least one (`nodes` names the nodes in the error, e.g. "brokers"). */
export function nodeSubnets(vpc: ec2.IVpc, selection: ec2.SubnetSelection, nodes: string): ec2.ISubnet[] {
  const subnets = vpc.selectSubnets(selection).subnets;
  if (subnets.length === 0) throw new Error(`vpcSubnets selects no subnet of vpc: the ${nodes} need at least one`);
  return subnets;
}
