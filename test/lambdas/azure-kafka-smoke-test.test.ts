import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { kafkaSmokeTestScript } from '../../lambdas/shared/kafka-load-generator';
import { azureKafkaSmokeTest } from '../../lambdas/smoke-test/azure-load-generator';
import type { ScheduledCluster } from '../../state-machines/schedule';
import type { FakeArm, FakeArmOptions } from './fake-arm';
import { fakeClusterConfig, startFakeArm } from './fake-arm-clients';

const cluster: ScheduledCluster = {
  index: 0,
  clusterId: 'rmqbench-run-k-c1',
  nodes: 3,
  topology: 'kafka',
  repetitions: [],
};
const BOOTSTRAP = '10.20.1.99:9092,10.20.1.100:9092,10.20.1.101:9092';
const outputs = {
  kafkaBootstrapServers: BOOTSTRAP,
  loadGeneratorResourceId:
    `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers` +
    `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`,
};
const NOW = new Date('2025-01-01T00:00:00Z');

describe(
  'the Kafka smoke test on Azure through a managed Run ' + 'Command (real @azure/arm-compute client, fake ARM)',
  () => {
    let arm: FakeArm;
    let clients: AzureClients;
    const start = async (options: FakeArmOptions) => {
      ({ arm, clients } = await startFakeArm({ operationPolls: 1, runCommandPolls: 2, ...options }));
      await launchResourceGroup(clients, fakeClusterConfig(), 'run-k', cluster, NOW, { broker: 'kafka' });
    };
    afterEach(async () => arm.stop());
    const fast = { pollMs: 0, sleep: async () => undefined, suffix: 'feed1234' };

    test(
      'runs exactly the AWS smoke-test script on the load generator, ' +
        'polls it to Succeeded and deletes the Run Command',
      async () => {
        const scripts: string[] = [];
        await start({
          runCommandOutcome: (script) => (
            scripts.push(script),
            { executionState: 'Succeeded', exitCode: 0, output: 'smoke test: 3 partition leaders', error: '' }
          ),
        });
        await expect(azureKafkaSmokeTest(clients, cluster.clusterId, outputs, 3, fast)).resolves.toEqual({
          status: 'Success',
          brokers: 3,
        });
        expect(scripts).toEqual([
          kafkaSmokeTestScript({ bootstrapServers: BOOTSTRAP, brokers: 3, suffix: 'feed1234' }),
        ]);
        const path =
          `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers/Microsoft.Compute` +
          `/virtualMachines/rmqbench-loadgen/runCommands/rmqbench-kafka-smoke-feed1234`;
        expect(arm.requests.filter((request) => request.path === path).map((request) => request.method)).toEqual(
          expect.arrayContaining(['PUT', 'GET', 'DELETE']),
        );
        expect(
          arm.requests.filter((request) => request.path === path && request.method === 'GET').length,
        ).toBeGreaterThan(1);
      },
    );

    test('a failed script fails the smoke test with its stderr', async () => {
      await start({
        runCommandOutcome: () => ({
          executionState: 'Failed',
          exitCode: 1,
          output: '',
          error: 'smoke test: 2 of 3 partitions of rmqbench-smoke-feed1234 have a leader:',
        }),
      });
      await expect(azureKafkaSmokeTest(clients, cluster.clusterId, outputs, 3, fast)).rejects.toThrow(
        'Kafka smoke test on the load generator rmqbench-loadgen failed: ' +
          'smoke test: 2 of 3 partitions of rmqbench-smoke-feed1234 have a leader:',
      );
    });

    test('a Run Command still running past the deadline fails naming the time limit', async () => {
      await start({ runCommandPolls: 1000 });
      let clock = NOW.getTime();
      const now = () => new Date((clock += 60_000));
      await expect(azureKafkaSmokeTest(clients, cluster.clusterId, outputs, 3, { ...fast, now })).rejects.toThrow(
        'did not finish within 270 s',
      );
    });

    test('a deployment without the Kafka outputs is refused before any Run Command', async () => {
      await start({});
      await expect(
        azureKafkaSmokeTest(
          clients,
          cluster.clusterId,
          { loadGeneratorResourceId: outputs.loadGeneratorResourceId },
          3,
          fast,
        ),
      ).rejects.toThrow('lacks the kafkaBootstrapServers or loadGeneratorResourceId output');
      expect(arm.requests.filter((request) => request.path.includes('/runCommands/'))).toHaveLength(0);
    });
  },
);
