import { CloudFormationClient, CreateStackCommand, DeleteStackCommand, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetCommandInvocationCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { checkStack, launchStack, perfTestState, stacksOfRun } from '../../lambdas/shared/aws-cluster';
import { sweepExpiredStacks } from '../../lambdas/sweeper/logic';
import type { ScheduledCluster } from '../../state-machines/schedule';

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
const network = { vpcId: 'vpc-1', privateSubnetIds: ['subnet-a', 'subnet-b'], availabilityZones: ['eu-west-1a', 'eu-west-1b'], clientSecurityGroupId: 'sg-smoke' };
const config = { templateUrls: { 1: 'https://t/1.json', 3: 'https://t/3.json' }, cloudFormationRoleArn: 'arn:aws:iam::1:role/cfn', resultsBucketName: 'raw', expiryHours: 12, launchTimeoutMinutes: 30, network };
const cluster = (nodes: number): ScheduledCluster => ({ index: 0, clusterId: 'rmqbench-run-1-c1', nodes, topology: 'quorum', repetitions: [] });

describe('AWS cluster logic', () => {
  test('launch creates the stack from the node count template in the controller VPC, passes the role, tags run id and expiry and deletes on failure', async () => {
    cfnMock.on(CreateStackCommand).resolves({ StackId: 'id' });
    await expect(launchStack(cfn, config, 'run-1', cluster(3), NOW)).resolves.toEqual({ clusterId: 'rmqbench-run-1-c1', readyBy: '2025-01-01T00:30:00.000Z', expiresAt: '2025-01-01T12:00:00.000Z' });
    expect(cfnMock.commandCalls(CreateStackCommand)[0]!.args[0].input).toEqual({
      StackName: 'rmqbench-run-1-c1',
      TemplateURL: 'https://t/3.json',
      RoleARN: 'arn:aws:iam::1:role/cfn',
      Capabilities: ['CAPABILITY_IAM'],
      Parameters: [
        { ParameterKey: 'ResultsBucketName', ParameterValue: 'raw' },
        { ParameterKey: 'VpcId', ParameterValue: 'vpc-1' },
        { ParameterKey: 'PrivateSubnetIds', ParameterValue: 'subnet-a,subnet-b' },
        { ParameterKey: 'AvailabilityZones', ParameterValue: 'eu-west-1a,eu-west-1b' },
        { ParameterKey: 'SmokeTestSecurityGroupId', ParameterValue: 'sg-smoke' },
      ],
      Tags: [{ Key: 'rmqbench:run-id', Value: 'run-1' }, { Key: 'rmqbench:expires-at', Value: '2025-01-01T12:00:00.000Z' }],
      OnFailure: 'DELETE',
    });
  });

  test('a node count without a template is refused before anything is created, naming the counts there are', async () => {
    await expect(launchStack(cfn, config, 'run-1', cluster(5), NOW)).rejects.toThrow('the AWS target has cluster templates for 1, 3 nodes, not 5');
    expect(cfnMock.commandCalls(CreateStackCommand)).toHaveLength(0);
  });

  test('a network with a different number of subnets and zones is refused before anything is created', async () => {
    const broken = { ...config, network: { ...network, availabilityZones: ['eu-west-1a'] } };
    await expect(launchStack(cfn, broken, 'run-1', cluster(3), NOW)).rejects.toThrow('the cluster network needs one Availability Zone per private subnet, got subnets subnet-a,subnet-b and zones eu-west-1a');
    expect(cfnMock.commandCalls(CreateStackCommand)).toHaveLength(0);
  });

  test('readiness: in progress is not ready, CREATE_COMPLETE returns the outputs, a rollback or a passed deadline is an error', async () => {
    const launch = { clusterId: 'rmqbench-run-1-c1', readyBy: '2025-01-01T00:30:00.000Z' };
    cfnMock.on(DescribeStacksCommand).resolvesOnce({ Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'CREATE_IN_PROGRESS' }] })
      .resolvesOnce({ Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'CREATE_COMPLETE', Outputs: [{ OutputKey: 'ClusterAmqpEndpoint', OutputValue: 'nlb:5672' }] }] })
      .resolvesOnce({ Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'ROLLBACK_COMPLETE', StackStatusReason: 'quota' }] })
      .resolvesOnce({ Stacks: [{ StackName: 's', CreationTime: NOW, StackStatus: 'CREATE_IN_PROGRESS' }] });
    await expect(checkStack(cfn, launch, NOW)).resolves.toEqual({ ready: false, status: 'CREATE_IN_PROGRESS' });
    await expect(checkStack(cfn, launch, NOW)).resolves.toEqual({ ready: true, status: 'CREATE_COMPLETE', outputs: { ClusterAmqpEndpoint: 'nlb:5672' } });
    await expect(checkStack(cfn, launch, NOW)).rejects.toThrow('stack rmqbench-run-1-c1 is ROLLBACK_COMPLETE: quota');
    await expect(checkStack(cfn, launch, new Date('2025-01-01T00:31:00Z'))).rejects.toThrow('stack rmqbench-run-1-c1 was not ready by 2025-01-01T00:30:00.000Z (still CREATE_IN_PROGRESS)');
  });

  test('a run\'s stacks are found by tag across pages, skipping stacks already being deleted', async () => {
    const tagged = (name: string, runId: string, status = 'CREATE_COMPLETE') => ({ StackName: name, CreationTime: NOW, StackStatus: status as never, Tags: [{ Key: 'rmqbench:run-id', Value: runId }] });
    cfnMock.on(DescribeStacksCommand, { NextToken: undefined }).resolves({ Stacks: [tagged('a', 'run-1'), tagged('b', 'run-2')], NextToken: 'p2' });
    cfnMock.on(DescribeStacksCommand, { NextToken: 'p2' }).resolves({ Stacks: [tagged('c', 'run-1'), tagged('d', 'run-1', 'DELETE_IN_PROGRESS')] });
    await expect(stacksOfRun(cfn, 'run-1')).resolves.toEqual(['a', 'c']);
  });

  test('the sweeper deletes only prefixed stacks whose expiry has passed, with the CloudFormation role', async () => {
    const stack = (name: string, expiresAt: string | undefined, status = 'CREATE_COMPLETE') => ({
      StackName: name, CreationTime: NOW, StackStatus: status as never, Tags: expiresAt ? [{ Key: 'rmqbench:expires-at', Value: expiresAt }] : [],
    });
    cfnMock.on(DescribeStacksCommand).resolves({
      Stacks: [stack('rmqbench-old', '2024-12-31T23:00:00Z'), stack('rmqbench-young', '2025-01-01T01:00:00Z'), stack('other-old', '2024-12-31T23:00:00Z'), stack('rmqbench-untagged', undefined), stack('rmqbench-going', '2024-12-31T23:00:00Z', 'DELETE_IN_PROGRESS')],
    });
    cfnMock.on(DeleteStackCommand).resolves({});
    await expect(sweepExpiredStacks(cfn, 'arn:aws:iam::1:role/cfn', 'rmqbench-', NOW)).resolves.toEqual({ deleted: ['rmqbench-old'] });
    expect(cfnMock.commandCalls(DeleteStackCommand).map((call) => call.args[0].input)).toEqual([{ StackName: 'rmqbench-old', RoleARN: 'arn:aws:iam::1:role/cfn' }]);
  });

  test('PerfTest over SSM is running while Pending / InProgress / Delayed and done with its exit code otherwise', async () => {
    ssmMock.on(GetCommandInvocationCommand).resolvesOnce({ Status: 'InProgress' }).resolvesOnce({ Status: 'Failed', ResponseCode: 2 });
    await expect(perfTestState(ssm, { commandId: 'c', instanceId: 'i' })).resolves.toEqual({ done: false, status: 'InProgress' });
    await expect(perfTestState(ssm, { commandId: 'c', instanceId: 'i' })).resolves.toEqual({ done: true, status: 'Failed', exitCode: 2 });
  });
});
