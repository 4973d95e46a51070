import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { buildBenchmarkDefinition, resolveResources } from '../../state-machines/definition';
import { buildSchedule, type ScheduledCluster, type WorkflowInput } from '../../state-machines/schedule';
import { STATE, type TaskStateName } from '../../state-machines/states';

type Json = Parameters<StateMachine['run']>[0];

const plan = {
  name: 'retry',
  clusters: [{ name: 'one', nodes: 1, topology: { type: 'classic' }, instanceType: 'c5.xlarge' }],
  workloads: [{ name: 'w', durationSeconds: 10 }],
};

/**
 * Runs the deployed definition with the given SmokeTest behaviour; returns how often SmokeTest ran and how the run
 * ended.
 */
async function runWithSmokeTest(smokeTest: (attempt: number) => unknown) {
  let attempts = 0;
  let finished: { clusterResults?: { failed: boolean }[] } | undefined;
  const handlers: Record<TaskStateName, (event: never) => unknown> = {
    [STATE.validatePlan]: (event: { input: WorkflowInput; executionName: string }) =>
      buildSchedule(event.input, event.executionName),
    [STATE.recordRunStart]: () => ({}),
    [STATE.launchCluster]: (event: { cluster: ScheduledCluster }) => ({
      clusterId: event.cluster.clusterId,
      readyBy: '2030-01-01T00:00:00Z',
    }),
    [STATE.checkClusterReady]: () => ({ ready: true, outputs: {} }),
    [STATE.smokeTest]: () => smokeTest(++attempts),
    [STATE.startRepetition]: () => ({ startedAt: '2025-01-01T00:00:00Z' }),
    // The plan has no fault, so the fault states are never entered.
    [STATE.injectFault]: () => {
      throw new Error('InjectFault entered for a plan without a fault');
    },
    [STATE.healFault]: () => {
      throw new Error('HealFault entered for a plan without a fault');
    },
    [STATE.checkRepetition]: () => ({ done: true }),
    [STATE.ingestRepetition]: () => ({ status: 'SUCCEEDED' }),
    // Deleted at once: CheckTeardown is not entered (test/state-machines/transitions.test.ts polls it).
    [STATE.teardownCluster]: () => ({ done: true }),
    [STATE.checkTeardown]: () => {
      throw new Error('CheckTeardown entered after a teardown that was done');
    },
    // Azure only: not entered on this target.
    [STATE.checkSettled]: () => {
      throw new Error('CheckSettled entered for a plan without adaptive repetitions');
    },
    [STATE.rereadHostMetrics]: () => {
      throw new Error('RereadHostMetrics entered off azure');
    },
    [STATE.finishRun]: (event: { state: { clusterResults?: { failed: boolean }[] } }) => {
      finished = event.state;
      return {
        status: event.state.clusterResults?.some((result) => result.failed) ? 'FAILED' : 'SUCCEEDED',
        error: 'cluster failed',
      };
    },
    [STATE.recordRunFailure]: () => ({ status: 'FAILED', error: 'recorded' }),
  };
  const input: WorkflowInput = { plan, target: 'aws', runId: 'run-retry' };
  const machine = new StateMachine(resolveResources(buildBenchmarkDefinition()) as unknown as StateMachineDefinition);
  await machine
    .run(input as unknown as Json, {
      context: {
        Execution: {
          Input: input as unknown as Json,
          Name: 'retry',
          Id: 'local:retry',
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
        waitTimeOverrides: {
          [STATE.waitForCluster]: 0,
          [STATE.waitForRepetition]: 0,
          [STATE.pauseBetweenRepetitions]: 0,
        },
        retryIntervalOverrides: { [STATE.smokeTest]: 0, [STATE.teardownCluster]: 0 },
      },
    })
    .result.catch(() => undefined);
  return { attempts, clusterFailed: finished?.clusterResults?.[0]?.failed };
}

describe('SmokeTest retries a cluster the load balancer does not route to yet', () => {
  test(
    'two failed smoke tests (Lambda errorType Error), ' + 'then a success: the cluster runs its repetitions',
    async () => {
      const result = await runWithSmokeTest((attempt) => {
        if (attempt <= 2) throw new Error('smoke test: could not connect to amqp://nlb:5672 within 20 s');
        return { roundTripMs: 5 };
      });
      expect(result).toEqual({ attempts: 3, clusterFailed: false });
    },
  );

  test('a smoke test that keeps failing fails the cluster after 1 + 3 attempts', async () => {
    const result = await runWithSmokeTest(() => {
      throw new Error('connect ECONNREFUSED');
    });
    expect(result).toEqual({ attempts: 4, clusterFailed: true });
  });

  test('another error name (an injected fault) is not retried', async () => {
    const result = await runWithSmokeTest(() => {
      const fault = new Error('fault injected at SmokeTest');
      fault.name = 'FaultInjected';
      throw fault;
    });
    expect(result).toEqual({ attempts: 1, clusterFailed: true });
  });
});
