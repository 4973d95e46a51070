/**
 * The twin's CloudFormation for cluster stacks (moto 5.2.5 cannot create them: no AWS::SecretsManager::Secret,
 * AWS::EC2::SecurityGroupEgress or AWS::AutoScaling::LifecycleHook, and it starts no instance). From the template the
 * launch function passes to CreateStack, with its parameters:
 * 1. the resources the instances call are made in moto, as the account would hold them: the roles with their inline
 *    and managed policies (the gateway answers each instance's calls with them), the secrets (GenerateSecretString),
 *    the boot log group;
 * 2. the Auto Scaling group's instances start as simulated EC2 instances (test/simulated-vm/harness.ts), one network
 *    namespace each, behind their security groups' rules as packet filters (security-groups.ts), each running the
 *    launch template's user data, verbatim, as cloud-init runs it (as root, with the AMI's AWS CLI) against IMDSv2 that
 *    hands out its instance profile role's credentials; every AWS call it makes goes through the gateway (IAM);
 * 3. the group is CREATE_COMPLETE when its creation policy's count of SUCCESS signals has arrived, CREATE_FAILED on a
 *    FAILURE signal or when every boot has ended short of the count (CloudFormation would wait for the policy's
 *    timeout); the twin then names the packets the security groups dropped.
 * The load balancer is a forwarding process on its own address in the hub (fake-nlb.py) behind its security groups;
 * the load generator (AWS::EC2::Instance) boots its user data next to the nodes. DeleteStack stops and removes all.
 *
 * Package installation goes through the boot script's one seam (/etc/rmqbench/install-override.sh): Debian's
 * rabbitmq-server 3.10.8 stands in for Team RabbitMQ's 3.13.7 RPM, and its unit drops the 3.13-only configuration keys
 * before it starts (the only line of the generated configuration 3.10.8 would refuse).
 * Kafka stacks (KafkaCluster) are simulated too: each broker's network interface takes an address of the hub when the
 * stack is created (its PrimaryPrivateIpAddress), the private hosted zone's A records become /etc/hosts lines of every
 * instance (only for a zone associated with the stack's VPC: Route 53 answers a private zone's names only inside the
 * VPCs associated with it), and each broker instance waits for its own creation policy signal. The brokers install
 * Java through the `dnf` stand-in and download Kafka's jars from the hub's Maven Central; the boot's checksum check
 * runs.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CLOUDWATCH_AGENT_CONFIG_PATH, CLOUDWATCH_AGENT_CTL } from '../../cdk/user-data/cloudwatch-agent';
import { shellQuote } from '../../cdk/shell';
import { DOWNLOAD_MIRROR_HOSTS, downloadMirrorState } from '../simulated-vm/download-mirrors';
import {
  goTarballOfThisMachine,
  installSeamLines,
  natsServerTarballOfThisMachine,
} from '../simulated-vm/local-tarballs';
import { DATA_VOLUME_DEVICE, INSTALL_OVERRIDE_FILE } from '../../cdk/user-data/rabbitmq-node';
import {
  awsCliDirectory,
  ec2UserDataEnvironment as cloudInitEnvironment,
  SimulatedHub,
  type CommandResult,
  type SimulatedVm,
} from '../simulated-vm/harness';
import { TWIN_ACCOUNT, TWIN_REGION } from './aws-requests';
import { generatedName } from './cloudformation-role';
import { TemplateEvaluator, type PhysicalResource, type StackTemplate } from './cfn-template';
import type { MotoAdmin } from './moto-admin';
import {
  applyRuleset,
  describeDrop,
  droppedPackets,
  type DroppedPacket,
  nftRuleset,
  securityGroupRules,
  type SecurityGroupRule,
} from './security-groups';

/** The services the instances call, served over HTTPS in the hub (the test CA signs their certificate). */
const INSTANCE_SERVICES = [
  'secretsmanager',
  'autoscaling',
  'logs',
  'cloudformation',
  'ec2',
  'monitoring',
  's3',
  'ssm',
  'sts',
];

/**
 * The install seam: Debian's rabbitmq-server, with a unit whose start first removes the keys RabbitMQ 3.10.8 does not
 * know (quorum_queue.continuous_membership_reconciliation.*, RabbitMQ 3.13 docs, "Continuous Membership
 * Reconciliation"), which the generated 3.13 configuration holds.
 */
const RABBITMQ_STAND_IN =
  `rmqbench_install_packages() {
  command -v rabbitmq-server >/dev/null || return 1
  cat > /usr/local/sbin/rmqbench-twin-rabbitmq-server <<'EOF'
#!/bin/sh
sed -i '/^quorum_queue\\.continuous_membership_reconciliation\\./d' /etc/rabbitmq/rabbitmq.conf
exec /usr/lib/rabbitmq/bin/rabbitmq-server "$@"
EOF
  chmod 755 /usr/local/sbin/rmqbench-twin-rabbitmq-server
  sed 's|^ExecStart=.*|ExecStart=/usr/local/sbin/rmqbench-twin-rabbitmq-server|' ` +
  `/lib/systemd/system/rabbitmq-server.service > /etc/systemd/system/rabbitmq-server.service
}
`;

export type ResourceStatus = 'CREATE_IN_PROGRESS' | 'CREATE_COMPLETE' | 'CREATE_FAILED';

export interface ResourceEvent {
  readonly logicalId: string;
  readonly type: string;
  readonly status: ResourceStatus | 'DELETE_COMPLETE';
  readonly reason?: string;
  /** The resource's physical id, once it has one (e.g. a log group's name). */
  readonly physicalId?: string;
  readonly at: Date;
}

export interface SimulatedInstance {
  readonly instanceId: string;
  readonly vm: SimulatedVm;
  readonly groupIds: readonly string[];
  /** The stand-alone instance's logical id (absent for an Auto Scaling group's instances). */
  readonly logicalId?: string;
  /** Target groups the instance is registered in (its Auto Scaling group's TargetGroupARNs). */
  readonly targetGroups?: readonly string[];
  /** The access key of its instance profile credentials (the gateway's session of the instance). */
  readonly accessKeyId: string;
  /** Its tags, as DescribeInstances would show them (the stack's, CloudFormation's, its group's or its own). */
  readonly tags: Readonly<Record<string, string>>;
  readonly launchedAt: Date;
  boot?: Promise<CommandResult>;
  result?: CommandResult;
}

export interface ClusterStackRequest {
  readonly stackName: string;
  readonly stackId: string;
  readonly template: StackTemplate;
  readonly parameters: Readonly<Record<string, string>>;
  /**
   * The stack's tags, which CloudFormation propagates to the resources it creates (CreateStack API reference, Tags:
   * "CloudFormation also propagates these tags to the resources created in the stack"), beside its own
   * aws:cloudformation:stack-name, stack-id and logical-id tags.
   */
  readonly tags: Readonly<Record<string, string>>;
}

