/**
 * bench:workflow: how much the workflow itself costs in time and in billed cluster time.
 *
 * Executes the very definition the BenchmarkController deploys (aws-local-stepfunctions) for a
 * plan of K cluster configurations, with Task handlers that stand in for the cloud: LaunchCluster
 * returns at once (like CreateStack) and CheckClusterReady reports ready once the configuration's
 * recorded provisioning time has passed; CheckRepetition reports done once PerfTest's duration has
 * passed; TeardownCluster lasts the recorded deletion time. Recorded latencies are scaled down
 * (1 min → 100 ms), and so are the definition's polling intervals, so that polling costs what it
 * would in the cloud.
 *
 * Prints total time ÷ the slowest configuration's own time (target ≤ 1.2) and billed
 * cluster-minutes ÷ their minimum (target ≤ 1.1). Billed time of a configuration: from the start of
 * its launch to the end of its teardown. Usage: node dist/bench/workflow.js [K] (default 4).
 */
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { buildBenchmarkDefinition, resolveResources } from '../state-machines/definition';
import { buildSchedule, ScheduledCluster, ScheduledRepetition, WorkflowInput } from '../state-machines/schedule';
import { STATE, TaskStateName } from '../state-machines/states';

/** Milliseconds one simulated minute lasts. */
const MS_PER_MINUTE = 100;
const scaledMs = (seconds: number) => (seconds / 60) * MS_PER_MINUTE;

/** Latencies recorded on AWS (rounded): stack creation 6-9 min by node count, PerfTest 60 s, stack deletion 3 min. */
const RECORDED = {
  provisioningMinutes: { min: 6, max: 9 },
  perfTestSeconds: 60,
  repetitions: 3,
  pauseSeconds: 10,
  teardownMinutes: 3,
  smokeTestSeconds: 2,
};
/** The definition's polling intervals (its defaults). */
const POLL = { clusterSeconds: 30, repetitionSeconds: 15 };
/** Node counts the controller ships templates for × three queue types: up to 9 distinct configurations. */
const NODE_COUNTS = [1, 3, 5] as const;
const TOPOLOGIES = ['quorum', 'classic', 'stream'] as const;
const MAX_CONFIGS = NODE_COUNTS.length * TOPOLOGIES.length;

type Json = Parameters<StateMachine['run']>[0];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** K distinct cluster configurations (node count × topology), one workload. */
function benchPlan(k: number): unknown {
  const clusters = Array.from({ length: k }, (_, index) => {
    const nodes = NODE_COUNTS[index % NODE_COUNTS.length]!;
    const type = TOPOLOGIES[Math.floor(index / NODE_COUNTS.length)]!;
    return { name: `config-${index + 1}`, nodes, topology: { type }, connection: 'lb', instanceType: 'c5.xlarge' };
  });
  return {
    name: 'bench-workflow',
    repetitions: RECORDED.repetitions,
    pauseSecondsBetweenRepetitions: RECORDED.pauseSeconds,
    clusters,
    workloads: [
      {
        name: 'w',
        producers: 1,
        consumers: 1,
        queues: 1,
        messageSizeBytes: 1000,
        durationSeconds: RECORDED.perfTestSeconds,
      },
    ],
  };
}

/** A configuration's provisioning time: spread evenly over the recorded range. */
function provisioningMinutes(index: number, k: number): number {
  const { min, max } = RECORDED.provisioningMinutes;
  return k === 1 ? max : min + ((max - min) * index) / (k - 1);
}

/**
 * What a configuration cannot avoid: provisioning, smoke test, its repetitions and pauses, teardown (simulated
 * minutes).
 */
function minimumMinutes(cluster: ScheduledCluster, k: number): number {
  const repetitions = cluster.repetitions.reduce((sum, item) => sum + item.durationSeconds + item.pauseSeconds, 0);
  return (
    provisioningMinutes(cluster.index, k) + (RECORDED.smokeTestSeconds + repetitions) / 60 + RECORDED.teardownMinutes
  );
}

