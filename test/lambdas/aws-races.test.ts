import {
  CloudFormationClient,
  DeleteStackCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  ListStacksCommand,
  type StackEvent,
} from '@aws-sdk/client-cloudformation';
import {
  DescribeInstanceInformationCommand,
  GetCommandInvocationCommand,
  InvalidInstanceId,
  InvocationDoesNotExist,
  SendCommandCommand,
  SSMClient,
} from '@aws-sdk/client-ssm';
import { CloudWatchLogsClient, GetLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { mockClient } from 'aws-sdk-client-mock';
import { checkStack, perfTestState, startPerfTest } from '../../lambdas/shared/aws-cluster';
import { checkRepetition } from '../../lambdas/check-repetition/logic';
import { DELETE_FAILED_METRIC, sweepExpiredStacks } from '../../lambdas/sweeper/logic';
import { firstClusterFailure, runStatus } from '../../state-machines/run-outcome';

// The races of issue 14, scripted against the real SDK clients with their transport replaced (aws-sdk-client-mock):
// CloudFormation and SSM have no local engine.
const cfnMock = mockClient(CloudFormationClient);
const ssmMock = mockClient(SSMClient);
// Boot log tails are read with CloudWatch Logs GetLogEvents (no local engine either).
const logsMock = mockClient(CloudWatchLogsClient);
const cfn = new CloudFormationClient({ region: 'eu-west-1' });
const ssm = new SSMClient({ region: 'eu-west-1' });
afterEach(() => {
  cfnMock.reset();
  ssmMock.reset();
  logsMock.reset();
});

const NOW = new Date('2025-01-01T00:10:00Z');
const launch = { clusterId: 'rmqbench-run-1-c1', readyBy: '2025-01-01T00:30:00.000Z' };
const AFTER_DEADLINE = new Date('2025-01-01T00:31:00Z');
const invalidInstance = () =>
  new InvalidInstanceId({ message: 'Instances [[i-0lg]] not in a valid state for account 1', $metadata: {} });
const completeStack = {
  Stacks: [
    {
      StackName: launch.clusterId,
      CreationTime: NOW,
      StackStatus: 'CREATE_COMPLETE' as const,
      Outputs: [
        { OutputKey: 'LoadGeneratorInstanceIdABC', OutputValue: 'i-0lg' },
        { OutputKey: 'ClusterAmqpEndpoint', OutputValue: 'nlb:5672' },
      ],
    },
  ],
};

describe('the load generator must be an online SSM managed instance before the first repetition', () => {
  test(
    'CREATE_COMPLETE is not ready while the load generator is ' +
      'unregistered or ConnectionLost, and ready once Online',
    async () => {
      cfnMock.on(DescribeStacksCommand).resolves(completeStack);
      ssmMock
        .on(DescribeInstanceInformationCommand)
        .resolvesOnce({ InstanceInformationList: [] })
        .resolvesOnce({ InstanceInformationList: [{ InstanceId: 'i-0lg', PingStatus: 'ConnectionLost' }] })
        .resolvesOnce({ InstanceInformationList: [{ InstanceId: 'i-0lg', PingStatus: 'Online' }] });
      await expect(checkStack(cfn, launch, NOW, ssm)).resolves.toEqual({
        ready: false,
        status: 'CREATE_COMPLETE, load generator i-0lg not registered with Systems Manager',
      });
      await expect(checkStack(cfn, launch, NOW, ssm)).resolves.toEqual({
        ready: false,
        status: 'CREATE_COMPLETE, load generator i-0lg PingStatus ConnectionLost',
      });
      await expect(checkStack(cfn, launch, NOW, ssm)).resolves.toEqual({
        ready: true,
        status: 'CREATE_COMPLETE',
        outputs: { LoadGeneratorInstanceIdABC: 'i-0lg', ClusterAmqpEndpoint: 'nlb:5672' },
      });
      expect(ssmMock.commandCalls(DescribeInstanceInformationCommand)[0]!.args[0].input).toEqual({
        Filters: [{ Key: 'InstanceIds', Values: ['i-0lg'] }],
      });
    },
  );

  test('the launch deadline passed while the load generator is still offline fails with that cause', async () => {
    cfnMock.on(DescribeStacksCommand).resolves(completeStack);
    ssmMock.on(DescribeInstanceInformationCommand).resolves({ InstanceInformationList: [] });
    await expect(checkStack(cfn, launch, AFTER_DEADLINE, ssm)).rejects.toThrow(
      'stack rmqbench-run-1-c1 is CREATE_COMPLETE, but its load generator i-0lg was not an online ' +
        'SSM managed instance by 2025-01-01T00:30:00.000Z (not registered with Systems Manager)',
    );
  });

  test('StartRepetition retries InvalidInstanceId with back-off: twice refused, then the command is sent', async () => {
    ssmMock
      .on(SendCommandCommand)
      .rejectsOnce(invalidInstance())
      .rejectsOnce(invalidInstance())
      .resolves({ Command: { CommandId: 'cmd-1' } });
    const slept: number[] = [];
    const started = await startPerfTest(ssm, 'i-0lg', 'echo run', 180, {
      until: new Date(NOW.getTime() + 60_000),
      now: () => NOW,
      sleep: async (ms) => void slept.push(ms),
    });
    expect(started).toEqual({ commandId: 'cmd-1', instanceId: 'i-0lg' });
    expect(slept).toEqual([2_000, 4_000]);
    expect(ssmMock.commandCalls(SendCommandCommand)).toHaveLength(3);
  });

  test('StartRepetition gives up at its deadline with the cause, and does not retry other errors', async () => {
    ssmMock.on(SendCommandCommand).rejects(invalidInstance());
    let clock = NOW.getTime();
    const retry = {
      until: new Date(NOW.getTime() + 20_000),
      now: () => new Date(clock),
      sleep: async (ms: number) => void (clock += ms),
    };
    await expect(startPerfTest(ssm, 'i-0lg', 'echo run', 180, retry)).rejects.toThrow(
      new RegExp(
        String.raw`SendCommand to the load generator i-0lg still failed with InvalidInstanceId after 4 ` +
          String.raw`attempts \(until 2025-01-01T00:10:20.000Z\): its SSM agent is not registered and online`,
      ),
    );
    expect(clock - NOW.getTime()).toBe(2_000 + 4_000 + 8_000);
    ssmMock.reset();
    ssmMock.on(SendCommandCommand).rejects(new Error('AccessDenied'));
    await expect(startPerfTest(ssm, 'i-0lg', 'echo run', 180, retry)).rejects.toThrow('AccessDenied');
    expect(ssmMock.commandCalls(SendCommandCommand)).toHaveLength(1);
  });
});

describe('GetCommandInvocation right after SendCommand', () => {
  const started = { commandId: 'cmd-1', instanceId: 'i-0lg', startedAt: NOW.toISOString() };
  const notYet = () => new InvocationDoesNotExist({ message: 'invocation does not exist', $metadata: {} });

  test('InvocationDoesNotExist, then InProgress, then Success: not started yet, running, done', async () => {
    ssmMock
      .on(GetCommandInvocationCommand)
      .rejectsOnce(notYet())
      .resolvesOnce({ Status: 'InProgress' })
      .resolvesOnce({ Status: 'Success', ResponseCode: 0 });
    await expect(perfTestState(ssm, started, new Date(NOW.getTime() + 5_000))).resolves.toEqual({
      done: false,
      status: 'NotYetVisible',
    });
    await expect(perfTestState(ssm, started, new Date(NOW.getTime() + 20_000))).resolves.toEqual({
      done: false,
      status: 'InProgress',
    });
    await expect(perfTestState(ssm, started, new Date(NOW.getTime() + 80_000))).resolves.toEqual({
      done: true,
      status: 'Success',
      exitCode: 0,
      stderr: '',
    });
  });

  test('CheckRepetition keeps polling on InvocationDoesNotExist right after the start', async () => {
    ssmMock.on(GetCommandInvocationCommand).rejects(notYet());
    const event = {
      runId: 'run-1',
      plan: {},
      item: { scenarioId: 's', repetition: 1 } as never,
      started: { ...started, doneBy: '2025-01-01T01:00:00Z', perfTestArgs: [] },
    };
    await expect(checkRepetition(ssm, {} as never, 'raw', event, new Date(NOW.getTime() + 10_000))).resolves.toEqual({
      done: false,
    });
  });

  test('several load generators: each command not visible yet keeps polling within the grace', async () => {
    ssmMock.on(GetCommandInvocationCommand).rejects(notYet());
    const generator = (index: number) => ({ commandId: `cmd-${index}`, instanceId: `i-0lg${index}`, perfTestArgs: [] });
    const event = {
      runId: 'run-1',
      plan: {},
      item: { scenarioId: 's', repetition: 1 } as never,
      started: {
        ...started,
        doneBy: '2025-01-01T01:00:00Z',
        perfTestArgs: [],
        generators: [generator(0), generator(1)],
      },
    };
    await expect(checkRepetition(ssm, {} as never, 'raw', event, new Date(NOW.getTime() + 10_000))).resolves.toEqual({
      done: false,
    });
    await expect(checkRepetition(ssm, {} as never, 'raw', event, new Date(NOW.getTime() + 121_000))).rejects.toThrow(
      /the SSM command cmd-0 has no invocation on the load generator i-0lg0 121 s after SendCommand/,
    );
  });

  test('past the bound, InvocationDoesNotExist fails with the cause', async () => {
    ssmMock.on(GetCommandInvocationCommand).rejects(notYet());
    await expect(perfTestState(ssm, started, new Date(NOW.getTime() + 121_000))).rejects.toThrow(
      'the SSM command cmd-1 has no invocation on the load generator i-0lg ' +
        '121 s after SendCommand (InvocationDoesNotExist): the command was not delivered',
    );
  });
});

describe('a cluster stack that fails to create keeps its reason', () => {
  // DescribeStackEvents answers newest first.
  const events: StackEvent[] = [
    {
      StackId: 's',
      EventId: '6',
      StackName: launch.clusterId,
      LogicalResourceId: launch.clusterId,
      ResourceType: 'AWS::CloudFormation::Stack',
      ResourceStatus: 'CREATE_FAILED',
      ResourceStatusReason: 'The following resource(s) failed to create: [NodeGroupASG, LoadGeneratorInstance].',
      Timestamp: NOW,
    },
    {
      StackId: 's',
      EventId: '5',
      StackName: launch.clusterId,
      LogicalResourceId: 'LoadGeneratorInstance',
      ResourceType: 'AWS::EC2::Instance',
      ResourceStatus: 'CREATE_FAILED',
      ResourceStatusReason: 'Resource creation cancelled',
      Timestamp: NOW,
    },
    {
      StackId: 's',
      EventId: '4',
      StackName: launch.clusterId,
      LogicalResourceId: 'NodeGroupASG',
      ResourceType: 'AWS::AutoScaling::AutoScalingGroup',
      ResourceStatus: 'CREATE_FAILED',
      ResourceStatusReason:
        'Received 1 FAILURE signal(s) out of 3. Unable to satisfy 100% MinSuccessfulInstancesPercent requirement',
      Timestamp: NOW,
    },
    {
      StackId: 's',
      EventId: '3',
      StackName: launch.clusterId,
      LogicalResourceId: 'NodeGroupASG',
      ResourceType: 'AWS::AutoScaling::AutoScalingGroup',
      ResourceStatus: 'CREATE_IN_PROGRESS',
      ResourceStatusReason: 'Received FAILURE signal with UniqueId i-0bad',
      Timestamp: NOW,
    },
    {
      StackId: 's',
      EventId: '2',
      StackName: launch.clusterId,
      LogicalResourceId: 'NodeGroupASG',
      ResourceType: 'AWS::AutoScaling::AutoScalingGroup',
      ResourceStatus: 'CREATE_IN_PROGRESS',
      ResourceStatusReason: 'Received SUCCESS signal with UniqueId i-0good',
      Timestamp: NOW,
    },
    {
      StackId: 's',
      EventId: '1',
      StackName: launch.clusterId,
      LogicalResourceId: 'BootLogs',
      PhysicalResourceId: 'rmqbench-run-1-c1-BootLogs-AbC123',
      ResourceType: 'AWS::Logs::LogGroup',
      ResourceStatus: 'CREATE_COMPLETE',
      Timestamp: NOW,
    },
  ];

  test(
    "CREATE_FAILED: the first failed resource's reason, " +
      "the failing node and its boot log stream end up in the run's error",
    async () => {
      cfnMock.on(DescribeStacksCommand).resolves({
        Stacks: [
          {
            StackName: launch.clusterId,
            CreationTime: NOW,
            StackStatus: 'CREATE_FAILED',
            StackStatusReason: 'The following resource(s) failed to create: [NodeGroupASG, LoadGeneratorInstance].',
          },
        ],
      });
      cfnMock
        .on(DescribeStackEventsCommand, { StackName: launch.clusterId, NextToken: undefined })
        .resolves({ StackEvents: events.slice(0, 3), NextToken: 'older' });
      cfnMock
        .on(DescribeStackEventsCommand, { StackName: launch.clusterId, NextToken: 'older' })
        .resolves({ StackEvents: events.slice(3) });
      logsMock
        .on(GetLogEventsCommand, {
          logGroupName: 'rmqbench-run-1-c1-BootLogs-AbC123',
          logStreamName: 'i-0bad/boot',
          limit: 15,
          startFromHead: false,
        })
        .resolves({
          events: [
            { message: 'Installing: erlang-26.2.5.6-1.el9' },
            { message: 'Error: GPG check FAILED' },
            { message: 'rmqbench boot script ended with exit code 1: signalling FAILURE' },
          ],
        });
      const error = await checkStack(cfn, launch, NOW, ssm).then(
        () => undefined,
        (caught: Error) => caught,
      );
      const expected =
        'stack rmqbench-run-1-c1 is CREATE_FAILED: first failed resource NodeGroupASG ' +
        '(AWS::AutoScaling::AutoScalingGroup) CREATE_FAILED: Received 1 FAILURE signal(s) ' +
        'out of 3. Unable to satisfy 100% MinSuccessfulInstancesPercent requirement; ' +
        'boot FAILURE signalled by i-0bad; boot log tail in CloudWatch ' +
        'Logs group rmqbench-run-1-c1-BootLogs-AbC123, stream i-0bad/boot; ' +
        'last boot log lines of i-0bad/boot: Installing: erlang-26.2.5.6-1.el9 | Error: ' +
        'GPG check FAILED | rmqbench boot script ended with exit code 1: signalling FAILURE';
      expect(error?.message).toBe(expected);
      // The workflow's Catch puts Lambda's error JSON under $.error; FinishRun makes the first cluster failure the
      // run's error.
      const caught = { Error: 'Error', Cause: JSON.stringify({ errorType: 'Error', errorMessage: error!.message }) };
      const failure = firstClusterFailure([{ clusterId: launch.clusterId, failed: true, state: { error: caught } }]);
      expect(runStatus(failure, [], 3)).toEqual({ status: 'FAILED', error: expected });
      // Nothing was deleted to read it: TeardownCluster deletes the stack afterwards, as for every failure.
      expect(cfnMock.commandCalls(DeleteStackCommand)).toHaveLength(0);
    },
  );

  test(
    'a boot log that cannot be read is named in the error ' +
      "instead of the tail, which never hides the stack's reason",
    async () => {
      cfnMock
        .on(DescribeStacksCommand)
        .resolves({ Stacks: [{ StackName: launch.clusterId, CreationTime: NOW, StackStatus: 'CREATE_FAILED' }] });
      cfnMock.on(DescribeStackEventsCommand).resolves({ StackEvents: events });
      logsMock.on(GetLogEventsCommand).rejects(
        Object.assign(new Error('User is not authorized to perform: logs:GetLogEvents'), {
          name: 'AccessDeniedException',
        }),
      );
      await expect(checkStack(cfn, launch, NOW, ssm)).rejects.toThrow(
        new RegExp(
          String.raw`stream i-0bad\/boot; its boot log tail could not be read \(AccessDeniedException: User is ` +
            String.raw`not authorized to perform: logs:GetLogEvents\)$`,
        ),
      );
    },
  );

  test(
    'a stack still creating at the deadline: the error says which ' +
      'nodes signalled their boot so far and where the boot logs are',
    async () => {
      cfnMock
        .on(DescribeStacksCommand)
        .resolves({ Stacks: [{ StackName: launch.clusterId, CreationTime: NOW, StackStatus: 'CREATE_IN_PROGRESS' }] });
      cfnMock.on(DescribeStackEventsCommand).resolves({ StackEvents: events.slice(4) });
      await expect(checkStack(cfn, launch, AFTER_DEADLINE, ssm)).rejects.toThrow(
        'stack rmqbench-run-1-c1 was not ready by 2025-01-01T00:30:00.000Z (still ' +
          'CREATE_IN_PROGRESS); boot signals so far: i-0good SUCCESS; node boot ' +
          'logs in CloudWatch Logs group rmqbench-run-1-c1-BootLogs-AbC123',
      );
    },
  );

  test('when the events cannot be read, the stack status reason is kept with why', async () => {
    cfnMock.on(DescribeStacksCommand).resolves({
      Stacks: [
        {
          StackName: launch.clusterId,
          CreationTime: NOW,
          StackStatus: 'ROLLBACK_COMPLETE',
          StackStatusReason: 'quota',
        },
      ],
    });
    cfnMock.on(DescribeStackEventsCommand).rejects(new Error('Rate exceeded'));
    await expect(checkStack(cfn, launch, NOW)).rejects.toThrow(
      'stack rmqbench-run-1-c1 is ROLLBACK_COMPLETE: quota (its events could not be read: Rate exceeded)',
    );
  });
});

describe('the sweeper and DELETE_FAILED stacks', () => {
  test(
    'an expired stack left DELETE_FAILED is deleted again and ' +
      'reported in the result, the log and the DeleteFailedStacks metric',
    async () => {
      const expired = '2024-12-31T23:00:00Z';
      const described = [
        {
          StackName: 'rmqbench-stuck',
          CreationTime: NOW,
          StackStatus: 'DELETE_FAILED' as const,
          StackStatusReason: 'The following resource(s) failed to delete: [NodeSecurityGroup].',
          Tags: [{ Key: 'rmqbench:expires-at', Value: expired }],
        },
        {
          StackName: 'rmqbench-old',
          CreationTime: NOW,
          StackStatus: 'CREATE_COMPLETE' as const,
          Tags: [{ Key: 'rmqbench:expires-at', Value: expired }],
        },
      ];
      cfnMock.on(ListStacksCommand).resolves({
        StackSummaries: described.map(({ StackName, StackStatus }) => ({ StackName, StackStatus, CreationTime: NOW })),
      });
      for (const stack of described)
        cfnMock.on(DescribeStacksCommand, { StackName: stack.StackName }).resolves({ Stacks: [stack] });
      cfnMock.on(DeleteStackCommand).resolves({});
      const lines: string[] = [];
      const result = await sweepExpiredStacks(cfn, 'arn:aws:iam::1:role/cfn', 'rmqbench-', NOW, undefined, (line) =>
        lines.push(line),
      );
      expect(result).toEqual({
        deleted: ['rmqbench-stuck', 'rmqbench-old'],
        deleteFailedRetried: [
          { name: 'rmqbench-stuck', reason: 'The following resource(s) failed to delete: [NodeSecurityGroup].' },
        ],
      });
      expect(cfnMock.commandCalls(DeleteStackCommand).map((call) => call.args[0].input)).toEqual([
        { StackName: 'rmqbench-stuck', RoleARN: 'arn:aws:iam::1:role/cfn' },
        { StackName: 'rmqbench-old', RoleARN: 'arn:aws:iam::1:role/cfn' },
      ]);
      const report = JSON.parse(lines[0]!) as Record<string, unknown> & {
        _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
      };
      // Embedded metric format: the metric named in the directive is a top-level number, each dimension a top-level
      // string.
      const directive = report._aws.CloudWatchMetrics[0]!;
      expect(directive.Metrics.map((metric) => metric.Name)).toEqual([DELETE_FAILED_METRIC]);
      expect(report[DELETE_FAILED_METRIC]).toBe(1);
      expect(directive.Dimensions.flat().map((dimension) => typeof report[dimension])).toEqual(['string']);
      expect(report.message).toContain(
        'rmqbench-stuck (The following resource(s) failed to delete: [NodeSecurityGroup].)',
      );
    },
  );
});
