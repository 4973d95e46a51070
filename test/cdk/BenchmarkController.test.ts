import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BenchmarkController } from '../../cdk';
import {
  buildClusterTemplateApp,
  CLUSTER_INSTANCE_TYPE_PATTERN,
  KAFKA_CONTROLLER_BROKER_COUNTS,
  kafkaClusterTemplateFileName,
  NATS_CONTROLLER_NODE_COUNTS,
  natsClusterTemplateFileName,
  clusterNodeImageParameterName,
  clusterTemplateFileName,
  CONTROLLER_DEFAULT_RELEASE,
  CONTROLLER_RELEASES,
  DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER,
  synthesizeClusterTemplates,
} from '../../cdk/BenchmarkController';
import { uncoveredActions } from '../../cdk/cluster-stack-iam';
import { RabbitMqRelease } from '../../cdk/rabbitmq-release';
import { generateBrokerConfig, type BrokerConfigInput } from '../../core/broker/broker-config';
import type { QueueTopology } from '../../core/plan/plan-schema';
import { AWS_KAFKA_BROKER_COUNTS, AWS_NATS_NODE_COUNTS, isArmInstanceType } from '../../core/plan/target-rules';
import { goTarball } from '../../cdk/go-toolchain';
import { SYNC_INTERVAL_PARAMETER_PATTERN } from '../../cdk/cluster-templates';
import { KAFKA_TOOL_COMMAND, KAFKA_TOOLS_JARS_DELIMITER } from '../../cdk/user-data/load-generator';
import { jarsDigest, jarsManifest } from '../../cdk/user-data/pinned-jars';
import { KAFKA_ARTIFACTS } from '../../cdk/kafka-artifacts';
import { CLOUD_RABBITMQ_VERSIONS, DEFAULT_CLOUD_RABBITMQ_VERSION } from '../../core/cloud/cloud-releases';
import { handlerPermissions } from './handler-permissions';

const ROOT = resolve(__dirname, '../..');
const CFN_LINT = join(ROOT, '.venv-tools/bin/cfn-lint');

let app: App;
let stack: Stack;
let controller: BenchmarkController;
let template: Template;
beforeAll(() => {
  // The handlers are bundled by the build; bundle them here so the assets exist.
  const bundle = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle-lambdas.mjs')], { encoding: 'utf8' });
  if (bundle.status !== 0) throw new Error(`bundling failed: ${bundle.stderr}`);
  app = new App();
  stack = new Stack(app, 'Controller');
  controller = new BenchmarkController(stack, 'Controller', {
    schedule: { expression: 'rate(7 days)', plan: { name: 'weekly' } },
  });
  template = Template.fromStack(stack);
}, 120_000);

type Statement = { Sid?: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
function statements(sid: string): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
    (
      policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }
    ).Properties.PolicyDocument.Statement.filter((statement) => statement.Sid === sid),
  );
}

function unacknowledgedFindings(scope: App): string[] {
  return new AwsSolutionsChecks()
    .validateScope(scope)
    .violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
    );
}