async function main(): Promise<void> {
  const k = Number(process.argv[2] ?? 4);
  if (!Number.isInteger(k) || k < 1 || k > MAX_CONFIGS)
    throw new Error(
      `K (the number of cluster configurations) must be an integer from 1 to ${MAX_CONFIGS} (got ${process.argv[2]})`,
    );
  const input: WorkflowInput = { plan: benchPlan(k), target: 'aws', runId: 'bench-workflow' };
  const clusters = buildSchedule(input, 'bench').clusters;
  if (clusters.length !== k)
    throw new Error(`the bench plan has ${clusters.length} cluster configurations instead of ${k}`);

  const launchedAt = new Map<string, number>();
  const tornDownAt = new Map<string, number>();
  const repetitionDoneAt = new Map<string, number>();
  const handlers: Record<TaskStateName, (input: never) => Promise<unknown>> = {
    [STATE.validatePlan]: async (event: { input: WorkflowInput; executionName: string }) =>
      buildSchedule(event.input, event.executionName),
    [STATE.recordRunStart]: async () => ({}),
    [STATE.launchCluster]: async (event: { cluster: ScheduledCluster }) => {
      launchedAt.set(event.cluster.clusterId, Date.now());
      return { clusterId: event.cluster.clusterId, readyBy: new Date(Date.now() + 3_600_000).toISOString() };
    },
    [STATE.checkClusterReady]: async (event: { cluster: ScheduledCluster }) => {
      const readyAt =
        launchedAt.get(event.cluster.clusterId)! + provisioningMinutes(event.cluster.index, k) * MS_PER_MINUTE;
      return { ready: Date.now() >= readyAt, outputs: {} };
    },
    [STATE.smokeTest]: async () => sleep(scaledMs(RECORDED.smokeTestSeconds)).then(() => ({ roundTripMs: 1 })),
    [STATE.startRepetition]: async (event: { launch: { clusterId: string }; item: ScheduledRepetition }) => {
      repetitionDoneAt.set(
        `${event.launch.clusterId}/${event.item.rawKey}`,
        Date.now() + scaledMs(event.item.durationSeconds),
      );
      return { startedAt: new Date().toISOString() };
    },
    // The plan has no fault, so the fault states are never entered.
    [STATE.injectFault]: async () => {
      throw new Error('InjectFault entered for a plan without a fault');
    },
    [STATE.healFault]: async () => {
      throw new Error('HealFault entered for a plan without a fault');
    },
    // The bench plan has a plain number of repetitions, so CheckSettled is never entered.
    [STATE.checkSettled]: async () => {
      throw new Error('CheckSettled entered for a plan without adaptive repetitions');
    },
    [STATE.checkRepetition]: async (event: { launch: { clusterId: string }; item: ScheduledRepetition }) => ({
      done: Date.now() >= repetitionDoneAt.get(`${event.launch.clusterId}/${event.item.rawKey}`)!,
      rawKey: event.item.rawKey,
    }),
    [STATE.ingestRepetition]: async (event: { item: ScheduledRepetition }) => ({
      scenarioId: event.item.scenarioId,
      repetition: event.item.repetition,
      status: 'SUCCEEDED',
    }),
    [STATE.teardownCluster]: async (event: { cluster: ScheduledCluster }) => {
      await sleep(RECORDED.teardownMinutes * MS_PER_MINUTE);
      tornDownAt.set(event.cluster.clusterId, Date.now());
      return { done: true };
    },
    [STATE.checkTeardown]: async () => {
      throw new Error('CheckTeardown entered after a teardown that was done');
    },
    // Azure only: this aws run never enters it.
    [STATE.rereadHostMetrics]: async () => {
      throw new Error('RereadHostMetrics entered on aws');
    },
    [STATE.finishRun]: async () => ({ status: 'SUCCEEDED' }),
    [STATE.recordRunFailure]: async (event: { state: { error?: unknown } }) => {
      throw new Error(`the simulated run failed: ${JSON.stringify(event.state.error)}`);
    },
  };

  const definition = resolveResources(
    buildBenchmarkDefinition({ maxConcurrency: k, clusterPollSeconds: POLL.clusterSeconds }),
  );
  const machine = new StateMachine(definition as unknown as StateMachineDefinition);
  const started = Date.now();
  await machine.run(input as unknown as Json, {
    context: {
      Execution: {
        Input: input as unknown as Json,
        Name: 'bench',
        Id: 'local:bench',
        StartTime: new Date().toISOString(),
      },
    },
    overrides: {
      taskResourceLocalHandlers: handlers as unknown as Record<string, (input: Json) => Promise<Json>>,
      waitTimeOverrides: {
        [STATE.waitForCluster]: scaledMs(POLL.clusterSeconds),
        [STATE.waitForRepetition]: scaledMs(POLL.repetitionSeconds),
        [STATE.pauseBetweenRepetitions]: scaledMs(RECORDED.pauseSeconds),
      },
    },
  }).result;
  const totalMinutes = (Date.now() - started) / MS_PER_MINUTE;

  const minimum = clusters.map((cluster) => minimumMinutes(cluster, k));
  const billed = clusters.map((cluster) => {
    const from = launchedAt.get(cluster.clusterId);
    const to = tornDownAt.get(cluster.clusterId);
    if (from === undefined || to === undefined)
      throw new Error(`configuration ${cluster.clusterId} was not launched and torn down`);
    return (to - from) / MS_PER_MINUTE;
  });
  const slowest = Math.max(...minimum);
  const billedTotal = billed.reduce((sum, minutes) => sum + minutes, 0);
  const minimumTotal = minimum.reduce((sum, minutes) => sum + minutes, 0);
  const f = (value: number) => value.toFixed(1);
  console.log(
    `bench:workflow: K = ${k} cluster configurations, maxConcurrency ${k}, ` +
      `${RECORDED.repetitions} × ${RECORDED.perfTestSeconds} s PerfTest each, 1 min simulated as ${MS_PER_MINUTE} ms`,
  );
  for (const [index, cluster] of clusters.entries()) {
    console.log(
      `  ${cluster.clusterId} (${cluster.nodes} nodes, ${cluster.topology}): ` +
        `minimum ${f(minimum[index]!)} min, billed ${f(billed[index]!)} min`,
    );
  }
  console.log(
    `total time ÷ slowest configuration's time: ${f(totalMinutes)} / ${f(slowest)} min = ` +
      `${(totalMinutes / slowest).toFixed(3)} (target ≤ 1.2)`,
  );
  console.log(
    `billed cluster-minutes ÷ minimum: ${f(billedTotal)} / ${f(minimumTotal)} min = ` +
      `${(billedTotal / minimumTotal).toFixed(3)} (target ≤ 1.1)`,
  );
}

main().catch((error: unknown) => {
  console.error(`bench:workflow: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
