import { checkSettledInStore } from '../../lambdas/ingest-repetition/logic';
import { recordRun } from '../../lambdas/run-record/logic';
import { describe as statsOf } from '../../core/results/statistics';
import type { RepetitionRecord } from '../../core/results/result-model';
import { ProcessRegistry } from '../../local/processes';
import { buildSchedule } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';
import { startStore, tempDir } from '../local/helpers';

// CheckSettled in the cloud (IngestRepetition's "settledCheck" action) against DynamoDB Local: it reads the scenario's
// stored repetitions, stores a skipped one SKIPPED, and FinishRun counts that as done.
const processes = new ProcessRegistry();
const work = tempDir('check-settled');
let store: ResultsStore;
beforeAll(async () => {
  ({ store } = await startStore(processes, work.path));
}, 120_000);
afterAll(async () => {
  await processes.stopAll();
  work.cleanup();
});

const plan = {
  name: 'adaptive',
  repetitions: { min: 2, max: 4, ciPercent: 5 },
  clusters: [{ name: 'c', nodes: 1, instanceType: 'c5.xlarge' }],
  workloads: [
    { name: 'steady', durationSeconds: 5 },
    { name: 'noisy', durationSeconds: 5 },
  ],
};

const succeeded = (runId: string, scenarioId: string, repetition: number, rate: number): RepetitionRecord => ({
  runId,
  scenarioId,
  repetition,
  status: 'SUCCEEDED',
  startedAt: '2026-01-01T00:00:00.000Z',
  finishedAt: '2026-01-01T00:00:05.000Z',
  perfTestArgs: [],
  result: {
    summary: { sendRateAvg: rate, receiveRateAvg: rate },
    samples: [],
    sendRate: statsOf([rate]),
    receiveRate: statsOf([rate]),
  },
});

test('a settled scenario skips the rest, stored SKIPPED with the reason; a noisy one runs on', async () => {
  const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-adaptive' }, 'exec');
  const items = schedule.clusters[0]!.repetitions;
  const item = (scenarioId: string, repetition: number) =>
    items.find((candidate) => candidate.scenarioId === scenarioId && candidate.repetition === repetition)!;
  await recordRun(store, { action: 'start', state: schedule }, {});
  for (const [repetition, rate] of [
    [1, 6000],
    [2, 6010],
  ] as const)
    await store.putRepetition(succeeded('run-adaptive', 'c/steady', repetition, rate));
  for (const [repetition, rate] of [
    [1, 4000],
    [2, 6000],
  ] as const)
    await store.putRepetition(succeeded('run-adaptive', 'c/noisy', repetition, rate));

  const reason = 'settled: CI half-width 1.1 % ≤ 5 % after 2 repetitions';
  await expect(checkSettledInStore(store, 'run-adaptive', item('c/steady', 3))).resolves.toEqual({
    skip: true,
    reason,
  });
  await expect(checkSettledInStore(store, 'run-adaptive', item('c/steady', 4))).resolves.toEqual({
    skip: true,
    reason,
  });
  const noisy = await checkSettledInStore(store, 'run-adaptive', item('c/noisy', 3));
  expect(noisy.skip).toBe(false);
  expect(noisy.reason).toMatch(/^not settled: CI half-width \d+\.\d % > 5 % after 2 repetitions$/);
  for (const [repetition, rate] of [
    [3, 5000],
    [4, 5000],
  ] as const)
    await store.putRepetition(succeeded('run-adaptive', 'c/noisy', repetition, rate));

  const stored = (await store.getRun('run-adaptive'))!;
  const steady = stored.repetitions.filter((rep) => rep.scenarioId === 'c/steady');
  expect(steady.map((rep) => [rep.repetition, rep.status, rep.skipReason])).toEqual([
    [1, 'SUCCEEDED', undefined],
    [2, 'SUCCEEDED', undefined],
    [3, 'SKIPPED', reason],
    [4, 'SKIPPED', reason],
  ]);
  await expect(recordRun(store, { action: 'finish', state: schedule }, {})).resolves.toEqual({ status: 'SUCCEEDED' });
});

test('an item without settledCheck (a plain number of repetitions) is refused, naming the repetition', async () => {
  const schedule = buildSchedule({ plan: { ...plan, repetitions: 2 }, target: 'aws', runId: 'run-plain' }, 'exec');
  await expect(checkSettledInStore(store, 'run-plain', schedule.clusters[0]!.repetitions[1]!)).rejects.toThrow(
    'CheckSettled needs item.settledCheck (c/steady #2)',
  );
});
