import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { parsePlanText } from '../../core/plan/plan';
import { perfTestScript } from '../../lambdas/start-repetition/logic';
import { buildBenchmarkDefinition, resolveResources } from '../../state-machines/definition';
import {
  buildSchedule,
  planData,
  type ScheduledCluster,
  type ScheduledRepetition,
  type WorkflowInput,
} from '../../state-machines/schedule';
import { STATE, type TaskStateName } from '../../state-machines/states';

// Step Functions refuses a state input or output, and an execution input, larger than 256 KiB (262,144 bytes of UTF-8):
// https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html (Quotas related to task executions / state
// machine executions: "Maximum input or output size for a task, state, or execution").
const STEP_FUNCTIONS_PAYLOAD_LIMIT = 262_144;

type Json = Parameters<StateMachine['run']>[0];
type EventLog = ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');

/**
 * What a deployed cluster stack outputs (cdk/RabbitMqCluster.ts and LoadGenerator.ts CfnOutputs, with CDK's prefixed
 * keys and values as long as AWS's).
 */
const CLUSTER_OUTPUTS = {
  ClusterAmqpEndpoint0A1B2C3D: 'rmqbench-run-20250101-c1-nlb-0123456789abcdef.elb.eu-west-1.amazonaws.com:5672',
  ClusterAmqpsEndpoint0A1B2C3D: 'rmqbench-run-20250101-c1-nlb-0123456789abcdef.elb.eu-west-1.amazonaws.com:5671',
  ClusterManagementUrl0A1B2C3D:
    'http://rmqbench-run-20250101-c1-nlb-0123456789abcdef.elb.eu-west-1.amazonaws.com:15672',
  ClusterAdminSecretArn0A1B2C3D:
    'arn:aws:secretsmanager:eu-west-1:111122223333:secret:ClusterAdminSecret0A1B2C3D-AbCdEfGhIjKl-AbCdEf',
  ClusterAutoScalingGroupName0A1B2C3D: 'rmqbench-run-20250101-c1-ClusterNodeGroupASG0A1B2C3D-AbCdEfGhIjKl',
  ClusterNodeImageId0A1B2C3D: 'ami-0123456789abcdef0',
  ClusterBootLogGroupName0A1B2C3D: 'rmqbench-run-20250101-c1-ClusterBootLogs0A1B2C3D-AbCdEfGhIjKl',
  LoadGeneratorInstanceId0A1B2C3D: 'i-0123456789abcdef0',
};

interface Measured {
  largest: { state: string; kind: string; bytes: number };
  executionInputBytes: number;
  states: number;
}

/**
 * Executes the definition the controller deploys with aws-local-stepfunctions, Task handlers returning what the AWS
 * functions return (the real ValidatePlan schedule and StartRepetition's real redacted PerfTest arguments), and
 * measures
 * every state's input and output. With `failAt`, that Task fails in every cluster iteration, so that ClusterFailed
 * carries each iteration's whole state into the run's clusterResults (the largest failure path).
 */
