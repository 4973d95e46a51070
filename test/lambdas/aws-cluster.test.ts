import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  ListStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { DescribeInstanceInformationCommand, GetCommandInvocationCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { generateBrokerConfig, policyCommandArgs } from '../../core/broker/broker-config';
import {
  checkStack,
  loadGeneratorInstanceId,
  loadGeneratorInstanceIds,
  perfTestState,
  stacksOfRun,
} from '../../lambdas/shared/aws-cluster';
import { createStackToken, launchStack, planClusterOf, type PlanClusterSpec } from '../../lambdas/shared/aws-launch';
import { sweepExpiredStacks } from '../../lambdas/sweeper/logic';
import { buildSchedule, clusterIdFor, type ScheduledCluster } from '../../state-machines/schedule';

// CloudFormation and SSM have no local engine: their clients are replaced (aws-sdk-client-mock).
const cfnMock = mockClient(CloudFormationClient);
const ssmMock = mockClient(SSMClient);
const cfn = new CloudFormationClient({});
const ssm = new SSMClient({});
afterEach(() => {
  cfnMock.reset();
  ssmMock.reset();
});

const NOW = new Date('2025-01-01T00:00:00Z');
const network = {
  vpcId: 'vpc-1',
  privateSubnetIds: ['subnet-a', 'subnet-b'],
  availabilityZones: ['eu-west-1a', 'eu-west-1b'],
  clientSecurityGroupId: 'sg-smoke',
};
const config = {
  templateUrls: { '3.13.7': 'https://t/3.13.7.json', '4.1.4': 'https://t/4.1.4.json' },
  defaultRabbitmqVersion: '4.1.4',
  cloudFormationRoleArn: 'arn:aws:iam::1:role/cfn',
  resultsBucketName: 'raw',
  expiryHours: 12,
  launchTimeoutMinutes: 30,
  network,
};
const cluster = (nodes: number, topology = 'quorum'): ScheduledCluster => ({
  index: 0,
  clusterId: 'rmqbench-run-1-c1',
  nodes,
  topology,
  repetitions: [],
});
const quorum = (nodes: number, rabbitmqVersion?: string): PlanClusterSpec => ({
  nodes,
  topology: { type: 'quorum' },
  ...(rabbitmqVersion ? { rabbitmqVersion } : {}),
});
const NETWORK_PARAMETERS = [
  { ParameterKey: 'ResultsBucketName', ParameterValue: 'raw' },
  { ParameterKey: 'VpcId', ParameterValue: 'vpc-1' },
  { ParameterKey: 'PrivateSubnetIds', ParameterValue: 'subnet-a,subnet-b' },
  { ParameterKey: 'AvailabilityZones', ParameterValue: 'eu-west-1a,eu-west-1b' },
  { ParameterKey: 'SmokeTestSecurityGroupId', ParameterValue: 'sg-smoke' },
];
const created = (call = 0) => cfnMock.commandCalls(CreateStackCommand)[call]!.args[0].input;
const parameter = (call: number, key: string) =>
  created(call).Parameters!.find((candidate) => candidate.ParameterKey === key)?.ParameterValue;

describe('AWS cluster logic', () => {
  test(
    "launch creates the stack from the default release's template in the controller VPC with NodeCount " +
      'and no policies, passes the role, tags run id and expiry and keeps a failed stack for its reason',
    async () => {
      cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
      await expect(launchStack(cfn, config, 'run-1', cluster(3), quorum(3), NOW)).resolves.toEqual({
        clusterId: 'rmqbench-run-1-c1',
        readyBy: '2025-01-01T00:30:00.000Z',
        expiresAt: '2025-01-01T12:00:00.000Z',
      });
      expect(cfnMock.commandCalls(CreateStackCommand)[0]!.args[0].input).toEqual({
        StackName: 'rmqbench-run-1-c1',
        TemplateURL: 'https://t/4.1.4.json',
        RoleARN: 'arn:aws:iam::1:role/cfn',
        Capabilities: ['CAPABILITY_IAM'],
        Parameters: [
          ...NETWORK_PARAMETERS,
          { ParameterKey: 'NodeCount', ParameterValue: '3' },
          { ParameterKey: 'BrokerPolicies', ParameterValue: '[]' },
        ],
        Tags: [
          { Key: 'rmqbench:run-id', Value: 'run-1' },
          { Key: 'rmqbench:expires-at', Value: '2025-01-01T12:00:00.000Z' },
        ],
        // Issue 22, item 6: a retried CreateStack is the same request.
        ClientRequestToken: createStackToken('run-1', 'rmqbench-run-1-c1'),
        OnFailure: 'DO_NOTHING',
      });
    },
  );

  test(
    'every cluster id the schedule can make gives a valid ClientRequestToken, ' +
      'the same for the same run and cluster, another for another run',
    () => {
      const long = 'x'.repeat(300);
      expect(createStackToken(long, clusterIdFor(long, 39))).toMatch(/^[a-zA-Z0-9][-a-zA-Z0-9]{0,127}$/);
      const [a, b] = ['2025-01-01T00:00:00Z_plan.name', '2025-01-02T00:00:00Z_plan.name'];
      // Two runs of the same plan a day apart share a cluster id, never a token (the token would make one run's
      // CreateStack a retry of the other's).
      expect(clusterIdFor(a, 0)).toBe(clusterIdFor(b, 0));
      expect(createStackToken(a, clusterIdFor(a, 0))).toMatch(/^rmqbench-T00-00-00Z-plan-name-c1-[0-9a-f]{16}$/);
      expect(createStackToken(a, clusterIdFor(a, 0))).toBe(createStackToken(a, clusterIdFor(a, 0)));
      expect(createStackToken(a, clusterIdFor(a, 0))).not.toBe(createStackToken(b, clusterIdFor(b, 0)));
      expect(() => createStackToken('r', '_bad')).toThrow(/cannot start a CreateStack ClientRequestToken/);
    },
  );

  test('a cluster id fits an Azure resource group name (at most 90) and stays unique past the cut', () => {
    // The longest run id the CLI makes: a 61-character plan name and its 21-character time and suffix.
    const plan = `p${'l'.repeat(60)}`;
    const [a, b] = [`${plan}-20261127T101500Z-3f2a`, `${plan}-20261127T101500Z-3f2b`];
    for (const index of [0, 9, 39]) {
      expect(clusterIdFor(a, index).length).toBeLessThanOrEqual(90);
      expect(clusterIdFor(a, index)).toMatch(/^rmqbench-[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]-c\d+$/);
    }
    expect(clusterIdFor(a, 0)).not.toBe(clusterIdFor(b, 0));
    expect(clusterIdFor(a, 0)).toBe(clusterIdFor(a, 0));
    // A short run id is kept whole, as before.
    expect(clusterIdFor('quickstart-20261127T101500Z-3f2a', 1)).toBe('rmqbench-quickstart-20261127T101500Z-3f2a-c2');
  });

  test(
    "the plan cluster's instanceType becomes the InstanceType " + "parameter (none given: the template's default)",
    async () => {
      cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
      await launchStack(cfn, config, 'run-1', cluster(3), { ...quorum(3), instanceType: 'c5.2xlarge' }, NOW);
      await launchStack(cfn, config, 'run-1', cluster(3), quorum(3), NOW);
      expect([parameter(0, 'InstanceType'), parameter(1, 'InstanceType')]).toEqual(['c5.2xlarge', undefined]);
    },
  );

  test('every node count 1-7 launches from the one template with its NodeCount', async () => {
    cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
    for (let nodes = 1; nodes <= 7; nodes++)
      await launchStack(cfn, config, 'run-1', cluster(nodes), quorum(nodes), NOW);
    expect(cfnMock.commandCalls(CreateStackCommand).map((call) => call.args[0].input.TemplateURL)).toEqual(
      Array(7).fill('https://t/4.1.4.json'),
    );
    expect([0, 1, 2, 3, 4, 5, 6].map((call) => parameter(call, 'NodeCount'))).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
    ]);
  });

  test(
    'a mirrored plan cluster (mirrorTo 2 on 3 nodes, 3.13) gets the ' +
      "3.13 template and BrokerPolicies equal to generateBrokerConfig's",
    async () => {
      cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
      const spec: PlanClusterSpec = { nodes: 3, topology: { type: 'mirrored', mirrorTo: 2 }, rabbitmqVersion: '3.13' };
      await launchStack(cfn, config, 'run-1', cluster(3, 'mirrored'), spec, NOW);
      const expected = generateBrokerConfig({
        topology: spec.topology,
        rabbitmqVersion: '3.13.7',
        peerDiscovery: { backend: 'aws' },
        nodeCount: 3,
      }).policies.map(policyCommandArgs);
      expect(expected).toEqual([
        [
          'set_policy',
          '--apply-to',
          'queues',
          '--priority',
          '0',
          'rmqbench-mirroring',
          '^(perf-test|rmqbench)',
          '{"ha-mode":"exactly","ha-params":2,"ha-sync-mode":"automatic"}',
        ],
      ]);
      expect(created().TemplateURL).toBe('https://t/3.13.7.json');
      expect(created().Parameters).toEqual([
        ...NETWORK_PARAMETERS,
        { ParameterKey: 'NodeCount', ParameterValue: '3' },
        { ParameterKey: 'BrokerPolicies', ParameterValue: JSON.stringify(expected) },
      ]);
      expect(JSON.parse(parameter(0, 'BrokerPolicies')!)).toEqual(expected);
    },
  );

  test("the template is picked by the plan cluster's rabbitmqVersion: major.minor or the exact version", async () => {
    cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
    for (const version of ['3.13', '3.13.7', '4.1', '4.1.4', undefined])
      await launchStack(cfn, config, 'run-1', cluster(3), quorum(3, version), NOW);
    expect(cfnMock.commandCalls(CreateStackCommand).map((call) => call.args[0].input.TemplateURL)).toEqual([
      'https://t/3.13.7.json',
      'https://t/3.13.7.json',
      'https://t/4.1.4.json',
      'https://t/4.1.4.json',
      'https://t/4.1.4.json',
    ]);
  });

  test('an unsupported version is refused before anything is created, naming it and the supported ones', async () => {
    for (const version of ['4.0', '3.12', '4.1.2']) {
      await expect(launchStack(cfn, config, 'run-1', cluster(3), quorum(3, version), NOW)).rejects.toThrow(
        `the AWS target has no cluster template for RabbitMQ ${version}: it supports 3.13.7, 4.1.4`,
      );
    }
    expect(cfnMock.commandCalls(CreateStackCommand)).toHaveLength(0);
  });

  test(
    'mirrored without a version (default 4.1) is refused ' + 'before anything is created, saying what to set',
    async () => {
      await expect(
        launchStack(
          cfn,
          config,
          'run-1',
          cluster(3, 'mirrored'),
          { nodes: 3, topology: { type: 'mirrored', mirrorTo: 'all' } },
          NOW,
        ),
      ).rejects.toThrow(
        'topology "mirrored" needs RabbitMQ 3.x, and this cluster ' +
          'would run RabbitMQ 4.1.4 (the default): set its rabbitmqVersion',
      );
      expect(cfnMock.commandCalls(CreateStackCommand)).toHaveLength(0);
    },
  );

  test('several load generators: LoadGeneratorCount is passed above 1 only, and every one must be online', async () => {
    cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
    await launchStack(cfn, config, 'run-1', cluster(3), { ...quorum(3), loadGenerators: 3 }, NOW);
    await launchStack(cfn, config, 'run-1', cluster(3), { ...quorum(3), loadGenerators: 1 }, NOW);
    expect(parameter(0, 'LoadGeneratorCount')).toBe('3');
    // One generator: the parameters of before (the template's default launches one).
    expect(created(1).Parameters!.map((one) => one.ParameterKey)).not.toContain('LoadGeneratorCount');
    const launch = { clusterId: 'rmqbench-run-1-c1', readyBy: '2025-01-01T00:30:00.000Z' };
    cfnMock.on(DescribeStacksCommand).resolves({
      Stacks: [
        {
          StackName: 's',
          CreationTime: NOW,
          StackStatus: 'CREATE_COMPLETE',
          Outputs: [
            { OutputKey: 'LoadGeneratorInstanceIdABC', OutputValue: 'i-0' },
            { OutputKey: 'LoadGeneratorInstanceIdsDEF', OutputValue: 'i-0,i-1,i-2' },
          ],
        },
      ],
    });
    ssmMock.on(DescribeInstanceInformationCommand).callsFake((input: { Filters: { Values: string[] }[] }) => {
      const id = input.Filters[0]!.Values[0]!;
      return { InstanceInformationList: [{ InstanceId: id, PingStatus: id === 'i-2' ? 'ConnectionLost' : 'Online' }] };
    });
    await expect(checkStack(cfn, launch, NOW, ssm)).resolves.toEqual({
      ready: false,
      status: 'CREATE_COMPLETE, load generator i-2 PingStatus ConnectionLost',
    });
    expect(loadGeneratorInstanceIds({ LoadGeneratorInstanceIdABC: 'i-0' })).toEqual(['i-0']);
    expect(loadGeneratorInstanceId({ LoadGeneratorInstanceIdsDEF: 'i-0,i-1', LoadGeneratorInstanceIdABC: 'i-0' })).toBe(
      'i-0',
    );
  });

  test("the plan cluster of a scheduled cluster comes from the execution's plan (topology details and version)", () => {
    const plan = {
      name: 'p',
      clusters: [
        { name: 'quorum-5', nodes: 5, topology: { type: 'quorum' }, instanceType: 'c5.xlarge' },
        {
          name: 'mirrored-3',
          nodes: 3,
          rabbitmqVersion: '3.13',
          topology: { type: 'mirrored', mirrorTo: 2 },
          instanceType: 'm5.xlarge',
        },
      ],
      workloads: [{ name: 'w', durationSeconds: 10 }],
    };
    const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-1' }, 'exec');
    expect(schedule.clusters.map((scheduled) => planClusterOf(schedule.plan, scheduled))).toEqual([
      { nodes: 5, topology: { type: 'quorum' }, instanceType: 'c5.xlarge' },
      { nodes: 3, topology: { type: 'mirrored', mirrorTo: 2 }, rabbitmqVersion: '3.13', instanceType: 'm5.xlarge' },
    ]);
    expect(() => planClusterOf(schedule.plan, { ...schedule.clusters[0]!, index: 1 })).toThrow(
      "cluster rmqbench-run-1-c1 (index 1, 5 nodes, quorum) is not a cluster of the execution's plan",
    );
  });

  test('a network with a different number of subnets and zones is refused before anything is created', async () => {
    const broken = { ...config, network: { ...network, availabilityZones: ['eu-west-1a'] } };
    await expect(launchStack(cfn, broken, 'run-1', cluster(3), quorum(3), NOW)).rejects.toThrow(
      'the cluster network needs one Availability Zone per private ' +
        'subnet, got subnets subnet-a,subnet-b and zones eu-west-1a',
    );
    expect(cfnMock.commandCalls(CreateStackCommand)).toHaveLength(0);
  });

  test(
    'readiness: in progress is not ready, CREATE_COMPLETE returns ' +
      'the outputs, a rollback or a passed deadline is an error',
    async () => {
      const launch = { clusterId: 'rmqbench-run-1-c1', readyBy: '2025-01-01T00:30:00.000Z' };
      cfnMock
        .on(DescribeStacksCommand)
        .resolvesOnce({ Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'CREATE_IN_PROGRESS' }] })
        .resolvesOnce({
          Stacks: [
            {
              StackName: 's',
              CreationTime: NOW,
              StackStatus: 'CREATE_COMPLETE',
              Outputs: [{ OutputKey: 'ClusterAmqpEndpoint', OutputValue: 'nlb:5672' }],
            },
          ],
        })
        .resolvesOnce({
          Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'ROLLBACK_COMPLETE', StackStatusReason: 'quota' }],
        })
        .resolvesOnce({ Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'CREATE_IN_PROGRESS' }] });
      await expect(checkStack(cfn, launch, NOW)).resolves.toEqual({ ready: false, status: 'CREATE_IN_PROGRESS' });
      await expect(checkStack(cfn, launch, NOW)).resolves.toEqual({
        ready: true,
        status: 'CREATE_COMPLETE',
        outputs: { ClusterAmqpEndpoint: 'nlb:5672' },
      });
      await expect(checkStack(cfn, launch, NOW)).rejects.toThrow('stack rmqbench-run-1-c1 is ROLLBACK_COMPLETE: quota');
      await expect(checkStack(cfn, launch, new Date('2025-01-01T00:31:00Z'))).rejects.toThrow(
        'stack rmqbench-run-1-c1 was not ready by 2025-01-01T00:30:00.000Z (still CREATE_IN_PROGRESS)',
      );
    },
  );

  test(
    "a run's stacks are found by tag: ListStacks pages, " +
      'only rmqbench- stacks are described by name, stacks being deleted skipped',
    async () => {
      const summary = (name: string, status = 'CREATE_COMPLETE') => ({
        StackName: name,
        StackId: `arn:${name}`,
        CreationTime: NOW,
        StackStatus: status as never,
      });
      const tagged = (name: string, runId: string, status = 'CREATE_COMPLETE') => ({
        StackName: name,
        CreationTime: NOW,
        StackStatus: status as never,
        Tags: [{ Key: 'rmqbench:run-id', Value: runId }],
      });
      cfnMock.on(ListStacksCommand, { NextToken: undefined }).resolves({
        StackSummaries: [summary('rmqbench-a'), summary('other-x'), summary('rmqbench-b')],
        NextToken: 'p2',
      });
      cfnMock
        .on(ListStacksCommand, { NextToken: 'p2' })
        .resolves({ StackSummaries: [summary('rmqbench-c'), summary('rmqbench-d', 'DELETE_IN_PROGRESS')] });
      cfnMock
        .on(DescribeStacksCommand, { StackName: 'arn:rmqbench-a' })
        .resolves({ Stacks: [tagged('rmqbench-a', 'run-1')] });
      cfnMock
        .on(DescribeStacksCommand, { StackName: 'arn:rmqbench-b' })
        .resolves({ Stacks: [tagged('rmqbench-b', 'run-2')] });
      cfnMock
        .on(DescribeStacksCommand, { StackName: 'arn:rmqbench-c' })
        .resolves({ Stacks: [tagged('rmqbench-c', 'run-1', 'CREATE_FAILED')] });
      cfnMock
        .on(DescribeStacksCommand, { StackName: 'arn:rmqbench-d' })
        .resolves({ Stacks: [tagged('rmqbench-d', 'run-1', 'DELETE_IN_PROGRESS')] });
      await expect(stacksOfRun(cfn, 'run-1')).resolves.toEqual(['rmqbench-a', 'rmqbench-c']);
      // Every call of DescribeStacks names a stack: none pages through the account's stacks.
      expect(cfnMock.commandCalls(DescribeStacksCommand).map((call) => call.args[0].input.StackName)).toEqual([
        'arn:rmqbench-a',
        'arn:rmqbench-b',
        'arn:rmqbench-c',
        'arn:rmqbench-d',
      ]);
      expect(cfnMock.commandCalls(ListStacksCommand)[0]!.args[0].input.StackStatusFilter).not.toContain(
        'DELETE_COMPLETE',
      );
    },
  );

  test('the sweeper deletes only prefixed stacks whose expiry has passed, with the CloudFormation role', async () => {
    const stack = (name: string, expiresAt: string | undefined, status = 'CREATE_COMPLETE') => ({
      StackName: name,
      CreationTime: NOW,
      StackStatus: status as never,
      Tags: expiresAt ? [{ Key: 'rmqbench:expires-at', Value: expiresAt }] : [],
    });
    const stacks = [
      stack('rmqbench-old', '2024-12-31T23:00:00Z'),
      stack('rmqbench-young', '2025-01-01T01:00:00Z'),
      stack('other-old', '2024-12-31T23:00:00Z'),
      stack('rmqbench-untagged', undefined),
      stack('rmqbench-going', '2024-12-31T23:00:00Z', 'DELETE_IN_PROGRESS'),
    ];
    cfnMock.on(ListStacksCommand).resolves({
      StackSummaries: stacks.map(({ StackName, StackStatus }) => ({ StackName, StackStatus, CreationTime: NOW })),
    });
    for (const described of stacks)
      cfnMock.on(DescribeStacksCommand, { StackName: described.StackName }).resolves({ Stacks: [described] });
    cfnMock.on(DeleteStackCommand).resolves({});
    const lines: string[] = [];
    await expect(
      sweepExpiredStacks(cfn, 'arn:aws:iam::1:role/cfn', 'rmqbench-', NOW, undefined, (line) => lines.push(line)),
    ).resolves.toEqual({ deleted: ['rmqbench-old'], deleteFailedRetried: [] });
    expect(cfnMock.commandCalls(DeleteStackCommand).map((call) => call.args[0].input)).toEqual([
      { StackName: 'rmqbench-old', RoleARN: 'arn:aws:iam::1:role/cfn' },
    ]);
    expect(cfnMock.commandCalls(DescribeStacksCommand).map((call) => call.args[0].input.StackName)).not.toContain(
      'other-old',
    );
    expect(JSON.parse(lines[0]!)).toMatchObject({ DeleteFailedStacks: 0 });
  });

  test(
    'the sweeper reads the run of an expired stack and ' + 'leaves it while the run is RUNNING (issue 22, item 4)',
    async () => {
      const tagged = (name: string, runId: string) => ({
        StackName: name,
        CreationTime: NOW,
        StackStatus: 'CREATE_COMPLETE' as never,
        Tags: [
          { Key: 'rmqbench:expires-at', Value: '2024-12-31T23:00:00Z' },
          { Key: 'rmqbench:run-id', Value: runId },
        ],
      });
      const stacks = [
        tagged('rmqbench-running-c1', 'running'),
        tagged('rmqbench-done-c1', 'done'),
        tagged('rmqbench-unknown-c1', 'unknown'),
      ];
      cfnMock.on(ListStacksCommand).resolves({
        StackSummaries: stacks.map(({ StackName, StackStatus }) => ({ StackName, StackStatus, CreationTime: NOW })),
      });
      for (const described of stacks)
        cfnMock.on(DescribeStacksCommand, { StackName: described.StackName }).resolves({ Stacks: [described] });
      cfnMock.on(DeleteStackCommand).resolves({});
      const states: Record<string, 'RUNNING' | 'SUCCEEDED'> = { running: 'RUNNING', done: 'SUCCEEDED' };
      const read: string[] = [];
      const runStateOf = async (runId: string) => {
        read.push(runId);
        return states[runId] ?? ('not-recorded' as const);
      };
      const result = await sweepExpiredStacks(
        cfn,
        'arn:aws:iam::1:role/cfn',
        'rmqbench-',
        NOW,
        undefined,
        () => undefined,
        runStateOf,
      );
      expect(result.deleted.sort()).toEqual(['rmqbench-done-c1', 'rmqbench-unknown-c1']);
      expect(read.sort()).toEqual(['done', 'running', 'unknown']);
    },
  );

  test(
    'PerfTest over SSM is running while Pending / InProgress / ' +
      'Delayed and done with its exit code and stderr otherwise',
    async () => {
      ssmMock.on(GetCommandInvocationCommand).resolvesOnce({ Status: 'InProgress' }).resolvesOnce({
        Status: 'Failed',
        ResponseCode: 2,
        StandardErrorContent: 'PerfTest exited with status 2:\nConnection refused',
      });
      await expect(perfTestState(ssm, { commandId: 'c', instanceId: 'i' })).resolves.toEqual({
        done: false,
        status: 'InProgress',
      });
      await expect(perfTestState(ssm, { commandId: 'c', instanceId: 'i' })).resolves.toEqual({
        done: true,
        status: 'Failed',
        exitCode: 2,
        stderr: 'PerfTest exited with status 2:\nConnection refused',
      });
    },
  );
});
