/**
 * The Azure fault step (lambdas/fault/azure.ts with the shared logic of lambdas/fault/aws.ts) with the real Azure SDK
 * compute client against the fake ARM endpoint (test/lambdas/fake-arm.ts): the run's nodes are the scale set's VMs
 * of its resource group, the leader query and the fault run as managed Run Commands on the chosen VM, and the script's
 * output comes back from the Run Command's instance view. The scripts themselves run for real on simulated nodes
 * (test/simulated-vm/aws-node.integration.test.ts; the node check also reads rabbit@<hostname -s>, Azure's case).
 */
import { faultScript, healScript, queueLeadersScript } from '../../core/failover/cloud-fault';
import {
  applyFault,
  healFault,
  VERIFIER_QUEUE_POLL_MS,
  VERIFIER_QUEUE_WAIT_MS,
  type AwsFaultEvent,
} from '../../lambdas/fault/aws';
import { azureClusterNodes, azureFaultTarget } from '../../lambdas/fault/azure';
import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { buildSchedule } from '../../state-machines/schedule';
import type { FakeArm, RunCommandOutcome } from './fake-arm';
import { fakeClusterConfig, runCommandScripts, startFakeArm } from './fake-arm-clients';

const planWith = (fault: Record<string, unknown>) => ({
  name: 'azure-fault',
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType: 'Standard_F4s_v2' }],
  workloads: [{ name: 'kill', durationSeconds: 60, fault }],
});
// The step reads the fault from the plan the event carries (planWith), the scheduled item only names the scenario.
const schedule = buildSchedule(
  {
    plan: planWith({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
    runId: 'run-1',
    target: 'local',
  },
  'exec',
);
const cluster = schedule.clusters[0]!;

describe('the Azure fault step against a fake ARM endpoint (real Azure SDK compute client)', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  /** What each Run Command's script prints: the leader query answers with a quorum queue led by the second node. */
  let leaderAnswer = '';
  beforeEach(async () => {
    ({ arm, clients } = await startFakeArm({
      operationPolls: 1,
      runCommandPolls: 1,
      runCommandOutcome: (script): RunCommandOutcome =>
        script === queueLeadersScript()
          ? { executionState: 'Succeeded', exitCode: 0, output: leaderAnswer, error: '' }
          : { executionState: 'Succeeded', exitCode: 0, output: 'rmqbench: done', error: '' },
    }));
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, new Date());
    arm.vms.set(cluster.clusterId, [
      { name: 'rmqbench-loadgen', computerName: 'rmqbench-loadgen', timeCreated: '2025-01-01T00:00:00Z' },
      { name: 'nodes_b2', computerName: 'RMQBENCHN000002', timeCreated: '2025-01-01T00:01:02Z', scaleSet: 'nodes' },
      { name: 'nodes_a1', computerName: 'RMQBENCHN000001', timeCreated: '2025-01-01T00:01:01Z', scaleSet: 'nodes' },
      {
        name: 'nodes_c3',
        computerName: 'RMQBENCHN000003',
        timeCreated: '2025-01-01T00:01:03Z',
        scaleSet: 'nodes',
        provisioningState: 'Deleting',
      },
    ]);
    leaderAnswer = JSON.stringify({
      queues: [{ name: 'rmqbench-verifier', type: 'quorum', leader: 'rabbit@RMQBENCHN000002' }],
      local: {},
    });
  });
  afterEach(async () => arm.stop());

  const event = (fault: Record<string, unknown>, applied?: AwsFaultEvent['applied']): AwsFaultEvent => ({
    action: applied ? 'heal' : 'inject',
    runId: 'run-1',
    plan: planWith(fault),
    item: cluster.repetitions[0]!,
    launch: { clusterId: cluster.clusterId },
    started: { startedAt: '2025-01-01T00:10:00.000Z' },
    ...(applied ? { applied } : {}),
  });
  const timing = () => ({ deadline: new Date(Date.now() + 60_000), pollMs: 10 });
  /** The scripts put as managed Run Commands, per VM, in order. */
  const scriptsSent = () => runCommandScripts(arm);

  test(
    "the nodes are the scale set's VMs of the run's resource group, oldest first, " +
      'named rabbit@<computerName>: not the load generator, not a VM being deleted',
    async () => {
      expect(await azureClusterNodes(clients, cluster.clusterId)).toEqual([
        { id: 'nodes_a1', nodeName: 'rabbit@RMQBENCHN000001' },
        { id: 'nodes_b2', nodeName: 'rabbit@RMQBENCHN000002' },
      ]);
    },
  );

  test(
    'a kill of the leader asks the first node for the queues, ' +
      "then runs the kill script for the leader on the leader's VM only",
    async () => {
      const applied = await applyFault(
        azureFaultTarget(clients, cluster.clusterId, timing()),
        event({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
        () => new Date('2025-01-01T00:10:11.000Z'),
      );
      expect(applied).toEqual({
        nodeName: 'rabbit@RMQBENCHN000002',
        instanceId: 'nodes_b2',
        appliedAt: '2025-01-01T00:10:11.000Z',
        appliedAtSeconds: 11,
      });
      expect(scriptsSent()).toEqual([
        { vm: 'nodes_a1', script: queueLeadersScript() },
        { vm: 'nodes_b2', script: faultScript('kill', 'rabbit@RMQBENCHN000002') },
      ]);
      // Each Run Command is deleted once it has ended (it is no record to keep).
      expect(arm.runCommands.size).toBe(0);
    },
  );

  test(
    '"leader" is the leader of the verifier\'s queue, where the lost ' +
      "messages are counted, not of PerfTest's queue on another node",
    async () => {
      leaderAnswer = JSON.stringify({
        queues: [
          { name: 'perf-test-1', type: 'quorum', leader: 'rabbit@RMQBENCHN000001' },
          { name: 'rmqbench-verifier', type: 'quorum', leader: 'rabbit@RMQBENCHN000002' },
        ],
        local: {},
      });
      const applied = await applyFault(
        azureFaultTarget(clients, cluster.clusterId, timing()),
        event({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
        () => new Date('2025-01-01T00:10:11.000Z'),
      );
      expect(applied.nodeName).toBe('rabbit@RMQBENCHN000002');
    },
  );

  describe("the verifier's queue not declared yet at the fault's time", () => {
    const withoutVerifier = JSON.stringify({
      queues: [{ name: 'perf-test-1', type: 'quorum', leader: 'rabbit@RMQBENCHN000001' }],
      local: {},
    });
    /** The step's timing on a clock that moves only when the step sleeps; `onSleep` sees the clock after each. */
    const clockTiming = (onSleep: (elapsedMs: number) => void) => {
      let clock = Date.parse('2025-01-01T00:10:10.000Z');
      const start = clock;
      return {
        deadline: new Date(clock + 240_000),
        pollMs: 10,
        now: () => new Date(clock),
        sleep: async (ms: number) => {
          clock += ms;
          onSleep(clock - start);
        },
      };
    };
    const leaderQueries = () => scriptsSent().filter((sent) => sent.script === queueLeadersScript()).length;

    test('asked again until the verifier declares it; the fault hits its leader, at its real time', async () => {
      leaderAnswer = withoutVerifier;
      const verifierDeclared = JSON.stringify({
        queues: [{ name: 'rmqbench-verifier', type: 'quorum', leader: 'rabbit@RMQBENCHN000002' }],
        local: {},
      });
      const timing = clockTiming((elapsed) => {
        if (elapsed >= VERIFIER_QUEUE_POLL_MS * 2) leaderAnswer = verifierDeclared;
      });
      const applied = await applyFault(
        azureFaultTarget(clients, cluster.clusterId, timing),
        event({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
        timing.now,
      );
      expect(applied.nodeName).toBe('rabbit@RMQBENCHN000002');
      expect(leaderQueries()).toBeGreaterThanOrEqual(3);
      expect(applied.appliedAtSeconds).toBeGreaterThanOrEqual(10 + (VERIFIER_QUEUE_POLL_MS * 2) / 1000);
      expect(scriptsSent().at(-1)).toEqual({ vm: 'nodes_b2', script: faultScript('kill', 'rabbit@RMQBENCHN000002') });
    });

    test('still missing after VERIFIER_QUEUE_WAIT_MS: the error names it and the queues seen; no fault', async () => {
      leaderAnswer = withoutVerifier;
      let waited = 0;
      const timing = clockTiming((elapsed) => (waited = elapsed));
      await expect(
        applyFault(
          azureFaultTarget(clients, cluster.clusterId, timing),
          event({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
          timing.now,
        ),
      ).rejects.toThrow(/queue rmqbench-verifier does not exist on the cluster .*queues: perf-test-1/);
      expect(waited).toBeGreaterThan(VERIFIER_QUEUE_WAIT_MS - VERIFIER_QUEUE_POLL_MS);
      expect(waited).toBeLessThanOrEqual(VERIFIER_QUEUE_WAIT_MS + 1_000);
      expect(scriptsSent().every((sent) => sent.script === queueLeadersScript())).toBe(true);
    });
  });

  test('the heal runs on the VM the fault hit; a failing script fails the step with its stderr', async () => {
    const applied = {
      nodeName: 'rabbit@RMQBENCHN000001',
      instanceId: 'nodes_a1',
      appliedAt: '2025-01-01T00:10:10.000Z',
      appliedAtSeconds: 10,
    };
    const healed = await healFault(
      azureFaultTarget(clients, cluster.clusterId, timing()),
      event({ action: 'stop', node: 0, atSeconds: 10, healAtSeconds: 20 }, applied),
      () => new Date('2025-01-01T00:10:20.500Z'),
    );
    expect(healed).toEqual({
      nodeName: 'rabbit@RMQBENCHN000001',
      healedAt: '2025-01-01T00:10:20.500Z',
      healedAtSeconds: 20.5,
    });
    expect(scriptsSent()).toEqual([{ vm: 'nodes_a1', script: healScript('rabbit@RMQBENCHN000001', 'stop') }]);

    await arm.stop();
    ({ arm, clients } = await startFakeArm({
      operationPolls: 1,
      runCommandPolls: 1,
      runCommandOutcome: () => ({
        executionState: 'Failed',
        exitCode: 3,
        output: '',
        error: 'rmqbench: this instance does not run rabbit@RMQBENCHN000001 (it runs rabbit@OTHER)',
      }),
    }));
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, new Date());
    arm.vms.set(cluster.clusterId, [
      { name: 'nodes_a1', computerName: 'RMQBENCHN000001', timeCreated: '2025-01-01T00:01:01Z', scaleSet: 'nodes' },
    ]);
    await expect(
      healFault(
        azureFaultTarget(clients, cluster.clusterId, timing()),
        event({ action: 'stop', node: 0, atSeconds: 10, healAtSeconds: 20 }, applied),
      ),
    ).rejects.toThrow(
      new RegExp(
        String.raw`the fault Run Command rmqbench-fault-\S+ on nodes_a1 failed: rmqbench: this instance does ` +
          String.raw`not run rabbit@RMQBENCHN000001`,
      ),
    );
  });

  test('a leader that is none of the listed VMs fails the step before any fault script is sent', async () => {
    leaderAnswer = JSON.stringify({
      queues: [{ name: 'rmqbench-verifier', type: 'quorum', leader: 'rabbit@ELSEWHERE' }],
      local: {},
    });
    await expect(
      applyFault(
        azureFaultTarget(clients, cluster.clusterId, timing()),
        event({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
      ),
    ).rejects.toThrow(/led by rabbit@ELSEWHERE, which is none of the cluster's running instances/);
    expect(scriptsSent().map((sent) => sent.script)).toEqual([queueLeadersScript()]);
  });

  test(
    "a partition of the leader runs the partition script on the leader's VM; " +
      'its heal runs the script that deletes the firewall table there, not a broker start',
    async () => {
      const fault = { action: 'partition', node: 'leader', atSeconds: 10, healAtSeconds: 20 };
      const applied = await applyFault(
        azureFaultTarget(clients, cluster.clusterId, timing()),
        event(fault),
        () => new Date('2025-01-01T00:10:10.000Z'),
      );
      expect(applied).toEqual({
        nodeName: 'rabbit@RMQBENCHN000002',
        instanceId: 'nodes_b2',
        appliedAt: '2025-01-01T00:10:10.000Z',
        appliedAtSeconds: 10,
      });
      const healed = await healFault(
        azureFaultTarget(clients, cluster.clusterId, timing()),
        event(fault, applied),
        () => new Date('2025-01-01T00:10:20.000Z'),
      );
      expect(healed).toEqual({
        nodeName: 'rabbit@RMQBENCHN000002',
        healedAt: '2025-01-01T00:10:20.000Z',
        healedAtSeconds: 20,
      });
      expect(scriptsSent()).toEqual([
        { vm: 'nodes_a1', script: queueLeadersScript() },
        { vm: 'nodes_b2', script: faultScript('partition', 'rabbit@RMQBENCHN000002') },
        { vm: 'nodes_b2', script: healScript('rabbit@RMQBENCHN000002', 'partition') },
      ]);
      expect(scriptsSent()[2]!.script).toContain('nft delete table inet rmqbench_partition');
    },
  );
});
