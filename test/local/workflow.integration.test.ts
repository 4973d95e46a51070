jest.setTimeout(600_000);

import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parsePlanText } from '../../core/plan/plan';
import { aggregateRun, renderMarkdownReport } from '../../core/report/report';
import { ingestRunDir } from '../../local/ingest-run-dir';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import type { RunEvent } from '../../local/run-plan';
import { newRunId } from '../../local/run-plan';
import { runPlanWorkflow } from '../../local/workflow-runner';
import type { ResultsStore } from '../../store/results-store';
import { alivePids, startStore, tempDir } from './helpers';

const plan = parsePlanText(
  `
name: workflow
repetitions: 2
pauseSecondsBetweenRepetitions: 1
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: small, messageSizeBytes: 150, durationSeconds: 3 }
`,
  'workflow.yaml',
);

// The --fail-at cases: the same plan with shorter repetitions and no pause, since they assert where the run failed and
// what was kept, not what the repetitions measured (the plan above checks that, and the pause event).
const failAtPlan = parsePlanText(
  `
name: workflow
repetitions: 2
pauseSecondsBetweenRepetitions: 0
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: small, messageSizeBytes: 150, durationSeconds: 2 }
`,
  'workflow-fail-at.yaml',
);

// A capacity search: one PerfTest run stepping through 2 rates × 5 s inside the repetition (issue 25).
const capacityPlan = parsePlanText(
  `
name: workflow-capacity
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - name: ladder
    messageSizeBytes: 150
    capacity: { p99LatencyMs: 50, minRate: 500, maxRate: 1000, stepFactor: 2, stepSeconds: 5, warmUpSeconds: 1 }
`,
  'workflow-capacity.yaml',
);

// Adaptive repetitions on a steady scenario: a publish rate well below what one node takes, measured after a 2 s
// warm-up
// (PerfTest's rate limiter catches up on a slow first second with a burst), gives two repetitions within ~1 % of each
// other; a CI half-width within 50 % (t(1) = 12.706) needs them within ~7.9 %, so the scenario settles at min and
// repetitions 3 and 4 are skipped.
const adaptivePlan = parsePlanText(
  `
name: workflow-adaptive
repetitions: { min: 2, max: 4, ciPercent: 50 }
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: steady, messageSizeBytes: 150, durationSeconds: 5, warmUpSeconds: 2, publishRateLimit: 2000 }
`,
  'workflow-adaptive.yaml',
);

