import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { generateBrokerConfig, policyCommandArgs } from '../../core/broker/broker-config';
import { RabbitMqCluster, RabbitMqInstanceTiers, RabbitMqRelease, type RabbitMqClusterProps } from '../../cdk';
import { shellQuote } from '../../cdk/shell';
import {
  BOOT_LOG_FILE,
  DRAIN_SCRIPT_DELIMITER,
  DRAIN_SCRIPT_PATH,
  ENABLED_PLUGINS_DELIMITER,
  INSTALL_OVERRIDE_FILE,
  RABBITMQ_CONF_DELIMITER,
} from '../../cdk/user-data/rabbitmq-node';
import { runWithStubs } from '../stub-commands';
import { bashSyntaxErrors, bashWords, hereDocument, userDataText, withoutAssetHashes } from './template-helpers';

const REGION = 'eu-west-1';

function synth(props: RabbitMqClusterProps = {}): { cluster: RabbitMqCluster; template: Template; userData: string } {
  const stack = new Stack(new App(), 'Test', { env: { region: REGION } });
  const cluster = new RabbitMqCluster(stack, 'Cluster', props);
  const template = Template.fromStack(stack);
  return { cluster, template, userData: userDataText(template, 'AWS::EC2::LaunchTemplate') };
}

describe('RabbitMqCluster', () => {
  const defaults = synth();

  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html: "User data is limited to 16
  // KB,
  // in raw form, before it is base64-encoded" (RunInstances refuses more).
  test(
    "the node user data fits EC2's 16 KB with each token at a worst-case 256 characters, and installs nftables " +
      'for a partition fault without failing the boot',
    () => {
      for (const props of [
        {},
        { release: RabbitMqRelease.V3_13, topology: { type: 'mirrored' as const, mirrorTo: 'all' as const } },
      ]) {
        const worstCase = synth(props).userData.replace(/<\{"Ref":"[^"]+"\}>/g, 'x'.repeat(256));
        expect(Buffer.byteLength(worstCase, 'utf8')).toBeLessThan(16 * 1024);
      }
      const line = defaults.userData.split('\n').find((candidate) => candidate.startsWith('command -v nft '))!;
      expect(line).toBe(
        'command -v nft >/dev/null || dnf install -y -q nftables || echo "nftables not installed; a partition ' +
          'fault installs it" >&2',
      );
      // Under the user data's own `set -e` semantics: a failing dnf is reported and the boot goes on; nft present, no
      // dnf.
      const failed = runWithStubs(`set -euo pipefail\n${line}\necho continued`, { dnf: 1 });
      expect(failed).toMatchObject({
        status: 0,
        stdout: 'continued\n',
        calls: ['dnf install -y -q nftables DEBIAN_FRONTEND='],
      });
      expect(failed.stderr).toContain('nftables not installed; a partition fault installs it');
      expect(runWithStubs(`set -euo pipefail\n${line}`, { nft: 0, dnf: 0 })).toMatchObject({ status: 0, calls: [] });
      // After the packages, before the broker is configured.
      expect(defaults.userData.indexOf(line)).toBeGreaterThan(
        defaults.userData.indexOf('\nrmqbench_install_packages\n'),
      );
    },
  );

  describe('broker configuration comes from core/broker/broker-config.ts unchanged', () => {
    test.each([
      ['4.1 quorum (default)', {}, { topology: { type: 'quorum' as const }, rabbitmqVersion: '4.1.4', nodeCount: 3 }],
      [
        '3.13 mirrored to 2, 5 nodes',
        { release: RabbitMqRelease.V3_13, topology: { type: 'mirrored' as const, mirrorTo: 2 as const }, nodeCount: 5 },
        { topology: { type: 'mirrored' as const, mirrorTo: 2 }, rabbitmqVersion: '3.13.7', nodeCount: 5 },
      ],
      [
        '4.1 stream',
        { topology: { type: 'stream' as const, replicationFactor: 2 } },
        { topology: { type: 'stream' as const, replicationFactor: 2 }, rabbitmqVersion: '4.1.4', nodeCount: 3 },
      ],
    ])(
      '%s: user data writes exactly the generated rabbitmq.conf and enabled_plugins and applies every policy',
      (_name, props, input) => {
        const { userData } = synth(props);
        const expected = generateBrokerConfig({ ...input, peerDiscovery: { backend: 'aws', region: REGION } });
        expect(hereDocument(userData, '/etc/rabbitmq/rabbitmq.conf', RABBITMQ_CONF_DELIMITER)).toBe(
          expected.rabbitmqConf,
        );
        expect(hereDocument(userData, '/etc/rabbitmq/enabled_plugins', ENABLED_PLUGINS_DELIMITER)).toBe(
          expected.enabledPluginsFile,
        );
        const policyLines = userData
          .split('\n')
          .filter((line) => line.startsWith('rabbitmqctl ') && line.includes('set_policy'));
        expect(policyLines.map((line) => bashWords(line.slice('rabbitmqctl '.length)))).toEqual(
          expected.policies.map(policyCommandArgs),
        );
      },
    );

    test('mirrored topology on 3.13 produces an ha-mode policy in the user data', () => {
      const { userData } = synth({ release: RabbitMqRelease.V3_13, topology: { type: 'mirrored', mirrorTo: 'all' } });
      expect(userData).toContain(`rabbitmqctl ${['set_policy', '--apply-to', 'queues'].map(shellQuote).join(' ')}`);
      expect(userData).toContain('"ha-mode":"all"');
    });

    test('the public brokerConfig field is what the nodes run', () => {
      expect(hereDocument(defaults.userData, '/etc/rabbitmq/rabbitmq.conf', RABBITMQ_CONF_DELIMITER)).toBe(
        defaults.cluster.brokerConfig.rabbitmqConf,
      );
    });
  });

  test('user data is valid bash', () => {
    expect(bashSyntaxErrors(defaults.userData)).toBe('');
  });

  describe('peer discovery', () => {
    test('the AWS backend lists the Auto Scaling group, cleans up departed nodes, and is enabled as a plugin', () => {
      const conf = defaults.cluster.brokerConfig.rabbitmqConf;
      expect(conf).toContain('cluster_formation.peer_discovery_backend = aws');
      expect(conf).toContain('cluster_formation.aws.use_autoscaling_group = true');
      expect(conf).toContain(`cluster_formation.aws.region = ${REGION}`);
      expect(conf).toContain('cluster_formation.node_cleanup.only_log_warning = false');
      expect(defaults.cluster.brokerConfig.enabledPlugins).toContain('rabbitmq_peer_discovery_aws');
    });

    test('the node role may describe the Auto Scaling group and its instances', () => {
      defaults.template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Action: [
                'autoscaling:DescribeAutoScalingInstances',
                'autoscaling:DescribeAutoScalingGroups',
                'ec2:DescribeInstances',
              ],
              Effect: 'Allow',
              Resource: '*',
            }),
          ]),
        },
      });
    });

    test('node names use the private IP, as use_private_ip expects', () => {
      expect(defaults.userData).toContain('NODENAME=rabbit@%s\\nUSE_LONGNAME=true');
      expect(defaults.cluster.brokerConfig.rabbitmqConf).toContain('cluster_formation.aws.use_private_ip = true');
    });
  });

  describe('secrets', () => {
    test('the cookie and admin password are generated by Secrets Manager, not written into the template', () => {
      const secrets = Object.values(defaults.template.findResources('AWS::SecretsManager::Secret')) as {
        Properties: Record<string, unknown>;
      }[];
      expect(secrets).toHaveLength(2);
      for (const secret of secrets) {
        expect(secret.Properties.GenerateSecretString).toBeDefined();
        expect(secret.Properties.SecretString).toBeUndefined();
      }
    });

    test('user data reads the secrets at boot by ARN and carries no secret value or dynamic reference', () => {
      const { userData } = defaults;
      expect(userData).toContain('aws secretsmanager get-secret-value');
      expect(userData).not.toMatch(/\{\{resolve:/);
      expect(userData).not.toMatch(/SecretString"?\s*:/);
      expect(userData).not.toMatch(/password\s*[=:]\s*\S/i);
      // The password goes through stdin, never argv: add_user gets the user name only.
      const addUser = userData.split('\n').filter((line) => line.includes('add_user'));
      expect(addUser).toHaveLength(1);
      expect(addUser[0]).toMatch(/\| rabbitmqctl add_user "\$ADMIN_USER" \|\| true; fi$/);
      expect(userData).not.toMatch(/^\s*set\s+-[a-z]*x/m);
      // The only references in the script are the two secret ARNs, the boot log group's name and the stack's own name
      // (nothing from the secrets).
      const references = [...userData.matchAll(/<(\{[^\n]*?\})>/g)].map((match) => JSON.parse(match[1] as string));
      const secretIds = Object.keys(defaults.template.findResources('AWS::SecretsManager::Secret'));
      const logGroupIds = Object.keys(defaults.template.findResources('AWS::Logs::LogGroup'));
      expect(references).toEqual(expect.arrayContaining(secretIds.map((id) => ({ Ref: id }))));
      expect(
        references.every((reference) => [...secretIds, ...logGroupIds, 'AWS::StackName'].includes(reference.Ref)),
      ).toBe(true);
    });

    test('the template has no parameter that could carry a secret', () => {
      const parameters = Object.keys(defaults.template.toJSON().Parameters ?? {});
      expect(parameters.filter((name) => !name.startsWith('SsmParameterValue') && name !== 'BootstrapVersion')).toEqual(
        [],
      );
    });

    test('the node role can read exactly the two cluster secrets', () => {
      defaults.template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
              Resource: { Ref: Match.stringLikeRegexp('ClusterErlangCookie') },
            }),
            Match.objectLike({
              Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
              Resource: { Ref: Match.stringLikeRegexp('ClusterAdminCredentials') },
            }),
          ]),
        },
      });
    });
  });

  describe('instances', () => {
    test('the Auto Scaling group uses a launch template, never a launch configuration', () => {
      defaults.template.resourceCountIs('AWS::AutoScaling::LaunchConfiguration', 0);
      defaults.template.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', {
        LaunchTemplate: Match.objectLike({ LaunchTemplateId: Match.anyValue() }),
        MinSize: '3',
        MaxSize: '5',
        DesiredCapacity: '3',
        HealthCheckType: 'ELB',
      });
    });

    test('nodes require IMDSv2, have no SSH key, are SSM managed and carry an encrypted gp3 data volume', () => {
      defaults.template.hasResourceProperties('AWS::EC2::LaunchTemplate', {
        LaunchTemplateData: Match.objectLike({
          InstanceType: 'm5a.large',
          KeyName: Match.absent(),
          MetadataOptions: { HttpTokens: 'required', HttpPutResponseHopLimit: 1 },
          BlockDeviceMappings: Match.arrayWith([
            {
              DeviceName: '/dev/sdf',
              Ebs: { DeleteOnTermination: true, Encrypted: true, VolumeSize: 50, VolumeType: 'gp3' },
            },
          ]),
        }),
      });
      defaults.template.hasResourceProperties('AWS::IAM::Role', {
        ManagedPolicyArns: [
          { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/AmazonSSMManagedInstanceCore']] },
        ],
      });
    });

    test('instance type, data volume size and release are taken from props', () => {
      const { template, userData } = synth({
        instanceType: RabbitMqInstanceTiers.COMPUTE_2XLARGE,
        dataVolumeSizeGiB: 200,
        release: RabbitMqRelease.V3_13,
      });
      template.hasResourceProperties('AWS::EC2::LaunchTemplate', {
        LaunchTemplateData: Match.objectLike({
          InstanceType: 'c5.2xlarge',
          BlockDeviceMappings: Match.arrayWith([
            Match.objectLike({ DeviceName: '/dev/sdf', Ebs: Match.objectLike({ VolumeSize: 200 }) }),
          ]),
        }),
      });
      expect(userData).toContain(
        'dnf install -y --setopt=install_weak_deps=False logrotate erlang-26.2.5.6 rabbitmq-server-3.13.7',
      );
    });

    test('RabbitMQ 4.1 and its Erlang are pinned by default', () => {
      expect(defaults.userData).toContain('erlang-27.3.4 rabbitmq-server-4.1.4');
      expect(defaults.userData).toContain('dnf versionlock add erlang rabbitmq-server');
    });
  });

  describe('security groups', () => {
    test('Erlang distribution ports are open only to the cluster own security group', () => {
      for (const [from, to] of [
        [4369, 4369],
        [25672, 25672],
        [35672, 35682],
      ]) {
        defaults.template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
          FromPort: from,
          ToPort: to,
          IpProtocol: 'tcp',
          GroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('ClusterNodeSecurityGroup'), 'GroupId'] },
          SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('ClusterNodeSecurityGroup'), 'GroupId'] },
        });
      }
    });

    test('by default nothing outside the cluster and its load balancer may connect, and port 22 is never open', () => {
      const ingressRules = [
        ...Object.values(defaults.template.findResources('AWS::EC2::SecurityGroupIngress')).map(
          (rule) => (rule as { Properties: Record<string, unknown> }).Properties,
        ),
        ...Object.values(defaults.template.findResources('AWS::EC2::SecurityGroup')).flatMap(
          (group) =>
            (group as { Properties: { SecurityGroupIngress?: Record<string, unknown>[] } }).Properties
              .SecurityGroupIngress ?? [],
        ),
      ];
      expect(ingressRules.length).toBeGreaterThan(0);
      expect(ingressRules.filter((rule) => rule.CidrIp !== undefined || rule.CidrIpv6 !== undefined)).toEqual([]);
      expect(ingressRules.filter((rule) => (rule.FromPort as number) <= 22 && (rule.ToPort as number) >= 22)).toEqual(
        [],
      );
    });

    test('allowed peers reach AMQP, AMQPS and management on the load balancer and AMQP/management on the nodes', () => {
      const certificate = (stack: Stack) =>
        acm.Certificate.fromCertificateArn(stack, 'Cert', 'arn:aws:acm:eu-west-1:111111111111:certificate/abc');
      const stack = new Stack(new App(), 'Peers');
      new RabbitMqCluster(stack, 'Cluster', {
        allowedPeers: [ec2.Peer.ipv4('10.20.0.0/16')],
        tlsCertificate: certificate(stack),
      });
      const template = Template.fromStack(stack);
      const lbGroup = Object.entries(template.findResources('AWS::EC2::SecurityGroup')).find(([id]) =>
        id.includes('LoadBalancerSecurityGroup'),
      );
      const lbIngress = (lbGroup?.[1] as { Properties: { SecurityGroupIngress: Record<string, unknown>[] } }).Properties
        .SecurityGroupIngress;
      expect(lbIngress.map((rule) => [rule.CidrIp, rule.FromPort]).sort()).toEqual([
        ['10.20.0.0/16', 15672],
        ['10.20.0.0/16', 5671],
        ['10.20.0.0/16', 5672],
      ]);
      const nodeGroup = Object.entries(template.findResources('AWS::EC2::SecurityGroup')).find(([id]) =>
        id.includes('NodeSecurityGroup'),
      );
      const nodeIngress = (nodeGroup?.[1] as { Properties: { SecurityGroupIngress: Record<string, unknown>[] } })
        .Properties.SecurityGroupIngress;
      expect(nodeIngress.map((rule) => [rule.CidrIp, rule.FromPort]).sort()).toEqual([
        ['10.20.0.0/16', 15672],
        ['10.20.0.0/16', 5672],
      ]);
    });
  });

  describe('load balancer', () => {
    test('TCP listeners on 5672 and 15672, no TLS listener without a certificate', () => {
      defaults.template.resourceCountIs('AWS::ElasticLoadBalancingV2::Listener', 2);
      defaults.template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 5672, Protocol: 'TCP' });
      defaults.template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
        Port: 15672,
        Protocol: 'TCP',
      });
      defaults.template.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', {
        Type: 'network',
        Scheme: 'internal',
      });
    });

    test('a certificate adds a TLS listener on 5671 forwarding to the nodes AMQP port', () => {
      const stack = new Stack(new App(), 'Tls');
      new RabbitMqCluster(stack, 'Cluster', {
        tlsCertificate: acm.Certificate.fromCertificateArn(
          stack,
          'Cert',
          'arn:aws:acm:eu-west-1:111111111111:certificate/abc',
        ),
      });
      const template = Template.fromStack(stack);
      template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
        Port: 5671,
        Protocol: 'TLS',
        Certificates: [{ CertificateArn: 'arn:aws:acm:eu-west-1:111111111111:certificate/abc' }],
        DefaultActions: [{ Type: 'forward', TargetGroupArn: { Ref: Match.stringLikeRegexp('ClusterAmqpTargets') } }],
      });
      template.hasOutput('*', {
        Value: Match.objectLike({ 'Fn::Join': ['', Match.arrayWith(['amqps://', ':5671'])] }),
      });
    });

    test('the AMQP target group checks the AMQP listener, the management group the management HTTP listener', () => {
      const groups = Object.values(defaults.template.findResources('AWS::ElasticLoadBalancingV2::TargetGroup')) as {
        Properties: Record<string, unknown>;
      }[];
      const byPort = Object.fromEntries(groups.map((group) => [group.Properties.Port, group.Properties]));
      expect(Object.keys(byPort).sort()).toEqual(['15672', '5672']);
      expect(byPort[5672]).toMatchObject({
        Protocol: 'TCP',
        TargetType: 'instance',
        HealthCheckProtocol: 'TCP',
        HealthCheckPort: '5672',
      });
      expect(byPort[15672]).toMatchObject({
        Protocol: 'TCP',
        TargetType: 'instance',
        HealthCheckProtocol: 'HTTP',
        HealthCheckPort: '15672',
        HealthCheckPath: '/',
        Matcher: { HttpCode: '200' },
      });
    });

    test('cross-zone load balancing is on by default and follows the prop', () => {
      const attribute = (value: string) => ({
        LoadBalancerAttributes: Match.arrayWith([{ Key: 'load_balancing.cross_zone.enabled', Value: value }]),
      });
      defaults.template.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', attribute('true'));
      synth({ crossZoneEnabled: false }).template.hasResourceProperties(
        'AWS::ElasticLoadBalancingV2::LoadBalancer',
        attribute('false'),
      );
    });
  });

  describe('scaling', () => {
    test('default policy: scale out above 60% CPU and in below 30%, as in the thesis', () => {
      defaults.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'CPUUtilization',
        Namespace: 'AWS/EC2',
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 60,
      });
      defaults.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'CPUUtilization',
        ComparisonOperator: 'LessThanOrEqualToThreshold',
        Threshold: 30,
      });
      defaults.template.hasResourceProperties('AWS::AutoScaling::ScalingPolicy', {
        PolicyType: 'StepScaling',
        StepAdjustments: Match.arrayWith([Match.objectLike({ ScalingAdjustment: 1 })]),
      });
      defaults.template.hasResourceProperties('AWS::AutoScaling::ScalingPolicy', {
        StepAdjustments: Match.arrayWith([Match.objectLike({ ScalingAdjustment: -1 })]),
      });
    });

    test('thresholds follow the props', () => {
      const { template } = synth({ scaleOutCpuPercent: 75, scaleInCpuPercent: 20 });
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 75,
      });
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        ComparisonOperator: 'LessThanOrEqualToThreshold',
        Threshold: 20,
      });
    });

    test('pinCapacity fixes the group at nodeCount with no scaling policy or alarm', () => {
      const { template } = synth({ pinCapacity: true, nodeCount: 3 });
      template.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', {
        MinSize: '3',
        MaxSize: '3',
        DesiredCapacity: '3',
      });
      template.resourceCountIs('AWS::AutoScaling::ScalingPolicy', 0);
      template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    });
  });

  describe('outputs and fields', () => {
    test('AMQP endpoint and management URL are outputs built on the load balancer DNS name', () => {
      const outputs = defaults.template.findOutputs('*');
      const values = Object.values(outputs).map((output) => JSON.stringify(output.Value));
      expect(
        values.some((value) => value.includes('amqp://') && value.includes(':5672') && value.includes('DNSName')),
      ).toBe(true);
      expect(
        values.some((value) => value.includes('http://') && value.includes(':15672') && value.includes('DNSName')),
      ).toBe(true);
    });

    test('public fields expose what the construct created', () => {
      const { cluster } = defaults;
      expect(cluster.autoScalingGroup).toBeDefined();
      expect(cluster.loadBalancer).toBeDefined();
      expect(cluster.securityGroup).toBeDefined();
      expect(cluster.erlangCookieSecret).toBeDefined();
      expect(cluster.adminSecret).toBeDefined();
      expect(JSON.stringify(Stack.of(cluster).resolve(cluster.amqpEndpoint))).toMatch(/amqp:\/\/.*DNSName.*:5672/);
      expect(JSON.stringify(Stack.of(cluster).resolve(cluster.managementUrl))).toMatch(/http:\/\/.*DNSName.*:15672/);
    });

    test('an existing VPC is used instead of creating one', () => {
      const stack = new Stack(new App(), 'Existing');
      const vpc = new ec2.Vpc(stack, 'Mine');
      const cluster = new RabbitMqCluster(stack, 'Cluster', { vpc });
      expect(cluster.vpc).toBe(vpc);
      Template.fromStack(stack).resourceCountIs('AWS::EC2::VPC', 1);
    });
  });

  describe('boot signal: CREATE_COMPLETE means every node joined', () => {
    test('the group waits for a signal from every node, also during rolling updates, one node at a time', () => {
      const groups = Object.values(defaults.template.findResources('AWS::AutoScaling::AutoScalingGroup')) as Record<
        string,
        unknown
      >[];
      expect(groups).toHaveLength(1);
      expect(groups[0]!.CreationPolicy).toEqual({ ResourceSignal: { Count: 3, Timeout: 'PT20M' } });
      expect(groups[0]!.UpdatePolicy).toMatchObject({
        AutoScalingRollingUpdate: {
          WaitOnResourceSignals: true,
          PauseTime: 'PT20M',
          MaxBatchSize: 1,
          MinInstancesInService: 3,
        },
      });
      const pinned = synth({ nodeCount: 5, pinCapacity: true, bootTimeout: Duration.minutes(30) }).template;
      const pinnedGroup = Object.values(pinned.findResources('AWS::AutoScaling::AutoScalingGroup'))[0] as Record<
        string,
        unknown
      >;
      expect(pinnedGroup.CreationPolicy).toEqual({ ResourceSignal: { Count: 5, Timeout: 'PT30M' } });
      // A pinned group cannot keep all 5 in service while replacing one.
      expect(pinnedGroup.UpdatePolicy).toMatchObject({ AutoScalingRollingUpdate: { MinInstancesInService: 4 } });
    });

    test(
      'the node signals its own stack (by the deployed name: the controller deploys the template under another) ' +
        'and group, after waiting for as many running nodes as the group desires',
      () => {
        const lines = defaults.userData.split('\n');
        expect(lines).toContain('STACK_NAME=<{"Ref":"AWS::StackName"}>');
        const groupId = Object.keys(defaults.template.findResources('AWS::AutoScaling::AutoScalingGroup'))[0];
        expect(lines).toContain(`SIGNAL_RESOURCE=${groupId}`);
        const startup = lines.indexOf('rabbitmqctl await_startup --timeout 900');
        const awaitNodes = lines.findIndex((line) =>
          line.startsWith('rabbitmqctl await_online_nodes "$EXPECTED_NODES" --timeout '),
        );
        expect(startup).toBeGreaterThan(0);
        expect(awaitNodes).toBeGreaterThan(startup);
        expect(
          lines.findIndex((line) => line.startsWith('EXPECTED_NODES=$(aws autoscaling describe-auto-scaling-groups')),
        ).toBeLessThan(awaitNodes);
        // The trap is installed before anything can fail, so every exit path signals.
        expect(lines.slice(0, 6)).toEqual([
          '#!/bin/bash',
          'function exitTrap(){',
          'exitCode=$?',
          'rmqbench_boot_finished "$exitCode"',
          '}',
          'trap exitTrap EXIT',
        ]);
      },
    );

    describe('the exit trap, run by bash with a fake aws command', () => {
      let dir: string;
      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'rmqbench-boot-trap-'));
        // The fake CLI records its arguments, and keeps the log events file put-log-events would send.
        writeFileSync(
          join(dir, 'aws'),
          `#!/bin/bash\necho "$*" >> ${dir}/aws-calls\nfor arg in "$@"; do case "$arg" in file://*) cp ` +
            `"\${arg#file://}" ${dir}/events.json;; esac; done\n`,
        );
        chmodSync(join(dir, 'aws'), 0o755);
      });
      afterEach(() => rmSync(dir, { recursive: true, force: true }));

      /** The user data up to (not including) its first IMDS call, then `commands`, with the boot log in `dir`. */
      function runBootPrefix(commands: string): {
        status: number | null;
        calls: string;
        events: { message: string }[];
      } {
        const lines = defaults.userData.split('\n');
        const prefix = lines.slice(0, lines.indexOf('INSTANCE_ID=$(imds instance-id)')).join('\n');
        const script = `${prefix
          .replaceAll(BOOT_LOG_FILE, join(dir, 'boot.log'))
          .replaceAll('/run/rmqbench-boot-log-events.json', join(dir, 'boot-log-events.json'))
          .replace(/<\{[^\n]*?\}>/g, 'REF')}\nINSTANCE_ID=i-0123456789abcdef0\n${commands}\n`;
        const run = spawnSync('bash', ['-c', script], {
          encoding: 'utf8',
          env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
          timeout: 30_000,
          // stdin not a socket: bash sources ~/.bashrc (which may put other commands first on PATH) when stdin is a
          // socket, as Node's pipes are, and SHLVL is under 2 (bash(1), INVOCATION, "run by the remote shell daemon").
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const read = (file: string) => {
          try {
            return readFileSync(join(dir, file), 'utf8');
          } catch {
            return '';
          }
        };
        const events = read('events.json');
        return {
          status: run.status,
          calls: read('aws-calls'),
          events: events ? (JSON.parse(events) as { message: string }[]) : [],
        };
      }

      test('a failing command signals FAILURE for this instance and ships the boot log tail', () => {
        const result = runBootPrefix('echo "installing erlang"\nfalse\necho "never reached"');
        expect(result.status).toBe(1);
        expect(result.calls).toContain('cloudformation signal-resource --region eu-west-1 --stack-name REF');
        expect(result.calls).toMatch(/--unique-id i-0123456789abcdef0 --status FAILURE/);
        expect(result.calls).toContain(
          'logs put-log-events --region eu-west-1 --log-group-name REF --log-stream-name i-0123456789abcdef0/boot',
        );
        const messages = result.events.map((event) => event.message);
        expect(messages).toContain('installing erlang');
        expect(messages).not.toContain('never reached');
      });

      test('a script that runs to its end signals SUCCESS', () => {
        const result = runBootPrefix('echo "cluster has 3 running nodes"');
        expect(result.status).toBe(0);
        expect(result.calls).toMatch(/--unique-id i-0123456789abcdef0 --status SUCCESS/);
        expect(result.calls).not.toContain('FAILURE');
      });
    });

    test('the node role may signal only its own stack and write only its boot log group', () => {
      const policies = defaults.template.findResources('AWS::IAM::Policy');
      const statements = Object.values(policies).flatMap(
        (policy) =>
          (policy as { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }).Properties
            .PolicyDocument.Statement,
      );
      expect(statements).toContainEqual(
        expect.objectContaining({
          Sid: 'SignalBootResult',
          Action: 'cloudformation:SignalResource',
          Resource: { Ref: 'AWS::StackId' },
        }),
      );
      expect(statements).toContainEqual(
        expect.objectContaining({
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [expect.stringMatching(/^ClusterBootLogs/), 'Arn'] },
        }),
      );
      // The boot log survives a failed (rolled back or deleted) stack.
      const logGroups = Object.entries(defaults.template.findResources('AWS::Logs::LogGroup')).filter(([id]) =>
        id.startsWith('ClusterBootLogs'),
      );
      expect(logGroups.map(([, group]) => group)).toEqual([
        expect.objectContaining({ DeletionPolicy: 'Retain', Properties: { RetentionInDays: 30 } }),
      ]);
    });
  });

  describe('drain before scale-in', () => {
    test(
      'a termination lifecycle hook holds a leaving node; it ' + 'continues after the heartbeat if nobody completes it',
      () => {
        defaults.template.hasResourceProperties('AWS::AutoScaling::LifecycleHook', {
          LifecycleHookName: 'rmqbench-drain-before-termination',
          LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
          DefaultResult: 'CONTINUE',
          HeartbeatTimeout: 300,
        });
      },
    );

    test(
      'the node may complete the hook through a policy of ' + 'its own, which the group creation does not wait for',
      () => {
        const policies = defaults.template.findResources('AWS::IAM::Policy') as Record<
          string,
          { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }
        >;
        const groupId = Object.keys(defaults.template.findResources('AWS::AutoScaling::AutoScalingGroup'))[0]!;
        const drain = Object.entries(policies).filter(([, policy]) =>
          JSON.stringify(policy).includes('autoscaling:CompleteLifecycleAction'),
        );
        expect(drain).toHaveLength(1);
        expect(drain[0]![0]).toMatch(/^ClusterDrainPolicy/);
        // The default policy (secrets, signal, logs) must not reference the group, or it would be created after the
        // group,
        // whose creation waits for nodes that need those grants.
        const defaultPolicy = Object.entries(policies).find(([id]) => id.startsWith('ClusterNodeRoleDefaultPolicy'));
        expect(defaultPolicy).toBeDefined();
        expect(JSON.stringify(defaultPolicy![1])).not.toContain(groupId);
      },
    );

    test('the watcher is valid bash, drains RabbitMQ before completing the hook, and starts with the node', () => {
      const script = hereDocument(defaults.userData, DRAIN_SCRIPT_PATH, DRAIN_SCRIPT_DELIMITER);
      expect(bashSyntaxErrors(script)).toBe('');
      expect(script).toContain('imds autoscaling/target-lifecycle-state');
      const drain = script.indexOf('rabbitmq-upgrade drain');
      const complete = script.indexOf('aws autoscaling complete-lifecycle-action');
      expect(drain).toBeGreaterThan(0);
      expect(complete).toBeGreaterThan(drain);
      expect(script).toContain('--lifecycle-hook-name "$DRAIN_HOOK_NAME"');
      expect(defaults.userData).toContain(
        'systemctl daemon-reload && systemctl enable --now rmqbench-drain-before-termination.service',
      );
    });

    describe('the watcher, run by bash with fake IMDS, rabbitmq-upgrade and aws commands', () => {
      let dir: string;
      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'rmqbench-drain-'));
        const fake = (name: string, body: string) => {
          writeFileSync(join(dir, name), `#!/bin/bash\n${body}\n`);
          chmodSync(join(dir, name), 0o755);
        };
        // IMDSv2: a token, then the target lifecycle state Auto Scaling sets before terminating the instance.
        fake(
          'curl',
          `case "$*" in *api/token*) echo token;; *target-lifecycle-state*) echo Terminated;; *) exit 22;; esac`,
        );
        fake('rabbitmq-upgrade', `echo "rabbitmq-upgrade $*" >> ${dir}/calls; exit \${DRAIN_EXIT:-0}`);
        fake('aws', `echo "aws $*" >> ${dir}/calls`);
        writeFileSync(
          join(dir, 'node.env'),
          'REGION=eu-west-1\nASG_NAME=my-group\nINSTANCE_ID=i-0123456789abcdef0\n' +
            'DRAIN_HOOK_NAME=rmqbench-drain-before-termination\nDRAIN_TIMEOUT_SECONDS=5\n',
        );
      });
      afterEach(() => rmSync(dir, { recursive: true, force: true }));

      function runWatcher(drainExit: number): { status: number | null; calls: string[]; output: string } {
        const script = hereDocument(defaults.userData, DRAIN_SCRIPT_PATH, DRAIN_SCRIPT_DELIMITER).replace(
          '/etc/rmqbench/node.env',
          join(dir, 'node.env'),
        );
        const run = spawnSync('bash', ['-c', script], {
          encoding: 'utf8',
          env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, DRAIN_EXIT: String(drainExit) },
          timeout: 30_000,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        return {
          status: run.status,
          calls: readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n'),
          output: run.stdout,
        };
      }

      test('a terminating instance is drained, then its lifecycle action completed with CONTINUE', () => {
        const { status, calls, output } = runWatcher(0);
        expect(status).toBe(0);
        expect(output).not.toContain('drain did not finish');
        expect(calls).toEqual([
          'rabbitmq-upgrade drain',
          'aws autoscaling complete-lifecycle-action --region eu-west-1 --auto-scaling-group-name my-group ' +
            '--lifecycle-hook-name rmqbench-drain-before-termination --instance-id i-0123456789abcdef0 ' +
            '--lifecycle-action-result CONTINUE',
        ]);
      });

      test('a drain that fails still lets the termination continue', () => {
        const { status, calls, output } = runWatcher(3);
        expect(status).toBe(0);
        expect(output).toContain('drain did not finish; terminating anyway');
        expect(calls[1]).toMatch(/^aws autoscaling complete-lifecycle-action .* --lifecycle-action-result CONTINUE$/);
      });
    });
  });

  describe('packages and image', () => {
    test('package installation is one function, called once after the only test seam may redefine it', () => {
      const lines = defaults.userData.split('\n');
      const start = lines.indexOf('rmqbench_install_packages() {');
      const end = lines.indexOf('}', start);
      const body = lines.slice(start + 1, end).join('\n');
      expect(body).toContain(
        'dnf install -y --setopt=install_weak_deps=False logrotate erlang-27.3.4 rabbitmq-server-4.1.4',
      );
      expect(body).toContain('rpm --import');
      expect(lines.filter((line) => /^(dnf|rpm) /.test(line)).every((line) => body.includes(line))).toBe(true);
      const seam = lines.indexOf(`if [ -f ${INSTALL_OVERRIDE_FILE} ]; then . ${INSTALL_OVERRIDE_FILE}; fi`);
      expect(seam).toBeGreaterThan(end);
      expect(lines.filter((line) => line === 'rmqbench_install_packages')).toHaveLength(1);
      expect(lines.indexOf('rmqbench_install_packages')).toBe(seam + 1);
      expect(defaults.userData.split(INSTALL_OVERRIDE_FILE)).toHaveLength(4); // the comment, the test, the source
    });

    test(
      "the repository file lists the guide's four el9 " + 'repositories, each with both mirrors and signature checks',
      () => {
        const repo = hereDocument(defaults.userData, '/etc/yum.repos.d/rabbitmq.repo', 'RMQBENCH_REPO');
        const sections = repo.split(/\n(?=\[)/);
        expect(sections.map((section) => section.split('\n')[0])).toEqual([
          '[modern-erlang]',
          '[modern-erlang-noarch]',
          '[rabbitmq-el9]',
          '[rabbitmq-el9-noarch]',
        ]);
        for (const section of sections) {
          expect(section).toMatch(/yum1\.rabbitmq\.com/);
          expect(section).toMatch(/yum2\.rabbitmq\.com/);
          expect(section).toContain('gpgcheck=1');
          expect(section).toContain('repo_gpgcheck=1');
        }
      },
    );

    test('the image is the latest x86-64 Amazon Linux 2023 by default, a prop otherwise, and is a stack output', () => {
      const parameters = Object.values(defaults.template.toJSON().Parameters ?? {}) as { Default?: string }[];
      expect(parameters.map((parameter) => parameter.Default)).toContain(
        '/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-x86_64',
      );
      expect(Object.keys(defaults.template.findOutputs('*')).some((id) => id.includes('NodeImageId'))).toBe(true);
      const pinned = synth({
        machineImage: ec2.MachineImage.genericLinux({ [REGION]: 'ami-0123456789abcdef0' }),
      }).template;
      pinned.hasResourceProperties('AWS::EC2::LaunchTemplate', {
        LaunchTemplateData: Match.objectLike({ ImageId: 'ami-0123456789abcdef0' }),
      });
    });
  });

  describe('availability zones', () => {
    test('its own VPC spreads the nodes over 3 zones, also in an environment-agnostic stack', () => {
      for (const stack of [
        new Stack(new App(), 'Agnostic'),
        new Stack(new App(), 'Regional', { env: { region: REGION } }),
      ]) {
        new RabbitMqCluster(stack, 'Cluster');
        const template = Template.fromStack(stack);
        const privateSubnets = Object.values(template.findResources('AWS::EC2::Subnet')).filter((subnet) =>
          JSON.stringify(subnet).includes('"aws-cdk:subnet-type","Value":"Private"'),
        ) as { Properties: { AvailabilityZone: unknown } }[];
        expect(privateSubnets.map((subnet) => JSON.stringify(subnet.Properties.AvailabilityZone)).sort()).toEqual(
          [0, 1, 2].map((index) => JSON.stringify({ 'Fn::Select': [index, { 'Fn::GetAZs': '' }] })).sort(),
        );
      }
    });
  });

  describe('bad input throws at synth time, naming the props', () => {
    const certificate = () =>
      acm.Certificate.fromCertificateArn(new Stack(), 'Cert', 'arn:aws:acm:eu-west-1:111111111111:certificate/abc');
    test.each<[string, RabbitMqClusterProps, RegExp]>([
      ['node count 0', { nodeCount: 0 }, /nodeCount must be an integer from 1 to 7, got 0/],
      ['node count 8', { nodeCount: 8 }, /nodeCount must be an integer from 1 to 7, got 8/],
      [
        'min > max',
        { minCapacity: 5, maxCapacity: 4, nodeCount: 4 },
        /minCapacity \(5\) must not exceed maxCapacity \(4\)/,
      ],
      [
        'nodeCount outside min..max',
        { nodeCount: 3, minCapacity: 4, maxCapacity: 6 },
        /nodeCount \(3\) must lie between minCapacity \(4\) and maxCapacity \(6\)/,
      ],
      [
        'mirroring on RabbitMQ 4',
        { topology: { type: 'mirrored', mirrorTo: 'all' } },
        /topology "mirrored" needs a RabbitMQ 3.x release, but release is RabbitMQ 4.1.4/,
      ],
      ['TLS port without a certificate', { tlsPort: 5671 }, /tlsPort \(5671\) needs tlsCertificate/],
      ['TLS port clashing with AMQP', { tlsPort: 5672, tlsCertificate: certificate() }, /tlsPort \(5672\) must differ/],
      [
        'pinned capacity with a different max',
        { pinCapacity: true, maxCapacity: 5 },
        /pinCapacity fixes the cluster at nodeCount \(3\).*maxCapacity is 5/,
      ],
      [
        'scale-in threshold above scale-out',
        { scaleInCpuPercent: 70, scaleOutCpuPercent: 60 },
        /scaleInCpuPercent \(70\) must be lower than scaleOutCpuPercent \(60\)/,
      ],
      ['CPU threshold above 100', { scaleOutCpuPercent: 120 }, /scaleOutCpuPercent must be an integer from 1 to 100/],
      ['data volume of 0 GiB', { dataVolumeSizeGiB: 0 }, /dataVolumeSizeGiB must be an integer/],
      [
        'an ARM (Graviton) instance type',
        { instanceType: new ec2.InstanceType('m7g.large') },
        /instanceType m7g\.large is an ARM \(Graviton\) type.*x86-64 Erlang packages only/,
      ],
      [
        'a boot timeout too short to install',
        { bootTimeout: Duration.minutes(2) },
        /bootTimeout must be from 5 to 60 minutes/,
      ],
    ])('%s', (_name, props, message) => {
      expect(() => new RabbitMqCluster(new Stack(new App(), 'Bad'), 'Cluster', props)).toThrow(message);
    });

    test('a release that is not an exact version is refused', () => {
      expect(() => RabbitMqRelease.of('4.1', '27.3')).toThrow(/rabbitmqVersion must be an exact version/);
    });
  });

  test('snapshot', () => {
    const stack = new Stack(new App(), 'Snapshot');
    new RabbitMqCluster(stack, 'Cluster');
    expect(withoutAssetHashes(Template.fromStack(stack))).toMatchSnapshot();
  });
});
