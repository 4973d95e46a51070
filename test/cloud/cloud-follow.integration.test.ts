import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { followExecution } from '../../bin/cloud-follow';
import { validatePlan } from '../../core/plan/plan';
import type { RunEvent } from '../../local/run-events';
import { buildSchedule, executionInput } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { deployFakeController, finishRun, repetitionRecord, runStarted, type FakeController } from './controller-fake';
import { motoClientConfig, startMoto, type Moto } from './moto';

jest.setTimeout(60_000);

describe('followExecution with two clusters running side by side (moto)', () => {
  let moto: Moto;
  let controller: FakeController;

  beforeAll(async () => {
    moto = await startMoto({ executeStateMachines: true });
    controller = await deployFakeController(moto).catch(async (error: unknown) => {
      await moto.stop();
      throw error;
    });
  });
  afterAll(async () => {
    controller?.destroy();
    await moto?.stop();
  });

  test(
    'each cluster is announced launching, ready and per repetition ' +
      'in plan order; every stored repetition is reported once',
    async () => {
      const plan = validatePlan(
        {
          name: 'two-clusters',
          clusters: [
            { name: 'a', nodes: 3, instanceType: 'c5.xlarge', topology: { type: 'quorum' } },
            { name: 'b', nodes: 1, instanceType: 'm5.xlarge', topology: { type: 'classic' } },
          ],
          workloads: [{ name: 'w', durationSeconds: 10 }],
        },
        'test',
      );
      const config = motoClientConfig(moto);
      const sfn = new SFNClient(config);
      const store = new ResultsStore(new DynamoDBClient(config), controller.tableName);
      try {
        const input = executionInput(plan, 'aws', 'two-clusters-1');
        const schedule = buildSchedule(input, 'two-clusters-1');
        const { executionArn } = await sfn.send(
          new StartExecutionCommand({
            stateMachineArn: controller.stateMachineArn,
            name: 'two-clusters-1',
            input: JSON.stringify(input),
          }),
        );
        const ready = new Set<string>();
        const events: RunEvent[] = [];
        let polls = 0;
        const writes = [
          async () => store.putRun(runStarted('two-clusters-1', plan)),
          async () => ready.add(schedule.clusters[1]!.clusterId), // cluster b is up first
          async () => store.putRepetition(repetitionRecord('two-clusters-1', 'b/w', 1, 5_000)),
          async () => ready.add(schedule.clusters[0]!.clusterId),
          async () => store.putRepetition(repetitionRecord('two-clusters-1', 'a/w', 1, 7_000)),
          async () => finishRun(store, 'two-clusters-1', 'SUCCEEDED'),
        ];
        const result = await followExecution({
          sfn,
          // One workflow step per poll, made just before the follower reads the table.
          store: {
            getRun: async (runId: string) => {
              await writes[polls++]?.();
              return store.getRun(runId);
            },
          },
          executionArn: executionArn!,
          schedule,
          pollMs: 50,
          clusterReady: async (clusterId) => (ready.has(clusterId) ? 'ready' : 'launching'),
          onEvent: (event) => events.push(event),
        });
        expect(result.status).toBe('SUCCEEDED');
        const lines = events.map((event) =>
          event.type === 'repetition-started'
            ? `started ${event.scenarioId}`
            : event.type === 'repetition-finished'
              ? `finished ${event.record.scenarioId}`
              : event.type === 'cluster-starting'
                ? `starting ${event.nodes}`
                : event.type,
        );
        // Each repetition starts before it finishes and is reported once; cluster b (1 node) is ready before a (3
        // nodes).
        expect(lines.filter((line) => line !== 'running')).toEqual([
          'starting 3',
          'starting 1',
          'cluster-ready',
          'started b/w',
          'finished b/w',
          'cluster-ready',
          'started a/w',
          'finished a/w',
        ]);
      } finally {
        [sfn, store.client].forEach((client) => client.destroy());
      }
    },
  );
});