async function measure(planFile: string, failAt?: TaskStateName): Promise<Measured> {
  const plan = parsePlanText(readFileSync(join(__dirname, '..', '..', 'plans', planFile), 'utf8'), planFile);
  // An aws run names each cluster's instance type (the built-in plans are written for the local target, which needs
  // none).
  const data = planData(plan) as { clusters: Record<string, unknown>[] };
  const onAws = { ...data, clusters: data.clusters.map((cluster) => ({ ...cluster, instanceType: 'c5.xlarge' })) };
  const input: WorkflowInput = { plan: onAws, target: 'aws', runId: `${plan.name}-2025-01-01T00-00-00Z` };
  const fail = (message: string) => {
    throw new Error(message);
  };
  const handlers: Record<TaskStateName, (event: never) => unknown> = {
    [STATE.validatePlan]: (event: { input: WorkflowInput; executionName: string }) =>
      buildSchedule(event.input, event.executionName),
    [STATE.recordRunStart]: () => ({}),
    [STATE.launchCluster]: (event: { cluster: ScheduledCluster }) => ({
      clusterId: event.cluster.clusterId,
      readyBy: '2025-01-01T00:30:00.000Z',
      expiresAt: '2025-01-01T12:00:00.000Z',
    }),
    [STATE.checkClusterReady]: () => ({ ready: true, status: 'CREATE_COMPLETE', outputs: CLUSTER_OUTPUTS }),
    [STATE.smokeTest]: () => ({ roundTripMs: 12 }),
    [STATE.startRepetition]: (event: { runId: string; plan: unknown; item: ScheduledRepetition }) => {
      const { redactedArgs } = perfTestScript({
        plan: event.plan,
        runId: event.runId,
        item: event.item,
        endpoint: CLUSTER_OUTPUTS.ClusterAmqpEndpoint0A1B2C3D,
        managementUrl: CLUSTER_OUTPUTS.ClusterManagementUrl0A1B2C3D,
        secretArn: CLUSTER_OUTPUTS.ClusterAdminSecretArn0A1B2C3D,
        bucket: 'rmqbench-controller-rawoutputbucket0a1b2c3d-abcdefghijkl',
      });
      return {
        commandId: '0123abcd-4567-89ef-0123-456789abcdef',
        instanceId: CLUSTER_OUTPUTS.LoadGeneratorInstanceId0A1B2C3D,
        startedAt: '2025-01-01T00:31:00.000Z',
        perfTestArgs: redactedArgs,
        doneBy: '2025-01-01T00:35:00.000Z',
      };
    },
    // The plan has no fault, so the fault states are never entered.
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
    [STATE.finishRun]: () => ({
      status: failAt ? 'FAILED' : 'SUCCEEDED',
      ...(failAt ? { error: `stack failed: ${'x'.repeat(2_000)}` } : {}),
    }),
    [STATE.recordRunFailure]: () => ({ status: 'FAILED', error: 'recorded' }),
  };
  // A Lambda error as Step Functions catches it: its errorMessage can be long (a stack failure reason with a log
  // stream).
  if (failAt) handlers[failAt] = () => fail(`${failAt} failed: ${'reason '.repeat(500)}`);
  const definition = resolveResources(buildBenchmarkDefinition({ maxConcurrency: 4 }));
  const machine = new StateMachine(definition as unknown as StateMachineDefinition);
  const execution = machine.run(input as unknown as Json, {
    context: {
      Execution: {
        Input: input as unknown as Json,
        Name: 'payload',
        Id: 'local:payload',
        StartTime: '2025-01-01T00:00:00.000Z',
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
  });
  const events: EventLog[] = [];
  const collect = (async () => {
    for await (const event of execution.eventLogs) events.push(event);
  })();
  await execution.result.catch(() => undefined);
  await collect;
  let largest = { state: 'execution input', kind: 'input', bytes: bytes(input) };
  let states = 0;
  for (const event of events) {
    if (event.type !== 'StateEntered' && event.type !== 'StateExited') continue;
    states++;
    const [kind, value] = event.type === 'StateEntered' ? ['input', event.state.input] : ['output', event.state.output];
    const size = bytes(value);
    if (size > largest.bytes) largest = { state: event.state.name, kind, bytes: size };
  }
  return { largest, executionInputBytes: bytes(input), states };
}

describe('Step Functions payload size of the built-in plans (256 KiB per state input/output)', () => {
  const report: string[] = [];
  afterAll(() => console.log(`largest state payloads:\n${report.join('\n')}`));

  for (const planFile of ['thesis-ch4-lb-vs-direct.yaml', 'thesis-ch6-queue-count.yaml']) {
    for (const failAt of [undefined, STATE.checkRepetition, STATE.smokeTest] as const) {
      test(
        `${planFile}${failAt ? `, ${failAt} failing in every cluster` : ', every repetition succeeding'}: ` +
          'the largest state payload stays under the limit',
        async () => {
          const measured = await measure(planFile, failAt);
          report.push(
            `  ${planFile}${failAt ? ` (${failAt} failing)` : ''}: ${measured.largest.bytes} ` +
              `bytes, ${measured.largest.state} ${measured.largest.kind} (execution input ` +
              `${measured.executionInputBytes} bytes, ${measured.states} state transitions measured)`,
          );
          // The measurement saw the run: states were entered, and the schedule (plan + repetitions) outweighs the
          // input.
          expect(measured.states).toBeGreaterThan(20);
          expect(measured.largest.bytes).toBeGreaterThan(measured.executionInputBytes);
          expect(measured.largest.bytes).toBeLessThan(STEP_FUNCTIONS_PAYLOAD_LIMIT);
        },
      );
    }
  }
});
