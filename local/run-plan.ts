import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ingestRepetition, RawRepetition } from '../core/ingest';
import { groupScenariosByCluster, Plan, plannedSeconds } from '../core/plan';
import type { RepetitionRecord, RunRecord, RunStatus } from '../core/result-model';
import type { ResultsStore } from '../store/results-store';
import type { LocalClusterHandle, LocalTarget } from './local-target';
import type { PerfTestProgress } from './perftest-process';
import { sleep } from './ports';

export type RunEvent =
  | { readonly type: 'run-started'; readonly runId: string; readonly runDir: string; readonly plannedSeconds: number }
  | { readonly type: 'cluster-starting'; readonly nodes: number; readonly topology: string }
  | { readonly type: 'cluster-ready'; readonly seconds: number }
  | {
      readonly type: 'repetition-started';
      readonly scenarioId: string;
      readonly repetition: number;
      readonly repetitions: number;
      readonly index: number;
      readonly total: number;
      readonly durationSeconds: number;
      readonly remainingPlannedSeconds: number;
    }
  | { readonly type: 'progress'; readonly progress: PerfTestProgress }
  | { readonly type: 'repetition-finished'; readonly record: RepetitionRecord }
  | { readonly type: 'pause'; readonly seconds: number };

export interface RunPlanOptions {
  readonly plan: Plan;
  readonly target: LocalTarget;
  /** The store, or its start-up: the first cluster boots while the store comes up. */
  readonly store: ResultsStore | Promise<ResultsStore>;
  /** The folder where this run keeps its raw PerfTest output (`<dataDir>/runs/<runId>`). */
  readonly runDir: string;
  readonly runId: string;
  readonly onEvent?: (event: RunEvent) => void;
}

export interface RunOutcome {
  readonly runId: string;
  readonly status: RunStatus;
  readonly records: readonly RepetitionRecord[];
  readonly error?: string;
}

export function newRunId(planName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  return `${planName}-${stamp}-${randomBytes(2).toString('hex')}`;
}

/**
 * Runs every scenario × repetition of a plan on the local target, storing each repetition as soon
 * as it is known. Clusters are torn down on every path; a failure stores what was measured so far
 * and marks the run FAILED with its cause.
 */
export async function runPlan(options: RunPlanOptions): Promise<RunOutcome> {
  const { plan, target, runId, runDir } = options;
  const emit = options.onEvent ?? (() => undefined);
  mkdirSync(runDir, { recursive: true });
  const groups = groupScenariosByCluster(plan);
  // Booting a cluster takes longest; start the first one while the store comes up.
  const prepared = target.prepare();
  emit({ type: 'cluster-starting', nodes: groups[0]!.nodes, topology: groups[0]!.topology.type });
  let launchStarted = Date.now();
  const firstLaunch = prepared.then(() => target.launch(groups[0]!, 0));
  firstLaunch.catch(() => undefined); // awaited below; avoids an unhandled rejection while the store starts
  const run: RunRecord = {
    runId,
    planName: plan.name,
    plan: stripScenarios(plan),
    target: 'local',
    status: 'RUNNING',
    startedAt: new Date().toISOString(),
    environment: target.environment(),
    scenarioIds: plan.scenarios.map((scenario) => scenario.id),
  };
  writeFileSync(join(runDir, 'run.json'), `${JSON.stringify(run, null, 2)}\n`);
  let store: ResultsStore;
  try {
    store = await options.store;
    await store.putRun(run);
  } catch (error) {
    const handle = await firstLaunch.catch(() => undefined);
    if (handle) await target.teardown(handle);
    throw error;
  }
  emit({ type: 'run-started', runId, runDir, plannedSeconds: plannedSeconds(plan) });

  const records: RepetitionRecord[] = [];
  let remaining = plannedSeconds(plan);
  const total = plan.scenarios.length * plan.repetitions;
  let failure: string | undefined;
  try {
    for (const [groupIndex, group] of groups.entries()) {
      if (groupIndex > 0) {
        emit({ type: 'cluster-starting', nodes: group.nodes, topology: group.topology.type });
        launchStarted = Date.now();
      }
      let handle: LocalClusterHandle | undefined;
      try {
        handle = groupIndex === 0 ? await firstLaunch : await target.launch(group, groupIndex);
        emit({ type: 'cluster-ready', seconds: (Date.now() - launchStarted) / 1000 });
        for (const scenario of group.scenarios) {
          for (let repetition = 1; repetition <= plan.repetitions; repetition++) {
            emit({
              type: 'repetition-started',
              scenarioId: scenario.id,
              repetition,
              repetitions: plan.repetitions,
              index: records.length + 1,
              total,
              durationSeconds: scenario.workload.durationSeconds,
              remainingPlannedSeconds: remaining,
            });
            const raw = await target.runRepetition(handle, runId, scenario, repetition, (progress) => emit({ type: 'progress', progress }));
            saveRaw(runDir, raw);
            const record = ingestRepetition(raw);
            await store.putRepetition(record);
            records.push(record);
            emit({ type: 'repetition-finished', record });
            remaining -= scenario.workload.durationSeconds;
            if (repetition < plan.repetitions && plan.pauseSecondsBetweenRepetitions > 0) {
              emit({ type: 'pause', seconds: plan.pauseSecondsBetweenRepetitions });
              await sleep(plan.pauseSecondsBetweenRepetitions * 1000);
              remaining -= plan.pauseSecondsBetweenRepetitions;
            }
          }
        }
      } finally {
        if (handle) await target.teardown(handle);
      }
    }
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error);
  }
  const succeeded = records.filter((record) => record.status === 'SUCCEEDED').length;
  const status: RunStatus = failure !== undefined || succeeded === 0 ? 'FAILED' : succeeded === total ? 'SUCCEEDED' : 'PARTIAL';
  const error = failure ?? (status === 'FAILED' ? 'no repetition succeeded' : undefined);
  try {
    await store.finishRun(runId, status, new Date().toISOString(), error);
  } catch (storeError) {
    // The measurements are on disk; say where, and keep the original cause first.
    const storeMessage = storeError instanceof Error ? storeError.message : String(storeError);
    const cause = error ? `${error}; also ` : '';
    return { runId, status: 'FAILED', records, error: `${cause}${storeMessage} (raw output kept in ${runDir}; store it later with: rmqbench ingest ${runDir})` };
  }
  return { runId, status, records, ...(error ? { error } : {}) };
}

/** Keeps the raw output and what is needed to ingest it again (`rmqbench ingest <runDir>`). */
function saveRaw(runDir: string, raw: RawRepetition): void {
  const dir = join(runDir, 'ingest');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${raw.scenarioId.replace(/[^A-Za-z0-9._=-]+/g, '_')}.rep-${raw.repetition}.json`), JSON.stringify(raw));
}

function stripScenarios(plan: Plan): unknown {
  const { scenarios: _scenarios, ...rest } = plan;
  return rest;
}
