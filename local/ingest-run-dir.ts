import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adaptiveRuleOf } from '../core/plan/plan';
import { ingestRepetition, RawRepetition } from '../core/results/ingest';
import type { RunRecord, RunStatus } from '../core/results/result-model';
import type { ResultsStore } from '../store/results-store';

/**
 * Stores a run folder's raw PerfTest output (again): the way back after the store was unreachable
 * during a run. Idempotent, because every item key is derived from what it stores.
 */
export async function ingestRunDir(
  store: ResultsStore,
  runDir: string,
): Promise<{ runId: string; stored: number; status: RunStatus }> {
  const runFile = join(runDir, 'run.json');
  const ingestDir = join(runDir, 'ingest');
  if (!existsSync(runFile) || !existsSync(ingestDir))
    throw new Error(`${runDir} is not a run folder (it needs run.json and ingest/)`);
  const run = JSON.parse(readFileSync(runFile, 'utf8')) as RunRecord;
  const records = readdirSync(ingestDir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => ingestRepetition(JSON.parse(readFileSync(join(ingestDir, file), 'utf8')) as RawRepetition));
  const before = await store.getRun(run.runId);
  if (!before) await store.putRun(run);
  for (const record of records) await store.putRepetition(record);
  // Adaptive repetitions: at most `max` each, less those the run recorded as skipped (they have no raw output).
  const written = (run.plan as { repetitions?: unknown }).repetitions;
  const repetitions = adaptiveRuleOf(run.plan)?.max ?? (typeof written === 'number' ? written : 1);
  const skipped = (before?.repetitions ?? []).filter((rep) => rep.status === 'SKIPPED').length;
  const expected = run.scenarioIds.length * repetitions - skipped;
  const succeeded = records.filter((record) => record.status === 'SUCCEEDED').length;
  const status: RunStatus = succeeded === 0 ? 'FAILED' : succeeded === expected ? 'SUCCEEDED' : 'PARTIAL';
  await store.finishRun(
    run.runId,
    status,
    new Date().toISOString(),
    status === 'SUCCEEDED' ? undefined : `${succeeded} of ${expected} repetitions succeeded`,
  );
  return { runId: run.runId, stored: records.length, status };
}
