import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { AZURE_METRICS_SETTLE_SECONDS } from '../../core/metrics/azure-monitor-metrics';
import { stateTransitions } from '../../core/cost/estimate';
import { buildBenchmarkDefinition, resolveResources } from '../../state-machines/definition';
import {
  buildSchedule,
  type ScheduledCluster,
  type ScheduledRepetition,
  type WorkflowInput,
  type WorkflowTarget,
} from '../../state-machines/schedule';
import { STATE, type TaskStateName } from '../../state-machines/states';

type Json = Parameters<StateMachine['run']>[0];

/**
 * The deployed definition run locally (aws-local-stepfunctions): on azure, after the cluster's last repetition, the
 * workflow waits for Azure Monitor's late minutes and has IngestRepetition ("metricsOnly") read the cluster's host
 * metrics again before TeardownCluster; a failure of that step still tears the cluster down and does not fail it.
 */
const plan = (instanceType: string) => ({
  name: 'reread',
  repetitions: 2,
  pauseSecondsBetweenRepetitions: 0,
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType }],
  workloads: [{ name: 'small', durationSeconds: 30 }],
});

interface Execution {
  /** Task states in the order they were entered (Map iterations included). */
  readonly tasks: string[];
  /** Every state entered, for the transition count. */
  readonly entered: number;
  readonly reread: Record<string, unknown>[];
  readonly finish: Record<string, unknown>[];
  readonly succeeded: boolean;
}

async function execute(
  target: WorkflowTarget,
  reread: (event: Record<string, unknown>) => unknown,
): Promise<Execution> {
  const input: WorkflowInput = {
    plan: plan(target === 'azure' ? 'Standard_F4s_v2' : 'c5.xlarge'),
    target,
    runId: `reread-${target}`,
  };
  const seen = { reread: [] as Record<string, unknown>[], finish: [] as Record<string, unknown>[] };
  const handlers: Record<TaskStateName, (event: never) => unknown> = {
    [STATE.validatePlan]: (event: { input: WorkflowInput; executionName: string }) =>
      buildSchedule(event.input, event.executionName),
    [STATE.recordRunStart]: () => ({}),
    [STATE.launchCluster]: (event: { cluster: ScheduledCluster }) => ({
      clusterId: event.cluster.clusterId,
      readyBy: '2030-01-01T00:00:00Z',
    }),
    [STATE.checkClusterReady]: () => ({
      ready: true,
      outputs: {
        scaleSetResourceId: '/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/c',
      },
    }),
    [STATE.smokeTest]: () => ({ roundTripMs: 5 }),
    [STATE.startRepetition]: () => ({ commandId: 'cmd', startedAt: '2025-01-01T00:00:00.000Z' }),
    [STATE.injectFault]: () => {
      throw new Error('InjectFault entered for a plan without a fault');
    },
    [STATE.healFault]: () => {
      throw new Error('HealFault entered for a plan without a fault');
    },
    [STATE.checkRepetition]: (event: { item: ScheduledRepetition }) => ({ done: true, rawKey: event.item.rawKey }),
    [STATE.ingestRepetition]: (event: { item: ScheduledRepetition }) => ({
      scenarioId: event.item.scenarioId,
      repetition: event.item.repetition,
      status: 'SUCCEEDED',
    }),
    [STATE.checkSettled]: () => {
      throw new Error('CheckSettled entered for a plan without adaptive repetitions');
    },
    [STATE.rereadHostMetrics]: (event: Record<string, unknown>) => {
      seen.reread.push(event);
      return reread(event);
    },
    // Deleted at once: CheckTeardown is not entered (test/state-machines/transitions.test.ts polls it).
    [STATE.teardownCluster]: () => ({ done: true }),
    [STATE.checkTeardown]: () => {
      throw new Error('CheckTeardown entered after a teardown that was done');
    },
    [STATE.finishRun]: (event: Record<string, unknown>) => {
      seen.finish.push(event);
      return { status: 'SUCCEEDED' };
    },
    [STATE.recordRunFailure]: () => ({ status: 'FAILED', error: 'recorded' }),
  };
  const machine = new StateMachine(resolveResources(buildBenchmarkDefinition()) as unknown as StateMachineDefinition);
  const execution = machine.run(input as unknown as Json, {
    context: {
      Execution: {
        Input: input as unknown as Json,
        Name: 'reread',
        Id: 'local:reread',
        StartTime: '2025-01-01T00:00:00Z',
      },
    },
    overrides: {
      taskResourceLocalHandlers: Object.fromEntries(
        Object.entries(handlers).map(([name, handler]) => [
          name,
          async (event: Json) => handler(event as never) as Json,
        ]),
      ),
      // The 180 s wait is the definition's (asserted below); here it passes at once.
      waitTimeOverrides: {
        [STATE.waitForCluster]: 0,
        [STATE.waitForRepetition]: 0,
        [STATE.pauseBetweenRepetitions]: 0,
        [STATE.waitForLateMetrics]: 0,
      },
    },
  });
  const tasks: string[] = [];
  let entered = 0;
  const collect = (async () => {
    for await (const event of execution.eventLogs) {
      if (event.type !== 'StateEntered') continue;
      entered++;
      if (event.state.type === 'Task' || event.state.name === STATE.waitForLateMetrics) tasks.push(event.state.name);
    }
  })();
  const result = await execution.result.then(
    () => true,
    () => false,
  );
  await collect;
  return { tasks, entered, reread: seen.reread, finish: seen.finish, succeeded: result };
}

