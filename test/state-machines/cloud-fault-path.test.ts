import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { faultSchedule } from '../../lambdas/start-repetition/logic';
import { buildBenchmarkDefinition, resolveResources } from '../../state-machines/definition';
import {
  buildSchedule,
  type ScheduledCluster,
  type ScheduledRepetition,
  type WorkflowInput,
} from '../../state-machines/schedule';
import { STATE, type TaskStateName } from '../../state-machines/states';

type Json = Parameters<StateMachine['run']>[0];

/**
 * The deployed definition with `target: aws` and a fault plan, run locally (aws-local-stepfunctions): ValidatePlan
 * accepts it (the aws target rules), StartRepetition's fault schedule (the real faultSchedule of the AWS handler)
 * sends the execution through InjectFault and HealFault, HealFault gets what InjectFault applied, and CheckRepetition
 * receives both in `started`, from which the cloud repetition records its fault.
 */
const plan = {
  name: 'cloud-fault',
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType: 'c5.xlarge' }],
  workloads: [
    { name: 'kill', durationSeconds: 60, fault: { action: 'kill', node: 'leader', atSeconds: 20, healAtSeconds: 40 } },
  ],
};

test(
  'on aws, a fault plan goes StartRepetition → InjectFault → HealFault ' +
    '(with what was applied) → CheckRepetition (with both in started)',
  async () => {
    const seen: Partial<Record<'inject' | 'heal' | 'check', Record<string, unknown>>> = {};
    const applied = {
      nodeName: 'rabbit@10.0.1.5',
      instanceId: 'i-0abc',
      appliedAt: '2025-01-01T00:00:20.000Z',
      appliedAtSeconds: 20.1,
    };
    const healed = { nodeName: 'rabbit@10.0.1.5', healedAt: '2025-01-01T00:00:40.000Z', healedAtSeconds: 40.2 };
    const handlers: Record<TaskStateName, (event: never) => unknown> = {
      [STATE.validatePlan]: (event: { input: WorkflowInput; executionName: string }) =>
        buildSchedule(event.input, event.executionName),
      [STATE.recordRunStart]: () => ({}),
      [STATE.launchCluster]: (event: { cluster: ScheduledCluster }) => ({
        clusterId: event.cluster.clusterId,
        readyBy: '2030-01-01T00:00:00Z',
      }),
      [STATE.checkClusterReady]: () => ({ ready: true, outputs: {} }),
      [STATE.smokeTest]: () => ({ roundTripMs: 5 }),
      // Started long enough ago that the fault and heal timestamps have passed: the Wait states go straight on.
      [STATE.startRepetition]: (event: { plan: unknown; item: ScheduledRepetition }) => ({
        commandId: 'cmd',
        instanceId: 'i-lg',
        startedAt: '2025-01-01T00:00:00.000Z',
        ...faultSchedule(event.plan, event.item, new Date('2025-01-01T00:00:00.000Z')),
      }),
      [STATE.injectFault]: (event: Record<string, unknown>) => {
        seen.inject = event;
        return applied;
      },
      [STATE.healFault]: (event: Record<string, unknown>) => {
        seen.heal = event;
        return healed;
      },
      [STATE.checkRepetition]: (event: Record<string, unknown>) => {
        seen.check = event;
        return { done: true };
      },
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
      [STATE.finishRun]: () => ({ status: 'SUCCEEDED' }),
      [STATE.recordRunFailure]: () => ({ status: 'FAILED', error: 'recorded' }),
    };
    const input: WorkflowInput = { plan, target: 'aws', runId: 'run-fault' };
    const machine = new StateMachine(resolveResources(buildBenchmarkDefinition()) as unknown as StateMachineDefinition);
    const execution = machine.run(input as unknown as Json, {
      context: {
        Execution: {
          Input: input as unknown as Json,
          Name: 'fault',
          Id: 'local:fault',
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
          [STATE.waitForFault]: 0,
          [STATE.waitForHeal]: 0,
        },
      },
    });
    await execution.result;
    expect(seen.inject).toMatchObject({
      action: 'inject',
      target: 'aws',
      launch: { clusterId: expect.any(String) },
      started: {
        startedAt: '2025-01-01T00:00:00.000Z',
        fault: { at: '2025-01-01T00:00:20.000Z', healAt: '2025-01-01T00:00:40.000Z' },
      },
    });
    expect(seen.heal).toMatchObject({ action: 'heal', target: 'aws', applied });
    expect(seen.check).toMatchObject({ started: { commandId: 'cmd', faultApplied: applied, faultHealed: healed } });
  },
);