describe('BenchmarkController', () => {
  test('the results table has the store key design and point-in-time recovery', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'PK', KeyType: 'HASH' },
        { AttributeName: 'SK', KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [Match.objectLike({ IndexName: 'GSI1', Projection: { ProjectionType: 'KEYS_ONLY' } })],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
  });

  test('the raw output bucket is encrypted, TLS only and expires objects', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: Match.anyValue(),
      LifecycleConfiguration: { Rules: [Match.objectLike({ ExpirationInDays: 90, Status: 'Enabled' })] },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  test('the state machine logs ALL without execution data and traces with X-Ray', () => {
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      LoggingConfiguration: Match.objectLike({ Level: 'ALL', IncludeExecutionData: false }),
      TracingConfiguration: { Enabled: true },
      DefinitionSubstitutions: Match.objectLike({
        ValidatePlanFunctionArn: Match.anyValue(),
        TeardownClusterFunctionArn: Match.anyValue(),
      }),
    });
  });

  test('SSM SendCommand reaches only tagged load generator instances and the AWS-RunShellScript document', () => {
    const [instances] = statements('RunShellScriptOnLoadGenerators');
    expect(instances!.Action).toBe('ssm:SendCommand');
    expect(JSON.stringify(instances!.Resource)).toContain(':instance/*');
    expect(instances!.Condition).toEqual({ StringEquals: { 'ssm:resourceTag/rmqbench:component': 'load-generator' } });
    const [document] = statements('RunShellScriptDocument');
    expect(JSON.stringify(document!.Resource)).toContain(':document/AWS-RunShellScript');
  });

  test(
    "the fault function runs commands only through FaultNodeRole, whose session reaches one cluster stack's " +
      'RabbitMQ nodes (the stack-name tag must equal the session tag), and waits up to 5 minutes',
    () => {
      const faultFunction = Object.entries(template.findResources('AWS::Lambda::Function')).find(
        ([, fn]) => (fn as { Properties: { Description?: string } }).Properties.Description === 'rmqbench fault',
      )![1] as {
        Properties: {
          Role: { 'Fn::GetAtt': string[] };
          Timeout: number;
          Environment: { Variables: Record<string, unknown> };
        };
      };
      expect(faultFunction.Properties.Timeout).toBe(300);
      const policyStatementsOf = (roleId: string) =>
        Object.values(template.findResources('AWS::IAM::Policy'))
          .filter((policy) =>
            JSON.stringify((policy as { Properties: { Roles: unknown } }).Properties.Roles).includes(`"${roleId}"`),
          )
          .flatMap(
            (policy) =>
              (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
                .Statement,
          );
      const functionRoleId = faultFunction.Properties.Role['Fn::GetAtt'][0]!;
      const [nodeRoleId, nodeRole] = Object.entries(template.findResources('AWS::IAM::Role')).find(([id]) =>
        id.includes('FaultNodeRole'),
      )! as [string, { Properties: { AssumeRolePolicyDocument: { Statement: Statement[] } } }];
      expect(faultFunction.Properties.Environment.Variables.FAULT_NODE_ROLE_ARN).toEqual({
        'Fn::GetAtt': [nodeRoleId, 'Arn'],
      });

      // The function itself may not send commands at all; it may assume the node role (with a session tag) and list
      // instances.
      const own = policyStatementsOf(functionRoleId);
      expect(
        own.filter((statement) => [statement.Action].flat().some((action) => String(action).startsWith('ssm:'))),
      ).toEqual([]);
      expect(own.find((statement) => statement.Sid === 'AssumeFaultNodeRoleWithClusterTag')).toMatchObject({
        Action: ['sts:AssumeRole', 'sts:TagSession'],
        Resource: { 'Fn::GetAtt': [nodeRoleId, 'Arn'] },
      });

      // Only the fault function, only with the cluster-stack session tag set to an rmqbench stack.
      const trust = nodeRole.Properties.AssumeRolePolicyDocument.Statement;
      expect(trust).toHaveLength(1);
      expect(trust[0]).toMatchObject({
        Action: ['sts:AssumeRole', 'sts:TagSession'],
        Principal: { AWS: { 'Fn::GetAtt': [functionRoleId, 'Arn'] } },
        Condition: { StringLike: { 'aws:RequestTag/rmqbench:cluster-stack': 'rmqbench-*' } },
      });

      const nodeStatements = policyStatementsOf(nodeRoleId);
      const sendCommand = nodeStatements.filter((statement) => [statement.Action].flat().includes('ssm:SendCommand'));
      expect(sendCommand.map((statement) => statement.Sid).sort()).toEqual([
        'RunShellScriptDocument',
        'RunShellScriptOnTheClustersNodes',
      ]);
      for (const statement of sendCommand) expect(statement.Resource).not.toBe('*');
      const nodes = sendCommand.find((statement) => statement.Sid === 'RunShellScriptOnTheClustersNodes')!;
      expect(JSON.stringify(nodes.Resource)).toContain(':instance/*');
      expect(nodes.Condition).toEqual({
        StringEquals: {
          // A RabbitMQ node, a Kafka broker or a NATS server (the component tags cluster-templates.ts puts on them).
          'ssm:resourceTag/rmqbench:component': ['rabbitmq-node', 'kafka-broker', 'nats-server'],
          'ssm:resourceTag/aws:cloudformation:stack-name': '${aws:PrincipalTag/rmqbench:cluster-stack}',
        },
      });
      expect(
        JSON.stringify(sendCommand.find((statement) => statement.Sid === 'RunShellScriptDocument')!.Resource),
      ).toContain(':document/AWS-RunShellScript');
      // Only the look-ups without resource-level permissions are on "*".
      expect(
        [...own, ...nodeStatements]
          .filter((statement) => statement.Resource === '*' && statement.Sid !== undefined)
          .flatMap((statement) => [statement.Action].flat())
          .sort(),
      ).toEqual(['ec2:DescribeInstances', 'ssm:GetCommandInvocation']);
    },
  );

  test('CloudFormation create, describe and delete are limited to stacks with the rmqbench- prefix', () => {
    for (const sid of ['CreateRunStacks', 'DescribeRunStacks', 'DeleteRunStacks']) {
      const found = statements(sid);
      expect(found.length).toBeGreaterThan(0);
      for (const statement of found) expect(JSON.stringify(statement.Resource)).toContain(':stack/rmqbench-*/*');
    }
  });

  test(
    'no workflow function may do anything on every resource except listing stacks and instances, reading SSM ' +
      'registrations, reading command results and reading metrics',
    () => {
      const wildcard = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
        (
          policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }
        ).Properties.PolicyDocument.Statement.filter((statement) => statement.Resource === '*').flatMap((statement) =>
          [statement.Action].flat(),
        ),
      );
      // Besides the two listed, only the log-delivery and X-Ray actions CDK grants the state machine and functions (no
      // resource-level permissions exist).
      const allowed = new RegExp(
        String.raw`^(cloudformation:ListStacks|ssm:DescribeInstanceInformation|ssm:GetCommandInvocation|` +
          String.raw`ec2:DescribeInstances|cloudwatch:ListMetrics|cloudwatch:GetMetricData|` +
          String.raw`xray:(PutTelemetryRecords|PutTraceSegments|GetSamplingRules|GetSamplingTargets)|` +
          String.raw`logs:(Create|Delete|Get|Update)LogDelivery|logs:ListLogDeliveries|logs:DescribeLogGroups|` +
          String.raw`logs:DescribeResourcePolicies|logs:PutResourcePolicy)$`,
      );
      expect([...new Set(wildcard)].filter((action) => !allowed.test(action))).toEqual([]);
      expect(wildcard).toEqual(
        expect.arrayContaining([
          'cloudformation:ListStacks',
          'ssm:DescribeInstanceInformation',
          'ssm:GetCommandInvocation',
        ]),
      );
      expect(wildcard).not.toContain('cloudformation:DescribeStacks');
      // Host metrics are read, never written, by the controller (the instances put them, into the rmqbench namespace
      // only).
      expect(wildcard).not.toContain('cloudwatch:PutMetricData');
    },
  );

  test(
    'IngestRepetition may list and read CloudWatch metrics (the host metrics of AWS repetitions), and nothing ' +
      'else of CloudWatch',
    () => {
      const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
        (policy) =>
          (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
            .Statement,
      );
      const cloudWatch = statements.filter((statement) =>
        [statement.Action].flat().some((action) => action.startsWith('cloudwatch:')),
      );
      expect(cloudWatch).toEqual([
        expect.objectContaining({
          Sid: 'ReadHostMetrics',
          Action: ['cloudwatch:ListMetrics', 'cloudwatch:GetMetricData'],
          Resource: '*',
        }),
      ]);
      const ingestRole = Object.entries(template.findResources('AWS::IAM::Policy')).find(([, policy]) =>
        JSON.stringify(policy).includes('ReadHostMetrics'),
      )?.[0];
      expect(ingestRole).toMatch(/IngestRepetition/);
    },
  );

  test(
    'IngestRepetition may describe instances (to name broker metrics by instance id), as only the fault ' +
      'step also may',
    () => {
      const policies = Object.entries(template.findResources('AWS::IAM::Policy')) as [
        string,
        { Properties: { PolicyDocument: { Statement: Statement[] } } },
      ][];
      const describing = policies
        .filter(([, policy]) =>
          policy.Properties.PolicyDocument.Statement.some((statement) =>
            [statement.Action].flat().includes('ec2:DescribeInstances'),
          ),
        )
        .map(([id]) => id);
      expect(describing.map((id) => /^Controller(\w+?)Function/.exec(id)?.[1]).sort()).toEqual([
        'Fault',
        'IngestRepetition',
      ]);
      const ingest = policies.find(([id]) => /^ControllerIngestRepetition/.test(id))![1].Properties.PolicyDocument
        .Statement;
      expect(ingest).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ Sid: 'FindBrokerNodeInstances', Action: 'ec2:DescribeInstances', Resource: '*' }),
        ]),
      );
    },
  );

  test('a failure rule and an hourly sweeper are the safety nets, and the schedule starts executions', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ detail: Match.objectLike({ status: ['FAILED', 'TIMED_OUT', 'ABORTED'] }) }),
    });
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 hour)' });
    template.hasResourceProperties('AWS::Scheduler::Schedule', { ScheduleExpression: 'rate(7 days)' });
  });

  test('the controller VPC has private subnets with egress in 3 zones and flow logs', () => {
    template.resourceCountIs('AWS::EC2::VPC', 1);
    template.resourceCountIs('AWS::EC2::NatGateway', 1);
    template.hasResourceProperties('AWS::EC2::FlowLog', {
      ResourceType: 'VPC',
      ResourceId: stack.resolve(controller.vpc.vpcId),
    });
    expect(controller.clusterSubnets).toHaveLength(3);
    expect(controller.clusterSubnets.every((subnet) => controller.vpc.privateSubnets.includes(subnet))).toBe(true);
  });

  test(
    "the smoke-test function runs in the controller's private subnets with its own security group, and no other " +
      'function is in the VPC',
    () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench smoke-test',
        VpcConfig: {
          SubnetIds: stack.resolve(controller.clusterSubnets.map((subnet) => subnet.subnetId)),
          SecurityGroupIds: [stack.resolve(controller.smokeTestSecurityGroup.securityGroupId)],
        },
      });
      const inVpc = Object.values(
        template.findResources('AWS::Lambda::Function', { Properties: { VpcConfig: Match.anyValue() } }),
      );
      expect(inVpc.map((fn) => (fn as { Properties: { Description: string } }).Properties.Description)).toEqual([
        'rmqbench smoke-test',
      ]);
    },
  );

  test('the smoke-test security group allows out only AMQP into the cluster subnets and HTTPS, and nothing in', () => {
    // The cluster subnets' own blocks, not the VPC's primary CIDR: a subnet from a secondary CIDR block is covered
    // (issue 22, item 9).
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('smoke-test'),
      SecurityGroupEgress: [
        ...controller.clusterSubnets.map((subnet) =>
          Match.objectLike({
            IpProtocol: 'tcp',
            FromPort: 5672,
            ToPort: 5672,
            CidrIp: stack.resolve(subnet.ipv4CidrBlock),
          }),
        ),
        Match.objectLike({ IpProtocol: 'tcp', FromPort: 443, ToPort: 443, CidrIp: '0.0.0.0/0' }),
      ],
      SecurityGroupIngress: Match.absent(),
    });
  });

  test(
    "a given VPC with a cluster subnet from a secondary CIDR block: the AMQP egress names that subnet's block; " +
      'one without blocks warns and falls back to the primary CIDR',
    () => {
      const other = new Stack(new App(), 'SecondaryCidr', { env: { account: '123456789012', region: 'eu-west-1' } });
      const vpc = ec2.Vpc.fromVpcAttributes(other, 'Vpc', {
        vpcId: 'vpc-1',
        vpcCidrBlock: '10.0.0.0/16',
        availabilityZones: ['eu-west-1a', 'eu-west-1b'],
        privateSubnetIds: ['subnet-a', 'subnet-b'],
        privateSubnetIpv4CidrBlocks: ['10.0.1.0/24', '100.64.0.0/20'],
      });
      const given = new BenchmarkController(other, 'C', { vpc });
      const egress = (
        Object.values(Template.fromStack(other).findResources('AWS::EC2::SecurityGroup'))[0] as {
          Properties: { SecurityGroupEgress: { FromPort: number; CidrIp: string }[] };
        }
      ).Properties.SecurityGroupEgress;
      expect(egress.filter((rule) => rule.FromPort === 5672).map((rule) => rule.CidrIp)).toEqual([
        '10.0.1.0/24',
        '100.64.0.0/20',
      ]);
      expect(given.clusterSubnets).toHaveLength(2);
      const blind = new Stack(new App(), 'NoBlocks', { env: { account: '123456789012', region: 'eu-west-1' } });
      const unknown = ec2.Vpc.fromVpcAttributes(blind, 'Vpc', {
        vpcId: 'vpc-2',
        vpcCidrBlock: '10.1.0.0/16',
        availabilityZones: ['eu-west-1a', 'eu-west-1b'],
        privateSubnetIds: ['subnet-c', 'subnet-d'],
      });
      new BenchmarkController(blind, 'C', { vpc: unknown });
      Annotations.fromStack(blind).hasWarning('*', Match.stringLikeRegexp('does not say its IPv4 CIDR block'));
      const fallback = (
        Object.values(Template.fromStack(blind).findResources('AWS::EC2::SecurityGroup'))[0] as {
          Properties: { SecurityGroupEgress: { FromPort: number; CidrIp: string }[] };
        }
      ).Properties.SecurityGroupEgress;
      expect(fallback.filter((rule) => rule.FromPort === 5672).map((rule) => rule.CidrIp)).toEqual(['10.1.0.0/16']);
    },
  );

  test(
    'a given VPC without DNS support or DNS host names is refused by name (Kafka brokers are found in a private ' +
      'hosted zone)',
    () => {
      const other = new Stack(new App(), 'NoDns');
      const vpc = new ec2.Vpc(other, 'Vpc', { maxAzs: 2, natGateways: 1, enableDnsHostnames: false });
      expect(() => new BenchmarkController(other, 'C', { vpc })).toThrow(
        /vpc must have enableDnsHostnames on: Kafka clusters' brokers are found by name in a private hosted zone/,
      );
    },
  );

  test(
    'the launch function carries the VPC id, the 2 cluster ' + 'subnets, their zones and the smoke-test security group',
    () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench launch-cluster',
        Environment: {
          Variables: Match.objectLike({
            CLUSTER_VPC_ID: stack.resolve(controller.vpc.vpcId),
            CLUSTER_SUBNET_IDS: {
              'Fn::Join': [',', stack.resolve(controller.clusterSubnets.map((subnet) => subnet.subnetId))],
            },
            CLUSTER_AVAILABILITY_ZONES: {
              'Fn::Join': [',', stack.resolve(controller.clusterSubnets.map((subnet) => subnet.availabilityZone))],
            },
            CLUSTER_CLIENT_SECURITY_GROUP_ID: stack.resolve(controller.smokeTestSecurityGroup.securityGroupId),
          }),
        },
      });
    },
  );

  test('an existing VPC is used as given, and one without private subnets in 2 zones is refused by name', () => {
    const other = new Stack(new App(), 'OwnVpc');
    const vpc = new ec2.Vpc(other, 'Vpc', { maxAzs: 2, natGateways: 1 });
    const own = new BenchmarkController(other, 'C', { vpc });
    expect(own.vpc).toBe(vpc);
    Template.fromStack(other).resourceCountIs('AWS::EC2::VPC', 1);
    const single = new ec2.Vpc(other, 'Single', { maxAzs: 1, natGateways: 1 });
    expect(() => new BenchmarkController(other, 'D', { vpc: single })).toThrow(
      /vpc must have private subnets with egress in at least 2 Availability Zones \(3 recommended; got 1\)/,
    );
  });

  test('invalid props are refused with the prop name and allowed values', () => {
    const other = new Stack(new App(), 'Invalid');
    expect(() => new BenchmarkController(other, 'C', { maxConcurrency: 0 })).toThrow(
      /maxConcurrency must be an integer from 1 to 40 \(got 0\)/,
    );
    expect(() => new BenchmarkController(other, 'D', { schedule: { expression: 'weekly', plan: {} } })).toThrow(
      /schedule.expression must be rate/,
    );
  });

  test('cdk-nag AwsSolutions has no unacknowledged finding, IAM5 wildcard details included', () => {
    expect(unacknowledgedFindings(app)).toEqual([]);
  });

  test(
    'the nag check can fail: a new wildcard grant on a controller function is reported despite the narrow ' +
      'acknowledgements',
    () => {
      const otherApp = new App();
      const other = new Stack(otherApp, 'Negative');
      const negative = new BenchmarkController(other, 'Controller');
      negative.functions['ingest-repetition']!.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['s3:*'], resources: [negative.rawOutputBucket.arnForObjects('*')] }),
      );
      expect(unacknowledgedFindings(otherApp)).toEqual([
        expect.stringMatching(
          /^AwsSolutions-IAM5\[Action::s3:\*\] at Negative\/Controller\/IngestRepetitionFunction\/ServiceRole/,
        ),
        expect.stringMatching(
          new RegExp(
            String.raw`^AwsSolutions-IAM5\[Resource::<ControllerRawOutput[0-9A-F]+\.Arn>\/\*\] at Negative` +
              String.raw`\/Controller\/IngestRepetitionFunction\/ServiceRole`,
          ),
        ),
      ]);
    },
  );

  test(
    'S3 grants are single actions: exact template objects for the launcher, runs/*/raw and runs/*/ingest for the ' +
      'repetition functions',
    () => {
      const [templates] = statements('ReadClusterTemplates');
      expect(templates!.Action).toBe('s3:GetObject');
      expect(templates!.Resource).toHaveLength(
        CONTROLLER_RELEASES.length + KAFKA_CONTROLLER_BROKER_COUNTS.length + NATS_CONTROLLER_NODE_COUNTS.length,
      );
      expect(JSON.stringify(templates!.Resource)).not.toContain('*');
      expect(JSON.stringify(statements('ReadRawPerfTestOutput')[0]!.Resource)).toContain('/runs/*/raw/*');
      expect(statements('WriteIngestObjects')[0]!.Action).toBe('s3:PutObject');
      expect(JSON.stringify(statements('ReadIngestObjects')[0]!.Resource)).toContain('/runs/*/ingest/*');
      const s3Actions = Object.values(template.findResources('AWS::IAM::Policy'))
        .flatMap((policy) =>
          (
            policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }
          ).Properties.PolicyDocument.Statement.flatMap((statement) => [statement.Action].flat()),
        )
        .filter((action) => action.startsWith('s3:'));
      expect([...new Set(s3Actions)].sort()).toEqual(['s3:GetObject', 's3:PutObject']);
    },
  );

  test(
    "IngestRepetition has 5 minutes: its metricsOnly mode reads a whole cluster's late repetitions again in one " +
      'invocation',
    () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench ingest-repetition',
        Timeout: 300,
      });
    },
  );

  test('the table grants are the item operations the store performs, on the table and not its index', () => {
    const found = statements('ResultsTableItems');
    expect(found.map((statement) => [statement.Action].flat().sort().join(' ')).sort()).toEqual([
      'dynamodb:BatchWriteItem dynamodb:Query',
      'dynamodb:PutItem dynamodb:Query dynamodb:UpdateItem',
      // The sweeper reads a run's state before it deletes an expired cluster.
      'dynamodb:Query',
      'dynamodb:Query dynamodb:UpdateItem',
    ]);
    for (const statement of found) expect(JSON.stringify(statement.Resource)).not.toContain('index');
  });

  test('the state machine invokes the unqualified function ARNs only (no :* versions)', () => {
    const [invoke] = statements('InvokeWorkflowFunctions');
    expect(invoke!.Resource).toHaveLength(10);
    expect(JSON.stringify(invoke!.Resource)).not.toContain(':*');
  });

  test('cfn-lint finds no error in the template', () => {
    if (!existsSync(CFN_LINT)) throw new Error(`cfn-lint is not installed at ${CFN_LINT}: run scripts/setup.sh`);
    const file = join(mkdtempSync(join(tmpdir(), 'rmqbench-controller-')), 'controller.template.json');
    writeFileSync(file, JSON.stringify(template.toJSON()));
    // W3005: CDK's explicit DependsOn from each function to its role's policy, which cfn-lint finds redundant.
    const lint = spawnSync(CFN_LINT, ['--format', 'parseable', '--ignore-checks', 'W3005', '--', file], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(`${lint.stdout}${lint.stderr}`.trim()).toBe('');
    expect(lint.status).toBe(0);
  }, 180_000);

  test('snapshot (asset hashes stripped)', () => {
    const text = JSON.stringify(template.toJSON()).replace(/[0-9a-f]{64}/g, '<hash>');
    expect(JSON.parse(text)).toMatchSnapshot();
  });
});

