import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { handleFailedExecution } from '../../lambdas/failure-handler/logic';
import { createStackToken } from '../../lambdas/shared/aws-launch';
import { ResultsStore } from '../../store/results-store';
import { motoClientConfig, stackStatusOrGone, startMoto, type Moto } from '../cloud/moto';
import { withFakeArm } from './fake-arm-clients';

/**
 * Issue 22, item 8, with the real SDK clients against moto: an execution is stopped while a LaunchCluster invocation is
 * still running; its CreateStack lands after the failure handler listed the run's stacks. The handler lists again once
 * the launch function's deadline has passed since the execution ended, and the late stack is deleted too.
 */
jest.setTimeout(120_000);
let moto: Moto;
let cfn: CloudFormationClient;
let store: ResultsStore;
beforeAll(async () => {
  moto = await startMoto();
  cfn = new CloudFormationClient(motoClientConfig(moto));
  store = new ResultsStore(new DynamoDBClient(motoClientConfig(moto)), 'rmqbench-stop-race', 'moto DynamoDB');
  await store.ensureTable();
});
afterAll(async () => {
  cfn?.destroy();
  await moto?.stop();
});

const TEMPLATE = JSON.stringify({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } });
const launch = (name: string, runId: string) =>
  cfn.send(
    new CreateStackCommand({
      StackName: name,
      TemplateBody: TEMPLATE,
      ClientRequestToken: createStackToken(runId, name),
      Tags: [
        { Key: 'rmqbench:run-id', Value: runId },
        { Key: 'rmqbench:expires-at', Value: '2030-01-01T00:00:00Z' },
      ],
    }),
  );
const status = (name: string) => stackStatusOrGone(cfn, name);

describe('the failure handler and a launch still running when the execution was stopped', () => {
  test('a stack created after the first listing is deleted once the launch deadline has passed', async () => {
    await store.putRun({
      runId: 'race',
      planName: 'p',
      plan: { name: 'p' },
      target: 'aws',
      status: 'RUNNING',
      startedAt: '2030-01-01T00:00:00.000Z',
      environment: {},
      scenarioIds: [],
    });
    await launch('rmqbench-race-c1', 'race');
    const stoppedAt = Date.parse('2030-01-01T01:00:00Z');
    let clock = stoppedAt + 2_000;
    const waits: number[] = [];
    const result = await handleFailedExecution(
      cfn,
      store,
      'arn:aws:iam::123456789012:role/cfn',
      { detail: { name: 'race', status: 'ABORTED', input: JSON.stringify({ runId: 'race' }), stopDate: stoppedAt } },
      () => '2030-01-01T01:00:05.000Z',
      undefined,
      {
        launchDeadlineMs: 60_000,
        clock: () => clock,
        // While the handler waits, the in-flight LaunchCluster's CreateStack lands.
        sleep: async (ms) => {
          waits.push(ms);
          expect(await status('rmqbench-race-c1')).not.toBe('CREATE_COMPLETE');
          await launch('rmqbench-race-c2', 'race');
          clock += ms;
        },
      },
    );
    // It waited from 2 s after the stop until the launch function's 60 s and a 10 s margin had passed.
    expect(waits).toEqual([68_000]);
    expect(result.deleted).toEqual(['rmqbench-race-c1', 'rmqbench-race-c2']);
    for (const name of ['rmqbench-race-c1', 'rmqbench-race-c2'])
      expect(['DELETE_COMPLETE', 'GONE']).toContain(await status(name));
    expect((await store.getRun('race'))!.run).toMatchObject({ status: 'FAILED', error: 'execution ABORTED' });
  });

  test(
    'on azure, a resource group created after the first ' +
      'listing is deleted too (the real ARM client, the fake ARM)',
    async () => {
      await withFakeArm({ operationPolls: 0 }, async (azure, arm) => {
        const tags = { 'rmqbench:run-id': 'az-race', 'rmqbench:expires-at': '2030-01-01T00:00:00Z' };
        arm.groups.set('rmqbench-az-race-c1', { location: 'westeurope', tags });
        const stoppedAt = Date.parse('2030-01-01T01:00:00Z');
        let clock = stoppedAt;
        const result = await handleFailedExecution(
          cfn,
          store,
          'arn:role',
          {
            detail: {
              name: 'az-race',
              status: 'ABORTED',
              input: JSON.stringify({ runId: 'az-race' }),
              stopDate: stoppedAt,
            },
          },
          undefined,
          azure,
          {
            launchDeadlineMs: 60_000,
            clock: () => clock,
            sleep: async (ms) => {
              // The first group is already gone; the in-flight launch creates its group now.
              expect(arm.groups.has('rmqbench-az-race-c1')).toBe(false);
              arm.groups.set('rmqbench-az-race-c2', { location: 'westeurope', tags });
              clock += ms;
            },
          },
        );
        expect(result.deletedResourceGroups).toEqual(['rmqbench-az-race-c1', 'rmqbench-az-race-c2']);
        expect([...arm.groups.keys()]).toEqual([]);
      });
    },
  );

  test(
    'without the wait (the old behaviour) the late stack ' + 'would have been left: the first listing cannot see it',
    async () => {
      await launch('rmqbench-late-c1', 'late');
      const result = await handleFailedExecution(cfn, store, 'arn:role', {
        detail: { name: 'late', status: 'ABORTED', input: JSON.stringify({ runId: 'late' }) },
      });
      await launch('rmqbench-late-c2', 'late');
      expect(result.deleted).toEqual(['rmqbench-late-c1']);
      expect(await status('rmqbench-late-c2')).toBe('CREATE_COMPLETE');
    },
  );
});
