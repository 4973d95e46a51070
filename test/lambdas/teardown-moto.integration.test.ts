import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { CloudWatchLogsClient, DescribeLogGroupsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { recordRun } from '../../lambdas/run-record/logic';
import type { TeardownStarted } from '../../lambdas/teardown-cluster/logic';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { motoClientConfig, stackStatusOrGone, startMoto, type Moto } from '../cloud/moto';
import { startCloudFormationProxy, type CloudFormationProxy } from './cloudformation-proxy';

/**
 * Issue 22, item 7, with the teardown function's handler and the real SDK clients against moto: TeardownCluster starts
 * the deletion and returns its deadline; CheckTeardown ({ action: 'check', ..., teardown }) deletes a stack left
 * DELETE_FAILED again (the proxy in front of moto makes deletions fail, which moto cannot: cloudformation-proxy.ts),
 * is done once the stack is gone, and past the deadline fails with TeardownIncomplete naming the stack and the resource
 * CloudFormation could not delete, which FinishRun stores in the run's record as the workflow passes it on.
 */
jest.setTimeout(120_000);
const ROLE = 'arn:aws:iam::123456789012:role/cfn';
const saved = { ...process.env };
let moto: Moto;
let proxy: CloudFormationProxy;
let cfn: CloudFormationClient;
let logs: CloudWatchLogsClient;
let store: ResultsStore;
type Handler = (event: object) => Promise<TeardownStarted | { done: boolean }>;
let handler: Handler;

// A cluster stack's shape for teardown: a boot log group the stack retains, named by an output as RabbitMqCluster does.
const TEMPLATE = JSON.stringify({
  Resources: {
    Topic: { Type: 'AWS::SNS::Topic' },
    ClusterBootLogs: {
      Type: 'AWS::Logs::LogGroup',
      DeletionPolicy: 'Retain',
      Properties: { LogGroupName: { 'Fn::Sub': '${AWS::StackName}-ClusterBootLogs' }, RetentionInDays: 30 },
    },
  },
  Outputs: { ClusterBootLogGroupName1A2B: { Value: { Ref: 'ClusterBootLogs' } } },
});
const cluster = (clusterId: string): ScheduledCluster => ({
  index: 0,
  clusterId,
  nodes: 1,
  topology: 'quorum',
  repetitions: [],
});
const launch = (name: string, runId: string) =>
  cfn.send(
    new CreateStackCommand({
      StackName: name,
      TemplateBody: TEMPLATE,
      Tags: [
        { Key: 'rmqbench:run-id', Value: runId },
        { Key: 'rmqbench:expires-at', Value: '2030-01-01T00:00:00Z' },
      ],
    }),
  );
const stackStatus = (name: string) => stackStatusOrGone(cfn, name);
const logGroups = async (prefix: string) =>
  ((await logs.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: prefix }))).logGroups ?? []).map(
    (group) => group.logGroupName,
  );
const deletesOf = (name: string) =>
  proxy.requests
    .filter((request) => request.Action === 'DeleteStack' && request.StackName === name)
    .map((request) => request.RoleARN);

beforeAll(async () => {
  moto = await startMoto();
  proxy = await startCloudFormationProxy(moto.endpoint);
  cfn = new CloudFormationClient({ ...motoClientConfig(moto), endpoint: proxy.endpoint });
  logs = new CloudWatchLogsClient(motoClientConfig(moto));
  store = new ResultsStore(new DynamoDBClient(motoClientConfig(moto)), 'rmqbench-teardown', 'moto DynamoDB');
  await store.ensureTable();
  // The handler builds its clients from the environment when it loads, as on Lambda.
  Object.assign(process.env, moto.env, { AWS_ENDPOINT_URL: proxy.endpoint, CLOUDFORMATION_ROLE_ARN: ROLE });
  handler = (await import('../../lambdas/teardown-cluster/index')).handler as unknown as Handler;
});
afterAll(async () => {
  process.env = saved;
  cfn?.destroy();
  logs?.destroy();
  await proxy?.stop();
  await moto?.stop();
});

