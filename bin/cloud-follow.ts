import { DescribeExecutionCommand, type ExecutionStatus, type SFNClient } from '@aws-sdk/client-sfn';
import type { StoredRepetition } from '../core/results/result-items';
import type { RepetitionRecord } from '../core/results/result-model';
import type { RunEvent } from '../local/run-events';
import type { ScheduledRepetition, WorkflowSchedule } from '../state-machines/schedule';
import type { ResultsStore, StoredRun } from '../store/results-store';

/**
 * Where a cluster is (AWS: from its stack's status): not launched (or already deleted), launching, or ready;
 * undefined when the CLI cannot tell (Azure: the ARM credentials live in the controller's secret, not with the user).
 */
export type ClusterReadiness = (clusterId: string) => Promise<'absent' | 'launching' | 'ready' | undefined>;

export interface FollowOptions {
  readonly sfn: SFNClient;
  readonly store: Pick<ResultsStore, 'getRun'>;
  readonly executionArn: string;
  /** The run as ValidatePlan lays it out (buildSchedule of the same input and execution name). */
  readonly schedule: WorkflowSchedule;
  readonly onEvent: (event: RunEvent) => void;
  readonly clusterReady?: ClusterReadiness;
  /** Between polls. @default 10000 */
  readonly pollMs?: number;
  /** Stops following (Ctrl-C); the result then has status RUNNING. */
  readonly signal?: AbortSignal;
  /** @default Date.now */
  readonly now?: () => number;
}

export interface FollowResult {
  /** The execution's status when following ended: RUNNING only when `signal` stopped it. */
  readonly status: ExecutionStatus;
  readonly stored?: StoredRun;
  /** The execution's error and cause (DescribeExecution) when it did not succeed. */
  readonly error?: string;
}

const repetitionKey = (scenarioId: string, repetition: number) => `${scenarioId}#${repetition}`;

/** Waits `ms` between two polls, or less when `signal` aborts. */
function pollInterval(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/**
 * Follows a cloud execution to its end and reports it as the same RunEvents a local run emits: DescribeExecution
 * for the status (https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeExecution.html) and
 * the results table for what the workflow has stored (the run record from RecordRunStart, each repetition with its
 * summary and per-second samples from IngestRepetition). A repetition is announced when its cluster is ready
 * and the one before it is stored; its msg/s are shown once IngestRepetition has stored it.
 */
export async function followExecution(options: FollowOptions): Promise<FollowResult> {
  const { schedule, onEvent } = options;
  const now = options.now ?? Date.now;
  const pollMs = options.pollMs ?? 10_000;
  const seen = new Set<string>();
  const started = new Map<string, number>();
  const clustersStarted = new Map<number, number>();
  const clustersReady = new Set<number>();

  const announce = (repetition: ScheduledRepetition) => {
    const key = repetitionKey(repetition.scenarioId, repetition.repetition);
    if (started.has(key)) return;
    started.set(key, now());
    const {
      scenarioId,
      repetition: number,
      repetitions,
      index,
      total,
      durationSeconds,
      remainingPlannedSeconds,
    } = repetition;
    onEvent({
      type: 'repetition-started',
      scenarioId,
      repetition: number,
      repetitions,
      index,
      total,
      durationSeconds,
      remainingPlannedSeconds,
    });
  };
  const clusterStarting = (index: number) => {
    if (clustersStarted.has(index)) return;
    clustersStarted.set(index, now());
    const cluster = schedule.clusters[index]!;
    onEvent({ type: 'cluster-starting', nodes: cluster.nodes, topology: cluster.topology });
  };
  const clusterIsReady = (index: number) => {
    if (clustersReady.has(index)) return;
    clusterStarting(index);
    clustersReady.add(index);
    onEvent({ type: 'cluster-ready', seconds: (now() - clustersStarted.get(index)!) / 1000 });
  };

  for (;;) {
    // The status first, the table second: once the execution has ended, this read sees everything it stored.
    const execution = await options.sfn.send(new DescribeExecutionCommand({ executionArn: options.executionArn }));
    const status = execution.status ?? 'RUNNING';
    const stored = await options.store.getRun(schedule.runId);
    const byKey = new Map<string, StoredRepetition>(
      (stored?.repetitions ?? []).map((rep) => [repetitionKey(rep.scenarioId, rep.repetition), rep]),
    );

    // Clusters run in parallel up to the definition's maxConcurrency, so each is looked at on every poll.
    for (const [position, cluster] of schedule.clusters.entries()) {
      const pending = cluster.repetitions.filter((rep) => !seen.has(repetitionKey(rep.scenarioId, rep.repetition)));
      if (pending.length === 0) continue;
      // Report what was stored in plan order; a cluster with a stored repetition was evidently ready.
      for (const rep of pending) {
        const record = byKey.get(repetitionKey(rep.scenarioId, rep.repetition));
        if (!record) break;
        clusterIsReady(cluster.index);
        announce(rep);
        seen.add(repetitionKey(rep.scenarioId, rep.repetition));
        onEvent({ type: 'repetition-finished', record: record as RepetitionRecord });
        const more = cluster.repetitions.some((next) => !seen.has(repetitionKey(next.scenarioId, next.repetition)));
        if (rep.pauseSeconds > 0 && more && status === 'RUNNING') onEvent({ type: 'pause', seconds: rep.pauseSeconds });
      }
      const next = cluster.repetitions.find((rep) => !seen.has(repetitionKey(rep.scenarioId, rep.repetition)));
      if (!next || status !== 'RUNNING' || clustersReady.has(cluster.index)) {
        if (next && status === 'RUNNING') {
          announce(next);
          onEvent({
            type: 'running',
            elapsedSeconds: (now() - started.get(repetitionKey(next.scenarioId, next.repetition))!) / 1000,
          });
        }
        continue;
      }
      const state = options.clusterReady ? await options.clusterReady(cluster.clusterId) : undefined;
      // The first cluster is launching from the start (ValidatePlan, RecordRunStart, LaunchCluster come first); later
      // ones wait for a free Map slot, so they are announced when their stack appears.
      if (state === 'launching' || (state !== 'ready' && position === 0)) clusterStarting(cluster.index);
      if (state === 'ready') {
        clusterIsReady(cluster.index);
        announce(next);
      }
    }

    if (status !== 'RUNNING' && status !== 'PENDING_REDRIVE') {
      const error = [execution.error, execution.cause].filter(Boolean).join(': ');
      return { status, ...(stored ? { stored } : {}), ...(error ? { error } : {}) };
    }
    if (options.signal?.aborted) return { status, ...(stored ? { stored } : {}) };
    await pollInterval(pollMs, options.signal);
    if (options.signal?.aborted) return { status, ...(stored ? { stored } : {}) };
  }
}