describe('on azure the host metrics are read again before teardown', () => {
  test(
    'the definition waits AZURE_METRICS_SETTLE_SECONDS (180 s) on azure only, then ' +
      'RereadHostMetrics invokes IngestRepetition in metricsOnly mode, caught into teardown',
    () => {
      const cluster = (
        buildBenchmarkDefinition().States[STATE.forEachCluster]!.ItemProcessor as {
          States: Record<string, Record<string, unknown>>;
        }
      ).States;
      expect(AZURE_METRICS_SETTLE_SECONDS).toBe(180);
      expect(cluster[STATE.forEachRepetition]!.Next).toBe(STATE.isMetricsRereadNeeded);
      expect(cluster[STATE.isMetricsRereadNeeded]).toEqual({
        Type: 'Choice',
        Choices: [{ Variable: '$.target', StringEquals: 'azure', Next: STATE.waitForLateMetrics }],
        Default: STATE.dropBootLogs,
      });
      expect(cluster[STATE.waitForLateMetrics]).toEqual({ Type: 'Wait', Seconds: 180, Next: STATE.rereadHostMetrics });
      expect(cluster[STATE.rereadHostMetrics]).toMatchObject({
        Resource: '${IngestRepetitionFunctionArn}',
        Parameters: {
          action: 'metricsOnly',
          'cluster.$': '$.cluster',
          'readiness.$': '$.readiness',
          'launch.$': '$.launch',
        },
        Next: STATE.dropBootLogs,
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.metricsRereadError', Next: STATE.dropBootLogs }],
      });
    },
  );

  test(
    'azure: after the last IngestRepetition, WaitForLateMetrics then RereadHostMetrics ' +
      "(with the cluster's repetitions and deployment outputs) run, then TeardownCluster",
    async () => {
      const run = await execute('azure', () => ({ reread: 2, stored: 2, stillIncomplete: 0 }));
      expect(run.succeeded).toBe(true);
      expect(run.tasks.slice(-5)).toEqual([
        STATE.ingestRepetition,
        STATE.waitForLateMetrics,
        STATE.rereadHostMetrics,
        STATE.teardownCluster,
        STATE.finishRun,
      ]);
      expect(run.tasks.filter((name) => name === STATE.ingestRepetition)).toHaveLength(2);
      expect(run.reread).toHaveLength(1);
      const event = run.reread[0] as {
        action: string;
        target: string;
        cluster: ScheduledCluster;
        readiness: { outputs: Record<string, string> };
        launch: { clusterId: string };
      };
      expect(event.action).toBe('metricsOnly');
      expect(event.target).toBe('azure');
      expect(event.cluster.repetitions.map((item) => item.repetition)).toEqual([1, 2]);
      expect(event.readiness.outputs.scaleSetResourceId).toMatch(/virtualMachineScaleSets/);
      expect(event.launch.clusterId).toBe(event.cluster.clusterId);
      expect((run.finish[0] as { state: { clusterResults: { failed: boolean }[] } }).state.clusterResults).toEqual([
        { clusterId: event.cluster.clusterId, failed: false },
      ]);
    },
  );

  test(
    'azure: a RereadHostMetrics that fails still leads to ' +
      'TeardownCluster, and the cluster and run do not fail because of it',
    async () => {
      const run = await execute('azure', () => {
        throw new Error('the host metrics of 1 of 2 repetition(s) were not read again: ...');
      });
      expect(run.succeeded).toBe(true);
      expect(run.tasks.slice(-3)).toEqual([STATE.rereadHostMetrics, STATE.teardownCluster, STATE.finishRun]);
      expect(
        (run.finish[0] as { state: { clusterResults: { failed: boolean }[] } }).state.clusterResults.map(
          (one) => one.failed,
        ),
      ).toEqual([false]);
    },
  );

  test(
    'aws: no wait and no re-read (the agent flushes every 10 s): ' +
      'the last IngestRepetition goes on to TeardownCluster',
    async () => {
      const run = await execute('aws', () => {
        throw new Error('RereadHostMetrics entered on aws');
      });
      expect(run.succeeded).toBe(true);
      expect(run.reread).toEqual([]);
      expect(run.tasks.slice(-3)).toEqual([STATE.ingestRepetition, STATE.teardownCluster, STATE.finishRun]);
    },
  );

  test("core/cost/estimate.ts counts the azure re-read's transitions as executed (and one Choice on aws)", async () => {
    const repetitions = [
      { polls: 1, pause: false },
      { polls: 1, pause: false },
    ];
    expect((await execute('azure', () => ({ reread: 0, stored: 0, stillIncomplete: 0 }))).entered).toBe(
      stateTransitions([{ clusterPolls: 1, rereadsMetrics: true, teardownPolls: 0, repetitions }]),
    );
    expect((await execute('aws', () => ({}))).entered).toBe(
      stateTransitions([{ clusterPolls: 1, teardownPolls: 0, repetitions }]),
    );
  });
});