export interface ClusterStackOptions {
  readonly admin: MotoAdmin;
  /**
   * Credentials for a role, as the gateway issues them (it then attributes the calls signed with them to that role).
   */
  readonly session: (
    roleArn: string,
    sessionName: string,
  ) => { accessKeyId: string; secretAccessKey: string; sessionToken: string };
  /** The gateway's Unix socket, to which the hub's endpoints hand every instance call. */
  readonly gatewaySocket: string;
  /** Third octet of the hub's 10.91.X.0/24. */
  readonly subnet: number;
  /**
   * Seconds boots may stay short of their signals after a security group first dropped a packet before the twin fails
   * the group. @default BLOCKED_BOOT_SECONDS
   */
  readonly blockedBootSeconds?: number;
  readonly log?: (line: string) => void;
}

/**
 * The resource types the twin's CloudFormation creates (or, for the lifecycle hook, records: no scale-in happens in a
 * run).
 */
const SIMULATED_TYPES = new Set([
  'AWS::EC2::SecurityGroup',
  'AWS::EC2::SecurityGroupIngress',
  'AWS::EC2::SecurityGroupEgress',
  'AWS::SecretsManager::Secret',
  'AWS::IAM::Role',
  'AWS::IAM::Policy',
  'AWS::IAM::InstanceProfile',
  'AWS::Logs::LogGroup',
  'AWS::EC2::LaunchTemplate',
  'AWS::AutoScaling::AutoScalingGroup',
  'AWS::AutoScaling::LifecycleHook',
  'AWS::ElasticLoadBalancingV2::LoadBalancer',
  'AWS::ElasticLoadBalancingV2::Listener',
  'AWS::ElasticLoadBalancingV2::TargetGroup',
  'AWS::EC2::Instance',
  'AWS::EC2::NetworkInterface',
  'AWS::Route53::HostedZone',
  'AWS::Route53::RecordSet',
]);

/** The first host number of the network interfaces the stack creates (KafkaCluster's brokers, one each). */
const FIRST_INTERFACE_HOST = 20;

/** This folder (also when a bundle elsewhere, e.g. dist/twin, holds this module). */
const HERE = existsSync(join(__dirname, 'fake-nlb.py')) ? __dirname : join(__dirname, '../../test/twin');

/** The load balancer's host number in the hub's /24. */
const LOAD_BALANCER_HOST = 4;

/**
 * `dnf` on every instance: Java is this machine's; `amazon-cloudwatch-agent` is the twin's stand-in agent
 * (cloudwatch-agent-stand-in.py, run by the instance's AWS CLI's Python) behind the agent's control script, so that
 * the boot's own lines configure and start it and its metrics reach the twin's CloudWatch with the instance role; any
 * other package is not in the twin (the boots treat it as optional).
 */
function dnfStandIn(): string {
  const cli = realpathSync(join(awsCliDirectory(), 'aws'));
  const python = ['python3', 'python'].map((name) => join(dirname(cli), name)).find((path) => existsSync(path));
  const agent = python
    ? [
        `  "install -y amazon-cloudwatch-agent")`,
        `    mkdir -p ${dirname(CLOUDWATCH_AGENT_CTL)} ${dirname(CLOUDWATCH_AGENT_CONFIG_PATH)}`,
        `    printf '#!/bin/sh\\nexec "%s" "%s" "$@"\\n' ${shellQuote(python)} ` +
          `${shellQuote(join(HERE, 'cloudwatch-agent-stand-in.py'))} > ${CLOUDWATCH_AGENT_CTL}`,
        `    chmod 755 ${CLOUDWATCH_AGENT_CTL} ;;`,
      ]
    : [];
  return [
    '#!/bin/sh',
    'case "$*" in',
    '  *java-21-amazon-corretto-headless*) command -v java >/dev/null ;;',
    ...agent,
    '  *) echo "dnf (twin): no package repository in the twin for: $*" >&2; exit 1 ;;',
    'esac',
    '',
  ].join('\n');
}

/**
 * How long boots may stay short of their signals after a security group dropped a packet before the twin fails the
 * group.
 */
const BLOCKED_BOOT_SECONDS = 90;

/** How long the twin still waits for a signal once every boot of a resource has ended without it. */
const SIGNAL_GRACE_SECONDS = 20;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** One cluster stack as the twin's CloudFormation holds it. */
export class ClusterStack {
  readonly events: ResourceEvent[] = [];
  readonly instances: SimulatedInstance[] = [];
  readonly physical = new Map<string, PhysicalResource>();
  rules: SecurityGroupRule[] = [];
  /** The simulated load balancer's address in the hub, its DNS name and its security groups. */
  private loadBalancer?: { address: string; dnsName: string; groupIds: readonly string[] };
  /** Other interfaces in the hub (functions attached to the VPC) and their security groups. */
  private readonly interfaces = new Map<string, readonly string[]>();
  /** CIDRs of the subnets the stack's instances are launched in (PrivateSubnetIds), from the twin's EC2. */
  private vpcCidrs: string[] = [];
  private hub?: SimulatedHub;
  private evaluator!: TemplateEvaluator;
  /** How many network interfaces namesOf has given an address. */
  private interfaceCount = 0;
  /** How many stand-alone instances without a network interface of the stack (load generators) have started. */
  private loadGeneratorCount = 0;
  private done?: Promise<void>;
  deleted = false;

  constructor(
    readonly request: ClusterStackRequest,
    private readonly options: ClusterStackOptions,
  ) {}

  /** Starts creating; `settled()` resolves when the stack is complete or failed. */
  start(): void {
    this.done = this.create().catch((error: Error) => {
      const current = [...this.events]
        .reverse()
        .find(
          (event) =>
            event.status === 'CREATE_IN_PROGRESS' &&
            !this.events.some((later) => later.logicalId === event.logicalId && later.status !== 'CREATE_IN_PROGRESS'),
        );
      this.event(
        current?.logicalId ?? this.request.stackName,
        current?.type ?? 'AWS::CloudFormation::Stack',
        'CREATE_FAILED',
        error.message,
      );
    });
  }

  settled(): Promise<void> {
    return this.done ?? Promise.resolve();
  }

  /** The stack's status as DescribeStacks shows it, and the reason of a failure. */
  status(): { status: string; reason?: string } {
    if (this.deleted) return { status: 'DELETE_COMPLETE' };
    const failed = this.events.find((event) => event.status === 'CREATE_FAILED');
    if (failed)
      return {
        status: 'ROLLBACK_COMPLETE',
        reason: `The following resource(s) failed to create: [${failed.logicalId}]. Rollback requested by user.`,
      };
    const last = this.events.at(-1);
    return last?.logicalId === this.request.stackName && last.status === 'CREATE_COMPLETE'
      ? { status: 'CREATE_COMPLETE' }
      : { status: 'CREATE_IN_PROGRESS' };
  }

