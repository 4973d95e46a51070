import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  decideCleanup,
  type CleanupCandidate,
  type CleanupDecision,
  type CleanupRunState,
} from '../core/cloud/cleanup';
import { controllerStacks, deleteStack, stackCandidate } from '../lambdas/shared/aws-cluster';
import type { AzureClients } from '../lambdas/shared/azure-cluster';
import type { ResultsStore } from '../store/results-store';

/** Name prefix of every cluster a controller launches (state-machines/schedule.ts clusterIdFor). */
export const CLUSTER_PREFIX = 'rmqbench-';

export interface CleanupOutcome {
  readonly decisions: readonly CleanupDecision[];
  /** Names whose deletion was started (none with --dry-run). */
  readonly deleted: readonly string[];
  /** Why run states are unknown (no results table could be read): then only expiry decides, as in the sweeper. */
  readonly note?: string;
}

/** Each candidate's run state from the results table (undefined for all when there is no table). */
async function withRunStates(
  candidates: readonly CleanupCandidate[],
  store: Pick<ResultsStore, 'getRun'> | undefined,
  now: Date,
): Promise<CleanupDecision[]> {
  const states = new Map<string, CleanupRunState>();
  const decisions: CleanupDecision[] = [];
  for (const candidate of candidates) {
    let state: CleanupRunState;
    if (store && candidate.runId) {
      if (!states.has(candidate.runId))
        states.set(candidate.runId, (await store.getRun(candidate.runId))?.run.status ?? 'not-recorded');
      state = states.get(candidate.runId);
    }
    decisions.push(decideCleanup(candidate, state, now));
  }
  return decisions;
}

/**
 * `rmqbench cleanup --target aws [--dry-run]`: every rmqbench cluster stack, deleted when expired or its run finished.
 */
export async function cleanupAws(
  cfn: CloudFormationClient,
  store: Pick<ResultsStore, 'getRun'> | undefined,
  options: { dryRun: boolean; now?: Date; note?: string },
): Promise<CleanupOutcome> {
  const candidates = (await controllerStacks(cfn, CLUSTER_PREFIX)).map(stackCandidate);
  const decisions = await withRunStates(candidates, store, options.now ?? new Date());
  const deleted: string[] = [];
  for (const decision of decisions.filter((candidate) => candidate.delete)) {
    if (!options.dryRun) await deleteStack(cfn, undefined, decision.candidate.name);
    if (!options.dryRun) deleted.push(decision.candidate.name);
  }
  return { decisions, deleted, ...(options.note ? { note: options.note } : {}) };
}

/**
 * `rmqbench cleanup --target azure [--dry-run]`: every rmqbench resource group, deleted when expired or its run
 * finished.
 */
export async function cleanupAzure(
  azure: AzureClients,
  store: Pick<ResultsStore, 'getRun'> | undefined,
  options: { dryRun: boolean; now?: Date; note?: string; waitMs?: number; updateIntervalInMs?: number },
): Promise<CleanupOutcome> {
  const { controllerResourceGroups } = await import('../lambdas/shared/azure-cluster');
  const { deleteGroups } = await import('../lambdas/failure-handler/logic');
  const candidates = await controllerResourceGroups(azure, CLUSTER_PREFIX);
  const decisions = await withRunStates(candidates, store, options.now ?? new Date());
  const names = decisions.filter((decision) => decision.delete).map((decision) => decision.candidate.name);
  // ARM finishes a deletion it has accepted; a few seconds of polling per group, like the failure handler.
  const deleted = options.dryRun
    ? []
    : await deleteGroups(azure, names, options.waitMs ?? 5_000, options.updateIntervalInMs);
  return { decisions, deleted, ...(options.note ? { note: options.note } : {}) };
}

const hours = (value: number | undefined) =>
  value === undefined ? '—' : value >= 48 ? `${(value / 24).toFixed(1)} d` : `${value.toFixed(1)} h`;

export function formatCleanup(outcome: CleanupOutcome, dryRun: boolean, json: boolean): string {
  if (json) return `${JSON.stringify({ dryRun, ...outcome }, null, 2)}\n`;
  const lines: string[] = [];
  if (outcome.note) lines.push(outcome.note, '');
  if (outcome.decisions.length === 0) lines.push('no rmqbench clusters found');
  for (const { candidate, runState, delete: remove, reason, ageHours } of outcome.decisions) {
    const verb = remove ? (dryRun ? 'would delete' : 'deleting') : 'keeping';
    lines.push(
      `${verb.padEnd(12)} ${candidate.kind} ${candidate.name}  run ${candidate.runId ?? '—'} ` +
        `(${runState ?? 'not read'}), age ${hours(ageHours)}, expires ${candidate.expiresAt ?? '—'}: ${reason}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
