import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import {
  LoadGenerator,
  PERF_TEST_ARTIFACTS,
  PERF_TEST_VERSION,
  RabbitMqCluster,
  type LoadGeneratorProps,
} from '../../cdk';
import { PERF_TEST_JARS_DELIMITER } from '../../cdk/user-data/load-generator';
import { FETCH_JAR_FUNCTION, jarsDigest, jarsManifest } from '../../cdk/user-data/pinned-jars';
import { bashSyntaxErrors, hereDocument, userDataText, withoutAssetHashes } from './template-helpers';

function synth(props: Partial<LoadGeneratorProps> = {}) {
  const stack = new Stack(new App(), 'Test');
  const vpc = new ec2.Vpc(stack, 'Vpc');
  const resultsBucket = s3.Bucket.fromBucketName(stack, 'Results', 'rmqbench-results');
  const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', { vpc, resultsBucket, ...props });
  const template = Template.fromStack(stack);
  return { stack, loadGenerator, template, userData: userDataText(template, 'AWS::EC2::Instance') };
}

describe('LoadGenerator', () => {
  const defaults = synth();

  test('a c5n.4xlarge by default, SSM managed, IMDSv2 required, encrypted root volume, no SSH key', () => {
    defaults.template.hasResourceProperties('AWS::EC2::Instance', {
      InstanceType: 'c5n.4xlarge',
      KeyName: Match.absent(),
      MetadataOptions: { HttpTokens: 'required', HttpPutResponseHopLimit: 1 },
      BlockDeviceMappings: [{ DeviceName: '/dev/xvda', Ebs: { Encrypted: true, VolumeSize: 30, VolumeType: 'gp3' } }],
      Monitoring: true,
    });
    defaults.template.hasResourceProperties('AWS::IAM::Role', {
      ManagedPolicyArns: [
        { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/AmazonSSMManagedInstanceCore']] },
      ],
    });
  });

  test('the instance type follows the prop', () => {
    synth({ instanceType: new ec2.InstanceType('c5n.2xlarge') }).template.hasResourceProperties('AWS::EC2::Instance', {
      InstanceType: 'c5n.2xlarge',
    });
  });

  test('nothing may connect to the load generator', () => {
    const groups = Object.values(defaults.template.findResources('AWS::EC2::SecurityGroup')) as {
      Properties: Record<string, unknown>;
    }[];
    expect(groups).toHaveLength(1);
    expect(groups[0]?.Properties.SecurityGroupIngress).toBeUndefined();
    defaults.template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
  });

  test('the role may only put objects under the results prefix, and metrics into the rmqbench namespace', () => {
    const statements = Object.values(defaults.template.findResources('AWS::IAM::Policy')).flatMap(
      (policy) =>
        (policy as { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }).Properties
          .PolicyDocument.Statement,
    );
    expect(statements).toEqual([
      {
        Sid: 'WriteResultsUnderPrefix',
        Effect: 'Allow',
        Action: ['s3:PutObject', 's3:AbortMultipartUpload'],
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::rmqbench-results/results/*']] },
      },
      {
        Sid: 'PutHostMetricsInRmqbenchNamespace',
        Effect: 'Allow',
        Action: 'cloudwatch:PutMetricData',
        Resource: '*',
        Condition: { StringEquals: { 'cloudwatch:namespace': 'rmqbench' } },
      },
    ]);
  });

  test('a custom prefix narrows the grant to it; a prefix without a trailing slash is refused', () => {
    synth({ resultsPrefix: 'runs/2024/' }).template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Resource: { 'Fn::Join': ['', Match.arrayWith([':s3:::rmqbench-results/runs/2024/*'])] } }),
        ]),
      },
    });
    expect(() => synth({ resultsPrefix: 'runs' })).toThrow(
      /resultsPrefix must be a relative S3 key prefix ending with "\/"/,
    );
  });

  test(
    `user data installs Java and PerfTest ${PERF_TEST_VERSION} from Maven Central: its jars' coordinates, ` +
      `downloaded by bash from their Maven paths and checked by one digest over the pinned sums before use`,
    () => {
      const { userData } = defaults;
      expect(userData).toContain('dnf install -y java-21-amazon-corretto-headless');
      expect(userData).toContain(FETCH_JAR_FUNCTION);
      expect(FETCH_JAR_FUNCTION).toContain('"https://repo1.maven.org/maven2/$1"');
      expect(hereDocument(userData, '/opt/perf-test/jars.txt', PERF_TEST_JARS_DELIMITER)).toBe(
        jarsManifest(PERF_TEST_ARTIFACTS),
      );
      expect(jarsManifest(PERF_TEST_ARTIFACTS)).toContain(`com.rabbitmq:perf-test:${PERF_TEST_VERSION}\n`);
      // The loop, run by bash with a fetch that prints its arguments, asks for exactly the pinned Maven paths.
      const loop = userData
        .split('\n')
        .find((line) => line.includes('do rmqbench_fetch_jar') && line.endsWith('/opt/perf-test/jars.txt'))!;
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-perftest-fetch-'));
      try {
        writeFileSync(join(dir, 'jars.txt'), jarsManifest(PERF_TEST_ARTIFACTS));
        const run = spawnSync(
          'bash',
          [
            '-c',
            `set -euo pipefail; rmqbench_fetch_jar() { echo "$1"; }\n` +
              `${loop.replace('/opt/perf-test/jars.txt', join(dir, 'jars.txt'))}`,
          ],
          { encoding: 'utf8' },
        );
        expect({ status: run.status, stdout: run.stdout }).toEqual({
          status: 0,
          stdout: PERF_TEST_ARTIFACTS.map((artifact) => `${artifact.path}\n`).join(''),
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      // The check runs after the downloads and before the wrapper that runs PerfTest is written.
      const check = userData.indexOf(`!= ${jarsDigest(PERF_TEST_ARTIFACTS)} ]`);
      expect(check).toBeGreaterThan(userData.indexOf(loop));
      expect(check).toBeLessThan(userData.indexOf('/usr/local/bin/perf-test'));
    },
  );

  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html: "User data is limited to 16
  // KB,
  // in raw form, before it is base64-encoded" (with the Kafka tools, a line and a checksum per jar came to ~36 KB).
  test(
    "user data fits EC2's 16 KB with and without the Kafka tools, each token counted at a worst-case 256 " +
      'characters',
    () => {
      for (const kafkaTools of [false, true]) {
        const worstCase = synth({ kafkaTools }).userData.replace(/<\{[^>]*\}>/g, 'x'.repeat(256));
        expect(worstCase).not.toContain('<{');
        expect({ kafkaTools, fits: Buffer.byteLength(worstCase, 'utf8') < 16 * 1024 }).toEqual({
          kafkaTools,
          fits: true,
        });
      }
    },
  );

  test('the pinned PerfTest jar is the one Maven Central serves for 2.22.1', () => {
    const perfTest = PERF_TEST_ARTIFACTS.find((artifact) =>
      artifact.path.endsWith(`perf-test-${PERF_TEST_VERSION}.jar`),
    );
    expect(perfTest?.sha256).toBe('57b2057b56f582e88bd5f89a2c7c4507139b48bfb80a23b5e12809f31aba8acf');
    expect(PERF_TEST_ARTIFACTS.every((artifact) => /^[0-9a-f]{64}$/.test(artifact.sha256))).toBe(true);
  });

  test('user data is valid bash', () => {
    expect(bashSyntaxErrors(defaults.userData)).toBe('');
  });

  test('placed in the requested Availability Zone of the VPC', () => {
    const stack = new Stack(new App(), 'Az', { env: { account: '111111111111', region: 'eu-west-1' } });
    stack.node.setContext(`availability-zones:account=111111111111:region=eu-west-1`, [
      'eu-west-1a',
      'eu-west-1b',
      'eu-west-1c',
    ]);
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3 });
    new LoadGenerator(stack, 'LoadGenerator', {
      vpc,
      resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'rmqbench-results'),
      availabilityZone: 'eu-west-1b',
    });
    Template.fromStack(stack).hasResourceProperties('AWS::EC2::Instance', { AvailabilityZone: 'eu-west-1b' });
  });

  test(
    'given the cluster, the load generator may read exactly its admin secret (the run script reads the ' +
      'credentials), no other secret',
    () => {
      const stack = new Stack(new App(), 'Secret');
      const cluster = new RabbitMqCluster(stack, 'Cluster');
      new LoadGenerator(stack, 'LoadGenerator', {
        vpc: cluster.vpc,
        resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'rmqbench-results'),
        cluster,
      });
      const template = Template.fromStack(stack);
      const policies = Object.entries(template.findResources('AWS::IAM::Policy')).filter(([id]) =>
        id.startsWith('LoadGeneratorRole'),
      );
      const statements = policies.flatMap(
        ([, policy]) =>
          (
            policy as {
              Properties: { PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] } };
            }
          ).Properties.PolicyDocument.Statement,
      );
      const secretStatements = statements.filter((statement) =>
        [statement.Action].flat().some((action) => action.startsWith('secretsmanager:')),
      );
      expect(secretStatements).toEqual([
        {
          Effect: 'Allow',
          Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
          Resource: stack.resolve(cluster.adminSecret.secretArn),
        },
      ]);
      expect(JSON.stringify(statements)).not.toContain(stack.resolve(cluster.erlangCookieSecret.secretArn).Ref);
    },
  );

  test('given the cluster, the load generator may reach AMQP and management on the nodes and the load balancer', () => {
    const stack = new Stack(new App(), 'WithCluster');
    const cluster = new RabbitMqCluster(stack, 'Cluster');
    const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', {
      vpc: cluster.vpc,
      resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'rmqbench-results'),
      cluster,
    });
    const template = Template.fromStack(stack);
    const sourceId = stack.resolve(loadGenerator.securityGroup.securityGroupId);
    for (const port of [5672, 15672]) {
      for (const group of ['ClusterNodeSecurityGroup', 'ClusterLoadBalancerSecurityGroup']) {
        template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
          FromPort: port,
          GroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp(group), 'GroupId'] },
          SourceSecurityGroupId: sourceId,
        });
      }
    }
  });

  test('public instance and role fields', () => {
    expect(defaults.loadGenerator.instance).toBeInstanceOf(ec2.Instance);
    expect(defaults.stack.resolve(defaults.loadGenerator.role.roleArn)).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^LoadGeneratorRole/), 'Arn'],
    });
  });

  test('snapshot', () => {
    expect(withoutAssetHashes(defaults.template)).toMatchSnapshot();
  });
});
