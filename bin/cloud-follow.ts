import { groupScenariosByCluster, validatePlan } from '../core/plan/plan';
import type { Broker } from '../core/kafka/kafka-plan';
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
  const { schedule } = options;
  const pollMs = options.pollMs ?? 10_000;
  const progress = new FollowProgress(schedule, options.onEvent, options.now ?? Date.now);
  for (;;) {
    // The status first, the table second: once the execution has ended, this read sees everything it stored.
    const execution = await options.sfn.send(new DescribeExecutionCommand({ executionArn: options.executionArn }));
    const status = execution.status ?? 'RUNNING';
    const stored = await options.store.getRun(schedule.runId);
    const byKey = new Map<string, StoredRepetition>(
      (stored?.repetitions ?? []).map((rep) => [repetitionKey(rep.scenarioId, rep.repetition), rep]),
    );
    // Clusters run in parallel up to the definition's maxConcurrency, so each is looked at on every poll.
    for (const [position, cluster] of schedule.clusters.entries())
      await followCluster(progress, options, { position, cluster, byKey, status });

    if (status !== 'RUNNING' && status !== 'PENDING_REDRIVE') {
      const error = [execution.error, execution.cause].filter(Boolean).join(': ');
      return { status, ...(stored ? { stored } : {}), ...(error ? { error } : {}) };
    }
    if (options.signal?.aborted) return { status, ...(stored ? { stored } : {}) };
    await pollInterval(pollMs, options.signal);
    if (options.signal?.aborted) return { status, ...(stored ? { stored } : {}) };
  }
}

/** What a followed run has announced so far: repetitions seen and started, clusters starting and ready. */
class FollowProgress {
  readonly seen = new Set<string>();
  private readonly started = new Map<string, number>();
  private readonly clustersStarted = new Map<number, number>();
  private readonly clustersReady = new Set<number>();

  constructor(
    private readonly schedule: WorkflowSchedule,
    readonly onEvent: (event: RunEvent) => void,
    private readonly now: () => number,
  ) {}

  isSeen(rep: ScheduledRepetition): boolean {
    return this.seen.has(repetitionKey(rep.scenarioId, rep.repetition));
  }

  isReady(index: number): boolean {
    return this.clustersReady.has(index);
  }

  announce(repetition: ScheduledRepetition): void {
    const key = repetitionKey(repetition.scenarioId, repetition.repetition);
    if (this.started.has(key)) return;
    this.started.set(key, this.now());
    const {
      scenarioId,
      repetition: number,
      repetitions,
      index,
      total,
      durationSeconds,
      remainingPlannedSeconds,
    } = repetition;
    this.onEvent({
      type: 'repetition-started',
      scenarioId,
      repetition: number,
      repetitions,
      index,
      total,
      durationSeconds,
      remainingPlannedSeconds,
    });
  }

  /** Seconds since the repetition was announced. */
  elapsedSeconds(rep: ScheduledRepetition): number {
    return (this.now() - this.started.get(repetitionKey(rep.scenarioId, rep.repetition))!) / 1000;
  }

  clusterStarting(index: number): void {
    if (this.clustersStarted.has(index)) return;
    this.clustersStarted.set(index, this.now());
    const cluster = this.schedule.clusters[index]!;
    const broker = this.brokerOf(index);
    this.onEvent({
      type: 'cluster-starting',
      nodes: cluster.nodes,
      topology: cluster.topology,
      ...(broker === undefined ? {} : { broker }),
    });
  }

  /**
   * The broker of the schedule's cluster `index` (buildSchedule numbers groupScenariosByCluster's groups in order), so
   * that a Kafka or NATS cluster is announced as one; undefined when the plan no longer validates here.
   */
  private brokerOf(index: number): Broker | undefined {
    try {
      return groupScenariosByCluster(validatePlan(this.schedule.plan, 'the run'))[index]?.broker;
    } catch {
      return undefined;
    }
  }

  clusterIsReady(index: number): void {
    if (this.clustersReady.has(index)) return;
    this.clusterStarting(index);
    this.clustersReady.add(index);
    this.onEvent({ type: 'cluster-ready', seconds: (this.now() - this.clustersStarted.get(index)!) / 1000 });
  }
}

/** One poll of one cluster: its newly stored repetitions in plan order, then the one running or the cluster's state. */
async function followCluster(
  progress: FollowProgress,
  options: FollowOptions,
  poll: {
    position: number;
    cluster: WorkflowSchedule['clusters'][number];
    byKey: Map<string, StoredRepetition>;
    status: ExecutionStatus;
  },
): Promise<void> {
  const { position, cluster, byKey, status } = poll;
  const pending = cluster.repetitions.filter((rep) => !progress.isSeen(rep));
  if (pending.length === 0) return;
  // Report what was stored in plan order; a cluster with a stored repetition was evidently ready.
  for (const rep of pending) {
    const record = byKey.get(repetitionKey(rep.scenarioId, rep.repetition));
    if (!record) break;
    progress.clusterIsReady(cluster.index);
    progress.announce(rep);
    progress.seen.add(repetitionKey(rep.scenarioId, rep.repetition));
    progress.onEvent({ type: 'repetition-finished', record: record as RepetitionRecord });
    const more = cluster.repetitions.some((next) => !progress.isSeen(next));
    if (rep.pauseSeconds > 0 && more && status === 'RUNNING')
      progress.onEvent({ type: 'pause', seconds: rep.pauseSeconds });
  }
  const next = cluster.repetitions.find((rep) => !progress.isSeen(rep));
  if (!next || status !== 'RUNNING' || progress.isReady(cluster.index)) {
    if (next && status === 'RUNNING') {
      progress.announce(next);
      progress.onEvent({ type: 'running', elapsedSeconds: progress.elapsedSeconds(next) });
    }
    return;
  }
  const state = options.clusterReady ? await options.clusterReady(cluster.clusterId) : undefined;
  // The first cluster is launching from the start (ValidatePlan, RecordRunStart, LaunchCluster come first); later
  // ones wait for a free Map slot, so they are announced when their stack appears.
  if (state === 'launching' || (state !== 'ready' && position === 0)) progress.clusterStarting(cluster.index);
  if (state === 'ready') {
    progress.clusterIsReady(cluster.index);
    progress.announce(next);
  }
}
