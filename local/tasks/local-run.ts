import type { RawRepetition } from '../../core/results/ingest';
import type { ClusterGroup, Plan } from '../../core/plan/plan';
import type { RepetitionRecord, RunRecord } from '../../core/results/result-model';
import { planData, WorkflowSchedule } from '../../state-machines/schedule';
import type { ResultsStore } from '../../store/results-store';
import type { LocalClusterHandle, LocalTarget, StartedRepetition } from '../local-target';
import type { RunEvent } from '../run-events';

/** A PerfTest started by StartRepetition and collected by CheckRepetition. */
export interface PendingRepetition {
  readonly promise: Promise<RawRepetition>;
  /** The started repetition (its verifier and fault), for InjectFault and HealFault. */
  readonly started?: StartedRepetition;
  settled?: { raw?: RawRepetition; error?: unknown };
}

/**
 * The first cluster, started while the store comes up (booting is the slowest local step).
 * LaunchCluster takes it over; if nothing does, `discard` tears it down.
 */
export class Prelaunch {
  private pending: Promise<LocalClusterHandle> | undefined;
  /** When the prelaunch began (Date.now()), so that "cluster ready in" counts the whole boot. */
  readonly startedAt = Date.now();

  constructor(
    private readonly target: LocalTarget,
    group: ClusterGroup,
  ) {
    this.pending = target.prepare().then(() => target.launch(group, 0));
    this.pending.catch(() => undefined);
  }

  /** The prelaunched cluster, once: later calls (and calls after `discard`) get undefined. */
  take(): Promise<LocalClusterHandle> | undefined {
    const taken = this.pending;
    this.pending = undefined;
    return taken;
  }

  async discard(): Promise<void> {
    const unclaimed = await this.take()?.catch(() => undefined);
    if (unclaimed) await this.target.teardown(unclaimed);
  }
}

/** What the local Task implementations share during one run: the clusters, PerfTests in flight, results. */
export class LocalRun {
  readonly handles = new Map<string, LocalClusterHandle>();
  /** By `<clusterId>/<rawKey>`. */
  readonly pending = new Map<string, PendingRepetition>();
  readonly records: RepetitionRecord[] = [];
  /** The status FinishRun or RecordRunFailure recorded. */
  finish: { status: RunRecord['status']; error?: string } | undefined;
  /** The cause the workflow caught first; kept in case recording it fails too (the store went away). */
  firstCause: string | undefined;
  readonly groups: readonly ClusterGroup[];

  constructor(
    readonly plan: Plan,
    readonly target: LocalTarget,
    readonly store: ResultsStore,
    readonly runId: string,
    readonly runDir: string,
    readonly emit: (event: RunEvent) => void,
    readonly prelaunch: Prelaunch,
    groups: readonly ClusterGroup[],
  ) {
    this.groups = groups;
  }

  handleOf(clusterId: string): LocalClusterHandle {
    const handle = this.handles.get(clusterId);
    if (!handle) throw new Error(`cluster ${clusterId} is not running`);
    return handle;
  }

  runRecord(schedule: WorkflowSchedule | undefined): RunRecord {
    return {
      runId: this.runId,
      planName: schedule?.planName ?? this.plan.name,
      plan: planData(this.plan),
      target: 'local',
      status: 'RUNNING',
      startedAt: new Date().toISOString(),
      environment: this.target.environment(),
      scenarioIds: this.plan.scenarios.map((scenario) => scenario.id),
    };
  }

  async recordFailure(error: string): Promise<void> {
    if (!(await this.store.getRun(this.runId))) await this.store.putRun(this.runRecord(undefined));
    await this.store.finishRun(this.runId, 'FAILED', new Date().toISOString(), error);
  }

  /** PerfTest still running against this cluster (a failed poll) ends first, then the nodes stop. */
  async teardown(clusterId: string): Promise<void> {
    for (const [key, repetition] of this.pending) {
      if (key.startsWith(`${clusterId}/`)) {
        await repetition.promise.catch(() => undefined);
        this.pending.delete(key);
      }
    }
    const handle = this.handles.get(clusterId);
    if (handle) {
      await this.target.teardown(handle);
      this.handles.delete(clusterId);
    }
  }

  /** The local counterpart of the cloud's failure rule: whatever the execution left, tear it down. */
  async tearDownEverything(): Promise<void> {
    await this.prelaunch.discard();
    for (const clusterId of new Set([
      ...this.handles.keys(),
      ...[...this.pending.keys()].map((key) => key.split('/')[0]!),
    ])) {
      await this.teardown(clusterId).catch(() => undefined);
    }
  }
}
