import {
  CloudFormationClient,
  DeleteStackCommand,
  DescribeStacksCommand,
  ListStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { handleFailedExecution } from '../../lambdas/failure-handler/logic';
import { ProcessRegistry } from '../../local/processes';
import type { ResultsStore } from '../../store/results-store';
import { startStore, tempDir } from '../local/helpers';

// The results table is DynamoDB Local; CloudFormation has no local engine and is replaced.
const cfnMock = mockClient(CloudFormationClient);
const processes = new ProcessRegistry();
const work = tempDir('failure-handler');
let store: ResultsStore;
beforeAll(async () => {
  ({ store } = await startStore(processes, work.path));
}, 120_000);
afterAll(async () => {
  await processes.stopAll();
  work.cleanup();
});
afterEach(() => cfnMock.reset());

const run = (runId: string) => ({
  runId,
  planName: 'p',
  plan: { name: 'p' },
  target: 'aws' as const,
  status: 'RUNNING' as const,
  startedAt: '2025-01-01T00:00:00.000Z',
  environment: {},
  scenarioIds: [],
});

describe('failure-handler', () => {
  test(
    "a timed-out execution: the run's stacks are deleted and " +
      'the RUNNING run is recorded FAILED with the status and cause',
    async () => {
      await store.putRun(run('run-timeout'));
      cfnMock.on(ListStacksCommand).resolves({
        StackSummaries: [
          { StackName: 'rmqbench-run-timeout-c1', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE' },
        ],
      });
      cfnMock.on(DescribeStacksCommand, { StackName: 'rmqbench-run-timeout-c1' }).resolves({
        Stacks: [
          {
            StackName: 'rmqbench-run-timeout-c1',
            CreationTime: new Date(),
            StackStatus: 'CREATE_COMPLETE',
            Tags: [{ Key: 'rmqbench:run-id', Value: 'run-timeout' }],
          },
        ],
      });
      cfnMock.on(DeleteStackCommand).resolves({});
      const result = await handleFailedExecution(
        new CloudFormationClient({}),
        store,
        'arn:role',
        {
          detail: {
            name: 'exec',
            status: 'TIMED_OUT',
            input: JSON.stringify({ runId: 'run-timeout' }),
            cause: 'took too long',
          },
        },
        () => '2025-01-02T00:00:00.000Z',
      );
      expect(result).toEqual({ runId: 'run-timeout', deleted: ['rmqbench-run-timeout-c1'] });
      expect(cfnMock.commandCalls(DeleteStackCommand)[0]!.args[0].input).toEqual({
        StackName: 'rmqbench-run-timeout-c1',
        RoleARN: 'arn:role',
      });
      expect((await store.getRun('run-timeout'))!.run).toMatchObject({
        status: 'FAILED',
        error: 'execution TIMED_OUT: took too long',
        finishedAt: '2025-01-02T00:00:00.000Z',
      });
    },
  );

  test(
    'a run the workflow already recorded FAILED keeps its error; ' +
      'a run id is derived from the plan name when the input has none',
    async () => {
      await store.putRun(run('run-recorded'));
      await store.finishRun('run-recorded', 'FAILED', '2025-01-01T01:00:00.000Z', 'IngestRepetition failed');
      cfnMock.on(ListStacksCommand).resolves({ StackSummaries: [] });
      await handleFailedExecution(new CloudFormationClient({}), store, 'arn:role', {
        detail: { name: 'exec', status: 'FAILED', input: JSON.stringify({ runId: 'run-recorded' }) },
      });
      expect((await store.getRun('run-recorded'))!.run).toMatchObject({
        status: 'FAILED',
        error: 'IngestRepetition failed',
        finishedAt: '2025-01-01T01:00:00.000Z',
      });
      const derived = await handleFailedExecution(new CloudFormationClient({}), store, 'arn:role', {
        detail: { name: 'exec-9', status: 'ABORTED', input: JSON.stringify({ plan: { name: 'weekly' } }) },
      });
      expect(derived).toEqual({ runId: 'weekly-exec-9', deleted: [] });
    },
  );
});
