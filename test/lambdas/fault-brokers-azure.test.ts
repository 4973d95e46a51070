/**
 * The cloud fault step on a Kafka and a NATS cluster (lambdas/fault/aws.ts with core/failover/cloud-broker-fault.ts),
 * through the Azure target's real SDK compute client against the fake ARM endpoint (test/lambdas/fake-arm.ts): the
 * brokers are the VMs named <prefix>-kafka-<n> / <prefix>-nats-<n>, the leader is asked of them by Run Command, the
 * kill goes to the leader's VM, and the times recorded are the node's own (its STAMP lines), not the calls' start. The
 * scripts themselves run on the twins' simulated brokers (test/twin/azure/azure-twin-brokers.integration.test.ts).
 */
import { brokerFaultScripts } from '../../core/failover/cloud-broker-fault';
import { applyFault, healFault, MAX_HEAL_DELAY_MS, type AwsFaultEvent } from '../../lambdas/fault/aws';
import { azureClusterNodes, azureFaultTarget } from '../../lambdas/fault/azure';
import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { buildSchedule } from '../../state-machines/schedule';
import type { FakeArm, RunCommandOutcome } from './fake-arm';
import { fakeClusterConfig, runCommandScripts, startFakeArm } from './fake-arm-clients';

const kafka = brokerFaultScripts('kafka');
const nats = brokerFaultScripts('nats');

const planWith = (broker: 'kafka' | 'nats', fault: Record<string, unknown>) => ({
  name: 'azure-broker-fault',
  clusters: [{ name: 'three', broker, nodes: 3, instanceType: 'Standard_D4s_v5' }],
  workloads: [{ name: 'kill', publishRateLimit: 100, durationSeconds: 60, fault }],
});
const FAULT = { action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 };
const schedule = buildSchedule({ plan: planWith('kafka', FAULT), runId: 'run-1', target: 'local' }, 'exec');
const cluster = schedule.clusters[0]!;
const item = cluster.repetitions[0]!;
/** When the node acted, by its own clock: 14 s after the repetition's start, 4 s after the call was sent. */
const NODE_APPLIED_MS = Date.parse('2025-01-01T00:10:14.000Z');

/** TopicCommand --describe of the verifier's topic led by broker 3. */
const DESCRIBE =
  `Topic: rmqbench-verifier-${item.index}\tTopicId: x\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: \n` +
  `\tTopic: rmqbench-verifier-${item.index}\tPartition: 0\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\n`;

