import type { RunStatus } from '../results/result-model';
import { EXECUTION_TIMEOUT_SECONDS } from './workflow-shape';

/**
 * A launched cluster as the clean-up sees it: a CloudFormation stack or an Azure resource group with rmqbench's tags.
 */
export interface CleanupCandidate {
  readonly kind: 'stack' | 'resource-group';
  readonly name: string;
  /** The rmqbench:run-id tag. */
  readonly runId?: string;
  /** The rmqbench:expires-at tag (ISO time). */
  readonly expiresAt?: string;
  /** When it was created (stacks: CreationTime), for its age. */
  readonly createdAt?: string;
  /** Stack status or provisioning state, as reported. */
  readonly state?: string;
  /** A deletion is already under way (DELETE_IN_PROGRESS, Deleting). */
  readonly beingDeleted: boolean;
}

/**
 * What is known of the candidate's run: a status from the results table, `not-recorded` when the table has no such
 * run, or undefined when the table was not read (then expiry alone decides).
 */
export type CleanupRunState = RunStatus | 'not-recorded' | undefined;

/** Reads a run's state (from the results table); the caller brings the I/O. */
export type RunStateLookup = (runId: string) => Promise<CleanupRunState>;

export interface CleanupDecision {
  readonly candidate: CleanupCandidate;
  readonly runState: CleanupRunState;
  readonly delete: boolean;
  readonly reason: string;
  /** Hours since creation, when known. */
  readonly ageHours?: number;
}

const FINISHED: readonly CleanupRunState[] = ['SUCCEEDED', 'FAILED', 'PARTIAL'];

/**
 * The one rule the hourly sweeper and `rmqbench cleanup` share: a cluster is deleted when its expiry tag has passed
 * (unless its run is still RUNNING and its execution may still be running) or when its run has finished (the
 * workflow's own teardown or the failure rule missed it);
 * never while a deletion is under way, never without an expiry tag (not launched by rmqbench), and not while its run
 * is RUNNING or unknown to the table and the expiry is still ahead.
 */
export function decideCleanup(candidate: CleanupCandidate, runState: CleanupRunState, now: Date): CleanupDecision {
  const created = candidate.createdAt === undefined ? Number.NaN : Date.parse(candidate.createdAt);
  const age = Number.isFinite(created) ? { ageHours: (now.getTime() - created) / 3_600_000 } : {};
  const decide = (remove: boolean, reason: string): CleanupDecision => ({
    candidate,
    runState,
    delete: remove,
    reason,
    ...age,
  });
  if (candidate.beingDeleted) return decide(false, `already being deleted (${candidate.state ?? 'deleting'})`);
  const expiry = candidate.expiresAt === undefined ? Number.NaN : Date.parse(candidate.expiresAt);
  if (!Number.isFinite(expiry))
    return decide(false, 'no valid rmqbench:expires-at tag: not launched by an rmqbench controller, left alone');
  if (expiry < now.getTime()) {
    // A run still RUNNING keeps its cluster past the expiry until its execution must have ended: an execution lives at
    // most EXECUTION_TIMEOUT_SECONDS, and it started before the cluster's launch, which is before the expiry. A RUNNING
    // record of an execution that died unrecorded therefore holds a cluster for at most that long.
    const executionEnd = expiry + EXECUTION_TIMEOUT_SECONDS * 1000;
    if (runState === 'RUNNING' && now.getTime() < executionEnd) {
      return decide(
        false,
        `expired at ${candidate.expiresAt}, but its run ${candidate.runId} is RUNNING: ` +
          `kept until ${new Date(executionEnd).toISOString()}, when its execution must have ended`,
      );
    }
    return decide(true, `expired at ${candidate.expiresAt}`);
  }
  if (FINISHED.includes(runState)) return decide(true, `its run ${candidate.runId} finished ${runState}`);
  if (runState === 'RUNNING')
    return decide(false, `its run ${candidate.runId} is RUNNING; expires at ${candidate.expiresAt}`);
  if (runState === 'not-recorded')
    return decide(
      false,
      `its run ${candidate.runId ?? '(no run-id tag)'} is not in the results table; ` +
        `kept until it expires at ${candidate.expiresAt}`,
    );
  return decide(false, `expires at ${candidate.expiresAt}`);
}

/**
 * What the hourly sweeper deletes: the items that expiry alone would delete, less those whose run, read through
 * `runStateOf` for those items only, still keeps them (a run RUNNING while its execution may be running).
 */
export async function sweepable<T>(
  items: readonly T[],
  candidateOf: (item: T) => CleanupCandidate,
  now: Date,
  runStateOf: RunStateLookup = async () => undefined,
): Promise<T[]> {
  const kept: T[] = [];
  for (const item of items) {
    const candidate = candidateOf(item);
    if (!decideCleanup(candidate, undefined, now).delete) continue;
    if (decideCleanup(candidate, candidate.runId ? await runStateOf(candidate.runId) : undefined, now).delete)
      kept.push(item);
  }
  return kept;
}
