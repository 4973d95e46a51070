import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Aws, Duration, Fn, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import {
  LoadGenerator,
  NATS_CLIENT_PORT,
  NATS_CLUSTER_PORT,
  NATS_MONITORING_PORT,
  NATS_SERVER_SHA256,
  NatsCluster,
  natsServerTarball,
  skipCheckov,
  type NatsClusterProps,
} from '../../cdk';
import {
  NATS_CONF_DELIMITER,
  NATS_CONF_PATH,
  NATS_UNIT_DELIMITER,
  NATS_UNIT_PATH,
} from '../../cdk/user-data/nats-node';
import { bashSyntaxErrors, hereDocument, userDataText } from './template-helpers';
import { cfnLint } from './cfn-lint';

const REGION = 'eu-west-1';
const ZONE = 'nats.bench.internal';
const CHECKOV = resolve(__dirname, '../../.venv-tools/bin/checkov');

interface Synthesized {
  readonly cluster: NatsCluster;
  readonly template: Template;
  readonly userData: string[];
  readonly confs: string[];
}

function synth(props: Partial<NatsClusterProps> = {}): Synthesized {
  const stack = new Stack(new App(), 'Test', { env: { region: REGION, account: '111111111111' } });
  const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, natGateways: 1 });
  const cluster = new NatsCluster(stack, 'Nats', { vpc, zoneName: ZONE, ...props });
  const template = Template.fromStack(stack);
  const userData = cluster.instances.map((instance) => {
    const logicalId = stack.getLogicalId(instance.node.defaultChild as ec2.CfnInstance);
    return userDataText(
      Template.fromJSON({ Resources: { [logicalId]: template.toJSON().Resources[logicalId] } }),
      'AWS::EC2::Instance',
    );
  });
  const confs = userData.map((script) => hereDocument(script, NATS_CONF_PATH, NATS_CONF_DELIMITER));
  return { cluster, template, userData, confs };
}

type IngressRule = { FromPort: number; CidrIp?: string; SourceSecurityGroupId?: unknown };
function ingressRules(template: Template): IngressRule[] {
  const inline = Object.values(template.findResources('AWS::EC2::SecurityGroup')).flatMap(
    (group) =>
      (group as { Properties: { SecurityGroupIngress?: IngressRule[] } }).Properties.SecurityGroupIngress ?? [],
  );
  const separate = Object.values(template.findResources('AWS::EC2::SecurityGroupIngress')).map(
    (rule) => (rule as { Properties: IngressRule }).Properties,
  );
  return [...inline, ...separate];
}