describe('cluster templates', () => {
  const clusterTemplate = (release: RabbitMqRelease) =>
    JSON.parse(readFileSync(join(synthesizeClusterTemplates(), clusterTemplateFileName(release)), 'utf8')) as {
      Parameters: Record<string, Record<string, unknown> & { Type: string }>;
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
  const userDataText = (release: RabbitMqRelease) => {
    const launchTemplate = Object.values(clusterTemplate(release).Resources).find(
      (resource) => resource.Type === 'AWS::EC2::LaunchTemplate',
    )!;
    const userData = (
      launchTemplate.Properties!.LaunchTemplateData as {
        UserData: { 'Fn::Base64': { 'Fn::Join': [string, unknown[]] } };
      }
    ).UserData['Fn::Base64']['Fn::Join'][1];
    return userData.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('');
  };

  test("one template per release the controller offers (3.13 and 4.1), the default being RabbitMqCluster's", () => {
    expect(CONTROLLER_RELEASES).toEqual([RabbitMqRelease.V3_13, RabbitMqRelease.V4_1]);
    // ValidatePlan refuses other versions by the same list (core/cloud/cloud-releases.ts).
    expect(CONTROLLER_RELEASES.map((release) => release.rabbitmqVersion)).toEqual(CLOUD_RABBITMQ_VERSIONS);
    expect(CONTROLLER_DEFAULT_RELEASE.rabbitmqVersion).toBe(DEFAULT_CLOUD_RABBITMQ_VERSION.aws);
    expect(CONTROLLER_DEFAULT_RELEASE).toBe(RabbitMqRelease.V4_1);
    expect(Object.keys(controller.clusterTemplates)).toEqual(['3.13.7', '4.1.4']);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'rmqbench launch-cluster',
      Environment: {
        Variables: Match.objectLike({
          CLUSTER_TEMPLATE_URL_3_13_7: Match.anyValue(),
          CLUSTER_TEMPLATE_URL_4_1_4: Match.anyValue(),
          CLUSTER_DEFAULT_RABBITMQ_VERSION: '4.1.4',
        }),
      },
    });
    for (const release of CONTROLLER_RELEASES)
      expect(userDataText(release)).toContain(`rabbitmq-server-${release.rabbitmqVersion}`);
  });

  test(
    'NodeCount (1-7) pins the node group and BrokerPolicies (a one-line JSON array, default none) is applied by ' +
      'every node after startup',
    () => {
      for (const release of CONTROLLER_RELEASES) {
        const { Parameters, Resources } = clusterTemplate(release);
        expect(Parameters.NodeCount).toMatchObject({ Type: 'Number', MinValue: 1, MaxValue: 7 });
        expect(Parameters.NodeCount!.Default).toBeUndefined();
        expect(Parameters.BrokerPolicies).toMatchObject({
          Type: 'String',
          Default: '[]',
          AllowedPattern: '^\\[.*\\]$',
          MaxLength: 4096,
        });
        const nodeGroup = Object.values(Resources).find(
          (resource) => resource.Type === 'AWS::AutoScaling::AutoScalingGroup',
        )!;
        expect(nodeGroup.Properties).toMatchObject({
          MinSize: { Ref: 'NodeCount' },
          MaxSize: { Ref: 'NodeCount' },
          DesiredCapacity: { Ref: 'NodeCount' },
        });
        expect(
          Object.values(Resources).filter((resource) => resource.Type === 'AWS::AutoScaling::ScalingPolicy'),
        ).toEqual([]);
        // The node group copies the cluster-node tag to every instance it launches (the fault function's SendCommand
        // requires it); the load generator has its own.
        expect((nodeGroup.Properties as { Tags: unknown[] }).Tags).toContainEqual({
          Key: 'rmqbench:component',
          Value: 'rabbitmq-node',
          PropagateAtLaunch: true,
        });
        const loadGenerator = Object.values(Resources).find((resource) => resource.Type === 'AWS::EC2::Instance')!;
        expect((loadGenerator.Properties as { Tags: unknown[] }).Tags).toContainEqual({
          Key: 'rmqbench:component',
          Value: 'load-generator',
        });
        const text = userDataText(release);
        expect(text).toContain(
          `cat > /etc/rabbitmq/rmqbench-policies.json <<'RMQBENCH_BROKER_POLICIES'\n{"Ref":"BrokerPolicies"}\n` +
            `RMQBENCH_BROKER_POLICIES\n`,
        );
        expect(text.indexOf('rmqbench-policies.json')).toBeGreaterThan(text.indexOf('rabbitmqctl await_startup'));
        expect(text).toContain(
          'subprocess.run(["rabbitmqctl", *args], check=True)\' /etc/rabbitmq/rmqbench-policies.json',
        );
        // No policy is baked in: the template serves every topology.
        expect(text).not.toContain("rabbitmqctl 'set_policy'");
      }
    },
  );

  test(
    "InstanceType sets the nodes' type (default the construct's m5a.large); its pattern refuses Arm types as " +
      'core/plan/target-rules.ts does',
    () => {
      for (const release of CONTROLLER_RELEASES) {
        const { Parameters, Resources } = clusterTemplate(release);
        expect(Parameters.InstanceType).toMatchObject({
          Type: 'String',
          Default: 'm5a.large',
          AllowedPattern: CLUSTER_INSTANCE_TYPE_PATTERN,
        });
        const launchTemplates = Object.values(Resources).filter(
          (resource) => resource.Type === 'AWS::EC2::LaunchTemplate',
        );
        const nodeTemplate = launchTemplates.find((resource) =>
          JSON.stringify(resource.Properties).includes('rabbitmq-server'),
        )!;
        expect(
          (nodeTemplate.Properties as { LaunchTemplateData: { InstanceType: unknown } }).LaunchTemplateData
            .InstanceType,
        ).toEqual({ Ref: 'InstanceType' });
      }
      const allowed = new RegExp(CLUSTER_INSTANCE_TYPE_PATTERN);
      for (const type of [
        'c5.xlarge',
        'm5a.large',
        'r5dn.2xlarge',
        'x2iedn.xlarge',
        'm7i-flex.large',
        'm6g.large',
        'c7gn.xlarge',
        't4g.micro',
        'is4gen.large',
        'a1.large',
      ]) {
        expect([type, allowed.test(type)]).toEqual([type, !isArmInstanceType(type)]);
      }
    },
  );

  test(
    "the templates' rabbitmq.conf and enabled_plugins are the generator's output, which for the AWS backend " +
      'depends on neither node count nor topology',
    () => {
      const topologies: QueueTopology[] = [
        { type: 'quorum' },
        { type: 'quorum', replicationFactor: 2 },
        { type: 'stream' },
        { type: 'classic' },
        { type: 'mirrored', mirrorTo: 'all' },
        { type: 'mirrored', mirrorTo: 2 },
      ];
      for (const release of CONTROLLER_RELEASES) {
        const base: BrokerConfigInput = {
          topology: { type: 'quorum' },
          rabbitmqVersion: release.rabbitmqVersion,
          peerDiscovery: { backend: 'aws', region: 'eu-west-1' },
          nodeCount: 7,
        };
        const reference = generateBrokerConfig(base);
        for (let nodeCount = 1; nodeCount <= 7; nodeCount++) {
          for (const topology of topologies.filter(
            (candidate) => candidate.type !== 'mirrored' || release.supportsClassicMirroring,
          )) {
            const config = generateBrokerConfig({ ...base, nodeCount, topology });
            expect([config.rabbitmqConf, config.enabledPluginsFile]).toEqual([
              reference.rabbitmqConf,
              reference.enabledPluginsFile,
            ]);
          }
        }
        const text = userDataText(release);
        // The region is the stack's (a token) in the template.
        const templateConf = reference.rabbitmqConf.replace(
          'cluster_formation.aws.region = eu-west-1',
          'cluster_formation.aws.region = {"Ref":"AWS::Region"}',
        );
        expect(text).toContain(`<<'RMQBENCH_RABBITMQ_CONF'\n${templateConf}RMQBENCH_RABBITMQ_CONF`);
        expect(text).toContain(`<<'RMQBENCH_ENABLED_PLUGINS'\n${reference.enabledPluginsFile}RMQBENCH_ENABLED_PLUGINS`);
      }
    },
  );

  test(
    "the CloudFormation role's IAM actions cover the handler permissions of every resource type in both cluster " +
      'templates',
    () => {
      const templatesDir = synthesizeClusterTemplates();
      const files = [
        ...CONTROLLER_RELEASES.map(clusterTemplateFileName),
        ...KAFKA_CONTROLLER_BROKER_COUNTS.map(kafkaClusterTemplateFileName),
        ...NATS_CONTROLLER_NODE_COUNTS.map(natsClusterTemplateFileName),
      ];
      const types = new Set(
        files.flatMap((file) =>
          Object.values(
            (
              JSON.parse(readFileSync(join(templatesDir, file), 'utf8')) as {
                Resources: Record<string, { Type: string }>;
              }
            ).Resources,
          ).map((resource) => resource.Type),
        ),
      );
      expect(types).toContain('AWS::IAM::Role');
      // The Kafka templates' own types are in the set (private hosted zone and broker names).
      expect(types).toContain('AWS::Route53::HostedZone');
      const required = [...handlerPermissions(types).values()].flat();
      // These are the actions the issue found missing (create an AWS::IAM::Policy, delete an AWS::IAM::Role).
      expect(required).toEqual(
        expect.arrayContaining(['iam:GetRolePolicy', 'iam:ListAttachedRolePolicies', 'iam:ListRolePolicies']),
      );
      const [grant] = statements('NodeRolesOfClusterStacks');
      const granted = ([] as string[]).concat(grant!.Action);
      expect(uncoveredActions(required, granted)).toEqual([]);
      // The grant covers IAM actions the templates need and nothing else.
      const neededIam = new Set(required.filter((action) => action.startsWith('iam:')));
      expect(granted.filter((action) => !neededIam.has(action))).toEqual([]);
      // The check can fail: without one handler permission it names it.
      expect(
        uncoveredActions(
          required,
          granted.filter((action) => action !== 'iam:ListRolePolicies'),
        ),
      ).toEqual(['iam:ListRolePolicies']);
    },
  );

  test('the nodes run the AMI the controller pinned at its deployment, read from its SSM parameter by name', () => {
    template.hasResourceProperties('AWS::SSM::Parameter', {
      Name: clusterNodeImageParameterName('Controller'),
      Type: 'String',
      DataType: 'aws:ec2:image',
    });
    const pinned = Object.values(template.findResources('AWS::SSM::Parameter')).find((parameter) =>
      JSON.stringify(parameter).includes('cluster-node-image-id'),
    ) as { Properties: { Value: { Ref: string } } };
    // The value is the public Amazon Linux 2023 x86-64 parameter, resolved when the controller stack is deployed.
    expect(template.toJSON().Parameters[pinned.Properties.Value.Ref]).toMatchObject({
      Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>',
      Default: '/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-x86_64',
    });
    for (const release of CONTROLLER_RELEASES) {
      const files = JSON.parse(
        readFileSync(
          join(
            synthesizeClusterTemplates(clusterNodeImageParameterName('Controller')),
            clusterTemplateFileName(release),
          ),
          'utf8',
        ),
      ) as {
        Parameters: Record<string, { Type: string; Default?: string }>;
        Resources: Record<string, { Type: string; Properties: { LaunchTemplateData?: { ImageId?: { Ref: string } } } }>;
      };
      const launchTemplates = Object.values(files.Resources).filter(
        (resource) =>
          resource.Type === 'AWS::EC2::LaunchTemplate' && JSON.stringify(resource).includes('rabbitmq-server'),
      );
      expect(launchTemplates).toHaveLength(1);
      const imageParameter = files.Parameters[launchTemplates[0]!.Properties.LaunchTemplateData!.ImageId!.Ref];
      expect(imageParameter).toEqual({
        Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>',
        Default: clusterNodeImageParameterName('Controller'),
      });
    }
  });

  test('cdk-nag AwsSolutions has no unacknowledged finding in the cluster templates', () => {
    expect(unacknowledgedFindings(buildClusterTemplateApp())).toEqual([]);
  });

  test(
    'each takes the controller VPC, its 2 or 3 subnets, their zones and the smoke-test security group as ' +
      'parameters and creates no network of its own',
    () => {
      for (const release of CONTROLLER_RELEASES) {
        const { Parameters, Resources } = clusterTemplate(release);
        expect(Parameters).toMatchObject({
          ResultsBucketName: { Type: 'String' },
          VpcId: { Type: 'AWS::EC2::VPC::Id' },
          PrivateSubnetIds: { Type: 'List<AWS::EC2::Subnet::Id>' },
          AvailabilityZones: { Type: 'List<AWS::EC2::AvailabilityZone::Name>' },
          SmokeTestSecurityGroupId: { Type: 'AWS::EC2::SecurityGroup::Id' },
        });
        const types = new Set(Object.values(Resources).map((resource) => resource.Type));
        for (const type of [
          'AWS::EC2::VPC',
          'AWS::EC2::Subnet',
          'AWS::EC2::NatGateway',
          'AWS::EC2::InternetGateway',
          'AWS::EC2::FlowLog',
        ])
          expect(types).not.toContain(type);
        const nodeGroup = Object.values(Resources).find(
          (resource) => resource.Type === 'AWS::AutoScaling::AutoScalingGroup',
        )!;
        // Every subnet given (3 zones where the VPC has them), not a fixed number of Fn::Select.
        expect(nodeGroup.Properties!.VPCZoneIdentifier).toEqual({ Ref: 'PrivateSubnetIds' });
        const loadBalancer = Object.values(Resources).find(
          (resource) => resource.Type === 'AWS::ElasticLoadBalancingV2::LoadBalancer',
        )!;
        expect(loadBalancer.Properties).toMatchObject({ Scheme: 'internal', Subnets: { Ref: 'PrivateSubnetIds' } });
        // CREATE_COMPLETE waits for one boot signal per node of the plan cluster.
        expect((nodeGroup as { CreationPolicy?: unknown }).CreationPolicy).toEqual({
          ResourceSignal: { Count: { Ref: 'NodeCount' }, Timeout: 'PT20M' },
        });
      }
    },
  );

  test('the controller spreads the clusters over 3 zones of its own VPC, and accepts a VPC with 2', () => {
    const zonesOf = (controller: BenchmarkController) =>
      controller.clusterSubnets.map((subnet) => JSON.stringify(Stack.of(controller).resolve(subnet.availabilityZone)));
    expect(new Set(zonesOf(controller)).size).toBe(3);
    const twoZones = new Stack(new App(), 'TwoZones');
    const vpc = new ec2.Vpc(twoZones, 'Vpc', { maxAzs: 2 });
    expect(zonesOf(new BenchmarkController(twoZones, 'Controller', { vpc }))).toHaveLength(2);
  });

  test(
    'the load balancer and the nodes admit AMQP and management ' + 'from the smoke-test security group only (no CIDR)',
    () => {
      const { Resources } = clusterTemplate(CONTROLLER_DEFAULT_RELEASE);
      const rules = Object.values(Resources).flatMap((resource) => {
        if (resource.Type === 'AWS::EC2::SecurityGroupIngress') return [resource.Properties as Record<string, unknown>];
        if (resource.Type === 'AWS::EC2::SecurityGroup')
          return (resource.Properties!.SecurityGroupIngress as Record<string, unknown>[] | undefined) ?? [];
        return [];
      });
      const fromSmokeTest = rules.filter(
        (rule) => JSON.stringify(rule.SourceSecurityGroupId) === JSON.stringify({ Ref: 'SmokeTestSecurityGroupId' }),
      );
      expect(fromSmokeTest.map((rule) => rule.FromPort).sort()).toEqual([15672, 15672, 5672, 5672]);
      expect(rules.filter((rule) => rule.CidrIp !== undefined)).toEqual([]);
    },
  );

  test('cfn-lint finds no error in any cluster template, the Kafka and NATS ones included', () => {
    if (!existsSync(CFN_LINT)) throw new Error(`cfn-lint is not installed at ${CFN_LINT}: run scripts/setup.sh`);
    const files = [
      ...CONTROLLER_RELEASES.map(clusterTemplateFileName),
      ...KAFKA_CONTROLLER_BROKER_COUNTS.map(kafkaClusterTemplateFileName),
      ...NATS_CONTROLLER_NODE_COUNTS.map(natsClusterTemplateFileName),
    ].map((file) => join(synthesizeClusterTemplates(), file));
    const lint = spawnSync(CFN_LINT, ['--format', 'parseable', '--', ...files], { encoding: 'utf8', timeout: 120_000 });
    expect(`${lint.stdout}${lint.stderr}`.trim()).toBe('');
    expect(lint.status).toBe(0);
  }, 180_000);
});