describe('TeardownCluster and CheckTeardown against moto', () => {
  test(
    'a stack left DELETE_FAILED is deleted again, the check is done ' +
      'once it is gone, and a cluster that ran loses its boot log group',
    async () => {
      await launch('rmqbench-td-c1', 'td');
      expect(await logGroups('rmqbench-td-c1')).toEqual(['rmqbench-td-c1-ClusterBootLogs']);
      proxy.failDeletes.set('rmqbench-td-c1', {
        remaining: 1,
        resource: { logicalId: 'Topic', type: 'AWS::SNS::Topic', reason: 'Rate exceeded' },
      });
      const before = Date.now();
      const started = (await handler({
        runId: 'td',
        target: 'aws',
        cluster: cluster('rmqbench-td-c1'),
        keepBootLogs: false,
      })) as TeardownStarted;
      expect(started).toMatchObject({ done: false, bootLogGroup: 'rmqbench-td-c1-ClusterBootLogs' });
      // The deadline: 30 minutes from the start of the deletion.
      expect(Date.parse(started.deleteBy) - before).toBeGreaterThanOrEqual(30 * 60_000);
      expect(Date.parse(started.deleteBy) - Date.now()).toBeLessThanOrEqual(30 * 60_000);
      expect(await stackStatus('rmqbench-td-c1')).toBe('DELETE_FAILED');
      const check = {
        action: 'check',
        runId: 'td',
        target: 'aws',
        cluster: cluster('rmqbench-td-c1'),
        teardown: started,
      };
      // DELETE_FAILED: DeleteStack again, with the CloudFormation role, and not done yet.
      await expect(handler(check)).resolves.toEqual({ done: false });
      expect(deletesOf('rmqbench-td-c1')).toEqual([ROLE, ROLE]);
      expect(await stackStatus('rmqbench-td-c1')).toBe('GONE');
      await expect(handler(check)).resolves.toEqual({ done: true });
      expect(await logGroups('rmqbench-td-c1')).toEqual([]);
    },
  );

  test(
    'past the deadline the check fails with TeardownIncomplete ' +
      'naming the stack and the reason, and the run record stores it',
    async () => {
      await store.putRun({
        runId: 'stuck',
        planName: 'p',
        plan: { name: 'p' },
        target: 'aws',
        status: 'RUNNING',
        startedAt: '2030-01-01T00:00:00.000Z',
        environment: {},
        scenarioIds: [],
      });
      await launch('rmqbench-stuck-c1', 'stuck');
      proxy.failDeletes.set('rmqbench-stuck-c1', {
        remaining: Infinity,
        resource: {
          logicalId: 'NodeSecurityGroup',
          type: 'AWS::EC2::SecurityGroup',
          reason: 'resource sg-0abc has a dependent object',
        },
      });
      const teardownInput = { runId: 'stuck', target: 'aws', cluster: cluster('rmqbench-stuck-c1') };
      // A failed cluster keeps its boot log group: not read, not deleted.
      const started = (await handler({ ...teardownInput, keepBootLogs: true })) as TeardownStarted;
      expect(started.bootLogGroup).toBeUndefined();
      await expect(handler({ action: 'check', ...teardownInput, teardown: started })).resolves.toEqual({ done: false });
      expect(deletesOf('rmqbench-stuck-c1')).toHaveLength(2);
      const late = { ...started, deleteBy: new Date(Date.now() - 1000).toISOString() };
      const error = await handler({ action: 'check', ...teardownInput, teardown: late }).then(
        () => undefined,
        (caught: Error) => caught,
      );
      expect(error?.name).toBe('TeardownIncomplete');
      expect(error?.message).toMatch(
        new RegExp(
          String.raw`^stack rmqbench-stuck-c1 was not deleted by .*: DELETE_FAILED at NodeSecurityGroup ` +
            String.raw`\(AWS::EC2::SecurityGroup\): resource sg-0abc has a dependent object`,
        ),
      );
      expect(await logGroups('rmqbench-stuck-c1')).toEqual(['rmqbench-stuck-c1-ClusterBootLogs']);

      // What the workflow hands FinishRun: CheckTeardown's Catch puts Lambda's error under $.teardownError,
      // ClusterFailed keeps the iteration's state ('state.$': '$'); a Lambda error's Cause is its JSON (errorType,
      // errorMessage).
      const teardownError = {
        Error: error!.name,
        Cause: JSON.stringify({ errorType: error!.name, errorMessage: error!.message, trace: [] }),
      };
      const clusterResults = [
        { clusterId: 'rmqbench-stuck-c1', failed: true, state: { ...teardownInput, teardown: started, teardownError } },
      ];
      const state = { runId: 'stuck', totalRepetitions: 1, clusterResults } as unknown as Parameters<
        typeof recordRun
      >[1]['state'];
      await recordRun(store, { action: 'finish', state } as Parameters<typeof recordRun>[1], {});
      expect((await store.getRun('stuck'))!.run).toMatchObject({
        status: 'FAILED',
        error: expect.stringMatching(
          new RegExp(
            String.raw`^teardown of rmqbench-stuck-c1 failed: stack rmqbench-stuck-c1 was not deleted by .*: ` +
              String.raw`DELETE_FAILED at NodeSecurityGroup \(AWS::EC2::SecurityGroup\): resource sg-0abc has a ` +
              String.raw`dependent object`,
          ),
        ),
      });

      // A cluster that failed before its teardown failed too: the record names both, the stack left behind included.
      await store.putRun({
        runId: 'both',
        planName: 'p',
        plan: { name: 'p' },
        target: 'aws',
        status: 'RUNNING',
        startedAt: '2030-01-01T00:00:00.000Z',
        environment: {},
        scenarioIds: [],
      });
      const smokeError = {
        Error: 'SmokeTestFailed',
        Cause: JSON.stringify({ errorType: 'SmokeTestFailed', errorMessage: 'no route to the cluster', trace: [] }),
      };
      const both = [
        {
          clusterId: 'rmqbench-stuck-c1',
          failed: true,
          state: { ...teardownInput, error: smokeError, teardown: started, teardownError },
        },
      ];
      await recordRun(
        store,
        {
          action: 'finish',
          state: { runId: 'both', totalRepetitions: 1, clusterResults: both },
        } as unknown as Parameters<typeof recordRun>[1],
        {},
      );
      expect((await store.getRun('both'))!.run.error).toMatch(
        new RegExp(
          String.raw`^no route to the cluster; teardown of rmqbench-stuck-c1 failed: stack rmqbench-stuck-c1 ` +
            String.raw`was not deleted by .*: DELETE_FAILED at NodeSecurityGroup`,
        ),
      );
    },
  );
});