  outputs(): Record<string, string> {
    const outputs: Record<string, string> = {};
    for (const [key, output] of Object.entries(this.request.template.Outputs ?? {})) {
      try {
        outputs[key] = this.evaluator.string(output.Value);
      } catch {
        // an output of a resource the twin does not simulate yet stays absent
      }
    }
    return outputs;
  }

  private event(
    logicalId: string,
    type: string,
    status: ResourceEvent['status'],
    reason?: string,
    physicalId?: string,
  ): void {
    this.events.push({
      logicalId,
      type,
      status,
      ...(reason ? { reason } : {}),
      ...(physicalId ? { physicalId } : {}),
      at: new Date(),
    });
    this.options.log?.(`[twin] stack ${this.request.stackName}: ${logicalId} ${status}${reason ? `: ${reason}` : ''}`);
  }

  private async create(): Promise<void> {
    const { template, stackName } = this.request;
    this.event(stackName, 'AWS::CloudFormation::Stack', 'CREATE_IN_PROGRESS', 'User Initiated');
    this.evaluator = new TemplateEvaluator(template, {
      stackName,
      stackId: this.request.stackId,
      parameters: this.request.parameters,
      ssmParameters: await this.ssmParameters(),
      physical: this.physical,
    });
    for (const logicalId of Object.keys(template.Resources)) this.physical.set(logicalId, this.namesOf(logicalId));
    await this.createInMoto();
    // The log groups are created first (the instances' boot logs go there) and carry their names as physical ids, as
    // DescribeStackEvents shows them (the launch check finds the boot log group by them:
    // lambdas/shared/aws-cluster.ts).
    for (const [logicalId] of Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Logs::LogGroup')) {
      this.event(logicalId, 'AWS::Logs::LogGroup', 'CREATE_IN_PROGRESS');
      this.event(logicalId, 'AWS::Logs::LogGroup', 'CREATE_COMPLETE', undefined, this.physical.get(logicalId)!.ref);
    }
    await this.readVpcCidrs();
    this.rules = securityGroupRules(template, this.evaluator).map((rule) => this.mapRuleCidr(rule));
    // A resource whose Condition is false is not created (CloudFormation User Guide, "Conditions syntax": "resources
    // ... that are associated with a condition are created only if the condition is true"), e.g. the load generators
    // past the cluster template's LoadGeneratorCount (cdk/cluster-template-load-generators.ts).
    const created = (resource: { Condition?: string }) =>
      resource.Condition === undefined || this.evaluator.condition(resource.Condition);
    const unsimulated = Object.entries(template.Resources).find(
      ([, resource]) => created(resource) && !SIMULATED_TYPES.has(resource.Type),
    );
    if (unsimulated) {
      this.event(
        unsimulated[0],
        unsimulated[1].Type,
        'CREATE_FAILED',
        `TwinCannotProvision: the twin does not simulate ${unsimulated[1].Type} yet`,
      );
      return;
    }
    this.hub = await this.startHub();
    const byType = (type: string) =>
      Object.keys(template.Resources).filter(
        (logicalId) => template.Resources[logicalId]!.Type === type && created(template.Resources[logicalId]!),
      );
    const signalled = byType('AWS::EC2::Instance').map((logicalId) => this.createInstance(logicalId));
    for (const logicalId of byType('AWS::AutoScaling::AutoScalingGroup')) await this.createGroup(logicalId);
    await Promise.all(signalled);
    if (this.events.some((event) => event.status === 'CREATE_FAILED')) return;
    for (const logicalId of byType('AWS::ElasticLoadBalancingV2::LoadBalancer'))
      await this.createLoadBalancer(logicalId);
    this.event(stackName, 'AWS::CloudFormation::Stack', 'CREATE_COMPLETE');
  }

  /**
   * A stand-alone instance: the load generator, or one of KafkaCluster's brokers. It runs as soon as EC2 has started
   * it, its user data on its own; one with a creation policy (a broker) is complete at its own SUCCESS signal (the
   * returned promise). `dnf` is a stand-in that "installs" Java (this machine's) and nothing else; Maven Central is
   * the hub's copy of the Maven cache (scripts/setup.sh fills it), so the boot's own checksum checks run on the real
   * jars. The load generator keeps private /opt and /usr/local/bin, /proc and fstab. A broker is attached to its
   * network interface (its address and security groups are the interface's), has its data volume (/dev/sdf) and
   * private /etc, /opt and /var/lib (its boot adds a `kafka` user and writes /opt/kafka, /etc/kafka, /var/lib/kafka),
   * and the zone's names of its address.
   */
  private createInstance(logicalId: string): Promise<void> | undefined {
    const resource = this.request.template.Resources[logicalId]!;
    const properties = this.evaluator.resolve(resource.Properties ?? {}) as {
      UserData?: string;
      IamInstanceProfile?: string;
      SecurityGroupIds?: string[];
      NetworkInterfaces?: { DeviceIndex: string; NetworkInterfaceId: string }[];
      BlockDeviceMappings?: { DeviceName: string; Ebs?: { VolumeSize?: number } }[];
      Tags?: { Key: string; Value: string }[];
    };
    const tags = this.resourceTags(
      logicalId,
      Object.fromEntries((properties.Tags ?? []).map((tag) => [tag.Key, tag.Value])),
    );
    this.event(logicalId, 'AWS::EC2::Instance', 'CREATE_IN_PROGRESS');
    const instanceId = this.physical.get(logicalId)!.ref;
    const roleArn = this.profileRole(properties.IamInstanceProfile ?? '');
    const attached = this.attachedInterface(logicalId, properties.NetworkInterfaces);
    const hostNumber = attached ? Number(attached.ip.split('.')[3]) : 30 + this.loadGeneratorCount++;
    const dataVolume = properties.BlockDeviceMappings?.find((mapping) => mapping.DeviceName === DATA_VOLUME_DEVICE);
    const credentials = this.instanceCredentials(roleArn, instanceId);
    const vm = this.hub!.createVm(
      instanceId,
      `ip-10-91-${this.options.subnet}-${hostNumber}`,
      {
        '/var/lib/cloud/instance/user-data.txt': { content: properties.UserData ?? '', mode: 0o700 },
        '/usr/local/sbin/dnf': { content: dnfStandIn(), mode: 0o755 },
        ...this.releaseSeam(properties.UserData ?? ''),
      },
      {
        hostNumber,
        ...(attached
          ? {
              overlays: ['/etc', '/opt', '/var/lib'],
              dnsNames: this.zoneNamesOf(attached.ip),
              ...(dataVolume
                ? { blockDevice: DATA_VOLUME_DEVICE, blockDeviceGiB: Number(dataVolume.Ebs?.VolumeSize ?? 1) }
                : {}),
            }
          : { overlays: ['/opt', '/usr/local/bin'], privateProc: true }),
        state: { instanceId, inGroup: false, ...credentials },
      },
    );
    const instance: SimulatedInstance = {
      instanceId,
      vm,
      groupIds: attached?.groupIds ?? properties.SecurityGroupIds ?? [],
      logicalId,
      accessKeyId: credentials.credentials['AccessKeyId']!,
      tags,
      launchedAt: new Date(),
    };
    this.instances.push(instance);
    this.boot(instance);
    const signals = resource.CreationPolicy?.ResourceSignal?.Count;
    if (signals === undefined) {
      this.event(logicalId, 'AWS::EC2::Instance', 'CREATE_COMPLETE');
      return undefined;
    }
    return this.awaitSignals(logicalId, 'AWS::EC2::Instance', Number(this.evaluator.resolve(signals)), [instance]);
  }

