import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { stateTransitions } from '../../core/estimate';
import { buildBenchmarkDefinition, resolveResources } from '../../state-machines/definition';
import { buildSchedule, type ScheduledCluster, type ScheduledRepetition, type WorkflowInput } from '../../state-machines/schedule';
import { STATE, type TaskStateName } from '../../state-machines/states';

type Json = Parameters<StateMachine['run']>[0];

/**
 * Runs the deployed definition locally (aws-local-stepfunctions) with Task handlers that report a cluster ready on its
 * `clusterPolls`-th check and a repetition done on its `repetitionPolls`-th, and counts the states entered: what
 * Step Functions bills as state transitions.
 */
async function countTransitions(plan: unknown, clusterPolls: number, repetitionPolls: number): Promise<number> {
  const input: WorkflowInput = { plan, target: 'aws', runId: 'transitions' };
  const checks = new Map<string, number>();
  const nth = (key: string) => {
    const count = (checks.get(key) ?? 0) + 1;
    checks.set(key, count);
    return count;
  };
  const handlers: Record<TaskStateName, (event: never) => unknown> = {
    [STATE.validatePlan]: (event: { input: WorkflowInput; executionName: string }) => buildSchedule(event.input, event.executionName),
    [STATE.recordRunStart]: () => ({}),
    [STATE.launchCluster]: (event: { cluster: ScheduledCluster }) => ({ clusterId: event.cluster.clusterId, readyBy: '2025-01-01T01:00:00.000Z', expiresAt: '2025-01-01T12:00:00.000Z' }),
    [STATE.checkClusterReady]: (event: { cluster: ScheduledCluster }) => ({ ready: nth(event.cluster.clusterId) >= clusterPolls, status: 'CREATE_IN_PROGRESS', outputs: {} }),
    [STATE.smokeTest]: () => ({ roundTripMs: 1 }),
    [STATE.startRepetition]: () => ({ commandId: 'c', instanceId: 'i', startedAt: '2025-01-01T00:31:00.000Z', perfTestArgs: [], doneBy: '2025-01-01T00:35:00.000Z' }),
    // The plan has no fault, so the fault states are never entered.
    [STATE.injectFault]: () => {
      throw new Error('InjectFault entered for a plan without a fault');
    },
    [STATE.healFault]: () => {
      throw new Error('HealFault entered for a plan without a fault');
    },
    [STATE.checkRepetition]: (event: { item: ScheduledRepetition }) => ({ done: nth(event.item.rawKey) >= repetitionPolls, rawKey: event.item.rawKey }),
    [STATE.ingestRepetition]: (event: { item: ScheduledRepetition }) => ({ scenarioId: event.item.scenarioId, repetition: event.item.repetition, status: 'SUCCEEDED' }),
    [STATE.teardownCluster]: () => ({}),
    // Azure only: not entered on this target.
    [STATE.rereadHostMetrics]: () => {
      throw new Error('RereadHostMetrics entered off azure');
    },
    [STATE.finishRun]: () => ({ status: 'SUCCEEDED' }),
    [STATE.recordRunFailure]: () => ({ status: 'FAILED', error: 'recorded' }),
  };
  const machine = new StateMachine(resolveResources(buildBenchmarkDefinition({ maxConcurrency: 1 })) as unknown as StateMachineDefinition);
  const execution = machine.run(input as unknown as Json, {
    context: { Execution: { Input: input as unknown as Json, Name: 'transitions', Id: 'local:transitions', StartTime: '2025-01-01T00:00:00.000Z' } },
    overrides: {
      taskResourceLocalHandlers: Object.fromEntries(Object.entries(handlers).map(([name, handler]) => [name, async (event: Json) => handler(event as never) as Json])),
      waitTimeOverrides: { [STATE.waitForCluster]: 0, [STATE.waitForRepetition]: 0, [STATE.pauseBetweenRepetitions]: 0 },
    },
  });
  let entered = 0;
  const collect = (async () => {
    for await (const event of execution.eventLogs) if (event.type === 'StateEntered') entered++;
  })();
  await execution.result;
  await collect;
  return entered;
}

const plan = (clusters: number, repetitions: number, pauseSeconds: number, messageSizes: number[]) => ({
  name: 'transitions',
  repetitions,
  pauseSecondsBetweenRepetitions: pauseSeconds,
  clusters: Array.from({ length: clusters }, (_, index) => ({ name: `c${index}`, nodes: index + 1, instanceType: 'c5.xlarge' })),
  workloads: [{ name: 'w', durationSeconds: 10, sweep: { messageSizeBytes: messageSizes } }],
});

describe('core/estimate.ts stateTransitions against executions of the deployed definition', () => {
  test.each([
    [1, 1, 0, [100], 1, 1],
    [1, 3, 5, [100], 1, 1],
    [2, 2, 5, [100, 200], 1, 1],
    [1, 2, 0, [100], 4, 1],
    [2, 2, 10, [100], 3, 5],
  ])('%i cluster(s), %i repetition(s), pause %i s, sizes %j, ready on check %i, done on check %i', async (clusters, repetitions, pause, sizes, clusterPolls, repetitionPolls) => {
    const measured = await countTransitions(plan(clusters, repetitions, pause, sizes), clusterPolls, repetitionPolls);
    const predicted = stateTransitions(
      Array.from({ length: clusters }, () => ({
        clusterPolls,
        repetitions: sizes.flatMap(() => Array.from({ length: repetitions }, (_, index) => ({ polls: repetitionPolls, pause: pause > 0 && index < repetitions - 1 }))),
      })),
    );
    expect(measured).toBeGreaterThan(20);
    expect(predicted).toBe(measured);
  });
});
