import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { ingestRepetition, RawRepetition } from '../core/ingest';
import { groupScenariosByCluster } from '../core/plan';
import type { RepetitionRecord, RunRecord } from '../core/result-model';
import { smokeTest } from '../lambdas/smoke-test/logic';
import { buildBenchmarkDefinition, resolveResources } from '../state-machines/definition';
import { CaughtError, ClusterResult, describeCaught, firstClusterFailure, runStatus } from '../state-machines/run-outcome';
import { buildSchedule, planData, ScheduledCluster, ScheduledRepetition, WorkflowInput, WorkflowSchedule } from '../state-machines/schedule';
import { FAULT_INJECTABLE_STATES, STATE, TaskStateName } from '../state-machines/states';
import type { ResultsStore } from '../store/results-store';
import type { LocalClusterHandle } from './local-target';
import type { RunOutcome, RunPlanOptions } from './run-plan';

// aws-local-stepfunctions uses Promise.withResolvers (Node >= 22); the package asks for Node 22, but a
// user on Node 20 would otherwise see every state fail with "Promise.withResolvers is not a function".
const promiseStatics = Promise as unknown as { withResolvers?: () => unknown };
promiseStatics.withResolvers ??= () => {
  let resolve: unknown;
  let reject: unknown;
  const promise = new Promise((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
};

export interface WorkflowRunOptions extends RunPlanOptions {
  /** Makes this Task state fail (fault injection, `rmqbench run --fail-at <State>`). */
  readonly failAt?: string;
  /** Cluster configurations at the same time. @default 1 (a laptop has few cores) */
  readonly maxConcurrency?: number;
  /** Milliseconds between two polls of a running PerfTest. @default 250 */
  readonly pollMs?: number;
}

/** A fault injected by `--fail-at`: the state fails as a broken cloud call would. */
export class FaultInjectedError extends Error {
  constructor(readonly state: string) {
    super(`fault injected at ${state} (--fail-at ${state})`);
    this.name = 'FaultInjected';
  }
}

/** `State` fails every time the state runs; `State:N` only its N-th run (e.g. the second repetition). */
export function parseFailAt(failAt: string | undefined): { state: string; occurrence?: number } | undefined {
  if (failAt === undefined) return undefined;
  const match = /^([A-Za-z]+)(?::([1-9]\d*))?$/.exec(failAt);
  if (!match || !(FAULT_INJECTABLE_STATES as readonly string[]).includes(match[1]!)) {
    throw new Error(`--fail-at must name a Task state of the workflow, optionally with :N for its N-th run: ${FAULT_INJECTABLE_STATES.join(', ')} (got "${failAt}")`);
  }
  return match[2] ? { state: match[1]!, occurrence: Number(match[2]) } : { state: match[1]! };
}

type Json = Parameters<StateMachine['run']>[0];
type Handler = (input: never) => Promise<unknown>;

interface PendingRepetition {
  readonly promise: Promise<RawRepetition>;
  settled?: { raw?: RawRepetition; error?: unknown };
}

/**
 * Runs a plan on the local target by executing the very workflow definition the BenchmarkController
 * deploys, with aws-local-stepfunctions and each Task state mapped to the local implementation:
 * launch = start local nodes, start/check repetition = PerfTest, ingest = the shared ingest into
 * DynamoDB (Local), teardown = stop the nodes. Same store writes, events and run folder as `runPlan`.
 */
export async function runPlanWorkflow(options: WorkflowRunOptions): Promise<RunOutcome> {
  const { plan, target, runId, runDir } = options;
  const failAt = parseFailAt(options.failAt);
  const emit = options.onEvent ?? (() => undefined);
  mkdirSync(runDir, { recursive: true });
  const groups = groupScenariosByCluster(plan);
  // Booting a cluster is the slowest local step: start the first one while the store comes up.
  // LaunchCluster takes it over; whatever path the execution takes, the finally block tears it down.
  let prelaunch: Promise<LocalClusterHandle> | undefined = target.prepare().then(() => target.launch(groups[0]!, 0));
  prelaunch.catch(() => undefined);
  const takePrelaunched = (): Promise<LocalClusterHandle> | undefined => {
    const taken = prelaunch;
    prelaunch = undefined;
    return taken;
  };
  const tearDownUnclaimed = async (): Promise<void> => {
    const unclaimed = await takePrelaunched()?.catch(() => undefined);
    if (unclaimed) await target.teardown(unclaimed);
  };
  let store: ResultsStore;
  try {
    store = await options.store;
  } catch (error) {
    await tearDownUnclaimed();
    throw error;
  }

  const handles = new Map<string, LocalClusterHandle>();
  const pending = new Map<string, PendingRepetition>();
  const records: RepetitionRecord[] = [];
  let finish: { status: RunRecord['status']; error?: string } | undefined;
  /** The cause the workflow caught first; kept in case recording it fails too (the store went away). */
  let firstCause: string | undefined;

  const teardown = async (clusterId: string): Promise<void> => {
    // PerfTest still running against this cluster (a failed poll) ends first, then the nodes stop.
    for (const [key, repetition] of pending) {
      if (key.startsWith(`${clusterId}/`)) {
        await repetition.promise.catch(() => undefined);
        pending.delete(key);
      }
    }
    const handle = handles.get(clusterId);
    if (handle) {
      await target.teardown(handle);
      handles.delete(clusterId);
    }
  };

  const handlers: Record<TaskStateName, Handler> = {
    [STATE.validatePlan]: async (input: { input: WorkflowInput; executionName: string }) => buildSchedule(input.input, input.executionName),
    [STATE.recordRunStart]: async (input: { state: WorkflowSchedule }) => {
      const run = runRecord(input.state);
      writeFileSync(join(runDir, 'run.json'), `${JSON.stringify(run, null, 2)}\n`);
      await store.putRun(run);
      emit({ type: 'run-started', runId, runDir, plannedSeconds: input.state.plannedSeconds });
      return {};
    },
    [STATE.launchCluster]: async (input: { cluster: ScheduledCluster }) => {
      const group = groups[input.cluster.index]!;
      emit({ type: 'cluster-starting', nodes: group.nodes, topology: group.topology.type });
      const started = Date.now();
      const prelaunched = input.cluster.index === 0 ? takePrelaunched() : undefined;
      handles.set(input.cluster.clusterId, await (prelaunched ?? target.launch(group, input.cluster.index)));
      emit({ type: 'cluster-ready', seconds: (Date.now() - started) / 1000 });
      return { clusterId: input.cluster.clusterId, readyBy: new Date(Date.now() + 600_000).toISOString() };
    },
    // The local launch returns once the cluster has formed, so the first poll finds it ready.
    [STATE.checkClusterReady]: async (input: { launch: { clusterId: string } }) => {
      if (!handles.has(input.launch.clusterId)) throw new Error(`cluster ${input.launch.clusterId} is not running`);
      return { ready: true };
    },
    [STATE.smokeTest]: async (input: { launch: { clusterId: string } }) => {
      const { cluster } = handleOf(input.launch.clusterId);
      return smokeTest(cluster.amqpUri(cluster.nodes[0]!));
    },
    [STATE.startRepetition]: async (input: { launch: { clusterId: string }; item: ScheduledRepetition }) => {
      const { item } = input;
      const handle = handleOf(input.launch.clusterId);
      const scenario = plan.scenarios.find((candidate) => candidate.id === item.scenarioId);
      if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in plan ${plan.name}`);
      emit({
        type: 'repetition-started',
        scenarioId: item.scenarioId,
        repetition: item.repetition,
        repetitions: item.repetitions,
        index: item.index,
        total: item.total,
        durationSeconds: item.durationSeconds,
        remainingPlannedSeconds: item.remainingPlannedSeconds,
      });
      const entry: PendingRepetition = {
        promise: target.runRepetition(handle, runId, scenario, item.repetition, (progress) => emit({ type: 'progress', progress })),
      };
      entry.promise.then(
        (raw) => (entry.settled = { raw }),
        (error: unknown) => (entry.settled = { error }),
      );
      pending.set(`${input.launch.clusterId}/${item.rawKey}`, entry);
      return { startedAt: new Date().toISOString() };
    },
    [STATE.checkRepetition]: async (input: { launch: { clusterId: string }; item: ScheduledRepetition }) => {
      const key = `${input.launch.clusterId}/${input.item.rawKey}`;
      const entry = pending.get(key);
      if (!entry) throw new Error(`no PerfTest was started for ${input.item.scenarioId} #${input.item.repetition}`);
      if (!entry.settled) return { done: false };
      pending.delete(key);
      if (entry.settled.error !== undefined) throw entry.settled.error;
      // The local stand-in for the S3 object the cloud load generator uploads.
      const dir = join(runDir, 'ingest');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, input.item.rawKey), JSON.stringify(entry.settled.raw));
      return { done: true, rawKey: input.item.rawKey };
    },
    [STATE.ingestRepetition]: async (input: { item: ScheduledRepetition; check: { rawKey: string } }) => {
      const raw = JSON.parse(readFileSync(join(runDir, 'ingest', input.check.rawKey), 'utf8')) as RawRepetition;
      const record = ingestRepetition(raw);
      await store.putRepetition(record);
      records.push(record);
      emit({ type: 'repetition-finished', record });
      if (input.item.pauseSeconds > 0) emit({ type: 'pause', seconds: input.item.pauseSeconds });
      return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
    },
    [STATE.teardownCluster]: async (input: { cluster: ScheduledCluster }) => {
      await teardown(input.cluster.clusterId);
      return {};
    },
    [STATE.finishRun]: async (input: { state: WorkflowSchedule & { clusterResults?: ClusterResult[] } }) => {
      const clusterFailure = firstClusterFailure(input.state.clusterResults);
      firstCause ??= clusterFailure;
      const stored = await store.getRun(runId);
      const outcome = runStatus(clusterFailure, stored?.repetitions ?? [], input.state.totalRepetitions);
      await store.finishRun(runId, outcome.status, new Date().toISOString(), outcome.error);
      finish = outcome;
      return outcome;
    },
    [STATE.recordRunFailure]: async (input: { state: { error?: CaughtError } & Partial<WorkflowSchedule> }) => {
      const error = describeCaught(input.state.error);
      firstCause ??= error;
      await recordFailure(store, error);
      finish = { status: 'FAILED', error };
      return finish;
    },
  };

  const recordFailure = async (into: ResultsStore, error: string): Promise<void> => {
    if (!(await into.getRun(runId))) await into.putRun(runRecord(undefined));
    await into.finishRun(runId, 'FAILED', new Date().toISOString(), error);
  };

  const runRecord = (schedule: WorkflowSchedule | undefined): RunRecord => ({
    runId,
    planName: schedule?.planName ?? plan.name,
    plan: planData(plan),
    target: 'local',
    status: 'RUNNING',
    startedAt: new Date().toISOString(),
    environment: target.environment(),
    scenarioIds: plan.scenarios.map((scenario) => scenario.id),
  });

  const handleOf = (clusterId: string): LocalClusterHandle => {
    const handle = handles.get(clusterId);
    if (!handle) throw new Error(`cluster ${clusterId} is not running`);
    return handle;
  };

  const definition = resolveResources(buildBenchmarkDefinition({ maxConcurrency: options.maxConcurrency ?? 1 }));
  const machine = new StateMachine(definition as unknown as StateMachineDefinition);
  const input: WorkflowInput = { plan: planData(plan), target: 'local', runId };
  const entries = new Map<string, number>();
  const taskResourceLocalHandlers = Object.fromEntries(
    Object.entries(handlers).map(([state, handler]) => [
      state,
      async (payload: unknown) => {
        const entry = (entries.get(state) ?? 0) + 1;
        entries.set(state, entry);
        if (failAt?.state === state && (failAt.occurrence === undefined || failAt.occurrence === entry)) throw new FaultInjectedError(state);
        return (await handler(payload as never)) as Json;
      },
    ]),
  );
  const pollMs = options.pollMs ?? 250;
  let executionError: string | undefined;
  try {
    await machine.run(input as unknown as Json, {
      context: { Execution: { Input: input as unknown as Json, Name: runId, Id: `local:${runId}`, StartTime: new Date().toISOString() } },
      overrides: {
        taskResourceLocalHandlers,
        waitTimeOverrides: { [STATE.waitForRepetition]: pollMs, [STATE.waitForCluster]: pollMs },
        retryIntervalOverrides: { [STATE.teardownCluster]: 100 },
      },
    }).result;
  } catch (error) {
    executionError = describeExecutionError(error);
  } finally {
    await tearDownUnclaimed();
    // The local counterpart of the cloud's failure rule: whatever the execution left, tear it down.
    for (const clusterId of new Set([...handles.keys(), ...[...pending.keys()].map((key) => key.split('/')[0]!)])) {
      await teardown(clusterId).catch(() => undefined);
    }
  }
  if (executionError !== undefined && finish?.status !== 'FAILED') {
    // The failure was not recorded by the workflow (RecordRunFailure itself failed): record it now.
    const error = finish?.error ?? firstCause ?? executionError;
    finish = { status: 'FAILED', error };
    try {
      await recordFailure(store, error);
    } catch (storeError) {
      const message = storeError instanceof Error ? storeError.message : String(storeError);
      return { runId, status: 'FAILED', records, error: `${error}; also ${message} (raw output kept in ${runDir}; store it later with: rmqbench ingest ${runDir})` };
    }
  }
  if (!finish) return { runId, status: 'FAILED', records, error: executionError ?? 'the workflow ended without a run status' };
  return { runId, status: finish.status, records, ...(finish.error ? { error: finish.error } : {}) };
}

function describeExecutionError(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}
