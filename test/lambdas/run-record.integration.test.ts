import { recordRun } from '../../lambdas/run-record/logic';
import { ProcessRegistry } from '../../local/processes';
import { buildSchedule } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';
import { startStore, tempDir } from '../local/helpers';

// RunRecord against DynamoDB Local: the run record comes from ValidatePlan's schedule, without validating again.
const processes = new ProcessRegistry();
const work = tempDir('run-record');
let store: ResultsStore;
beforeAll(async () => {
  ({ store } = await startStore(processes, work.path));
}, 120_000);
afterAll(async () => {
  await processes.stopAll();
  work.cleanup();
});

const environment = { region: 'eu-west-1', controller: 'BenchmarkController' };
const now = () => '2025-01-01T00:00:00.000Z';
// Clusters a and c share a configuration, so the schedule groups them before b: the run record keeps the plan order.
const plan = {
  name: 'order',
  clusters: [
    { name: 'a', nodes: 1, instanceType: 'c5.xlarge' },
    { name: 'b', nodes: 3, instanceType: 'c5.xlarge' },
    { name: 'c', nodes: 1, instanceType: 'c5.xlarge' },
  ],
  workloads: [{ name: 'w', durationSeconds: 5 }],
};

describe('RunRecord', () => {
  test(
    'start stores the validated plan, its name and the ' + 'scenario ids in plan order, as ValidatePlan laid them out',
    async () => {
      const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-order' }, 'exec');
      expect(schedule.clusters.flatMap((cluster) => cluster.repetitions.map((rep) => rep.scenarioId))).toEqual([
        'a/w',
        'c/w',
        'b/w',
      ]);
      await recordRun(store, { action: 'start', state: schedule }, environment, now);
      const stored = (await store.getRun('run-order'))!.run;
      expect(stored).toMatchObject({
        runId: 'run-order',
        planName: 'order',
        target: 'aws',
        status: 'RUNNING',
        scenarioIds: ['a/w', 'b/w', 'c/w'],
        environment,
      });
      expect(stored.plan).toEqual(schedule.plan);
      expect(stored.plan).toMatchObject({
        repetitions: 1,
        workloads: [expect.objectContaining({ producers: 1, exchange: { type: 'direct' } })],
      });
    },
  );

  test(
    'a run that failed before RecordRunStart is stored ' + 'FAILED with its plan; an invalid plan stores nothing',
    async () => {
      const error = { Error: 'States.TaskFailed', Cause: JSON.stringify({ errorMessage: 'LaunchCluster failed' }) };
      await expect(
        recordRun(
          store,
          { action: 'fail', state: { runId: 'run-early', plan, target: 'aws', error } },
          environment,
          now,
        ),
      ).resolves.toMatchObject({ status: 'FAILED' });
      expect((await store.getRun('run-early'))!.run).toMatchObject({
        status: 'FAILED',
        planName: 'order',
        scenarioIds: ['a/w', 'b/w', 'c/w'],
      });
      await recordRun(
        store,
        { action: 'fail', state: { runId: 'run-invalid', plan: { name: 'Bad Name' }, target: 'aws', error } },
        environment,
        now,
      );
      expect(await store.getRun('run-invalid')).toBeUndefined();
    },
  );
});