describe('Kafka cluster templates', () => {
  type CfnTemplate = {
    Parameters: Record<string, Record<string, unknown> & { Type: string }>;
    Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; CreationPolicy?: unknown }>;
    Outputs: Record<string, { Value: unknown }>;
  };
  const kafkaTemplate = (brokers: number) =>
    JSON.parse(
      readFileSync(join(synthesizeClusterTemplates(), kafkaClusterTemplateFileName(brokers)), 'utf8'),
    ) as CfnTemplate;
  const ofType = (file: CfnTemplate, type: string) =>
    Object.entries(file.Resources).filter(([, resource]) => resource.Type === type);
  const userData = (resource: { Properties?: Record<string, unknown> }) => {
    const parts = (resource.Properties!.UserData as { 'Fn::Base64': { 'Fn::Join': [string, unknown[]] } })[
      'Fn::Base64'
    ]['Fn::Join'][1];
    return parts.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('');
  };

  test(
    'each broker and NATS server is tagged with its component and node name (kafka-<node.id>, nats-<n>), by ' +
      'which the fault step finds it and FaultNodeRole may run commands on it; the load generator is not',
    () => {
      const tagsOf = (resource: { Properties?: Record<string, unknown> }) =>
        Object.fromEntries(
          ((resource.Properties!.Tags ?? []) as { Key: string; Value: string }[]).map((tag) => [tag.Key, tag.Value]),
        );
      const natsFile = JSON.parse(
        readFileSync(join(synthesizeClusterTemplates(), natsClusterTemplateFileName(3)), 'utf8'),
      ) as CfnTemplate;
      for (const [file, component, prefix] of [
        [kafkaTemplate(3), 'kafka-broker', 'kafka'],
        [natsFile, 'nats-server', 'nats'],
      ] as const) {
        const nodes = ofType(file, 'AWS::EC2::Instance')
          .map(([, instance]) => tagsOf(instance))
          .filter((tags) => tags['rmqbench:component'] === component);
        expect(nodes.map((tags) => tags['rmqbench:node-name']).sort()).toEqual([1, 2, 3].map((n) => `${prefix}-${n}`));
        // The boot's own identity matches the tag: node.id=<n> (Kafka) or server_name "nats-<n>" (NATS).
        for (const [, instance] of ofType(file, 'AWS::EC2::Instance').filter(
          ([, resource]) => tagsOf(resource)['rmqbench:component'] === component,
        )) {
          const n = tagsOf(instance)['rmqbench:node-name']!.split('-')[1];
          expect(userData(instance)).toContain(prefix === 'kafka' ? `node.id=${n}` : `server_name: "nats-${n}"`);
        }
      }
    },
  );

  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html: "User data is limited to 16
  // KB,
  // in raw form, before it is base64-encoded"; RunInstances refuses more, so a template over it could never launch.
  test(
    "every instance of every Kafka template (brokers and load generator) has user data within EC2's 16 KB, each " +
      'token counted at a worst-case 256 characters',
    () => {
      for (const brokers of KAFKA_CONTROLLER_BROKER_COUNTS) {
        for (const [id, instance] of ofType(kafkaTemplate(brokers), 'AWS::EC2::Instance')) {
          const parts = (instance.Properties!.UserData as { 'Fn::Base64': { 'Fn::Join': [string, unknown[]] } })[
            'Fn::Base64'
          ]['Fn::Join'][1];
          const bytes = parts.reduce<number>(
            (sum, part) => sum + (typeof part === 'string' ? Buffer.byteLength(part, 'utf8') : 256),
            0,
          );
          expect({ brokers, id, fits: bytes < 16 * 1024 }).toEqual({ brokers, id, fits: true });
        }
      }
    },
  );

  test(
    'one template per broker count the AWS target accepts (1, 3, 5), each with that many brokers that each ' +
      'signal their boot, and the launcher gets their URLs',
    () => {
      expect(KAFKA_CONTROLLER_BROKER_COUNTS).toEqual([...AWS_KAFKA_BROKER_COUNTS]);
      expect(Object.keys(controller.kafkaClusterTemplates).map(Number)).toEqual([1, 3, 5]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench launch-cluster',
        Environment: {
          Variables: Match.objectLike({
            KAFKA_CLUSTER_TEMPLATE_URL_1: Match.anyValue(),
            KAFKA_CLUSTER_TEMPLATE_URL_3: Match.anyValue(),
            KAFKA_CLUSTER_TEMPLATE_URL_5: Match.anyValue(),
          }),
        },
      });
      for (const brokers of KAFKA_CONTROLLER_BROKER_COUNTS) {
        const file = kafkaTemplate(brokers);
        const brokerInstances = ofType(file, 'AWS::EC2::Instance').filter(([id]) => id.startsWith('KafkaBroker'));
        expect(brokerInstances).toHaveLength(brokers);
        for (const [, instance] of brokerInstances) {
          expect(instance.CreationPolicy).toEqual({ ResourceSignal: { Count: 1, Timeout: 'PT1200S' } });
          // The plan cluster's type; the pinned node image of the controller.
          expect(instance.Properties!.InstanceType).toEqual({ Ref: 'InstanceType' });
          expect(file.Parameters[(instance.Properties!.ImageId as { Ref: string }).Ref]).toEqual({
            Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>',
            Default: DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER,
          });
          expect(instance.Properties!.MetadataOptions).toEqual({ HttpPutResponseHopLimit: 1, HttpTokens: 'required' });
          // The boot signals the stack as deployed (rmqbench-<runId>-c<n>), not the synthesized stack's name.
          expect(userData(instance)).toContain('STACK_NAME={"Ref":"AWS::StackName"}');
          expect(userData(instance)).not.toContain(`Kafka${brokers}Brokers`);
        }
        // No named launch template anywhere: a fixed name would clash between two stacks of a run.
        expect(JSON.stringify(file)).not.toContain('LaunchTemplateName');
        expect(Object.keys(file.Outputs).some((key) => key.includes('BootstrapServers'))).toBe(true);
        expect(Object.keys(file.Outputs).filter((key) => key.includes('InstanceId'))).toHaveLength(1);
      }
    },
  );

  test(
    'parameters: the controller network, the results bucket and an x86-64 InstanceType; no node count or ' +
      'policies, and no network of its own',
    () => {
      for (const brokers of KAFKA_CONTROLLER_BROKER_COUNTS) {
        const file = kafkaTemplate(brokers);
        expect(
          Object.keys(file.Parameters)
            .filter((name) => !name.startsWith('SsmParameterValue') && name !== 'BootstrapVersion')
            .sort(),
        ).toEqual(['AvailabilityZones', 'InstanceType', 'PrivateSubnetIds', 'ResultsBucketName', 'VpcId']);
        expect(file.Parameters.InstanceType).toMatchObject({
          Type: 'String',
          Default: 'm5a.large',
          AllowedPattern: CLUSTER_INSTANCE_TYPE_PATTERN,
        });
        const types = new Set(Object.values(file.Resources).map((resource) => resource.Type));
        for (const type of ['AWS::EC2::VPC', 'AWS::EC2::Subnet', 'AWS::EC2::NatGateway', 'AWS::EC2::InternetGateway'])
          expect(types).not.toContain(type);
      }
    },
  );

  test(
    "each stack names its private hosted zone after its own stack id, so the zones of a run's clusters in the " +
      'one VPC never clash',
    () => {
      const zones = ofType(kafkaTemplate(3), 'AWS::Route53::HostedZone').map(
        ([, resource]) => resource.Properties as { Name: unknown; VPCs: unknown[] },
      );
      expect(zones).toHaveLength(1);
      const zone = { Properties: zones[0]! };
      expect(zone.Properties.Name).toEqual({
        'Fn::Join': [
          '',
          [{ 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] }, '.rmqbench.internal.'],
        ],
      });
      expect(zone.Properties.VPCs).toEqual([{ VPCId: { Ref: 'VpcId' }, VPCRegion: { Ref: 'AWS::Region' } }]);
    },
  );

  test(
    'the load generator installs the pinned Kafka tools beside PerfTest, is tagged for Run Command, and the ' +
      'brokers admit it on 9092 only (no CIDR)',
    () => {
      const file = kafkaTemplate(3);
      const loadGenerators = ofType(file, 'AWS::EC2::Instance').filter(([id]) => id.startsWith('LoadGenerator'));
      expect(loadGenerators).toHaveLength(1);
      const loadGenerator = loadGenerators[0]![1];
      const text = userData(loadGenerator);
      expect(text).toContain(`cat > ${KAFKA_TOOL_COMMAND} <<'RMQBENCH_KAFKA_TOOL_WRAPPER'`);
      // The jars as coordinates and their check as one digest over the pinned sums (cdk/user-data/pinned-jars.ts).
      expect(text).toContain(
        `cat > /opt/kafka-tools/jars.txt <<'${KAFKA_TOOLS_JARS_DELIMITER}'\n` +
          `${jarsManifest(KAFKA_ARTIFACTS)}${KAFKA_TOOLS_JARS_DELIMITER}`,
      );
      expect(text).toContain(`!= ${jarsDigest(KAFKA_ARTIFACTS)} ]; then rm -f /opt/kafka-tools/lib/*.jar;`);
      expect(text).toContain('/usr/local/bin/perf-test');
      expect(loadGenerator.Properties!.Tags).toEqual(
        expect.arrayContaining([{ Key: 'rmqbench:component', Value: 'load-generator' }]),
      );
      const loadGeneratorGroup = (loadGenerator.Properties!.SecurityGroupIds as unknown[])[0];
      const ingress = [
        ...ofType(file, 'AWS::EC2::SecurityGroupIngress').map(([, rule]) => rule.Properties!),
        ...ofType(file, 'AWS::EC2::SecurityGroup').flatMap(
          ([, group]) => (group.Properties!.SecurityGroupIngress as Record<string, unknown>[] | undefined) ?? [],
        ),
      ];
      expect(ingress.filter((rule) => rule.CidrIp !== undefined)).toEqual([]);
      const fromLoadGenerator = ingress.filter(
        (rule) => JSON.stringify(rule.SourceSecurityGroupId) === JSON.stringify(loadGeneratorGroup),
      );
      expect(fromLoadGenerator.map((rule) => [rule.FromPort, rule.ToPort])).toEqual([[9092, 9092]]);
    },
  );

  test(
    'the smoke-test function may run Run Command only on tagged load generators with AWS-RunShellScript and read ' +
      'command results (the Kafka smoke test), within 5 minutes',
    () => {
      const smokeRole = Object.entries(template.findResources('AWS::IAM::Role')).find(([id]) =>
        id.startsWith('ControllerSmokeTestFunctionServiceRole'),
      )![0];
      const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((policy) =>
        JSON.stringify(policy.Properties.Roles).includes(smokeRole),
      );
      const smokeStatements = policies.flatMap(
        (policy) =>
          (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
            .Statement,
      );
      const bySid = (sid: string) => smokeStatements.filter((statement) => statement.Sid === sid);
      expect(bySid('RunShellScriptOnLoadGenerators')).toEqual([
        expect.objectContaining({
          Action: 'ssm:SendCommand',
          Condition: { StringEquals: { 'ssm:resourceTag/rmqbench:component': 'load-generator' } },
        }),
      ]);
      expect(JSON.stringify(bySid('RunShellScriptDocument')[0]!.Resource)).toContain('document/AWS-RunShellScript');
      expect(bySid('ReadCommandResults')).toEqual([
        expect.objectContaining({ Action: 'ssm:GetCommandInvocation', Resource: '*' }),
      ]);
      template.hasResourceProperties('AWS::Lambda::Function', { Description: 'rmqbench smoke-test', Timeout: 300 });
    },
  );
});

