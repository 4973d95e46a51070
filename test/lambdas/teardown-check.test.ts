import {
  CloudFormationClient,
  DeleteStackCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { CloudWatchLogsClient, DeleteLogGroupCommand } from '@aws-sdk/client-cloudwatch-logs';
import {
  checkStackTeardown,
  deleteBootLogGroup,
  startStackTeardown,
  TEARDOWN_DEADLINE_MINUTES,
} from '../../lambdas/teardown-cluster/logic';
import { firstClusterFailure } from '../../state-machines/run-outcome';
import { STATE } from '../../state-machines/states';
import { executeWorkflow } from '../state-machines/workflow-harness';

/**
 * Issue 22, item 7: teardown waits for the stack to be gone, deletes a DELETE_FAILED stack again, and names it past the
 * deadline.
 */
const cfnMock = mockClient(CloudFormationClient);
const cfn = new CloudFormationClient({ region: 'us-east-1' });
const NOW = new Date('2026-11-25T10:00:00Z');
const ROLE = 'arn:aws:iam::1:role/cfn';
beforeEach(() => cfnMock.reset());

describe('TeardownCluster and CheckTeardown on aws', () => {
  test(
    'TeardownCluster sends DeleteStack with the role and ' +
      'returns the deadline; a failed cluster keeps its boot logs',
    async () => {
      cfnMock.on(DeleteStackCommand).resolves({});
      await expect(startStackTeardown(cfn, ROLE, 'rmqbench-r-c1', true, NOW)).resolves.toEqual({
        done: false,
        deleteBy: new Date(NOW.getTime() + TEARDOWN_DEADLINE_MINUTES.aws * 60_000).toISOString(),
      });
      expect(cfnMock.commandCalls(DeleteStackCommand)[0]!.args[0].input).toEqual({
        StackName: 'rmqbench-r-c1',
        RoleARN: ROLE,
      });
      expect(cfnMock.commandCalls(DescribeStacksCommand)).toHaveLength(0);
    },
  );

  test(
    'a cluster that ran has its boot log group (the stack output) ' +
      'deleted once the stack is gone; a missing group is fine',
    async () => {
      cfnMock.on(DeleteStackCommand).resolves({});
      cfnMock.on(DescribeStacksCommand).resolves({
        Stacks: [
          {
            StackName: 'rmqbench-r-c1',
            StackStatus: 'CREATE_COMPLETE',
            CreationTime: NOW,
            Outputs: [{ OutputKey: 'ClusterBootLogGroupName1A2B', OutputValue: 'rmqbench-r-c1-ClusterBootLogs-XYZ' }],
          },
        ],
      });
      const started = await startStackTeardown(cfn, ROLE, 'rmqbench-r-c1', false, NOW);
      expect(started.bootLogGroup).toBe('rmqbench-r-c1-ClusterBootLogs-XYZ');
      const logsMock = mockClient(CloudWatchLogsClient);
      logsMock
        .on(DeleteLogGroupCommand)
        .rejectsOnce(Object.assign(new Error('gone'), { name: 'ResourceNotFoundException' }))
        .resolves({});
      const logs = new CloudWatchLogsClient({ region: 'us-east-1' });
      await deleteBootLogGroup(logs, started.bootLogGroup!);
      await deleteBootLogGroup(logs, started.bootLogGroup!);
      expect(logsMock.commandCalls(DeleteLogGroupCommand).map((call) => call.args[0].input)).toEqual([
        { logGroupName: 'rmqbench-r-c1-ClusterBootLogs-XYZ' },
        { logGroupName: 'rmqbench-r-c1-ClusterBootLogs-XYZ' },
      ]);
      logsMock.restore();
    },
  );

  test('the workflow keeps the boot logs of a failed cluster and drops those of one that ran', async () => {
    const plan = {
      name: 'logs',
      clusters: [{ name: 'one', nodes: 1, topology: { type: 'classic' }, instanceType: 'c5.xlarge' }],
      workloads: [{ name: 'w', durationSeconds: 10 }],
    };
    const seen: boolean[] = [];
    const teardown = (event: { keepBootLogs: boolean }) => {
      seen.push(event.keepBootLogs);
      return { done: true };
    };
    await executeWorkflow({ plan, target: 'aws', runId: 'ran' }, { [STATE.teardownCluster]: teardown });
    await executeWorkflow(
      { plan, target: 'aws', runId: 'broke' },
      {
        [STATE.teardownCluster]: teardown,
        [STATE.smokeTest]: () => {
          throw Object.assign(new Error('no route'), { name: 'SmokeTestFailed' });
        },
      },
    );
    expect(seen).toEqual([false, true]);
  });

  test(
    'done once DescribeStacks says the stack does not exist, ' + 'or DELETE_COMPLETE; waiting while DELETE_IN_PROGRESS',
    async () => {
      cfnMock
        .on(DescribeStacksCommand)
        .rejectsOnce(
          Object.assign(new Error('Stack with id rmqbench-r-c1 does not exist'), { name: 'ValidationError' }),
        );
      await expect(checkStackTeardown(cfn, ROLE, 'rmqbench-r-c1', '2026-11-25T10:30:00Z', NOW)).resolves.toEqual({
        done: true,
      });
      cfnMock
        .on(DescribeStacksCommand)
        .resolves({ Stacks: [{ StackName: 'rmqbench-r-c1', StackStatus: 'DELETE_IN_PROGRESS', CreationTime: NOW }] });
      await expect(checkStackTeardown(cfn, ROLE, 'rmqbench-r-c1', '2026-11-25T10:30:00Z', NOW)).resolves.toEqual({
        done: false,
      });
      expect(cfnMock.commandCalls(DeleteStackCommand)).toHaveLength(0);
      cfnMock
        .on(DescribeStacksCommand)
        .resolves({ Stacks: [{ StackName: 'rmqbench-r-c1', StackStatus: 'DELETE_COMPLETE', CreationTime: NOW }] });
      await expect(checkStackTeardown(cfn, ROLE, 'rmqbench-r-c1', '2026-11-25T10:30:00Z', NOW)).resolves.toEqual({
        done: true,
      });
    },
  );

  test(
    'DELETE_FAILED before the deadline is deleted again; past it, ' +
      'the error names the stack and the resource that stayed',
    async () => {
      cfnMock.on(DescribeStacksCommand).resolves({
        Stacks: [
          {
            StackName: 'rmqbench-r-c1',
            StackStatus: 'DELETE_FAILED',
            StackStatusReason: 'The following resource(s) failed to delete: [NodeSecurityGroup].',
            CreationTime: NOW,
          },
        ],
      });
      cfnMock.on(DeleteStackCommand).resolves({});
      cfnMock.on(DescribeStackEventsCommand).resolves({
        StackEvents: [
          {
            StackId: 's',
            EventId: '2',
            StackName: 'rmqbench-r-c1',
            LogicalResourceId: 'rmqbench-r-c1',
            ResourceStatus: 'DELETE_FAILED',
            Timestamp: NOW,
          },
          {
            StackId: 's',
            EventId: '1',
            StackName: 'rmqbench-r-c1',
            LogicalResourceId: 'NodeSecurityGroup',
            ResourceType: 'AWS::EC2::SecurityGroup',
            ResourceStatus: 'DELETE_FAILED',
            ResourceStatusReason: 'resource sg-1 has a dependent object',
            Timestamp: NOW,
          },
        ],
      });
      await expect(checkStackTeardown(cfn, ROLE, 'rmqbench-r-c1', '2026-11-25T10:30:00Z', NOW)).resolves.toEqual({
        done: false,
      });
      expect(cfnMock.commandCalls(DeleteStackCommand).map((call) => call.args[0].input)).toEqual([
        { StackName: 'rmqbench-r-c1', RoleARN: ROLE },
      ]);
      const late = checkStackTeardown(cfn, ROLE, 'rmqbench-r-c1', '2026-11-25T09:59:00Z', NOW);
      await expect(late).rejects.toMatchObject({
        name: 'TeardownIncomplete',
        message: expect.stringContaining(
          'stack rmqbench-r-c1 was not deleted by 2026-11-25T09:59:00Z: DELETE_FAILED at ' +
            'NodeSecurityGroup (AWS::EC2::SecurityGroup): resource sg-1 has a dependent object',
        ),
      });
    },
  );

  test(
    'the workflow polls CheckTeardown until the stack is gone, ' +
      'and a deletion that fails names the stack in the run outcome',
    async () => {
      const plan = {
        name: 'teardown',
        clusters: [{ name: 'one', nodes: 1, topology: { type: 'classic' }, instanceType: 'c5.xlarge' }],
        workloads: [{ name: 'w', durationSeconds: 10 }],
      };
      let checks = 0;
      const gone = await executeWorkflow(
        { plan, target: 'aws', runId: 'gone' },
        {
          [STATE.teardownCluster]: () => ({ done: false, deleteBy: '2030-01-01T00:00:00Z' }),
          [STATE.checkTeardown]: () => ({ done: ++checks >= 3 }),
        },
      );
      expect(gone.attempts[STATE.checkTeardown]).toBe(3);
      expect(gone.finished?.clusterResults).toEqual([expect.objectContaining({ failed: false })]);
      const stuck = await executeWorkflow(
        { plan, target: 'aws', runId: 'stuck' },
        {
          [STATE.teardownCluster]: () => ({ done: false, deleteBy: '2030-01-01T00:00:00Z' }),
          [STATE.checkTeardown]: () => {
            throw Object.assign(
              new Error(
                'stack rmqbench-stuck-c1 was not deleted by 2030-01-01T00:00:00Z: DELETE_FAILED at NodeSecurityGroup',
              ),
              { name: 'TeardownIncomplete' },
            );
          },
        },
      );
      // Not retried: the deadline has passed.
      expect(stuck.attempts[STATE.checkTeardown]).toBe(1);
      const results = stuck.finished!.clusterResults as Parameters<typeof firstClusterFailure>[0];
      expect(firstClusterFailure(results)).toMatch(
        new RegExp(
          String.raw`^teardown of rmqbench-stuck-c1 failed: stack rmqbench-stuck-c1 was not deleted by .*: ` +
            String.raw`DELETE_FAILED at NodeSecurityGroup`,
        ),
      );
    },
  );
});