describe('NatsCluster', () => {
  const defaults = synth();

  test('three servers by default, each on its own pre-created interface with IMDSv2 and a creation policy', () => {
    defaults.template.resourceCountIs('AWS::EC2::Instance', 3);
    defaults.template.resourceCountIs('AWS::EC2::NetworkInterface', 3);
    defaults.template.resourceCountIs('AWS::Route53::RecordSet', 3);
    defaults.template.hasResource('AWS::EC2::Instance', {
      Properties: Match.objectLike({
        MetadataOptions: { HttpTokens: 'required', HttpPutResponseHopLimit: 1 },
        NetworkInterfaces: [{ DeviceIndex: '0', NetworkInterfaceId: Match.anyValue() }],
      }),
      CreationPolicy: { ResourceSignal: { Count: 1, Timeout: 'PT900S' } },
    });
    defaults.template.hasResourceProperties('AWS::Route53::RecordSet', { Name: `nats-2.${ZONE}.`, Type: 'A' });
    expect(defaults.cluster.serverUrls).toBe(
      [1, 2, 3].map((i) => `nats://nats-${i}.${ZONE}:${NATS_CLIENT_PORT}`).join(','),
    );
  });

  test('routes 6222 and monitoring 8222 only from the servers own group; 4222 only from allowed peers', () => {
    const { template } = synth({ allowedPeers: [ec2.Peer.ipv4('10.9.0.0/16')] });
    const rules = ingressRules(template);
    for (const port of [NATS_CLUSTER_PORT, NATS_MONITORING_PORT]) {
      const forPort = rules.filter((rule) => rule.FromPort === port);
      expect(forPort).toHaveLength(1);
      expect(forPort[0]!.CidrIp).toBeUndefined();
      expect(forPort[0]!.SourceSecurityGroupId).toBeDefined();
    }
    expect(rules.filter((rule) => rule.CidrIp === '10.9.0.0/16').map((rule) => rule.FromPort)).toEqual([
      NATS_CLIENT_PORT,
    ]);
    expect(ingressRules(defaults.template).filter((rule) => rule.FromPort === NATS_CLIENT_PORT)).toEqual([]);
  });

  test('each server has an encrypted gp3 data volume of dataVolumeSizeGiB, 50 by default', () => {
    defaults.template.hasResourceProperties('AWS::EC2::Instance', {
      BlockDeviceMappings: Match.arrayWith([
        {
          DeviceName: '/dev/sdf',
          Ebs: { VolumeSize: 50, VolumeType: 'gp3', Encrypted: true, DeleteOnTermination: true },
        },
      ]),
    });
    synth({ dataVolumeSizeGiB: 200 }).template.hasResourceProperties('AWS::EC2::Instance', {
      BlockDeviceMappings: Match.arrayWith([Match.objectLike({ Ebs: Match.objectLike({ VolumeSize: 200 }) })]),
    });
  });

  test('nats-server.conf: its own server_name, routes to every server by stable name, JetStream on the volume', () => {
    expect(defaults.confs[1]).toContain('server_name: "nats-2"');
    for (const conf of defaults.confs) {
      expect(conf).toContain(`listen: "0.0.0.0:${NATS_CLIENT_PORT}"`);
      expect(conf).toContain(`http_port: ${NATS_MONITORING_PORT}`);
      expect(conf).toContain('store_dir: "/var/lib/nats"');
      expect(conf).toContain('sync_interval: "2m"');
      expect([...conf.matchAll(/nats-route:\/\/(\S+)/g)].map((match) => match[1])).toEqual(
        [1, 2, 3].map((i) => `nats-${i}.${ZONE}:${NATS_CLUSTER_PORT}`),
      );
    }
  });

  test('syncInterval reaches every server; "always" is accepted, malformed values are refused by name', () => {
    expect(synth({ syncInterval: 'always' }).confs.every((conf) => conf.includes('sync_interval: "always"'))).toBe(
      true,
    );
    expect(synth({ syncInterval: '1m30s' }).confs[0]).toContain('sync_interval: "1m30s"');
    for (const bad of ['2 minutes', '0s', 'never', ''])
      expect(() => synth({ syncInterval: bad })).toThrow(/^syncInterval .* must be 'always' or a duration/);
  });

  test('the pinned amd64 tarball on x86-64, the arm64 one on Graviton, verified before it is unpacked', () => {
    const amd64 = natsServerTarball('2.15.0', 'amd64');
    const script = defaults.userData[0]!;
    expect(script).toContain(`NATS_SERVER_URL='${amd64.url}'`);
    expect(script).toContain(`NATS_SERVER_SHA256=${NATS_SERVER_SHA256['2.15.0']!.amd64}`);
    expect(script.indexOf('sha256sum --check')).toBeLessThan(script.indexOf('tar -xzf'));
    const graviton = synth({ instanceType: new ec2.InstanceType('m7g.large') }).userData[0]!;
    expect(graviton).toContain(`NATS_SERVER_SHA256=${NATS_SERVER_SHA256['2.15.0']!.arm64}`);
    expect(graviton).toContain('nats-server-v2.15.0-linux-arm64/nats-server');
  });

  test('the Azure pin file holds the same checksums as cdk/nats-artifacts.ts', () => {
    const file = readFileSync(resolve(__dirname, '../../bicep/cloud-init/nats-server-2.15.0.sha256'), 'utf8');
    expect(file).toBe(
      (['amd64', 'arm64'] as const)
        .map((arch) => `${NATS_SERVER_SHA256['2.15.0']![arch]}  nats-server-v2.15.0-linux-${arch}.tar.gz\n`)
        .join(''),
    );
  });

  test('a systemd unit runs nats-server as the nats user with the generated configuration', () => {
    const unit = hereDocument(defaults.userData[0]!, NATS_UNIT_PATH, NATS_UNIT_DELIMITER);
    expect(unit).toMatch(/^User=nats$/m);
    expect(unit).toMatch(/^ExecStart=\/opt\/nats\/bin\/nats-server --config \/etc\/nats\/nats-server.conf$/m);
  });

  test('the boot succeeds only on a meta leader with every server, and signals through the exit trap', () => {
    const script = defaults.userData[0]!;
    expect(script).toContain('healthz?js-enabled-only=true');
    expect(script).toContain('[ "$size" -eq 3 ]');
    expect(script).toContain('rmqbench_boot_finished "$exitCode"');
    expect(bashSyntaxErrors(script)).toBe('');
  });

  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html: "User data is limited to 16
  // KB, in raw form, before it is base64-encoded".
  test("every server's user data fits EC2's 16 KB (tokens at 256 characters, 7 servers, a token zone)", () => {
    const tokenZone = Fn.join('', [Fn.select(2, Fn.split('/', Aws.STACK_ID)), '.rmqbench.internal']);
    for (const props of [{ nodes: 3 }, { nodes: 7 }, { nodes: 7, zoneName: tokenZone }]) {
      for (const script of synth(props).userData) {
        const worstCase = script.replace(/<\{[^\n]*?\}>/g, 'x'.repeat(256));
        expect(Buffer.byteLength(worstCase, 'utf8')).toBeLessThan(16 * 1024);
      }
    }
  });

  test('props out of range are refused by name', () => {
    expect(() => synth({ nodes: 0 })).toThrow('nodes must be an integer from 1 to 7, got 0');
    expect(() => synth({ nodes: 8 })).toThrow('nodes must be an integer from 1 to 7');
    expect(() => synth({ natsServerVersion: '2.9.10' })).toThrow(/^natsServerVersion "2.9.10" is not supported/);
    expect(() => synth({ zoneName: 'Bad_Zone' })).toThrow(/^zoneName "Bad_Zone" must be a lower-case DNS name/);
    expect(() => synth({ bootTimeout: Duration.minutes(2) })).toThrow(/^bootTimeout must be from 5 to 60 minutes/);
  });
});