  /**
   * The install seam of a boot that downloads a release tarball (a NATS server's nats-server, a NATS load generator's
   * Go): this machine's builds packed in the release's layout, handed over with their SHA-256
   * (test/simulated-vm/local-tarballs.ts); the boot's checksum check and unpacking run as written.
   */
  private releaseSeam(userData: string): Record<string, { content: string; mode: number }> {
    const go = userData.includes('rmqbench_fetch_go ') ? goTarballOfThisMachine(this.hub!.dir) : undefined;
    const natsServer = userData.includes('rmqbench_fetch_nats_server ')
      ? natsServerTarballOfThisMachine(this.hub!.dir)
      : undefined;
    const lines = installSeamLines(go, natsServer);
    return lines.length > 0 ? { [INSTALL_OVERRIDE_FILE]: { content: `${lines.join('\n')}\n`, mode: 0o644 } } : {};
  }

  /**
   * The network interface an instance is launched with (NetworkInterfaces, device index 0): its address and security
   * groups (GroupSet), as the template created it.
   */
  private attachedInterface(
    instanceLogicalId: string,
    interfaces: { DeviceIndex: string; NetworkInterfaceId: string }[] | undefined,
  ): { ip: string; groupIds: string[] } | undefined {
    const primary = interfaces?.find((entry) => String(entry.DeviceIndex) === '0');
    if (!primary) return undefined;
    const logicalId = Object.keys(this.request.template.Resources).find(
      (id) =>
        this.request.template.Resources[id]!.Type === 'AWS::EC2::NetworkInterface' &&
        this.physical.get(id)?.ref === primary.NetworkInterfaceId,
    );
    if (!logicalId)
      throw new Error(
        `${instanceLogicalId}: network interface ${primary.NetworkInterfaceId} is not one of the stack's`,
      );
    const groupIds = this.evaluator.resolve(
      this.request.template.Resources[logicalId]!.Properties?.['GroupSet'] ?? [],
    ) as string[];
    return { ip: this.physical.get(logicalId)!.attributes!['PrimaryPrivateIpAddress']!, groupIds };
  }

  /**
   * The names the stack's private hosted zones resolve to `ip` (A records), inside the stack's VPC: a zone not
   * associated with the VpcId parameter answers nothing there (Route 53 Developer Guide, "Working with private hosted
   * zones": "Route 53 ... respond[s] to DNS queries ... only for the VPCs you associate with the hosted zone").
   */
  private zoneNamesOf(ip: string): string[] {
    const resources = this.request.template.Resources;
    const vpcId = this.request.parameters['VpcId'];
    const associated = (zoneRef: string) => {
      const zoneId = Object.keys(resources).find((id) => this.physical.get(id)?.ref === zoneRef);
      if (!zoneId || resources[zoneId]!.Type !== 'AWS::Route53::HostedZone') return false;
      const vpcs = (this.evaluator.resolve(resources[zoneId]!.Properties?.['VPCs'] ?? []) as { VPCId: string }[]) ?? [];
      return vpcs.some((vpc) => vpc.VPCId === vpcId);
    };
    return Object.values(resources)
      .filter((resource) => resource.Type === 'AWS::Route53::RecordSet')
      .map(
        (resource) =>
          this.evaluator.resolve(resource.Properties ?? {}) as {
            HostedZoneId: string;
            Name: string;
            Type: string;
            ResourceRecords?: string[];
          },
      )
      .filter(
        (record) => record.Type === 'A' && record.ResourceRecords?.includes(ip) && associated(record.HostedZoneId),
      )
      .map((record) => record.Name.replace(/\.$/, ''));
  }

  private instanceCredentials(
    roleArn: string,
    instanceId: string,
  ): { roleName: string; credentials: Record<string, string> } {
    const credentials = this.options.session(roleArn, instanceId);
    return {
      roleName: roleArn.split('/').pop()!,
      credentials: {
        AccessKeyId: credentials.accessKeyId,
        SecretAccessKey: credentials.secretAccessKey,
        Token: credentials.sessionToken,
      },
    };
  }

  private boot(instance: SimulatedInstance): void {
    this.applyFilters();
    instance.boot = this.hub!.exec(instance.vm, 'bash /var/lib/cloud/instance/user-data.txt', {
      env: cloudInitEnvironment(TWIN_REGION),
      timeoutMs: 20 * 60_000,
    });
    void instance.boot.then((result) => {
      instance.result = result;
      this.options.log?.(`[twin] ${instance.instanceId}: user data exited ${result.status}`);
    });
  }

