import { existsSync, lstatSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RunRecord } from '../core/results/result-model';
import type { ResultsStore } from '../store/results-store';

/** Which run folders `rmqbench prune` may delete; without either, every one whose results are stored. */
export interface PruneSelection {
  /** Keep the N newest run folders whatever their state. */
  readonly keep?: number;
  /** Only runs that started more than this many days ago. */
  readonly olderThanDays?: number;
}

export interface PruneDecision {
  readonly runId: string;
  readonly dir: string;
  readonly startedAt: string;
  readonly bytes: number;
  readonly delete: boolean;
  /** Why the folder is kept (absent for a folder that is deleted). */
  readonly reason?: string;
}

interface RunFolder {
  readonly runId: string;
  readonly dir: string;
  readonly startedAt: Date;
  readonly hasRunFile: boolean;
}

const DAY_MS = 86_400_000;

/**
 * Decides, for each folder under `runsDir`, whether it may go: only when the store has the run and
 * every repetition whose raw output the folder holds (ingest/*.json). Deletes nothing.
 */
export async function planPrune(
  runsDir: string,
  store: ResultsStore,
  selection: PruneSelection,
  now = new Date(),
): Promise<PruneDecision[]> {
  const folders = listRunFolders(runsDir).sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime());
  const decisions: PruneDecision[] = [];
  for (const [index, folder] of folders.entries()) {
    const base = {
      runId: folder.runId,
      dir: folder.dir,
      startedAt: folder.startedAt.toISOString(),
      bytes: folderBytes(folder.dir),
    };
    const reason =
      selection.keep !== undefined && index < selection.keep
        ? `one of the ${selection.keep} newest (--keep ${selection.keep})`
        : selection.olderThanDays !== undefined &&
            now.getTime() - folder.startedAt.getTime() <= selection.olderThanDays * DAY_MS
          ? `started ${((now.getTime() - folder.startedAt.getTime()) / DAY_MS).toFixed(1)} days ago, not more ` +
            `than ${selection.olderThanDays} (--older-than)`
          : await unstoredReason(folder, store);
    decisions.push(reason === undefined ? { ...base, delete: true } : { ...base, delete: false, reason });
  }
  return decisions;
}

/** Deletes the folders `planPrune` marked; returns the bytes freed. */
export function applyPrune(decisions: readonly PruneDecision[]): number {
  let freed = 0;
  for (const decision of decisions.filter((d) => d.delete)) {
    rmSync(decision.dir, { recursive: true, force: true });
    freed += decision.bytes;
  }
  return freed;
}

/** Why the store cannot stand in for this folder, or undefined when it has everything the folder measured. */
async function unstoredReason(folder: RunFolder, store: ResultsStore): Promise<string | undefined> {
  const storeAgain =
    existsSync(join(folder.dir, 'ingest')) && folder.hasRunFile ? `; store it with: rmqbench ingest ${folder.dir}` : '';
  const stored = await store.getRun(folder.runId);
  if (!stored) return `run ${folder.runId} is not in table ${store.tableName}${storeAgain}`;
  if (stored.run.status === 'RUNNING')
    return (
      `run ${folder.runId} is recorded as RUNNING (still running, or stopped before its end was ` +
      `recorded)${storeAgain}`
    );
  const have = new Set(stored.repetitions.map((rep) => `${rep.scenarioId}#${rep.repetition}`));
  const missing = measuredRepetitions(folder.dir).filter((rep) => !have.has(`${rep.scenarioId}#${rep.repetition}`));
  if (missing.length > 0) {
    const names = missing.map((rep) => `${rep.scenarioId} #${rep.repetition}`).join(', ');
    return (
      `${missing.length} repetition(s) measured in this folder are not in table ${store.tableName} ` +
      `(${names})${storeAgain}`
    );
  }
  return undefined;
}

/** The repetitions whose raw PerfTest output the run wrote (the local stand-in for the S3 objects). */
function measuredRepetitions(dir: string): { scenarioId: string; repetition: number }[] {
  const ingest = join(dir, 'ingest');
  if (!existsSync(ingest)) return [];
  return readdirSync(ingest)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(ingest, file), 'utf8')) as { scenarioId: string; repetition: number });
}

function listRunFolders(runsDir: string): RunFolder[] {
  if (!existsSync(runsDir)) return [];
  return readdirSync(runsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => {
      const dir = join(runsDir, entry.name);
      const runFile = join(dir, 'run.json');
      if (!existsSync(runFile)) return { runId: entry.name, dir, startedAt: statSync(dir).mtime, hasRunFile: false };
      const run = JSON.parse(readFileSync(runFile, 'utf8')) as Partial<RunRecord>;
      const started = run.startedAt ? new Date(run.startedAt) : statSync(dir).mtime;
      return {
        runId: run.runId ?? entry.name,
        dir,
        startedAt: Number.isNaN(started.getTime()) ? statSync(dir).mtime : started,
        hasRunFile: true,
      };
    });
}

function folderBytes(path: string): number {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + folderBytes(join(path, name)), 0);
}
