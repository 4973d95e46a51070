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
 * DeleteStack stops and removes the instances.
 *
 * Package installation goes through the boot script's one seam (/etc/rmqbench/install-override.sh): Debian's
 * rabbitmq-server 3.10.8 stands in for Team RabbitMQ's 3.13.7 RPM, and its unit drops the 3.13-only configuration keys
 * before it starts (the only line of the generated configuration 3.10.8 would refuse). Not simulated yet: the load
 * balancer and its target groups, the load generator instance (AWS::EC2::Instance), Kafka stacks.
 */
import { randomBytes } from 'node:crypto';
import { INSTALL_OVERRIDE_FILE } from '../../cdk/user-data/rabbitmq-node';
import { awsCliDirectory, SimulatedHub, type CommandResult, type SimulatedVm } from '../simulated-vm/harness';
import { TWIN_ACCOUNT, TWIN_REGION } from './aws-requests';
import { generatedName } from './cloudformation-role';
import { TemplateEvaluator, type PhysicalResource, type StackTemplate } from './cfn-template';
import type { MotoAdmin } from './moto-admin';
import { applyRuleset, droppedPackets, nftRuleset, securityGroupRules, type SecurityGroupRule } from './security-groups';

/** The services the instances call, served over HTTPS in the hub (the test CA signs their certificate). */
const INSTANCE_SERVICES = ['secretsmanager', 'autoscaling', 'logs', 'cloudformation', 'ec2', 'monitoring', 's3', 'ssm', 'sts'];

/**
 * The install seam: Debian's rabbitmq-server, with a unit whose start first removes the keys RabbitMQ 3.10.8 does not
 * know (quorum_queue.continuous_membership_reconciliation.*, RabbitMQ 3.13 docs, "Continuous Membership
 * Reconciliation"), which the generated 3.13 configuration holds.
 */
const RABBITMQ_STAND_IN = `rmqbench_install_packages() {
  command -v rabbitmq-server >/dev/null || return 1
  cat > /usr/local/sbin/rmqbench-twin-rabbitmq-server <<'EOF'
#!/bin/sh
sed -i '/^quorum_queue\\.continuous_membership_reconciliation\\./d' /etc/rabbitmq/rabbitmq.conf
exec /usr/lib/rabbitmq/bin/rabbitmq-server "$@"
EOF
  chmod 755 /usr/local/sbin/rmqbench-twin-rabbitmq-server
  sed 's|^ExecStart=.*|ExecStart=/usr/local/sbin/rmqbench-twin-rabbitmq-server|' /lib/systemd/system/rabbitmq-server.service > /etc/systemd/system/rabbitmq-server.service
}
`;

export type ResourceStatus = 'CREATE_IN_PROGRESS' | 'CREATE_COMPLETE' | 'CREATE_FAILED';

export interface ResourceEvent {
  readonly logicalId: string;
  readonly type: string;
  readonly status: ResourceStatus | 'DELETE_COMPLETE';
  readonly reason?: string;
  readonly at: Date;
}

export interface SimulatedInstance {
  readonly instanceId: string;
  readonly vm: SimulatedVm;
  readonly groupIds: readonly string[];
  boot?: Promise<CommandResult>;
  result?: CommandResult;
}

export interface ClusterStackRequest {
  readonly stackName: string;
  readonly stackId: string;
  readonly template: StackTemplate;
  readonly parameters: Readonly<Record<string, string>>;
}

export interface ClusterStackOptions {
  readonly admin: MotoAdmin;
  /** Credentials for a role, as the gateway issues them (it then attributes the calls signed with them to that role). */
  readonly session: (roleArn: string, sessionName: string) => { accessKeyId: string; secretAccessKey: string; sessionToken: string };
  /** The gateway's Unix socket, to which the hub's endpoints hand every instance call. */
  readonly gatewaySocket: string;
  /** Third octet of the hub's 10.91.X.0/24. */
  readonly subnet: number;
  readonly log?: (line: string) => void;
}

/** How long boots may stay short of their signals after a security group dropped a packet before the twin fails the group. */
const BLOCKED_BOOT_SECONDS = 90;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** One cluster stack as the twin's CloudFormation holds it. */
export class ClusterStack {
  readonly events: ResourceEvent[] = [];
  readonly instances: SimulatedInstance[] = [];
  readonly physical = new Map<string, PhysicalResource>();
  rules: SecurityGroupRule[] = [];
  private hub?: SimulatedHub;
  private evaluator!: TemplateEvaluator;
  private done?: Promise<void>;
  deleted = false;