  /**
   * The load balancer: its address in the hub (LOAD_BALANCER_HOST), its DNS name in every instance's /etc/hosts, one
   * forwarding listener per Listener of the stack to the instances of the listener's target group (fake-nlb.py), its
   * security groups as the filter of that address.
   */
  private async createLoadBalancer(logicalId: string): Promise<void> {
    const { template } = this.request;
    this.event(logicalId, 'AWS::ElasticLoadBalancingV2::LoadBalancer', 'CREATE_IN_PROGRESS');
    const physical = this.physical.get(logicalId)!;
    const address = `10.91.${this.options.subnet}.${LOAD_BALANCER_HOST}`;
    this.hub!.addHubAddress(address, [physical.attributes!['DNSName']!]);
    const groupIds =
      (this.evaluator.resolve(template.Resources[logicalId]!.Properties?.['SecurityGroups'] ?? []) as string[]) ?? [];
    const listeners = Object.entries(template.Resources)
      .filter(([, resource]) => resource.Type === 'AWS::ElasticLoadBalancingV2::Listener')
      .map(
        ([, resource]) =>
          this.evaluator.resolve(resource.Properties ?? {}) as {
            LoadBalancerArn: string;
            Port: number;
            DefaultActions: { TargetGroupArn: string }[];
          },
      )
      .filter((listener) => listener.LoadBalancerArn === physical.ref)
      .map((listener) => {
        const targetGroupArn = listener.DefaultActions[0]!.TargetGroupArn;
        const targetGroupId = Object.keys(template.Resources).find(
          (id) => this.physical.get(id)?.ref === targetGroupArn,
        )!;
        const targetPort = Number(this.evaluator.resolve(template.Resources[targetGroupId]!.Properties?.['Port']));
        const targets = this.instances
          .filter((instance) => instance.targetGroups?.includes(targetGroupArn))
          .map((instance) => instance.vm.ip);
        return { port: Number(listener.Port), targetPort, targets };
      });
    this.loadBalancer = { address, dnsName: physical.attributes!['DNSName']!, groupIds };
    this.applyFilters();
    const config = `${this.hub!.dir}/nlb-${logicalId}.json`;
    writeFileSync(config, JSON.stringify({ address, listeners }));
    const proxy = this.hub!.spawnInHub('python3', [
      join(HERE, 'fake-nlb.py'),
      config,
      `${this.hub!.dir}/nlb-${logicalId}.log`,
    ]);
    let errors = '';
    proxy.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      proxy.once('exit', (code) =>
        reject(new Error(`fake-nlb.py exited with ${code} before it was ready: ${errors.trim()}`)),
      );
      proxy.stdout!.once('data', () => resolve());
    });
    proxy.removeAllListeners('exit');
    this.event(logicalId, 'AWS::ElasticLoadBalancingV2::LoadBalancer', 'CREATE_COMPLETE');
  }

  /**
   * What Ref and Fn::GetAtt return for a resource (names as CloudFormation generates them, ids in the services'
   * formats).
   */
  private namesOf(logicalId: string): PhysicalResource {
    const resource = this.request.template.Resources[logicalId]!;
    const name = generatedName(this.request.stackName, logicalId);
    const arn = (service: string, path: string) => `arn:aws:${service}:${TWIN_REGION}:${TWIN_ACCOUNT}:${path}`;
    switch (resource.Type) {
      case 'AWS::EC2::SecurityGroup': {
        const id = `sg-${hex(8)}`;
        return { ref: id, attributes: { GroupId: id } };
      }
      case 'AWS::IAM::Role':
        return {
          ref: name,
          attributes: { Arn: `arn:aws:iam::${TWIN_ACCOUNT}:role/${name}`, RoleId: `AROA${hex(8).toUpperCase()}` },
        };
      case 'AWS::IAM::InstanceProfile':
        return { ref: name, attributes: { Arn: `arn:aws:iam::${TWIN_ACCOUNT}:instance-profile/${name}` } };
      case 'AWS::Logs::LogGroup':
        return { ref: name, attributes: { Arn: arn('logs', `log-group:${name}:*`) } };
      case 'AWS::EC2::LaunchTemplate':
        return { ref: `lt-${hex(8)}`, attributes: { LatestVersionNumber: '1', DefaultVersionNumber: '1' } };
      case 'AWS::ElasticLoadBalancingV2::LoadBalancer': {
        const lbName = `${this.request.stackName.slice(0, 20)}-${hex(4)}`;
        return {
          ref: arn('elasticloadbalancing', `loadbalancer/net/${lbName}/${hex(8)}`),
          attributes: {
            DNSName: `${lbName}-${hex(6)}.elb.${TWIN_REGION}.amazonaws.com`,
            LoadBalancerFullName: `net/${lbName}/${hex(8)}`,
          },
        };
      }
      case 'AWS::ElasticLoadBalancingV2::TargetGroup':
        return { ref: arn('elasticloadbalancing', `targetgroup/${name.slice(0, 24)}/${hex(8)}`) };
      case 'AWS::EC2::Instance':
        return { ref: `i-0${hex(8).slice(0, 16)}` };
      case 'AWS::EC2::NetworkInterface': {
        // An address of the subnet is the interface's from its creation (AWS::EC2::NetworkInterface return values:
        // PrimaryPrivateIpAddress); the instance attached to it later has that address.
        this.interfaceCount += 1;
        return {
          ref: `eni-0${hex(8)}`,
          attributes: {
            PrimaryPrivateIpAddress: `10.91.${this.options.subnet}.${FIRST_INTERFACE_HOST + this.interfaceCount - 1}`,
          },
        };
      }
      case 'AWS::Route53::HostedZone':
        return { ref: `Z0${hex(9).toUpperCase()}` };
      default:
        // Secrets get their ARN from moto (createInMoto); the rest is referred to by name.
        return { ref: name };
    }
  }

  /** The values of the template's AWS::SSM::Parameter::Value parameters, read from the twin's Parameter Store. */
  private async ssmParameters(): Promise<Record<string, string>> {
    const values: Record<string, string> = {};
    for (const [name, declared] of Object.entries(this.request.template.Parameters ?? {})) {
      if (!declared.Type.startsWith('AWS::SSM::Parameter::Value<')) continue;
      const path = this.request.parameters[name] ?? declared.Default ?? '';
      try {
        const answer = await this.options.admin.json<{ Parameter: { Value: string } }>(
          'ssm',
          'AmazonSSM.GetParameter',
          { Name: path },
        );
        values[path] = answer.Parameter.Value;
      } catch {
        throw new Error(
          `parameter ${name} names the SSM parameter ${path}, which the account does ` +
            `not hold (CreateStack fails with "Parameters [${path}] referenced by ` +
            'template have types not supported by CloudFormation" or "... not found")',
        );
      }
    }
    return values;
  }

  /** The tags CloudFormation gives a resource it creates: the stack's and its own aws:cloudformation:* ones. */
  resourceTags(logicalId: string, own: Readonly<Record<string, string>> = {}): Record<string, string> {
    return {
      ...this.request.tags,
      ...own,
      'aws:cloudformation:stack-name': this.request.stackName,
      'aws:cloudformation:stack-id': this.request.stackId,
      'aws:cloudformation:logical-id': logicalId,
    };
  }

  /**
   * Roles, policies, secrets and log groups in moto, where the gateway reads them when it decides an instance's call.
   */
  private async createInMoto(): Promise<void> {
    const { admin } = this.options;
    const resources = Object.entries(this.request.template.Resources);
    const iam = (action: string, params: Record<string, string>) => admin.query('iam', action, params, '2010-05-08');
    for (const [logicalId, resource] of resources.filter(([, r]) => r.Type === 'AWS::SecretsManager::Secret')) {
      const properties = this.evaluator.resolve(resource.Properties ?? {}) as Record<string, unknown>;
      const generate = properties['GenerateSecretString'] as
        { SecretStringTemplate?: string; GenerateStringKey?: string; PasswordLength?: number } | undefined;
      const value = randomBytes(48)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, '')
        .slice(0, generate?.PasswordLength ?? 32);
      const secretString =
        generate?.SecretStringTemplate && generate.GenerateStringKey
          ? JSON.stringify({
              ...(JSON.parse(generate.SecretStringTemplate) as object),
              [generate.GenerateStringKey]: value,
            })
          : String(properties['SecretString'] ?? value);
      const name = String(properties['Name'] ?? `${logicalId}-${hex(6)}`);
      const tags = Object.entries(this.resourceTags(logicalId)).map(([Key, Value]) => ({ Key, Value }));
      const created = await admin.json<{ ARN: string }>('secretsmanager', 'secretsmanager.CreateSecret', {
        Name: name,
        SecretString: secretString,
        Tags: tags,
      });
      this.physical.set(logicalId, { ref: created.ARN });
    }
    for (const [logicalId] of resources.filter(([, r]) => r.Type === 'AWS::Logs::LogGroup')) {
      await admin.json('logs', 'Logs_20140328.CreateLogGroup', { logGroupName: this.physical.get(logicalId)!.ref });
    }
    for (const [logicalId, resource] of resources.filter(([, r]) => r.Type === 'AWS::IAM::Role')) {
      const properties = this.evaluator.resolve(resource.Properties ?? {}) as Record<string, unknown>;
      const roleName = this.physical.get(logicalId)!.ref;
      await iam('CreateRole', {
        RoleName: roleName,
        AssumeRolePolicyDocument: JSON.stringify(properties['AssumeRolePolicyDocument']),
      });
      for (const policyArn of (properties['ManagedPolicyArns'] as string[] | undefined) ?? [])
        await iam('AttachRolePolicy', { RoleName: roleName, PolicyArn: policyArn });
      for (const policy of (properties['Policies'] as { PolicyName: string; PolicyDocument: unknown }[] | undefined) ??
        []) {
        await iam('PutRolePolicy', {
          RoleName: roleName,
          PolicyName: policy.PolicyName,
          PolicyDocument: JSON.stringify(policy.PolicyDocument),
        });
      }
    }
    for (const [, resource] of resources.filter(([, r]) => r.Type === 'AWS::IAM::Policy')) {
      const properties = this.evaluator.resolve(resource.Properties ?? {}) as {
        PolicyName: string;
        PolicyDocument: unknown;
        Roles?: string[];
      };
      for (const roleName of properties.Roles ?? [])
        await iam('PutRolePolicy', {
          RoleName: roleName,
          PolicyName: properties.PolicyName,
          PolicyDocument: JSON.stringify(properties.PolicyDocument),
        });
    }
  }

  private async startHub(): Promise<SimulatedHub> {
    const hub = new SimulatedHub({
      subnet: this.options.subnet,
      fakeScript: 'fake-aws.py',
      // The results bucket by its virtual-hosted names (global and regional), as the AWS CLI addresses it.
      httpsNames: [
        ...INSTANCE_SERVICES.map((service) => `${service}.${TWIN_REGION}.amazonaws.com`),
        ...DOWNLOAD_MIRROR_HOSTS,
        ...this.bucketHosts(),
      ],
      state: {
        region: TWIN_REGION,
        gatewaySocket: this.options.gatewaySocket,
        secrets: {},
        ...downloadMirrorState(),
      },
    });
    await hub.start();
    return hub;
  }

  private bucketHosts(): string[] {
    const bucket = this.request.parameters['ResultsBucketName'];
    return bucket
      ? [`${bucket}.s3.amazonaws.com`, `${bucket}.s3.${TWIN_REGION}.amazonaws.com`, 's3.amazonaws.com']
      : [];
  }

  /** The role ARN an instance profile (a launch template's IamInstanceProfile Arn or name) holds. */
  private profileRole(profile: string): string {
    const entry = Object.entries(this.request.template.Resources).find(
      ([logicalId, resource]) =>
        resource.Type === 'AWS::IAM::InstanceProfile' &&
        [this.physical.get(logicalId)?.ref, this.physical.get(logicalId)?.attributes?.['Arn']].includes(profile),
    );
    if (!entry) throw new Error(`the instance profile ${profile} is not one of the stack's`);
    const roles = this.evaluator.resolve(entry[1].Properties?.['Roles'] ?? []) as string[];
    return `arn:aws:iam::${TWIN_ACCOUNT}:role/${roles[0]}`;
  }

  private async createGroup(logicalId: string): Promise<void> {
    const resource = this.request.template.Resources[logicalId]!;
    this.event(logicalId, resource.Type, 'CREATE_IN_PROGRESS');
    const group = this.evaluator.resolve(resource.Properties ?? {}) as {
      DesiredCapacity?: string;
      MinSize: string;
      LaunchTemplate: { LaunchTemplateId: string };
    };
    const desired = Number(group.DesiredCapacity ?? group.MinSize);
    const launchTemplateId = Object.keys(this.request.template.Resources).find(
      (id) => this.physical.get(id)?.ref === group.LaunchTemplate.LaunchTemplateId,
    );
    if (!launchTemplateId) throw new Error(`${logicalId}: its launch template is not one of the stack's`);
    const data = this.evaluator.resolve(
      this.request.template.Resources[launchTemplateId]!.Properties?.['LaunchTemplateData'],
    ) as {
      UserData: string;
      SecurityGroupIds?: string[];
      IamInstanceProfile?: { Arn?: string; Name?: string };
      BlockDeviceMappings?: { DeviceName: string; Ebs?: { VolumeSize?: number } }[];
    };
    // The data volume at its template size (a sparse file): RabbitMQ's disk_free_limit is judged against it.
    const dataVolumeGiB = Number(
      data.BlockDeviceMappings?.find((mapping) => mapping.DeviceName === '/dev/sdf')?.Ebs?.VolumeSize ?? 1,
    );
    const roleArn = this.profileRole(data.IamInstanceProfile?.Arn ?? data.IamInstanceProfile?.Name ?? '');
    const groupName = this.physical.get(logicalId)!.ref;
    const targetGroups = (this.evaluator.resolve(resource.Properties?.['TargetGroupARNs'] ?? []) as string[]) ?? [];
    // An instance of a group carries the group's tags marked PropagateAtLaunch and aws:autoscaling:groupName (EC2 Auto
    // Scaling User Guide, "Tag Auto Scaling groups and instances").
    const groupTags = (
      this.evaluator.resolve(resource.Properties?.['Tags'] ?? []) as {
        Key: string;
        Value: string;
        PropagateAtLaunch?: boolean | string;
      }[]
    ).filter((tag) => String(tag.PropagateAtLaunch) === 'true');
    const tags = {
      ...this.resourceTags(logicalId, Object.fromEntries(groupTags.map((tag) => [tag.Key, tag.Value]))),
      'aws:autoscaling:groupName': groupName,
    };
    this.hub!.updateState((state) =>
      Object.assign(state, { autoScalingGroupName: groupName, desiredCapacity: desired }),
    );
    const members: SimulatedInstance[] = [];
    for (let index = 1; index <= desired; index += 1) {
      const instanceId = `i-0${hex(8)}`;
      const ip = `10.91.${this.options.subnet}.${10 + index}`;
      const credentials = this.instanceCredentials(roleArn, instanceId);
      const vm = this.hub!.createVm(
        instanceId,
        `ip-${ip.replace(/\./g, '-')}`,
        {
          '/var/lib/cloud/instance/user-data.txt': { content: data.UserData, mode: 0o700 },
          [INSTALL_OVERRIDE_FILE]: { content: RABBITMQ_STAND_IN, mode: 0o644 },
          '/usr/local/sbin/dnf': { content: dnfStandIn(), mode: 0o755 },
        },
        {
          // The CloudWatch agent's folders (/opt/aws) stay in the instance.
          overlays: ['/opt'],
          blockDevice: '/dev/sdf',
          blockDeviceGiB: dataVolumeGiB,
          sharedPaths: ['/var/lib/rabbitmq'],
          hostNumber: 10 + index,
          state: { instanceId, ...credentials },
        },
      );
      members.push({
        instanceId,
        vm,
        groupIds: data.SecurityGroupIds ?? [],
        targetGroups,
        accessKeyId: credentials.credentials['AccessKeyId']!,
        tags,
        launchedAt: new Date(),
      });
    }
    this.instances.push(...members);
    for (const instance of members) this.boot(instance);
    await this.awaitSignals(
      logicalId,
      resource.Type,
      Number(this.evaluator.resolve(resource.CreationPolicy?.ResourceSignal?.Count ?? desired)),
      members,
    );
  }

  /** Each instance's packet filter from its groups' rules and the groups' current members. */
  applyFilters(): void {
    const members = new Map<string, string[]>();
    const interfaces = [
      ...this.instances.map((instance) => ({ groupIds: instance.groupIds, ip: instance.vm.ip })),
      ...(this.loadBalancer ? [{ groupIds: this.loadBalancer.groupIds, ip: this.loadBalancer.address }] : []),
    ];
    interfaces.push(...[...this.interfaces].map(([ip, groupIds]) => ({ ip, groupIds })));
    for (const { groupIds, ip } of interfaces)
      for (const groupId of groupIds) members.set(groupId, [...(members.get(groupId) ?? []), ip]);
    this.members = members;
    for (const instance of this.instances)
      applyRuleset(instance.vm.pid, nftRuleset(instance.groupIds, this.rules, members));
    if (this.loadBalancer)
      applyRuleset(
        this.hub!.hubNetns,
        nftRuleset(this.loadBalancer.groupIds, this.rules, members, this.loadBalancer.address),
      );
  }

  private members: Map<string, string[]> = new Map();

  get subnet(): number {
    return this.options.subnet;
  }

  /** /etc/hosts lines a VPC resolver would answer for the stack's names (the load balancer's). */
  hostEntries(): string[] {
    return this.loadBalancer ? [`${this.loadBalancer.address} ${this.loadBalancer.dnsName}`] : [];
  }

  /** Adds an interface (a function attached to the VPC) to its groups' members; the filters are applied again. */
  addInterface(entry: { ip: string; groupIds: readonly string[] }): ReadonlyMap<string, readonly string[]> {
    this.interfaces.set(entry.ip, entry.groupIds);
    this.applyFilters();
    return this.members;
  }

  removeInterface(ip: string): void {
    this.interfaces.delete(ip);
    if (!this.deleted) this.applyFilters();
  }

  /**
   * A rule's CIDR in the hub's addressing: the hub's 10.91.X.0/24 stands for the private subnets the stack's
   * instances are launched in, so a CIDR that holds one of them (a subnet's, the VPC's) names the hub's /24; 0.0.0.0/0
   * stays; any other CIDR matches no address of the hub, as it would match none of the subnets'.
   */
  mapRuleCidr(rule: SecurityGroupRule): SecurityGroupRule {
    if (!('cidr' in rule.peer) || rule.peer.cidr === '0.0.0.0/0') return rule;
    const peer = rule.peer.cidr;
    return this.vpcCidrs.some((cidr) => cidrContains(peer, cidr))
      ? { ...rule, peer: { cidr: `10.91.${this.options.subnet}.0/24` } }
      : rule;
  }

  /**
   * The CIDRs of the stack's PrivateSubnetIds parameter, as the twin's EC2 (moto, from the controller template) holds
   * them.
   */
  private async readVpcCidrs(): Promise<void> {
    const subnets = (this.request.parameters['PrivateSubnetIds'] ?? '').split(',').filter(Boolean);
    if (subnets.length === 0) return;
    const xml = await this.options.admin.query(
      'ec2',
      'DescribeSubnets',
      Object.fromEntries(subnets.map((id, index) => [`SubnetId.${index + 1}`, id])),
      '2016-11-15',
    );
    this.vpcCidrs.push(...[...xml.matchAll(/<cidrBlock>([^<]+)<\/cidrBlock>/g)].map((match) => match[1]!));
  }

  /**
   * The creation policy: `count` SUCCESS signals complete the group; a FAILURE signal, or every boot over short of it,
   * fails it. CloudFormation would otherwise wait for the policy's timeout (PT20M here) on boots stuck behind a packet
   * their security groups drop; the twin fails the group once such a packet has been dropped for
   * BLOCKED_BOOT_SECONDS with signals still missing, and says so.
   */
  private async awaitSignals(
    logicalId: string,
    type: string,
    count: number,
    members: readonly SimulatedInstance[],
  ): Promise<void> {
    const hub = this.hub!;
    // The members' own signals (the log line starts with the caller's address): a broker's creation policy counts only
    // its own instance's.
    const addresses = new Set(members.map((instance) => instance.vm.ip));
    const signals = () =>
      hub
        .requestLog()
        .filter((line) => / cloudformation SignalResource /.test(line) && addresses.has(line.split(' ')[0]!));
    let firstDrop: number | undefined;
    let endedAt: number | undefined;
    let announced = 0;
    const blockedBootSeconds = this.options.blockedBootSeconds ?? BLOCKED_BOOT_SECONDS;
    for (;;) {
      const received = signals();
      // Each signal is an event of the resource, in CloudFormation's words ("Received SUCCESS signal with UniqueId
      // i-0123...", the reason lambdas/shared/aws-cluster.ts reads the failed boots from).
      for (const line of received.slice(announced)) {
        const [, , , uniqueId, status] = line.split(' ');
        this.event(logicalId, type, 'CREATE_IN_PROGRESS', `Received ${status} signal with UniqueId ${uniqueId}`);
      }
      announced = received.length;
      const failures = received.filter((line) => line.endsWith(' FAILURE')).length;
      const successes = received.filter((line) => line.endsWith(' SUCCESS')).length;
      if (successes >= count) return this.event(logicalId, type, 'CREATE_COMPLETE');
      // Every boot over: CloudFormation would still count a signal that arrives before the policy's timeout (a request
      // the hub answers slowly on a busy machine may be logged after the boot gave up on it), so the twin waits
      // SIGNAL_GRACE_SECONDS more before it fails the resource.
      if (endedAt === undefined && members.every((instance) => instance.result !== undefined)) endedAt = Date.now();
      const ended = endedAt !== undefined && Date.now() - endedAt > SIGNAL_GRACE_SECONDS * 1000;
      if (firstDrop === undefined && members.some((instance) => droppedPackets(instance.vm.pid).length > 0))
        firstDrop = Date.now();
      const blocked = firstDrop !== undefined && Date.now() - firstDrop > blockedBootSeconds * 1000;
      if (failures > 0 || ended || blocked) {
        // CloudFormation's words for a failed creation policy; the twin adds what it saw on the way.
        const why =
          failures > 0
            ? `Received ${failures} FAILURE signal(s) out of ${count}. Unable ` +
              'to satisfy 100% MinSuccessfulInstancesPercent requirement'
            : ended
              ? `Failed to receive ${count} resource signal(s) within the specified duration`
              : `${successes} of ${count} resource signal(s) received; the twin stopped waiting ` +
                `for the rest (CloudFormation would wait for the creation policy's timeout) ` +
                `${blockedBootSeconds} s after the security groups first dropped a packet`;
        // A boot that ended 0 without a signal the hub received: its log says why (the boot tolerates a failed
        // signal-resource call and logs "could not signal CloudFormation" with the CLI's error).
        const unsignalled = failures === 0 && ended ? members : [];
        return this.event(logicalId, type, 'CREATE_FAILED', `${why}. ${await this.diagnosis(unsignalled)}`);
      }
      if (this.deleted) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  /**
   * What the twin saw: the packets each instance's security groups dropped, and the end of each failed boot log and of
   * `unsignalled`'s (boots that ended without the signal their creation policy waits for).
   */
  async diagnosis(unsignalled: readonly SimulatedInstance[] = []): Promise<string> {
    const peerName = (packet: DroppedPacket) => {
      const peer = this.instances.find((other) => other.vm.ip === packet.peer);
      return peer ? `${peer.instanceId} (${packet.peer})` : packet.peer;
    };
    const lines = this.droppedPacketLines(peerName);
    const told = this.instances.filter(
      (candidate) => candidate.result && (candidate.result.status !== 0 || unsignalled.includes(candidate)),
    );
    for (const instance of told) {
      const tail = (await this.hub!.exec(instance.vm, 'tail -n 5 /var/log/rmqbench-boot.log')).stdout.trim();
      lines.push(`${instance.instanceId} boot exited ${instance.result!.status}: ${tail.split('\n').join(' | ')}`);
    }
    const forwarded = this.loadBalancer ? this.hub!.fileTail('nlb', 5) : [];
    if (forwarded.length > 0) lines.push(`the load balancer's last connections: ${forwarded.join(' | ')}`);
    return lines.length > 0 ? `The twin saw: ${[...new Set(lines)].join('; ')}` : 'The twin saw no dropped packet.';
  }

  /** One sentence per packet the instances' and the load balancer's security groups dropped; `who` names a peer. */
  private droppedPacketLines(who: (packet: DroppedPacket) => string = (packet) => packet.peer): string[] {
    return [
      ...this.instances.flatMap((instance) =>
        droppedPackets(instance.vm.pid).map((packet) =>
          describeDrop(instance.groupIds, instance.instanceId, packet, who(packet)),
        ),
      ),
      ...(this.loadBalancer
        ? droppedPackets(this.hub!.hubNetns).map((packet) =>
            describeDrop(this.loadBalancer!.groupIds, 'the load balancer', packet, who(packet)),
          )
        : []),
    ];
  }

  /**
   * Before the hub goes: what the load balancer could not forward (a target that refused, or did not accept within
   * fake-nlb.py's 5 s connect timeout) and the packets the security groups dropped, to the twin's log, so that a failed
   * repetition can be read after it.
   */
  private logTroubleAtDeletion(): void {
    if (!this.hub) return;
    const name = this.request.stackName;
    const unforwarded = this.loadBalancer
      ? this.hub.fileTail('nlb', 100_000).filter((line) => / (refused|skipped|denied) /.test(line))
      : [];
    for (const line of unforwarded.slice(-20))
      this.options.log?.(`[twin] stack ${name}: the load balancer did not forward ${line}`);
    for (const line of [...new Set(this.droppedPacketLines())].slice(0, 20))
      this.options.log?.(`[twin] stack ${name}: ${line}`);
  }

  /** The hub's request log as DeleteStack found it (the hub's folder goes with the stack). */
  requestsAtDeletion: string[] = [];

  /** DeleteStack: the instances are stopped and removed with their namespaces. */
  async delete(): Promise<void> {
    this.deleted = true;
    this.requestsAtDeletion = this.hub?.requestLog() ?? [];
    try {
      this.logTroubleAtDeletion();
    } catch (error) {
      this.options.log?.(
        `[twin] stack ${this.request.stackName}: could not read its drops: ${(error as Error).message}`,
      );
    }
    this.hub?.cleanup();
    await Promise.allSettled(this.instances.map((instance) => instance.boot));
    this.event(this.request.stackName, 'AWS::CloudFormation::Stack', 'DELETE_COMPLETE');
  }

  leftovers(): ReturnType<SimulatedHub['leftovers']> | undefined {
    return this.hub?.leftovers();
  }

  get simulatedHub(): SimulatedHub | undefined {
    return this.hub;
  }
}

/** Whether IPv4 CIDR `outer` holds all of `inner`. */
export function cidrContains(outer: string, inner: string): boolean {
  const parse = (cidr: string) => {
    const [address, bits] = cidr.split('/');
    const value = address!.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
    return { value, bits: Number(bits ?? 32) };
  };
  const a = parse(outer);
  const b = parse(inner);
  if (a.bits > b.bits) return false;
  const size = 2 ** (32 - a.bits);
  return Math.floor(a.value / size) === Math.floor(b.value / size);
}
