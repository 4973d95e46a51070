import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Aws, Duration, Fn, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { cacheDir } from '../../local/paths';
import {
  KAFKA_ARTIFACTS,
  KAFKA_CLIENT_PORT,
  KAFKA_CONTROLLER_PORT,
  KafkaCluster,
  kafkaClusterId,
  type KafkaClusterProps,
} from '../../cdk';
import {
  KAFKA_HOME,
  KAFKA_JARS_DELIMITER,
  KAFKA_JARS_DIGEST,
  KAFKA_JARS_MANIFEST,
  KAFKA_JARS_MANIFEST_PATH,
  KAFKA_SERVER_PROPERTIES,
  KAFKA_UNIT_DELIMITER,
  KAFKA_UNIT_PATH,
  SERVER_PROPERTIES_DELIMITER,
} from '../../cdk/user-data/kafka-node';
import { mavenCoordinates } from '../../cdk/user-data/pinned-jars';
import { BOOT_LOG_FILE } from '../../cdk/user-data/rabbitmq-node';
import { CLOUDWATCH_NAMESPACE, KAFKA_BROKER_ROLE } from '../../core/metrics/cloudwatch-host-metrics';
import { CLOUDWATCH_AGENT_CONFIG_PATH, CLOUDWATCH_AGENT_CTL } from '../../cdk/user-data/cloudwatch-agent';
import {
  bashSyntaxErrors,
  hereDocument,
  runAgentBootLines,
  userDataText,
  withoutAssetHashes,
} from './template-helpers';

const REGION = 'eu-west-1';
const ZONE = 'kafka.bench.internal';

interface Synthesized {
  readonly cluster: KafkaCluster;
  readonly template: Template;
  /** User data of each broker instance, in node id order. */
  readonly userData: string[];
  readonly properties: Record<string, string>[];
}

function synth(props: Partial<KafkaClusterProps> = {}, stackName = 'Test'): Synthesized {
  const stack = new Stack(new App(), stackName, { env: { region: REGION, account: '111111111111' } });
  const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, natGateways: 1, flowLogs: { all: {} } });
  const cluster = new KafkaCluster(stack, 'Kafka', { vpc, zoneName: ZONE, ...props });
  const template = Template.fromStack(stack);
  const userData = cluster.instances.map((instance) => {
    const logicalId = stack.getLogicalId(instance.node.defaultChild as ec2.CfnInstance);
    return userDataText(
      Template.fromJSON({ Resources: { [logicalId]: template.toJSON().Resources[logicalId] } }),
      'AWS::EC2::Instance',
    );
  });
  const properties = userData.map((script) =>
    parseProperties(hereDocument(script, KAFKA_SERVER_PROPERTIES, SERVER_PROPERTIES_DELIMITER)),
  );
  return { cluster, template, userData, properties };
}

/**
 * The boot's lines that read the voters and its own listener back from server.properties, reading its content written
 * into `dir`.
 */
function readBackLines(script: string, dir: string): string {
  const properties = join(dir, 'server.properties');
  writeFileSync(properties, hereDocument(script, KAFKA_SERVER_PROPERTIES, SERVER_PROPERTIES_DELIMITER));
  const lines = script
    .split('\n')
    .filter((line) => line.startsWith('voter_hosts=') || line.startsWith('self_listener='));
  if (lines.length !== 2)
    throw new Error('the boot script does not read the voters and its listener back from server.properties');
  return lines.map((line) => line.split(KAFKA_SERVER_PROPERTIES).join(properties)).join('\n');
}

function parseProperties(text: string): Record<string, string> {
  const entries = text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const);
  return Object.fromEntries(entries);
}

function ingressRules(
  template: Template,
): { FromPort: number; ToPort: number; CidrIp?: string; SourceSecurityGroupId?: unknown; GroupId?: unknown }[] {
  const standalone = Object.values(template.findResources('AWS::EC2::SecurityGroupIngress')).map(
    (resource) => resource.Properties,
  );
  const inline = Object.values(template.findResources('AWS::EC2::SecurityGroup')).flatMap(
    (resource) => resource.Properties.SecurityGroupIngress ?? [],
  );
  return [...standalone, ...inline];
}