  constructor(
    readonly request: ClusterStackRequest,
    private readonly options: ClusterStackOptions,
  ) {}

  /** Starts creating; `settled()` resolves when the stack is complete or failed. */
  start(): void {
    this.done = this.create().catch((error: Error) => {
      const current = [...this.events].reverse().find((event) => event.status === 'CREATE_IN_PROGRESS' && !this.events.some((later) => later.logicalId === event.logicalId && later.status !== 'CREATE_IN_PROGRESS'));
      this.event(current?.logicalId ?? this.request.stackName, current?.type ?? 'AWS::CloudFormation::Stack', 'CREATE_FAILED', error.message);
    });
  }

  settled(): Promise<void> {
    return this.done ?? Promise.resolve();
  }

  /** The stack's status as DescribeStacks shows it, and the reason of a failure. */
  status(): { status: string; reason?: string } {
    if (this.deleted) return { status: 'DELETE_COMPLETE' };
    const failed = this.events.find((event) => event.status === 'CREATE_FAILED');
    if (failed) return { status: 'ROLLBACK_COMPLETE', reason: `The following resource(s) failed to create: [${failed.logicalId}]. Rollback requested by user.` };
    const last = this.events.at(-1);
    return last?.logicalId === this.request.stackName && last.status === 'CREATE_COMPLETE' ? { status: 'CREATE_COMPLETE' } : { status: 'CREATE_IN_PROGRESS' };
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

  private event(logicalId: string, type: string, status: ResourceEvent['status'], reason?: string): void {
    this.events.push({ logicalId, type, status, ...(reason ? { reason } : {}), at: new Date() });
    this.options.log?.(`[twin] stack ${this.request.stackName}: ${logicalId} ${status}${reason ? `: ${reason}` : ''}`);
  }

  private async create(): Promise<void> {
    const { template, stackName } = this.request;
    this.event(stackName, 'AWS::CloudFormation::Stack', 'CREATE_IN_PROGRESS', 'User Initiated');
    this.evaluator = new TemplateEvaluator(template, { stackName, stackId: this.request.stackId, parameters: this.request.parameters, ssmParameters: await this.ssmParameters(), physical: this.physical });
    for (const logicalId of Object.keys(template.Resources)) this.physical.set(logicalId, this.namesOf(logicalId));
    await this.createInMoto();
    this.rules = securityGroupRules(template, this.evaluator);
    for (const [logicalId, resource] of Object.entries(template.Resources)) {
      if (resource.Type === 'AWS::AutoScaling::AutoScalingGroup') await this.createGroup(logicalId);
    }
    const unsimulated = Object.entries(template.Resources).find(([, resource]) => ['AWS::EC2::Instance', 'AWS::ElasticLoadBalancingV2::LoadBalancer'].includes(resource.Type));
    if (unsimulated) {
      this.event(unsimulated[0], unsimulated[1].Type, 'CREATE_FAILED', `TwinCannotProvision: the twin does not simulate ${unsimulated[1].Type} yet (the nodes of this stack were created and are running)`);
      return;
    }
    this.event(stackName, 'AWS::CloudFormation::Stack', 'CREATE_COMPLETE');
  }

  /** What Ref and Fn::GetAtt return for a resource (names as CloudFormation generates them, ids in the services' formats). */
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
        return { ref: name, attributes: { Arn: `arn:aws:iam::${TWIN_ACCOUNT}:role/${name}`, RoleId: `AROA${hex(8).toUpperCase()}` } };
      case 'AWS::IAM::InstanceProfile':
        return { ref: name, attributes: { Arn: `arn:aws:iam::${TWIN_ACCOUNT}:instance-profile/${name}` } };
      case 'AWS::Logs::LogGroup':
        return { ref: name, attributes: { Arn: arn('logs', `log-group:${name}:*`) } };
      case 'AWS::EC2::LaunchTemplate':
        return { ref: `lt-${hex(8)}`, attributes: { LatestVersionNumber: '1', DefaultVersionNumber: '1' } };
      case 'AWS::ElasticLoadBalancingV2::LoadBalancer': {
        const lbName = `${this.request.stackName.slice(0, 20)}-${hex(4)}`;
        return { ref: arn('elasticloadbalancing', `loadbalancer/net/${lbName}/${hex(8)}`), attributes: { DNSName: `${lbName}-${hex(6)}.elb.${TWIN_REGION}.amazonaws.com`, LoadBalancerFullName: `net/${lbName}/${hex(8)}` } };
      }
      case 'AWS::ElasticLoadBalancingV2::TargetGroup':
        return { ref: arn('elasticloadbalancing', `targetgroup/${name.slice(0, 24)}/${hex(8)}`) };
      case 'AWS::EC2::Instance':
        return { ref: `i-0${hex(8).slice(0, 16)}` };
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
        const answer = await this.options.admin.json<{ Parameter: { Value: string } }>('ssm', 'AmazonSSM.GetParameter', { Name: path });
        values[path] = answer.Parameter.Value;
      } catch {
        throw new Error(`parameter ${name} names the SSM parameter ${path}, which the account does not hold (CreateStack fails with "Parameters [${path}] referenced by template have types not supported by CloudFormation" or "... not found")`);
      }
    }
    return values;
  }

  /** Roles, policies, secrets and log groups in moto, where the gateway reads them when it decides an instance's call. */
  private async createInMoto(): Promise<void> {
    const { admin } = this.options;
    const resources = Object.entries(this.request.template.Resources);
    const iam = (action: string, params: Record<string, string>) => admin.query('iam', action, params, '2010-05-08');
    for (const [logicalId, resource] of resources.filter(([, r]) => r.Type === 'AWS::SecretsManager::Secret')) {
      const properties = this.evaluator.resolve(resource.Properties ?? {}) as Record<string, unknown>;
      const generate = properties['GenerateSecretString'] as { SecretStringTemplate?: string; GenerateStringKey?: string; PasswordLength?: number } | undefined;
      const value = randomBytes(48).toString('base64').replace(/[^A-Za-z0-9]/g, '').slice(0, generate?.PasswordLength ?? 32);
      const secretString = generate?.SecretStringTemplate && generate.GenerateStringKey ? JSON.stringify({ ...(JSON.parse(generate.SecretStringTemplate) as object), [generate.GenerateStringKey]: value }) : String(properties['SecretString'] ?? value);
      const name = String(properties['Name'] ?? `${logicalId}-${hex(6)}`);
      const created = await admin.json<{ ARN: string }>('secretsmanager', 'secretsmanager.CreateSecret', { Name: name, SecretString: secretString, Tags: [{ Key: 'aws:cloudformation:stack-name', Value: this.request.stackName }] });
      this.physical.set(logicalId, { ref: created.ARN });
    }
    for (const [logicalId] of resources.filter(([, r]) => r.Type === 'AWS::Logs::LogGroup')) {
      await admin.json('logs', 'Logs_20140328.CreateLogGroup', { logGroupName: this.physical.get(logicalId)!.ref });
    }
    for (const [logicalId, resource] of resources.filter(([, r]) => r.Type === 'AWS::IAM::Role')) {
      const properties = this.evaluator.resolve(resource.Properties ?? {}) as Record<string, unknown>;
      const roleName = this.physical.get(logicalId)!.ref;
      await iam('CreateRole', { RoleName: roleName, AssumeRolePolicyDocument: JSON.stringify(properties['AssumeRolePolicyDocument']) });
      for (const policyArn of (properties['ManagedPolicyArns'] as string[] | undefined) ?? []) await iam('AttachRolePolicy', { RoleName: roleName, PolicyArn: policyArn });
      for (const policy of (properties['Policies'] as { PolicyName: string; PolicyDocument: unknown }[] | undefined) ?? []) {
        await iam('PutRolePolicy', { RoleName: roleName, PolicyName: policy.PolicyName, PolicyDocument: JSON.stringify(policy.PolicyDocument) });
      }
    }
    for (const [, resource] of resources.filter(([, r]) => r.Type === 'AWS::IAM::Policy')) {
      const properties = this.evaluator.resolve(resource.Properties ?? {}) as { PolicyName: string; PolicyDocument: unknown; Roles?: string[] };
      for (const roleName of properties.Roles ?? []) await iam('PutRolePolicy', { RoleName: roleName, PolicyName: properties.PolicyName, PolicyDocument: JSON.stringify(properties.PolicyDocument) });
    }
  }

  private async startHub(groupName: string, desired: number): Promise<SimulatedHub> {
    const hub = new SimulatedHub({
      subnet: this.options.subnet,
      fakeScript: 'fake-aws.py',
      httpsNames: INSTANCE_SERVICES.map((service) => `${service}.${TWIN_REGION}.amazonaws.com`),
      state: { region: TWIN_REGION, gatewaySocket: this.options.gatewaySocket, autoScalingGroupName: groupName, desiredCapacity: desired, secrets: {} },
    });
    await hub.start();
    return hub;
  }

  /** The role ARN an instance profile (a launch template's IamInstanceProfile Arn or name) holds. */
  private profileRole(profile: string): string {
    const entry = Object.entries(this.request.template.Resources).find(([logicalId, resource]) => resource.Type === 'AWS::IAM::InstanceProfile' && [this.physical.get(logicalId)?.ref, this.physical.get(logicalId)?.attributes?.['Arn']].includes(profile));
    if (!entry) throw new Error(`the instance profile ${profile} is not one of the stack's`);
    const roles = this.evaluator.resolve(entry[1].Properties?.['Roles'] ?? []) as string[];
    return `arn:aws:iam::${TWIN_ACCOUNT}:role/${roles[0]}`;
  }

  private async createGroup(logicalId: string): Promise<void> {
    const resource = this.request.template.Resources[logicalId]!;
    this.event(logicalId, resource.Type, 'CREATE_IN_PROGRESS');
    const group = this.evaluator.resolve(resource.Properties ?? {}) as { DesiredCapacity?: string; MinSize: string; LaunchTemplate: { LaunchTemplateId: string } };
    const desired = Number(group.DesiredCapacity ?? group.MinSize);
    const launchTemplateId = Object.keys(this.request.template.Resources).find((id) => this.physical.get(id)?.ref === group.LaunchTemplate.LaunchTemplateId);
    if (!launchTemplateId) throw new Error(`${logicalId}: its launch template is not one of the stack's`);
    const data = this.evaluator.resolve(this.request.template.Resources[launchTemplateId]!.Properties?.['LaunchTemplateData']) as { UserData: string; SecurityGroupIds?: string[]; IamInstanceProfile?: { Arn?: string; Name?: string } };
    const roleArn = this.profileRole(data.IamInstanceProfile?.Arn ?? data.IamInstanceProfile?.Name ?? '');
    const groupName = this.physical.get(logicalId)!.ref;
    this.hub = await this.startHub(groupName, desired);
    for (let index = 1; index <= desired; index += 1) {
      const instanceId = `i-0${hex(8)}`;
      const credentials = this.options.session(roleArn, instanceId);
      const ip = `10.91.${this.options.subnet}.${10 + index}`;
      const vm = this.hub.createVm(
        instanceId,
        `ip-${ip.replace(/\./g, '-')}`,
        { '/var/lib/cloud/instance/user-data.txt': { content: data.UserData, mode: 0o700 }, [INSTALL_OVERRIDE_FILE]: { content: RABBITMQ_STAND_IN, mode: 0o644 } },
        {
          blockDevice: '/dev/sdf',
          sharedPaths: ['/var/lib/rabbitmq'],
          hostNumber: 10 + index,
          state: { instanceId, roleName: roleArn.split('/').pop(), credentials: { AccessKeyId: credentials.accessKeyId, SecretAccessKey: credentials.secretAccessKey, Token: credentials.sessionToken } },
        },
      );
      this.instances.push({ instanceId, vm, groupIds: data.SecurityGroupIds ?? [] });
    }
    this.applyFilters();
    for (const instance of this.instances) {
      instance.boot = this.hub.exec(instance.vm, 'bash /var/lib/cloud/instance/user-data.txt', { env: cloudInitEnvironment(), timeoutMs: 20 * 60_000 });
      void instance.boot.then((result) => (instance.result = result));
    }
    await this.awaitSignals(logicalId, resource.Type, Number(this.evaluator.resolve(resource.CreationPolicy?.ResourceSignal?.Count ?? desired)));
  }

  /** Each instance's packet filter from its groups' rules and the groups' current members. */
  applyFilters(): void {
    const members = new Map<string, string[]>();
    for (const instance of this.instances) for (const groupId of instance.groupIds) members.set(groupId, [...(members.get(groupId) ?? []), instance.vm.ip]);
    for (const instance of this.instances) applyRuleset(instance.vm.pid, nftRuleset(instance.groupIds, this.rules, members));
  }

  /**
   * The creation policy: `count` SUCCESS signals complete the group; a FAILURE signal, or every boot over short of it,
   * fails it. CloudFormation would otherwise wait for the policy's timeout (PT20M here) on boots stuck behind a packet
   * their security groups drop; the twin fails the group once such a packet has been dropped for
   * BLOCKED_BOOT_SECONDS with signals still missing, and says so.
   */
  private async awaitSignals(logicalId: string, type: string, count: number): Promise<void> {
    const hub = this.hub!;
    const signals = () => hub.requestLog().filter((line) => / cloudformation SignalResource /.test(line));
    let firstDrop: number | undefined;
    for (;;) {
      const received = signals();
      const failures = received.filter((line) => line.endsWith(' FAILURE')).length;
      const successes = received.filter((line) => line.endsWith(' SUCCESS')).length;
      if (successes >= count) return this.event(logicalId, type, 'CREATE_COMPLETE');
      const ended = this.instances.every((instance) => instance.result !== undefined);
      if (firstDrop === undefined && this.instances.some((instance) => droppedPackets(instance.vm.pid).length > 0)) firstDrop = Date.now();
      const blocked = firstDrop !== undefined && Date.now() - firstDrop > BLOCKED_BOOT_SECONDS * 1000;
      if (failures > 0 || ended || blocked) {
        // CloudFormation's words for a failed creation policy; the twin adds what it saw on the way.
        const why =
          failures > 0
            ? `Received ${failures} FAILURE signal(s) out of ${count}. Unable to satisfy 100% MinSuccessfulInstancesPercent requirement`
            : ended
              ? `Failed to receive ${count} resource signal(s) within the specified duration`
              : `${successes} of ${count} resource signal(s) received; the twin stopped waiting for the rest (CloudFormation would wait for the creation policy's timeout) ${BLOCKED_BOOT_SECONDS} s after the security groups first dropped a packet`;
        return this.event(logicalId, type, 'CREATE_FAILED', `${why}. ${await this.diagnosis()}`);
      }
      if (this.deleted) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  /** What the twin saw: the packets each instance's security groups dropped, and the end of each failed boot log. */
  async diagnosis(): Promise<string> {
    const lines: string[] = [];
    for (const instance of this.instances) {
      for (const packet of droppedPackets(instance.vm.pid)) {
        const peer = this.instances.find((other) => other.vm.ip === packet.peer);
        const who = peer ? `${peer.instanceId} (${packet.peer})` : packet.peer;
        lines.push(
          packet.direction === 'in'
            ? `security groups ${instance.groupIds.join(', ')} of ${instance.instanceId} dropped ${packet.protocol} from ${who} to port ${packet.port}: no ingress rule allows it`
            : `security groups ${instance.groupIds.join(', ')} of ${instance.instanceId} dropped ${packet.protocol} to ${who} port ${packet.port}: no egress rule allows it`,
        );
      }
    }
    for (const instance of this.instances.filter((candidate) => candidate.result && candidate.result.status !== 0)) {
      const tail = (await this.hub!.exec(instance.vm, 'tail -n 5 /var/log/rmqbench-boot.log')).stdout.trim();
      lines.push(`${instance.instanceId} boot exited ${instance.result!.status}: ${tail.split('\n').join(' | ')}`);
    }
    return lines.length > 0 ? `The twin saw: ${[...new Set(lines)].join('; ')}` : 'The twin saw no dropped packet.';
  }

  /** DeleteStack: the instances are stopped and removed with their namespaces. */
  async delete(): Promise<void> {
    this.deleted = true;
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

/** The environment cloud-init runs user data with on Amazon Linux 2023: root's, the AWS CLI on PATH; the hub's CA for the CLI. */
export function cloudInitEnvironment(): Record<string, string> {
  return {
    PATH: `${awsCliDirectory()}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: '/root',
    AWS_CA_BUNDLE: '/etc/ssl/certs/ca-certificates.crt',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  };
}