describe('BenchmarkController with a fault-only Azure service principal', () => {
  const secretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rmqbench-azure-sp-AbCdEf';
  const faultSecretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rmqbench-azure-fault-sp-GhIjKl';
  const faultPrincipalId = '11111111-2222-3333-4444-555555555555';
  let stack: Stack;
  let template: Template;
  let controller: BenchmarkController;
  let templateFile: string;
  beforeAll(() => {
    templateFile = join(mkdtempSync(join(tmpdir(), 'rmqbench-arm-')), 'main.json');
    writeFileSync(
      templateFile,
      JSON.stringify({
        $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
        contentVersion: '1.0.0.0',
        resources: [],
      }),
    );
    stack = new Stack(new App(), 'AzureFaultController', { env: { account: '123456789012', region: 'eu-west-1' } });
    controller = new BenchmarkController(stack, 'Controller', {
      azure: {
        credentialsSecret: secretsmanager.Secret.fromSecretCompleteArn(stack, 'AzureSp', secretArn),
        faultCredentialsSecret: secretsmanager.Secret.fromSecretCompleteArn(stack, 'AzureFaultSp', faultSecretArn),
        faultPrincipalId,
        location: 'westeurope',
        templateFile,
        parameters: { rabbitmqAdminUsername: 'admin' },
      },
    });
    template = Template.fromStack(stack);
  }, 120_000);

  const policyStatements = (functionName: string): Statement[] => {
    const role = Stack.of(controller).getLogicalId(
      controller.functions[functionName]!.role!.node.defaultChild as never,
    );
    return Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) =>
        JSON.stringify((policy as { Properties: { Roles: unknown } }).Properties.Roles).includes(`"${role}"`),
      )
      .flatMap(
        (policy) =>
          (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
            .Statement,
      );
  };

  test('only the fault function may read the fault-only secret, and only it is told its ARN', () => {
    const names = Object.keys(controller.functions);
    expect(names).toContain('fault');
    for (const name of names) {
      const grants = policyStatements(name).filter((statement) =>
        JSON.stringify(statement).includes('rmqbench-azure-fault-sp'),
      );
      expect([name, grants]).toEqual([
        name,
        name === 'fault'
          ? [
              {
                Sid: 'ReadAzureFaultCredentials',
                Effect: 'Allow',
                Action: 'secretsmanager:GetSecretValue',
                Resource: faultSecretArn,
              },
            ]
          : [],
      ]);
    }
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    const told = functions.filter((fn) => JSON.stringify(fn).includes('FAULT_AZURE_CREDENTIALS_SECRET_ARN'));
    expect(told.map((fn) => (fn as { Properties: { Description: string } }).Properties.Description)).toEqual([
      'rmqbench fault',
    ]);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'rmqbench fault',
      Environment: {
        Variables: Match.objectLike({
          FAULT_AZURE_CREDENTIALS_SECRET_ARN: faultSecretArn,
          AZURE_CREDENTIALS_SECRET_ARN: secretArn,
        }),
      },
    });
  });

  test('every deployment gets faultPrincipalId as a template parameter (AZURE_PARAMETERS_JSON of the launcher)', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'rmqbench launch-cluster',
      Environment: {
        Variables: Match.objectLike({
          AZURE_PARAMETERS_JSON: JSON.stringify({ rabbitmqAdminUsername: 'admin', faultPrincipalId }),
        }),
      },
    });
  });

  test(
    'faultCredentialsSecret and faultPrincipalId are refused apart; a client-id-like non-GUID and a ' +
      'faultPrincipalId in parameters are refused by name',
    () => {
      const other = new Stack(new App(), 'FaultRefusals');
      const credentialsSecret = secretsmanager.Secret.fromSecretCompleteArn(other, 'Sp', secretArn);
      const faultCredentialsSecret = secretsmanager.Secret.fromSecretCompleteArn(other, 'FaultSp', faultSecretArn);
      const base = { credentialsSecret, location: 'westeurope', templateFile };
      expect(() => new BenchmarkController(other, 'A', { azure: { ...base, faultCredentialsSecret } })).toThrow(
        /azure.faultCredentialsSecret and azure.faultPrincipalId go together/,
      );
      expect(() => new BenchmarkController(other, 'B', { azure: { ...base, faultPrincipalId } })).toThrow(
        /azure.faultCredentialsSecret and azure.faultPrincipalId go together/,
      );
      expect(
        () =>
          new BenchmarkController(other, 'C', {
            azure: { ...base, faultCredentialsSecret, faultPrincipalId: 'rmqbench-fault' },
          }),
      ).toThrow(/azure.faultPrincipalId must be the service principal's object id, a GUID \(got "rmqbench-fault"\)/);
      expect(
        () => new BenchmarkController(other, 'D', { azure: { ...base, parameters: { faultPrincipalId } } }),
      ).toThrow(/azure.parameters must not hold faultPrincipalId/);
    },
  );
});