describe('KafkaCluster', () => {
  const defaults = synth();

  describe('brokers with stable identities', () => {
    test('three brokers by default, one instance each, node ids 1..3', () => {
      defaults.template.resourceCountIs('AWS::EC2::Instance', 3);
      expect(defaults.properties.map((props) => props['node.id'])).toEqual(['1', '2', '3']);
      expect(defaults.cluster.brokerCount).toBe(3);
    });

    test.each([1, 5, 7])('%i brokers: as many instances, interfaces and names, node ids 1..N', (brokers) => {
      const { template, properties } = synth({ brokers });
      template.resourceCountIs('AWS::EC2::Instance', brokers);
      template.resourceCountIs('AWS::EC2::NetworkInterface', brokers);
      template.resourceCountIs('AWS::Route53::RecordSet', brokers);
      expect(properties.map((props) => Number(props['node.id']))).toEqual(
        Array.from({ length: brokers }, (_, i) => i + 1),
      );
    });

    test(
      'every broker is a KRaft combined broker+controller ' + 'with the same static quorum of DNS names, no ZooKeeper',
      () => {
        const voters =
          `1@kafka-1.${ZONE}:${KAFKA_CONTROLLER_PORT},2@kafka-2.${ZONE}:${KAFKA_CONTROLLER_PORT},` +
          `3@kafka-3.${ZONE}:${KAFKA_CONTROLLER_PORT}`;
        for (const props of defaults.properties) {
          expect(props['process.roles']).toBe('broker,controller');
          expect(props['controller.quorum.voters']).toBe(voters);
          expect(props['controller.listener.names']).toBe('CONTROLLER');
          expect(Object.keys(props).filter((key) => key.startsWith('zookeeper'))).toEqual([]);
        }
      },
    );

    test('each broker advertises its own DNS name on the client port', () => {
      expect(defaults.properties.map((props) => props['advertised.listeners'])).toEqual(
        [1, 2, 3].map((i) => `PLAINTEXT://kafka-${i}.${ZONE}:${KAFKA_CLIENT_PORT}`),
      );
      expect(defaults.cluster.bootstrapServers).toBe(
        [1, 2, 3].map((i) => `kafka-${i}.${ZONE}:${KAFKA_CLIENT_PORT}`).join(','),
      );
    });

    test('the names are A records in a private zone of the VPC, pointing at each broker interface', () => {
      defaults.template.hasResourceProperties('AWS::Route53::HostedZone', {
        Name: `${ZONE}.`,
        VPCs: [Match.objectLike({ VPCRegion: REGION })],
      });
      const interfaces = Object.keys(defaults.template.findResources('AWS::EC2::NetworkInterface'));
      for (const [index, logicalId] of interfaces.entries()) {
        defaults.template.hasResourceProperties('AWS::Route53::RecordSet', {
          Name: `kafka-${index + 1}.${ZONE}.`,
          Type: 'A',
          ResourceRecords: [{ 'Fn::GetAtt': [logicalId, 'PrimaryPrivateIpAddress'] }],
        });
      }
    });

    test('each instance uses its pre-created interface as its primary one and is created after its name', () => {
      const instances = defaults.template.findResources('AWS::EC2::Instance');
      const records = Object.keys(defaults.template.findResources('AWS::Route53::RecordSet'));
      const interfaces = Object.keys(defaults.template.findResources('AWS::EC2::NetworkInterface'));
      Object.values(instances).forEach((instance, index) => {
        expect(instance.Properties.NetworkInterfaces).toEqual([
          { DeviceIndex: '0', NetworkInterfaceId: { Ref: interfaces[index] } },
        ]);
        expect(instance.Properties.SubnetId).toBeUndefined();
        expect(instance.Properties.SecurityGroupIds).toBeUndefined();
        expect(instance.Properties.AvailabilityZone).toBeUndefined();
        expect(instance.DependsOn).toEqual(expect.arrayContaining([records[index]]));
      });
    });

    test('brokers are spread over the subnets, one per zone', () => {
      const subnets = Object.values(defaults.template.findResources('AWS::EC2::NetworkInterface')).map((eni) =>
        JSON.stringify(eni.Properties.SubnetId),
      );
      expect(new Set(subnets).size).toBe(3);
    });
  });

  describe('cluster id', () => {
    test('is 22 characters of base64url decoding to 16 bytes, shared by every broker format command', () => {
      const id = defaults.cluster.clusterId;
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
      for (const script of defaults.userData) {
        expect(script).toContain(
          `kafka.tools.StorageTool format --config ${KAFKA_SERVER_PROPERTIES} --cluster-id '${id}' --ignore-formatted`,
        );
        expect(script).not.toMatch(/--standalone|--initial-controllers/);
      }
    });

    test('is deterministic per stack and construct, and differs between stacks', () => {
      expect(synth().cluster.clusterId).toBe(defaults.cluster.clusterId);
      expect(synth({}, 'Other').cluster.clusterId).not.toBe(defaults.cluster.clusterId);
    });

    test('never starts with "-" (the command line would read an option)', () => {
      const ids = Array.from({ length: 500 }, (_, i) => kafkaClusterId(`seed-${i}`));
      expect(ids.filter((id) => id.startsWith('-'))).toEqual([]);
      expect(ids.every((id) => Buffer.from(id, 'base64url').length === 16)).toBe(true);
    });
  });

  describe('security group', () => {
    test(
      'the controller port is open only to the brokers, the client port to the brokers and nothing else ' +
        'by default',
      () => {
        const rules = ingressRules(defaults.template);
        const controller = rules.filter(
          (rule) => rule.FromPort <= KAFKA_CONTROLLER_PORT && rule.ToPort >= KAFKA_CONTROLLER_PORT,
        );
        expect(controller).toHaveLength(1);
        expect(controller[0]!.CidrIp).toBeUndefined();
        expect(controller[0]!.SourceSecurityGroupId).toEqual(controller[0]!.GroupId);
        const client = rules.filter((rule) => rule.FromPort <= KAFKA_CLIENT_PORT && rule.ToPort >= KAFKA_CLIENT_PORT);
        expect(client).toHaveLength(1);
        expect(client[0]!.SourceSecurityGroupId).toEqual(client[0]!.GroupId);
        expect(rules.filter((rule) => rule.FromPort <= 22 && rule.ToPort >= 22)).toEqual([]);
      },
    );

    test('an allowed peer reaches the client port only, never the controller port', () => {
      const { template } = synth({ allowedPeers: [ec2.Peer.ipv4('10.9.0.0/16')] });
      const fromPeer = ingressRules(template).filter((rule) => rule.CidrIp === '10.9.0.0/16');
      expect(fromPeer.map((rule) => [rule.FromPort, rule.ToPort])).toEqual([[KAFKA_CLIENT_PORT, KAFKA_CLIENT_PORT]]);
    });

    test('allowClientsFrom a security group (the load generator) opens the client port to it', () => {
      const stack = new Stack(new App(), 'Peer', { env: { region: REGION, account: '111111111111' } });
      const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3 });
      const loadGenerator = new ec2.SecurityGroup(stack, 'LoadGenerator', { vpc });
      const cluster = new KafkaCluster(stack, 'Kafka', { vpc });
      cluster.allowClientsFrom(loadGenerator);
      Template.fromStack(stack).hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
        FromPort: KAFKA_CLIENT_PORT,
        ToPort: KAFKA_CLIENT_PORT,
        SourceSecurityGroupId: {
          'Fn::GetAtt': [stack.getLogicalId(loadGenerator.node.defaultChild as ec2.CfnSecurityGroup), 'GroupId'],
        },
      });
    });
  });

  describe('instances', () => {
    test(
      'require IMDSv2 in their own metadata options (no launch template, whose fixed name would clash between ' +
        'two cluster stacks), have no SSH key, are SSM managed and carry an encrypted gp3 data volume',
      () => {
        // requireImdsv2 would add launch templates named Broker<i>LaunchTemplate: unique per account and region, so the
        // controller's second Kafka stack would fail to create them.
        defaults.template.resourceCountIs('AWS::EC2::LaunchTemplate', 0);
        defaults.template.allResourcesProperties('AWS::EC2::Instance', {
          MetadataOptions: { HttpTokens: 'required', HttpPutResponseHopLimit: 1 },
        });
        for (const instance of Object.values(defaults.template.findResources('AWS::EC2::Instance'))) {
          expect(instance.Properties.KeyName).toBeUndefined();
          expect(instance.Properties.LaunchTemplate).toBeUndefined();
          expect(instance.Properties.BlockDeviceMappings).toEqual(
            expect.arrayContaining([
              {
                DeviceName: '/dev/sdf',
                Ebs: { DeleteOnTermination: true, Encrypted: true, VolumeSize: 50, VolumeType: 'gp3' },
              },
            ]),
          );
        }
        defaults.template.hasResourceProperties('AWS::IAM::Role', {
          ManagedPolicyArns: [
            { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/AmazonSSMManagedInstanceCore']] },
          ],
        });
      },
    );

    test('instance type and data volume size follow the props; m5a.large by default', () => {
      defaults.template.allResourcesProperties('AWS::EC2::Instance', { InstanceType: 'm5a.large' });
      const { template } = synth({ instanceType: new ec2.InstanceType('r5.xlarge'), dataVolumeSizeGiB: 200 });
      template.allResourcesProperties('AWS::EC2::Instance', {
        InstanceType: 'r5.xlarge',
        BlockDeviceMappings: Match.arrayWith([
          Match.objectLike({ DeviceName: '/dev/sdf', Ebs: Match.objectLike({ VolumeSize: 200 }) }),
        ]),
      });
    });

    test('a Graviton instance type gets the arm64 Amazon Linux 2023 image', () => {
      const { template } = synth({ instanceType: new ec2.InstanceType('m7g.large') });
      expect(JSON.stringify(template.toJSON().Parameters)).toContain('al2023-ami-kernel-6.1-arm64');
    });
  });

  describe('boot', () => {
    test('user data is valid bash for every broker', () => {
      for (const script of defaults.userData) expect(bashSyntaxErrors(script)).toBe('');
    });

    test(
      'Java is Corretto 21 and the download loop, run by bash, fetches exactly every pinned jar from its Maven ' +
        'Central path, before the check and before anything runs',
      () => {
        const script = defaults.userData[0]!;
        expect(script).toContain('rmqbench_install_packages() { dnf install -y java-21-amazon-corretto-headless; }');
        expect(script).toContain(
          'rmqbench_fetch_jar() { curl -sSf --retry 5 --retry-all-errors -o "$2" ' +
            '"https://repo1.maven.org/maven2/$1"; }',
        );
        expect(hereDocument(script, KAFKA_JARS_MANIFEST_PATH, KAFKA_JARS_DELIMITER)).toBe(KAFKA_JARS_MANIFEST);
        const lines = script.split('\n');
        const fetchLoop = lines.find((line) => line.includes('do rmqbench_fetch_jar'))!;
        const dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-fetch-'));
        try {
          writeFileSync(join(dir, 'jars.txt'), KAFKA_JARS_MANIFEST);
          const loop = fetchLoop.replace(KAFKA_JARS_MANIFEST_PATH, join(dir, 'jars.txt'));
          const run = spawnSync(
            'bash',
            ['-c', `set -euo pipefail; rmqbench_fetch_jar() { echo "$1 -> $2"; }\n${loop}`],
            {
              encoding: 'utf8',
            },
          );
          expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
          expect(run.stdout).toBe(
            KAFKA_ARTIFACTS.map(
              (artifact) => `${artifact.path} -> ${artifact.path.slice(artifact.path.lastIndexOf('/') + 1)}\n`,
            ).join(''),
          );
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
        const check = script.indexOf(KAFKA_JARS_DIGEST);
        expect(check).toBeGreaterThan(script.indexOf(fetchLoop));
        expect(check).toBeLessThan(script.indexOf('kafka.tools.StorageTool format'));
      },
    );

    // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html: "User data is limited to 16
    // KB,
    // in raw form, before it is base64-encoded" (RunInstances refuses more).
    test(
      "every broker's user data fits EC2's 16 KB, with each token at a worst-case 256 characters (a stack name " +
        "has at most 128), up to 7 brokers with a zone name that is a token (as the controller's)",
      () => {
        const tokenZone = Fn.join('', [Fn.select(2, Fn.split('/', Aws.STACK_ID)), '.rmqbench.internal']);
        for (const props of [{ brokers: 3 }, { brokers: 7 }, { brokers: 7, zoneName: tokenZone }]) {
          for (const script of synth(props).userData) {
            const worstCase = script.replace(/<\{[^\n]*?\}>/g, 'x'.repeat(256));
            expect(worstCase).not.toContain('<{');
            expect(Buffer.byteLength(worstCase, 'utf8')).toBeLessThan(16 * 1024);
          }
        }
      },
    );

    test('a systemd unit runs kafka.Kafka as the kafka user with the generated server.properties', () => {
      const unit = hereDocument(defaults.userData[0]!, KAFKA_UNIT_PATH, KAFKA_UNIT_DELIMITER);
      expect(unit).toMatch(/^User=kafka$/m);
      expect(unit).toMatch(new RegExp(`^ExecStart=/usr/bin/java .* kafka\\.Kafka ${KAFKA_SERVER_PROPERTIES}$`, 'm'));
      expect(defaults.userData[0]).toContain('systemctl daemon-reload && systemctl enable --now kafka.service');
    });

    test('success waits for the quorum to hold every broker as a voter with a leader', () => {
      const { userData } = synth({ brokers: 5 });
      expect(userData[4]).toContain('MetadataQuorumCommand --bootstrap-server "$self_listener" describe --status');
      expect(userData[4]).toContain('[ "$voters" -eq 5 ]');
    });

    test(
      "the brokers' names and this broker's listener are read back from its server.properties by bash (a zone " +
        'token is written once per name, not thrice)',
      () => {
        const { userData } = synth({ brokers: 5 });
        const dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-names-'));
        try {
          const run = spawnSync(
            'bash',
            [
              '-c',
              `set -euo pipefail\n${readBackLines(userData[3]!, dir)}\nprintf '%s\\n' "$self_listener" $voter_hosts`,
            ],
            { encoding: 'utf8' },
          );
          expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
          expect(run.stdout).toBe(
            `kafka-4.${ZONE}:${KAFKA_CLIENT_PORT}\n${[1, 2, 3, 4, 5].map((i) => `kafka-${i}.${ZONE}\n`).join('')}`,
          );
          // Outside server.properties, the script names no broker: its resolution wait loops over what was read back.
          const outsideProperties = userData[3]!.replace(
            hereDocument(userData[3]!, KAFKA_SERVER_PROPERTIES, SERVER_PROPERTIES_DELIMITER),
            '',
          );
          expect(outsideProperties).not.toContain(ZONE);
          expect(userData[3]).toContain('for host in $voter_hosts; do');
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );

    describe('the quorum wait, run by bash on real kafka-metadata-quorum output (test/fixtures/kafka)', () => {
      const fixture = resolve(__dirname, '../fixtures/kafka/metadata-quorum-status-3.txt');
      let dir: string;
      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-quorum-'));
        // runuser stands in for the JVM run as user kafka: it prints what MetadataQuorumCommand printed for 3 voters.
        writeFileSync(join(dir, 'runuser'), `#!/bin/sh\necho "$*" >> ${dir}/calls\ncat ${fixture}\n`);
        chmodSync(join(dir, 'runuser'), 0o755);
        // The failure path shows the unit's status and journal: stand-ins, so the host's own systemd is never asked.
        for (const tool of ['systemctl', 'journalctl']) {
          writeFileSync(join(dir, tool), `#!/bin/sh\necho "${tool} $*"\n`);
          chmodSync(join(dir, tool), 0o755);
        }
      });
      afterEach(() => rmSync(dir, { recursive: true, force: true }));

      /** The boot script's quorum wait for a cluster of `brokers`, with an immediate deadline when `noWait`. */
      function quorumWait(brokers: number, noWait: boolean): { status: number | null; output: string; calls: string } {
        const script = synth({ brokers }).userData[0]!;
        const lines = script.split('\n');
        const start = lines.findIndex((line) => line.startsWith('# Wait for the quorum'));
        const end = lines.indexOf('done', start);
        let segment = `${readBackLines(script, dir)}\n${lines.slice(start, end + 1).join('\n')}`;
        if (noWait)
          segment = segment
            .replace(/deadline=\$\(\( \$\(date \+%s\) \+ \d+ \)\)/, 'deadline=0')
            .replace('sleep 10', 'sleep 0');
        const run = spawnSync('bash', ['-c', `set -euo pipefail\n${segment}\n`], {
          encoding: 'utf8',
          env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
          timeout: 30_000,
          // stdin not a socket: bash sources ~/.bashrc (which may put other commands first on PATH) when stdin is a
          // socket, as Node's pipes are, and SHLVL is under 2 (bash(1), INVOCATION, "run by the remote shell daemon").
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const calls = existsSync(join(dir, 'calls')) ? readFileSync(join(dir, 'calls'), 'utf8') : '';
        return { status: run.status, output: `${run.stdout}${run.stderr}`, calls };
      }

      test('3 voters with a leader is a formed 3-broker quorum', () => {
        const result = quorumWait(3, false);
        expect(result.output).toContain('quorum formed: leader 1, 3 voters');
        expect(result.status).toBe(0);
        expect(result.calls).toContain('-u kafka -- /usr/bin/java');
        expect(result.calls).toContain('--bootstrap-server kafka-1.kafka.bench.internal:9092 describe --status');
      });

      test('the same 3 voters are not a formed 5-broker quorum: the boot fails at the deadline', () => {
        const result = quorumWait(5, true);
        expect(result.output).toContain("the quorum did not form within 900 s (leader '1', 3 of 5 voters)");
        expect(result.output).toContain('journalctl -u kafka.service -n 50 --no-pager');
        expect(result.status).toBe(1);
      });
    });

    describe('the exit trap, run by bash with a fake aws command', () => {
      let dir: string;
      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-trap-'));
        writeFileSync(join(dir, 'aws'), `#!/bin/bash\necho "$*" >> ${dir}/aws-calls\n`);
        chmodSync(join(dir, 'aws'), 0o755);
      });
      afterEach(() => rmSync(dir, { recursive: true, force: true }));

      /** Broker 2's user data up to its first IMDS call, then `commands`, with the boot log in `dir`. */
      function runBootPrefix(commands: string): { status: number | null; calls: string } {
        const lines = defaults.userData[1]!.split('\n');
        const prefix = lines.slice(0, lines.indexOf('INSTANCE_ID=$(imds instance-id)')).join('\n');
        const script = `${prefix
          .replaceAll(BOOT_LOG_FILE, join(dir, 'boot.log'))
          .replaceAll('/run/rmqbench-boot-log-events.json', join(dir, 'boot-log-events.json'))
          .replace(/<\{[^\n]*?\}>/g, 'REF')}\nINSTANCE_ID=i-0123456789abcdef0\n${commands}\n`;
        const run = spawnSync('bash', ['-c', script], {
          encoding: 'utf8',
          env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
          timeout: 30_000,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        return {
          status: run.status,
          calls: existsSync(join(dir, 'aws-calls')) ? readFileSync(join(dir, 'aws-calls'), 'utf8') : '',
        };
      }

      test(
        'the signal names the stack as deployed (AWS::StackName), not the synthesized stack: a controller ' +
          'deploys the template under another name',
        () => {
          const userData = JSON.stringify(
            Stack.of(defaults.cluster).resolve(
              (defaults.cluster.instances[1]!.node.defaultChild as ec2.CfnInstance).userData,
            ),
          );
          expect(userData).toContain('STACK_NAME=",{"Ref":"AWS::StackName"}');
        },
      );

      test("a failing command signals FAILURE to this broker's own instance", () => {
        const broker2 = Stack.of(defaults.cluster).getLogicalId(
          defaults.cluster.instances[1]!.node.defaultChild as ec2.CfnInstance,
        );
        const result = runBootPrefix('echo "downloading jars"\nfalse\necho "never reached"');
        expect(result.status).toBe(1);
        expect(result.calls).toContain(
          `cloudformation signal-resource --region ${REGION} --stack-name REF --logical-resource-id ${broker2} ` +
            `--unique-id i-0123456789abcdef0 --status FAILURE`,
        );
        expect(result.calls).toContain('logs put-log-events');
      });

      test('a script that runs to its end signals SUCCESS', () => {
        const result = runBootPrefix('echo "quorum formed: leader 1, 3 voters"');
        expect(result.status).toBe(0);
        expect(result.calls).toMatch(/--unique-id i-0123456789abcdef0 --status SUCCESS/);
        expect(result.calls).not.toContain('FAILURE');
      });
    });

    test('each instance waits for one signal, its own, for the boot timeout', () => {
      const { template, cluster, userData } = synth({ bootTimeout: Duration.minutes(30) });
      const stack = Stack.of(cluster);
      cluster.instances.forEach((instance, index) => {
        const logicalId = stack.getLogicalId(instance.node.defaultChild as ec2.CfnInstance);
        expect(template.toJSON().Resources[logicalId].CreationPolicy).toEqual({
          ResourceSignal: { Count: 1, Timeout: 'PT1800S' },
        });
        expect(userData[index]).toContain(`SIGNAL_RESOURCE=${logicalId}\n`);
        expect(userData[index]).toMatch(/trap exitTrap EXIT/);
        expect(userData[index]).toContain('rmqbench_boot_finished "$exitCode"');
      });
    });

    test('the broker role may signal only its own stack and write only its boot log group', () => {
      defaults.template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Sid: 'SignalBootResult',
              Action: 'cloudformation:SignalResource',
              Resource: { Ref: 'AWS::StackId' },
            }),
          ]),
        },
      });
    });
  });

  describe('host metrics: the CloudWatch agent on every broker', () => {
    test(
      "each broker's boot installs and starts the agent, which names the stack as ClusterId (the STACK_NAME the " +
        'script set from AWS::StackName), Role kafka-broker and the instance',
      () => {
        defaults.userData.forEach((script) => {
          expect(script).toContain('dnf install -y amazon-cloudwatch-agent || return 1');
          expect(script).toContain('rmqbench_start_cloudwatch_agent "$STACK_NAME" || echo');
          // STACK_NAME is the deployed stack's name, set before the agent starts and before the installation.
          expect(script).toContain('\nSTACK_NAME=<{"Ref":"AWS::StackName"}>\n');
          expect(script.indexOf('\nSTACK_NAME=')).toBeLessThan(
            script.indexOf('rmqbench_start_cloudwatch_agent "$STACK_NAME"'),
          );
          expect(script.indexOf('rmqbench_start_cloudwatch_agent "$STACK_NAME"')).toBeLessThan(
            script.indexOf('rmqbench_install_packages\n'),
          );
          const { config, ctlArguments } = runAgentBootLines(
            script,
            { configPath: CLOUDWATCH_AGENT_CONFIG_PATH, ctl: CLOUDWATCH_AGENT_CTL },
            { STACK_NAME: 'rmqbench-run-3-c1' },
          );
          const metrics = (
            config as {
              metrics: {
                namespace: string;
                append_dimensions: unknown;
                metrics_collected: Record<string, { append_dimensions: unknown }>;
              };
            }
          ).metrics;
          expect(metrics.namespace).toBe(CLOUDWATCH_NAMESPACE);
          expect(metrics.append_dimensions).toEqual({ InstanceId: '${aws:InstanceId}' });
          expect(Object.keys(metrics.metrics_collected).sort()).toEqual(['cpu', 'diskio', 'mem', 'net']);
          for (const plugin of Object.values(metrics.metrics_collected))
            expect(plugin.append_dimensions).toEqual({ ClusterId: 'rmqbench-run-3-c1', Role: KAFKA_BROKER_ROLE });
          expect(ctlArguments).toBe(`-a fetch-config -m ec2 -s -c file:${CLOUDWATCH_AGENT_CONFIG_PATH}`);
        });
      },
    );

    test("an agent that cannot be installed does not stop the broker's boot", () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-agent-'));
      try {
        writeFileSync(join(dir, 'dnf'), '#!/bin/sh\necho "dnf: no such repository" >&2\nexit 1\n', { mode: 0o755 });
        const script = defaults.userData[0]!;
        const agent = script.slice(
          script.indexOf('rmqbench_start_cloudwatch_agent() {'),
          script.indexOf('\n', script.indexOf('rmqbench_start_cloudwatch_agent "$STACK_NAME"')),
        );
        const run = spawnSync('bash', ['-c', `set -euo pipefail\nSTACK_NAME=c1\n${agent}\necho boot-continued`], {
          encoding: 'utf8',
          env: { PATH: `${dir}:/usr/bin:/bin` },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: 'boot-continued\n' });
        expect(run.stderr).toContain('the CloudWatch agent could not be installed or started');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('the broker role may put metrics into the rmqbench namespace only, and nothing else of CloudWatch', () => {
      const statements = Object.values(defaults.template.findResources('AWS::IAM::Policy')).flatMap(
        (policy) =>
          (policy as { Properties: { PolicyDocument: { Statement: { Action: string | string[] }[] } } }).Properties
            .PolicyDocument.Statement,
      );
      expect(
        statements.filter((statement) => [statement.Action].flat().some((action) => action.startsWith('cloudwatch:'))),
      ).toEqual([
        {
          Sid: 'PutHostMetricsInRmqbenchNamespace',
          Effect: 'Allow',
          Action: 'cloudwatch:PutMetricData',
          Resource: '*',
          Condition: { StringEquals: { 'cloudwatch:namespace': 'rmqbench' } },
        },
      ]);
      expect(JSON.stringify(defaults.template.toJSON())).not.toContain('CloudWatchAgentServerPolicy');
    });
  });

  describe('props are checked, naming the prop', () => {
    test.each([
      [{ brokers: 0 }, /^brokers must be an integer from 1 to 7, got 0$/],
      [{ brokers: 8 }, /^brokers must be an integer from 1 to 7, got 8$/],
      [{ brokers: 2.5 }, /^brokers must be an integer/],
      [{ kafkaVersion: '3.9.0' }, /^kafkaVersion "3\.9\.0" is not supported: allowed values are '4\.3\.1'/],
      [{ dataVolumeSizeGiB: 0 }, /^dataVolumeSizeGiB must be an integer from 1/],
      [{ bootTimeout: Duration.minutes(2) }, /^bootTimeout must be from 5 to 60 minutes/],
      [{ zoneName: 'Bad_Zone' }, /^zoneName "Bad_Zone" must be a lower-case DNS name/],
      [
        { vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_ISOLATED } },
        /There are no 'Isolated' subnet groups in this VPC|vpcSubnets selects no subnet/,
      ],
    ])('%j is refused', (props, message) => {
      expect(() => synth(props as Partial<KafkaClusterProps>)).toThrow(message);
    });

    test('a missing vpc is refused by name', () => {
      const stack = new Stack(new App(), 'NoVpc');
      expect(() => new KafkaCluster(stack, 'Kafka', {} as KafkaClusterProps)).toThrow(/^vpc is required/);
    });
  });

  test('public fields expose what the construct created', () => {
    expect(defaults.cluster.instances).toHaveLength(3);
    expect(defaults.cluster.networkInterfaces).toHaveLength(3);
    expect(defaults.cluster.hostedZone.zoneName).toBe(ZONE);
    expect(defaults.cluster.brokerHostNames).toEqual([1, 2, 3].map((i) => `kafka-${i}.${ZONE}`));
    expect(defaults.cluster.kafkaVersion).toBe('4.3.1');
    defaults.template.hasOutput('*', { Value: defaults.cluster.bootstrapServers });
  });

  test('matches the snapshot (asset hashes stripped)', () => {
    const stack = new Stack(new App(), 'Snapshot');
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
    new KafkaCluster(stack, 'Kafka', { vpc });
    expect(withoutAssetHashes(Template.fromStack(stack))).toMatchSnapshot();
  });
});