describe('NatsCluster scanners', () => {
  let outdir: string;
  let templateFile: string;
  beforeAll(() => {
    outdir = mkdtempSync(join(tmpdir(), 'rmqbench-nats-scan-'));
    // Environment-agnostic, as the example app is.
    const stack = new Stack(new App(), 'NatsScan');
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
    skipCheckov(vpc.node.findChild('all').node.findChild('LogGroup'), [
      { id: 'CKV_AWS_158', comment: "The test's own VPC, not part of the construct." },
    ]);
    new NatsCluster(stack, 'Nats', { vpc, allowedPeers: [ec2.Peer.ipv4('10.0.0.0/16')] });
    templateFile = join(outdir, 'nats.template.json');
    writeFileSync(templateFile, JSON.stringify(Template.fromStack(stack).toJSON()));
  });
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  test('cdk-nag AwsSolutions: a NATS cluster reachable from a load generator has no unacknowledged finding', () => {
    const app = new App();
    const stack = new Stack(app, 'NatsBench');
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
    const nats = new NatsCluster(stack, 'Nats', { vpc });
    const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', {
      vpc,
      resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'results'),
    });
    nats.allowClientsFrom(loadGenerator.securityGroup);
    const findings = new AwsSolutionsChecks()
      .validateScope(app)
      .violations.flatMap((violation) =>
        violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
      );
    expect(findings).toEqual([]);
  });

  test('cfn-lint: the 3-server template has no error or warning', () => {
    expect(cfnLint([templateFile])).toBe('');
  }, 180_000);

  test('checkov: no failed check on the template, every skip carries its reason', () => {
    if (!existsSync(CHECKOV)) throw new Error(`checkov is not installed at ${CHECKOV}: run scripts/setup.sh`);
    const run = spawnSync(
      CHECKOV,
      ['--skip-download', '--framework', 'cloudformation', '--file', templateFile, '--output', 'json', '--soft-fail'],
      { encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 },
    );
    expect(run.error).toBeUndefined();
    const report = JSON.parse(run.stdout) as {
      summary: { passed: number; failed: number; parsing_errors: number };
      results: {
        failed_checks: { check_id: string; resource: string }[];
        skipped_checks?: { check_id: string; resource: string; check_result: { suppress_comment?: string } }[];
      };
    };
    expect(report.results.failed_checks.map((check) => `${check.check_id} ${check.resource}`)).toEqual([]);
    expect(report.summary.parsing_errors).toBe(0);
    expect(report.summary.passed).toBeGreaterThan(20);
    const skipped = report.results.skipped_checks ?? [];
    expect(skipped.filter((check) => !check.check_result.suppress_comment).map((check) => check.check_id)).toEqual([]);
    expect(skipped.map((check) => check.check_id)).toContain('CKV_AWS_46');
  }, 300_000);
});