describe('BenchmarkController with Azure', () => {
  const secretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rmqbench-azure-sp-AbCdEf';
  let azureApp: App;
  let azure: Template;
  let controller: BenchmarkController;
  beforeAll(() => {
    const templateFile = join(mkdtempSync(join(tmpdir(), 'rmqbench-arm-')), 'main.json');
    writeFileSync(
      templateFile,
      JSON.stringify({
        $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
        contentVersion: '1.0.0.0',
        resources: [],
      }),
    );
    azureApp = new App();
    const azureStack = new Stack(azureApp, 'AzureController', {
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    controller = new BenchmarkController(azureStack, 'Controller', {
      azure: {
        credentialsSecret: secretsmanager.Secret.fromSecretCompleteArn(azureStack, 'AzureSp', secretArn),
        location: 'westeurope',
        templateFile,
        parameters: { rabbitmqAdminUsername: 'admin' },
      },
    });
    azure = Template.fromStack(azureStack);
  }, 120_000);

  const policyStatements = (functionName: string): Statement[] => {
    const role = Stack.of(controller).getLogicalId(
      controller.functions[functionName]!.role!.node.defaultChild as never,
    );
    return Object.values(azure.findResources('AWS::IAM::Policy'))
      .filter((policy) =>
        JSON.stringify((policy as { Properties: { Roles: unknown } }).Properties.Roles).includes(`"${role}"`),
      )
      .flatMap(
        (policy) =>
          (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
            .Statement,
      );
  };

  test('every function that calls Azure gets the AZURE_* variables the Lambda logic reads', () => {
    for (const name of [
      'launch-cluster',
      'check-cluster',
      'smoke-test',
      'start-repetition',
      'fault',
      'check-repetition',
      'teardown-cluster',
      'failure-handler',
      'sweeper',
    ]) {
      azure.hasResourceProperties('AWS::Lambda::Function', {
        Description: `rmqbench ${name}`,
        Environment: {
          Variables: Match.objectLike({
            AZURE_CREDENTIALS_SECRET_ARN: secretArn,
            AZURE_LOCATION: 'westeurope',
            AZURE_TEMPLATE_S3_URI: Match.stringLikeRegexp(
              '^s3://cdk-[^/]+-assets-123456789012-eu-west-1/[0-9a-f]{64}\\.json$',
            ),
            AZURE_PARAMETERS_JSON: JSON.stringify({ rabbitmqAdminUsername: 'admin' }),
          }),
        },
      });
    }
  });

  test('GetSecretValue is granted on exactly the credentials secret, to the Azure functions only', () => {
    const grants = (name: string) =>
      policyStatements(name).filter((statement) => JSON.stringify(statement).includes('rmqbench-azure-sp'));
    // IngestRepetition: the host metrics of an Azure repetition come from Azure Monitor, read with the ARM credential.
    for (const name of [
      'launch-cluster',
      'check-cluster',
      'smoke-test',
      'start-repetition',
      'fault',
      'check-repetition',
      'ingest-repetition',
      'teardown-cluster',
      'failure-handler',
      'sweeper',
    ]) {
      expect(grants(name)).toEqual([
        { Sid: 'ReadAzureCredentials', Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: secretArn },
      ]);
    }
    expect(grants('run-record')).toEqual([]);
  });

  test(
    'the launcher reads exactly the ARM template object, and start-repetition may sign uploads under ' +
      'runs/*/raw only',
    () => {
      const [read] = policyStatements('launch-cluster').filter((statement) => statement.Sid === 'ReadAzureTemplate');
      expect(read!.Action).toBe('s3:GetObject');
      expect(JSON.stringify(read!.Resource)).toMatch(/[0-9a-f]{64}\.json/);
      expect(JSON.stringify(read!.Resource)).not.toContain('*');
      const [presign] = policyStatements('start-repetition').filter(
        (statement) => statement.Sid === 'PresignRawOutputUploads',
      );
      expect(presign!.Action).toBe('s3:PutObject');
      expect(JSON.stringify(presign!.Resource)).toContain('/runs/*/raw/*');
    },
  );

  test(
    "with Azure the cluster clients may reach an Azure load balancer's ports, AMQPS 5671 and management HTTPS " +
      '15671 (issue 22, item 2)',
    () => {
      const [group] = Object.values(
        azure.findResources('AWS::EC2::SecurityGroup', {
          Properties: { GroupDescription: Match.stringLikeRegexp('smoke-test') },
        }),
      );
      const egress = (
        group as {
          Properties: {
            SecurityGroupEgress: { IpProtocol: string; FromPort: number; ToPort: number; CidrIp: unknown }[];
          };
        }
      ).Properties.SecurityGroupEgress;
      expect(
        egress
          .filter((rule) => rule.CidrIp === '0.0.0.0/0')
          .map((rule) => rule.FromPort)
          .sort(),
      ).toEqual([15671, 443, 5671]);
      // AMQP 5672 stays inside the VPC (AWS clusters' internal load balancers, in the cluster subnets): never to the
      // internet.
      const amqp = egress.filter((rule) => rule.FromPort === 5672);
      expect(amqp.length).toBeGreaterThanOrEqual(2);
      for (const rule of amqp) expect(rule.CidrIp).not.toBe('0.0.0.0/0');
    },
  );

  test(
    "with Azure, CheckClusterReady runs in the VPC with the cluster clients' group: its management API calls " +
      'leave through the NAT gateway the NSG admits (issue 22, item 1)',
    () => {
      const [group] = Object.keys(
        azure.findResources('AWS::EC2::SecurityGroup', {
          Properties: { GroupDescription: Match.stringLikeRegexp('smoke-test') },
        }),
      );
      for (const name of ['check-cluster', 'smoke-test']) {
        azure.hasResourceProperties('AWS::Lambda::Function', {
          Description: `rmqbench ${name}`,
          VpcConfig: { SecurityGroupIds: [{ 'Fn::GetAtt': [group, 'GroupId'] }], SubnetIds: Match.anyValue() },
        });
      }
    },
  );

  test(
    "the launcher gets the public IP of the NAT gateway's Elastic IP as CONTROLLER_EGRESS_ADDRESSES (Azure NSGs " +
      'admit it)',
    () => {
      const eips = azure.findResources('AWS::EC2::EIP');
      expect(Object.keys(eips)).toHaveLength(1);
      const [eip] = Object.keys(eips);
      azure.hasResourceProperties('AWS::EC2::NatGateway', { AllocationId: { 'Fn::GetAtt': [eip, 'AllocationId'] } });
      azure.hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench launch-cluster',
        Environment: {
          Variables: Match.objectLike({ CONTROLLER_EGRESS_ADDRESSES: { 'Fn::GetAtt': [eip, 'PublicIp'] } }),
        },
      });
      for (const fn of Object.values(
        azure.findResources('AWS::Lambda::Function', {
          Properties: { Description: Match.not('rmqbench launch-cluster') },
        }),
      )) {
        expect(JSON.stringify(fn)).not.toContain('CONTROLLER_EGRESS_ADDRESSES');
      }
    },
  );

  test(
    'with an own VPC, controllerEgressAddresses is required unless its NAT gateways are in this app, one per NAT ' +
      'gateway, passed as given; it must be IPv4 addresses',
    () => {
      const other = new Stack(new App(), 'OwnVpcAzure');
      const credentialsSecret = secretsmanager.Secret.fromSecretCompleteArn(other, 'Sp', secretArn);
      const vpc = new ec2.Vpc(other, 'Vpc', { maxAzs: 2, natGateways: 1 });
      const azureProps = { credentialsSecret, location: 'westeurope', templateFile: __filename };
      // An imported VPC's NAT gateways cannot be seen: the addresses are required.
      const imported = ec2.Vpc.fromVpcAttributes(other, 'Imported', {
        vpcId: 'vpc-9',
        availabilityZones: ['eu-west-1a', 'eu-west-1b'],
        privateSubnetIds: ['subnet-1', 'subnet-2'],
        privateSubnetIpv4CidrBlocks: ['10.9.1.0/24', '10.9.2.0/24'],
      });
      expect(() => new BenchmarkController(other, 'A', { vpc: imported, azure: azureProps })).toThrow(
        new RegExp(
          String.raw`controllerEgressAddresses is required with azure when vpc is given and its NAT gateways ` +
            String.raw`are not defined in this app`,
        ),
      );
      // One defined in this app: one address per NAT gateway (each zone's subnets leave through their own).
      const twoNats = new ec2.Vpc(other, 'TwoNats', { maxAzs: 2, natGateways: 2 });
      expect(
        () =>
          new BenchmarkController(other, 'D', {
            vpc: twoNats,
            azure: azureProps,
            controllerEgressAddresses: ['203.0.113.10'],
          }),
      ).toThrow(/controllerEgressAddresses has 1 address\(es\) but the vpc has 2 NAT gateways/);
      // A stack holds one controller: E gets a stack of its own, with its own VPC of two NAT gateways.
      const own = new Stack(other.node.root as App, 'OwnVpcAzureTwoNats');
      new BenchmarkController(own, 'E', {
        vpc: new ec2.Vpc(own, 'TwoNats', { maxAzs: 2, natGateways: 2 }),
        azure: { ...azureProps, credentialsSecret: secretsmanager.Secret.fromSecretCompleteArn(own, 'Sp', secretArn) },
      });
      expect(
        () =>
          new BenchmarkController(other, 'B', {
            vpc,
            azure: azureProps,
            controllerEgressAddresses: ['203.0.113.10/32'],
          }),
      ).toThrow(/controllerEgressAddresses must be IPv4 addresses/);
      new BenchmarkController(other, 'C', {
        vpc,
        azure: azureProps,
        controllerEgressAddresses: ['203.0.113.10', '192.0.2.7'],
      });
      Template.fromStack(other).hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench launch-cluster',
        Environment: { Variables: Match.objectLike({ CONTROLLER_EGRESS_ADDRESSES: '203.0.113.10,192.0.2.7' }) },
      });
    },
  );

  test('a second controller in the same stack is refused by name: its node image parameter would exist twice', () => {
    const stack = new Stack(new App(), 'TwoControllers');
    new BenchmarkController(stack, 'First');
    expect(() => new BenchmarkController(stack, 'Second')).toThrow(
      'a stack holds one BenchmarkController: TwoControllers already has TwoControllers/First (its pinned node image ' +
        'parameter /rmqbench/TwoControllers/cluster-node-image-id is named after the stack',
    );
    // In a stack of its own it is accepted.
    expect(() => new BenchmarkController(new Stack(stack.node.root as App, 'Other'), 'Second')).not.toThrow();
  });

  test('invalid Azure props are refused by name', () => {
    const other = new Stack(new App(), 'InvalidAzure');
    const credentialsSecret = secretsmanager.Secret.fromSecretCompleteArn(other, 'Sp', secretArn);
    expect(
      () =>
        new BenchmarkController(other, 'A', {
          azure: { credentialsSecret, location: 'West Europe', templateFile: __filename },
        }),
    ).toThrow(/azure.location must be an Azure region name/);
    expect(
      () =>
        new BenchmarkController(other, 'B', {
          azure: { credentialsSecret, location: 'westeurope', templateFile: '/nonexistent/main.json' },
        }),
    ).toThrow(/azure.templateFile must be the compiled ARM JSON/);
  });

  test('cdk-nag AwsSolutions has no unacknowledged finding with Azure configured', () => {
    expect(unacknowledgedFindings(azureApp)).toEqual([]);
  });
});