describe('pinned Kafka jars', () => {
  const cached = join(cacheDir(), 'maven', 'kafka_2.13-4.3.1');

  test(
    'every pinned jar has a distinct file name and a 64-hex-digit SHA-256, and the broker and tools are ' +
      'among them',
    () => {
      const names = KAFKA_ARTIFACTS.map((artifact) => artifact.path.slice(artifact.path.lastIndexOf('/') + 1));
      expect(new Set(names).size).toBe(names.length);
      expect(KAFKA_ARTIFACTS.every((artifact) => /^[0-9a-f]{64}$/.test(artifact.sha256))).toBe(true);
      expect(names).toEqual(
        expect.arrayContaining([
          'kafka_2.13-4.3.1.jar',
          'kafka-tools-4.3.1.jar',
          'kafka-clients-4.3.1.jar',
          'log4j-slf4j-impl-2.25.4.jar',
        ]),
      );
    },
  );

  // The local target's cache holds the jars Maven fetched from Maven Central (local/maven-artifacts.ts): the pinned
  // list must be exactly its contents, checksum for checksum. Like cfn-lint, the cache is part of the set-up.
  test(
    "the boot's check, run by bash on the cached jars, passes them, and refuses one changed jar by removing them " +
      'all and failing with the computed sums',
    () => {
      if (!existsSync(cached))
        throw new Error(
          `${cached} is missing: run scripts/setup.sh or a local Kafka run (rmqbench fetches the jars from Maven ` +
            `Central) first`,
        );
      const lines = synth().userData[0]!.split('\n');
      const sums = lines.find((line) => line.includes('do sha256sum'))!;
      const check = lines.find((line) => line.includes(KAFKA_JARS_DIGEST))!;
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-check-'));
      try {
        mkdirSync(join(dir, 'libs'));
        for (const name of readdirSync(cached).filter((file) => file.endsWith('.jar')))
          copyFileSync(join(cached, name), join(dir, 'libs', name));
        writeFileSync(join(dir, 'jars.txt'), KAFKA_JARS_MANIFEST);
        const script = [sums, check, 'echo checked'].join('\n').split(KAFKA_HOME).join(dir);
        const run = () =>
          spawnSync('bash', ['-c', `set -euo pipefail; cd ${dir}/libs\n${script}`], { encoding: 'utf8' });
        const passed = run();
        expect({ status: passed.status, stdout: passed.stdout, stderr: passed.stderr }).toEqual({
          status: 0,
          stdout: 'checked\n',
          stderr: '',
        });
        writeFileSync(join(dir, 'libs', 'snappy-java-1.1.10.7.jar'), 'not the pinned jar');
        const refused = run();
        expect(refused.status).toBe(1);
        expect(refused.stderr).toContain(
          "Kafka 4.3.1 (pinned in cdk/kafka-artifacts.ts): the jars' SHA-256 sums (below) differ from the pinned " +
            'ones: jars removed',
        );
        expect(refused.stderr).toContain(
          `${createHash('sha256').update('not the pinned jar').digest('hex')}  snappy-java-1.1.10.7.jar`,
        );
        expect(readdirSync(join(dir, 'libs'))).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test("every pinned jar lies at its Maven coordinates' path, which the boot derives from the manifest", () => {
    expect(
      KAFKA_JARS_MANIFEST.trim()
        .split('\n')
        .map((coordinates) => coordinates.split(':').length),
    ).toEqual(KAFKA_ARTIFACTS.map(() => 3));
    expect(mavenCoordinates('org/apache/kafka/kafka_2.13/4.3.1/kafka_2.13-4.3.1.jar')).toBe(
      'org.apache.kafka:kafka_2.13:4.3.1',
    );
    expect(() => mavenCoordinates('org/x/y/1.0/y-1.0-tests.jar')).toThrow(
      'is not <group path>/<artifact>/<version>/<artifact>-<version>.jar',
    );
  });

  test('the pinned list equals the jars in the local Maven cache', () => {
    if (!existsSync(cached))
      throw new Error(
        `${cached} is missing: run scripts/setup.sh or a local Kafka run (rmqbench fetches the jars from Maven ` +
          `Central) first`,
      );
    const onDisk = readdirSync(cached)
      .filter((name) => name.endsWith('.jar'))
      .sort();
    const pinned = KAFKA_ARTIFACTS.map((artifact) => artifact.path.slice(artifact.path.lastIndexOf('/') + 1)).sort();
    expect(pinned).toEqual(onDisk);
    for (const artifact of KAFKA_ARTIFACTS) {
      const name = artifact.path.slice(artifact.path.lastIndexOf('/') + 1);
      expect(
        `${name} ${createHash('sha256')
          .update(readFileSync(join(cached, name)))
          .digest('hex')}`,
      ).toBe(`${name} ${artifact.sha256}`);
    }
  });
});