describe('rmqbench run executes the deployed workflow definition on the local target', () => {
  const storeProcesses = new ProcessRegistry();
  const work = tempDir('workflow');
  let store: ResultsStore;
  beforeAll(async () => {
    ({ store } = await startStore(storeProcesses, work.path));
  });
  afterAll(async () => {
    await storeProcesses.stopAll();
    work.cleanup();
  });

  async function run(failAt?: string, which = plan) {
    const processes = new ProcessRegistry();
    const runId = newRunId(which.name);
    const runDir = join(work.path, 'runs', runId);
    const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
    const events: RunEvent[] = [];
    try {
      const outcome = await runPlanWorkflow({
        plan: which,
        target,
        store,
        runDir,
        runId,
        onEvent: (event) => events.push(event),
        ...(failAt ? { failAt } : {}),
      });
      return {
        outcome,
        events,
        runDir,
        processes,
        left: { registered: processes.running.length, alive: alivePids(processes) },
        stored: await store.getRun(runId),
      };
    } finally {
      await processes.stopAll();
    }
  }

  test(
    'a plan runs through every state: repetitions stored, ' + 'run SUCCEEDED, raw files kept, nothing left running',
    async () => {
      const { outcome, events, runDir, left, stored } = await run();
      expect(outcome.error).toBeUndefined();
      expect(outcome.status).toBe('SUCCEEDED');
      expect(outcome.records.map((record) => [record.scenarioId, record.repetition, record.status])).toEqual([
        ['one-node/small', 1, 'SUCCEEDED'],
        ['one-node/small', 2, 'SUCCEEDED'],
      ]);
      expect(stored?.run.status).toBe('SUCCEEDED');
      expect(stored?.repetitions).toHaveLength(2);
      expect(stored!.repetitions[0]!.result!.summary.receiveRateAvg).toBeGreaterThan(0);
      expect(left).toEqual({ registered: 0, alive: [] });
      // The same events as the in-process loop, in the same order, for the progress display.
      expect(events.map((event) => event.type).filter((type) => type !== 'progress')).toEqual([
        'run-started',
        'cluster-starting',
        'cluster-ready',
        'repetition-started',
        'repetition-finished',
        'pause',
        'repetition-started',
        'repetition-finished',
      ]);
      // The run folder works with `rmqbench ingest` as before.
      expect(existsSync(join(runDir, 'run.json'))).toBe(true);
      expect(readdirSync(join(runDir, 'ingest')).sort()).toEqual([
        'one-node_small.rep-1.json',
        'one-node_small.rep-2.json',
      ]);
      await expect(ingestRunDir(store, runDir)).resolves.toMatchObject({ stored: 2, status: 'SUCCEEDED' });
    },
  );

  test('adaptive repetitions: a steady scenario stops at min, the rest recorded SKIPPED with the reason', async () => {
    const { outcome, events, left, stored } = await run(undefined, adaptivePlan);
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('SUCCEEDED');
    expect(stored?.run.status).toBe('SUCCEEDED');
    const reps = [...stored!.repetitions].sort((a, b) => a.repetition - b.repetition);
    expect(reps.map((rep) => [rep.repetition, rep.status])).toEqual([
      [1, 'SUCCEEDED'],
      [2, 'SUCCEEDED'],
      [3, 'SKIPPED'],
      [4, 'SKIPPED'],
    ]);
    expect(reps[2]!.skipReason).toMatch(/^settled: CI half-width \d+\.\d % ≤ 50 % after 2 repetitions$/);
    expect(reps[3]!.skipReason).toBe(reps[2]!.skipReason);
    // PerfTest ran twice only.
    expect(events.filter((event) => event.type === 'repetition-started')).toHaveLength(2);
    const [aggregate] = aggregateRun(stored!.run, stored!.repetitions);
    expect(aggregate).toMatchObject({
      repetitionsSucceeded: 2,
      repetitionsFailed: 0,
      repetitionsSkipped: 2,
      adaptive: { ran: 2, skipped: 2, min: 2, max: 4, stoppedBecause: 'settled', reason: reps[2]!.skipReason },
    });
    expect(renderMarkdownReport(stored!.run, stored!.repetitions)).toContain(
      `| one-node/steady | 2 of 4 | 2 | ${reps[2]!.skipReason} |`,
    );
    expect(left).toEqual({ registered: 0, alive: [] });
  });

  test('an unknown --fail-at state is refused before anything starts, naming the allowed states', async () => {
    await expect(run('NoSuchState')).rejects.toThrow(
      /--fail-at must name a Task state of the workflow.*ValidatePlan, RecordRunStart, LaunchCluster/,
    );
  });

  // Each case: the state that fails, and how many repetitions were stored before it failed (and must stay stored).
  test.each([
    ['ValidatePlan', 0],
    ['RecordRunStart', 0],
    ['LaunchCluster', 0],
    ['CheckClusterReady', 0],
    ['SmokeTest', 0],
    ['StartRepetition:2', 1],
    ['CheckRepetition', 0],
    ['IngestRepetition:2', 1],
    ['TeardownCluster', 2],
    ['FinishRun', 2],
  ])(
    '--fail-at %s: the run ends FAILED with the cause recorded, teardown ran, %i stored repetition(s) kept',
    async (failAt, kept) => {
      const state = failAt.split(':')[0]!;
      const { outcome, events, left, stored } = await run(failAt, failAtPlan);
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error).toContain(`fault injected at ${state}`);
      expect(stored?.run.status).toBe('FAILED');
      expect(stored?.run.error).toContain(`fault injected at ${state}`);
      expect(stored?.run.finishedAt).toBeDefined();
      expect(stored?.repetitions.filter((repetition) => repetition.status === 'SUCCEEDED')).toHaveLength(kept);
      expect(left).toEqual({ registered: 0, alive: [] });
      const launched = events.some((event) => event.type === 'cluster-ready');
      expect(launched).toBe(!['ValidatePlan', 'RecordRunStart', 'LaunchCluster'].includes(state));
    },
  );

  test('--fail-at CheckRepetition:2 mid capacity ladder: FAILED, PerfTest stopped, teardown ran', async () => {
    const { outcome, events, left, stored } = await run('CheckRepetition:2', capacityPlan);
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toContain('fault injected at CheckRepetition');
    expect(stored?.run.status).toBe('FAILED');
    // The ladder had started: its PerfTest reported progress before the fault, and nothing is left running.
    expect(events.some((event) => event.type === 'repetition-started')).toBe(true);
    expect(events.some((event) => event.type === 'progress')).toBe(true);
    expect(left).toEqual({ registered: 0, alive: [] });
  });
});