describe('the fault step on Kafka and NATS clusters against a fake ARM endpoint (real Azure SDK client)', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  /** What the NATS servers answer to the /jsz lookup, by VM. */
  let jsz: Record<string, string> = {};
  beforeEach(async () => {
    ({ arm, clients } = await startFakeArm({
      operationPolls: 1,
      runCommandPolls: 1,
      runCommandOutcome: (script, _environment, vm): RunCommandOutcome => {
        const output = script.includes('TopicCommand')
          ? DESCRIBE
          : script.includes('/jsz')
            ? (jsz[vm] ?? '{"hosted": false}')
            : `rmqbench: applying at ${NODE_APPLIED_MS}\n` +
              `rmqbench: healing at ${NODE_APPLIED_MS + 9_000}\nrmqbench: done`;
        return { executionState: 'Succeeded', exitCode: 0, output, error: '' };
      },
    }));
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, new Date());
    arm.vms.set(cluster.clusterId, [
      { name: 'rmqbench-loadgen', computerName: 'rmqbench-loadgen', timeCreated: '2025-01-01T00:00:00Z' },
      ...[3, 1, 2].map((n) => ({
        name: `rmqbench-abc-kafka-${n}`,
        computerName: `rmqbench-abc-kafka-${n}`,
        timeCreated: `2025-01-01T00:0${4 - n}:00Z`,
      })),
      ...[1, 2, 3].map((n) => ({
        name: `rmqbench-abc-nats-${n}`,
        computerName: `rmqbench-abc-nats-${n}`,
        timeCreated: '2025-01-01T00:01:00Z',
      })),
    ]);
    jsz = {};
  });
  afterEach(async () => arm.stop());

  const event = (broker: 'kafka' | 'nats', applied?: AwsFaultEvent['applied']): AwsFaultEvent => ({
    action: applied ? 'heal' : 'inject',
    runId: 'run-1',
    plan: planWith(broker, FAULT),
    item,
    launch: { clusterId: cluster.clusterId },
    started: { startedAt: '2025-01-01T00:10:00.000Z' },
    ...(applied ? { applied } : {}),
  });
  const scriptsSent = () => runCommandScripts(arm);

  test('the brokers and servers are the VMs named for them, in node order, the load generator left out', async () => {
    expect(await azureClusterNodes(clients, cluster.clusterId, undefined, 'kafka')).toEqual(
      [1, 2, 3].map((n) => ({ id: `rmqbench-abc-kafka-${n}`, nodeName: `kafka-${n}` })),
    );
    expect((await azureClusterNodes(clients, cluster.clusterId, undefined, 'nats')).map((n) => n.nodeName)).toEqual([
      'nats-1',
      'nats-2',
      'nats-3',
    ]);
  });

  test(
    'Kafka: the leader of the verifier topic from the first broker, the kill on its VM; appliedAt is the ' +
      "node's clock when it acted, not when the call went out",
    async () => {
      const applied = await applyFault(
        azureFaultTarget(clients, cluster.clusterId, { deadline: new Date(Date.now() + 60_000), pollMs: 10 }),
        event('kafka'),
        () => new Date('2025-01-01T00:10:10.000Z'),
      );
      expect(applied).toEqual({
        nodeName: 'kafka-3',
        instanceId: 'rmqbench-abc-kafka-3',
        appliedAt: new Date(NODE_APPLIED_MS).toISOString(),
        appliedAtSeconds: 14,
      });
      expect(scriptsSent()).toEqual([
        { vm: 'rmqbench-abc-kafka-1', script: kafka.leaderScript(`rmqbench-verifier-${item.index}`) },
        { vm: 'rmqbench-abc-kafka-3', script: kafka.faultScript('kill', 'kafka-3') },
      ]);
    },
  );

  test('NATS: servers without the verifier stream are passed over until one holds it', async () => {
    jsz = { 'rmqbench-abc-nats-2': '{"hosted": true, "leader": "nats-1"}' };
    const applied = await applyFault(
      azureFaultTarget(clients, cluster.clusterId, { deadline: new Date(Date.now() + 60_000), pollMs: 10 }),
      event('nats'),
    );
    expect(applied.nodeName).toBe('nats-1');
    expect(scriptsSent().map((sent) => sent.vm)).toEqual([
      'rmqbench-abc-nats-1',
      'rmqbench-abc-nats-2',
      'rmqbench-abc-nats-1',
    ]);
    expect(scriptsSent()[2]!.script).toBe(nats.faultScript('kill', 'nats-1'));
  });

  test(
    'a fault applied late is healed as long after it as the plan says (healAtSeconds - atSeconds), ' +
      'waiting within the step, at most MAX_HEAL_DELAY_MS',
    async () => {
      const waits: number[] = [];
      const applied = {
        nodeName: 'kafka-3',
        instanceId: 'rmqbench-abc-kafka-3',
        appliedAt: new Date(NODE_APPLIED_MS).toISOString(),
        appliedAtSeconds: 14,
      };
      const timing = {
        // HealFault runs at the planned heal, start + 20 s: the fault came 4 s late, so the heal waits 4 s.
        now: () => new Date('2025-01-01T00:10:20.000Z'),
        deadline: new Date('2025-01-01T00:15:00.000Z'),
        pollMs: 10,
        sleep: async (ms: number) => {
          waits.push(ms);
        },
      };
      const healed = await healFault(azureFaultTarget(clients, cluster.clusterId, timing), event('kafka', applied));
      expect(waits[0]).toBe(4_000);
      // healedAt is the node's clock when the heal began (its STAMP_HEALING line).
      expect(healed).toEqual({
        nodeName: 'kafka-3',
        healedAt: new Date(NODE_APPLIED_MS + 9_000).toISOString(),
        healedAtSeconds: 23,
      });
      expect(scriptsSent().at(-1)).toEqual({
        vm: 'rmqbench-abc-kafka-3',
        script: kafka.healScript('kafka-3', 'kill'),
      });
      expect(MAX_HEAL_DELAY_MS).toBe(120_000);
    },
  );
});