describe('NATS cluster templates', () => {
  type CfnTemplate = {
    Parameters: Record<string, Record<string, unknown> & { Type: string }>;
    Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; CreationPolicy?: unknown }>;
    Outputs: Record<string, { Value: unknown }>;
  };
  const natsTemplate = (nodes: number) =>
    JSON.parse(
      readFileSync(join(synthesizeClusterTemplates(), natsClusterTemplateFileName(nodes)), 'utf8'),
    ) as CfnTemplate;
  const instances = (file: CfnTemplate) =>
    Object.entries(file.Resources).filter(([, resource]) => resource.Type === 'AWS::EC2::Instance');
  const userDataParts = (resource: { Properties?: Record<string, unknown> }) =>
    (resource.Properties!.UserData as { 'Fn::Base64': { 'Fn::Join': [string, unknown[]] } })['Fn::Base64'][
      'Fn::Join'
    ][1];
  const userData = (resource: { Properties?: Record<string, unknown> }) =>
    userDataParts(resource)
      .map((part) => (typeof part === 'string' ? part : JSON.stringify(part)))
      .join('');

  test(
    'one template per server count the AWS target accepts (1, 3, 5), each with that many servers that each ' +
      'signal their boot and take the plan cluster’s instance type and sync interval; the launcher gets their URLs',
    () => {
      expect(NATS_CONTROLLER_NODE_COUNTS).toEqual([...AWS_NATS_NODE_COUNTS]);
      expect(Object.keys(controller.natsClusterTemplates).map(Number)).toEqual([1, 3, 5]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: 'rmqbench launch-cluster',
        Environment: {
          Variables: Match.objectLike({
            NATS_CLUSTER_TEMPLATE_URL_1: Match.anyValue(),
            NATS_CLUSTER_TEMPLATE_URL_3: Match.anyValue(),
            NATS_CLUSTER_TEMPLATE_URL_5: Match.anyValue(),
          }),
        },
      });
      for (const nodes of NATS_CONTROLLER_NODE_COUNTS) {
        const file = natsTemplate(nodes);
        expect(
          Object.keys(file.Parameters)
            .filter((name) => !name.startsWith('SsmParameterValue') && name !== 'BootstrapVersion')
            .sort(),
        ).toEqual([
          'AvailabilityZones',
          'InstanceType',
          'PrivateSubnetIds',
          'ResultsBucketName',
          'SyncInterval',
          'VpcId',
        ]);
        expect(file.Parameters.SyncInterval).toMatchObject({
          Type: 'String',
          Default: '2m',
          AllowedPattern: SYNC_INTERVAL_PARAMETER_PATTERN,
        });
        const servers = instances(file).filter(([id]) => id.startsWith('NatsServer'));
        expect(servers).toHaveLength(nodes);
        for (const [, server] of servers) {
          expect(server.CreationPolicy).toEqual({ ResourceSignal: { Count: 1, Timeout: 'PT900S' } });
          expect(server.Properties!.InstanceType).toEqual({ Ref: 'InstanceType' });
          // The server configuration takes the parameter, quoted as nats-server reads a string.
          expect(userData(server)).toContain('sync_interval: "{"Ref":"SyncInterval"}"');
          expect(userData(server)).toContain('STACK_NAME={"Ref":"AWS::StackName"}');
        }
        expect(Object.keys(file.Outputs).some((key) => key.includes('ServerUrls'))).toBe(true);
        expect(Object.keys(file.Outputs).filter((key) => key.includes('InstanceId'))).toHaveLength(1);
      }
    },
  );

  test(
    "the load generator installs the pinned Go toolchain (URL and SHA-256) for the NATS scripts' build, and every " +
      "instance's user data is within EC2's 16 KB, each token counted at 256 characters",
    () => {
      const tarball = goTarball('amd64');
      for (const nodes of NATS_CONTROLLER_NODE_COUNTS) {
        const file = natsTemplate(nodes);
        const [, loadGenerator] = instances(file).find(([id]) => id.startsWith('LoadGenerator'))!;
        const text = userData(loadGenerator);
        expect(text).toContain(`GO_URL=${tarball.url}\n`);
        expect(text).toContain(`GO_SHA256=${tarball.sha256}\n`);
        expect(text).toContain('echo "$GO_SHA256  /opt/nats-load/go.tar.gz" | sha256sum -c --quiet -');
        for (const [id, instance] of instances(file)) {
          const bytes = userDataParts(instance).reduce<number>(
            (sum, part) => sum + (typeof part === 'string' ? Buffer.byteLength(part, 'utf8') : 256),
            0,
          );
          expect({ nodes, id, fits: bytes < 16 * 1024 }).toEqual({ nodes, id, fits: true });
        }
      }
    },
  );
});
