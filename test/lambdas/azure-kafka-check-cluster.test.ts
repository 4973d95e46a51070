import { checkAzureCluster } from '../../lambdas/check-cluster/azure';
import { KAFKA_READINESS_RUN_COMMAND } from '../../lambdas/check-cluster/azure-load-generator';
import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { kafkaReadinessScript } from '../../lambdas/shared/kafka-load-generator';
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
const LOADGEN =
  `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers` +
  `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`;
const kafkaTemplate = {
  $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
  contentVersion: '1.0.0.0',
  resources: [],
  outputs: {
    kafkaBootstrapServers: { type: 'string', value: BOOTSTRAP },
    loadGeneratorResourceId: { type: 'string', value: LOADGEN },
  },
};
const NOW = new Date('2025-01-01T00:00:00Z');
const launch = { clusterId: cluster.clusterId, readyBy: new Date(NOW.getTime() + 30 * 60_000).toISOString() };
const RUN_COMMAND_PATH = `${LOADGEN}/runCommands/${KAFKA_READINESS_RUN_COMMAND}`;
const noCredentials = () => {
  throw new Error('a Kafka cluster must not ask for the RabbitMQ credentials');
};

describe(
  'CheckClusterReady on Azure for a Kafka deployment: a readiness Run ' +
    'Command on the load generator (real @azure/arm-compute client, fake ARM)',
  () => {
    let arm: FakeArm;
    let clients: AzureClients;
    const start = async (options: FakeArmOptions) => {
      ({ arm, clients } = await startFakeArm({
        operationPolls: 1,
        deploymentPolls: 0,
        runCommandPolls: 1,
        ...options,
      }));
      await launchResourceGroup(clients, fakeClusterConfig(kafkaTemplate), 'run-k', cluster, NOW, { broker: 'kafka' });
    };
    afterEach(async () => arm.stop());
    const methods = () =>
      arm.requests.filter((request) => request.path === RUN_COMMAND_PATH).map((request) => request.method);

    test(
      'first poll starts the check, a later poll sees it running, ' +
        'then Succeeded is ready and the Run Command is deleted',
      async () => {
        const scripts: string[] = [];
        await start({
          runCommandOutcome: (script) => (
            scripts.push(script),
            { executionState: 'Succeeded', exitCode: 0, output: 'readiness: 3 of 3 brokers registered', error: '' }
          ),
        });
        const first = await checkAzureCluster(clients, launch, 3, noCredentials, NOW);
        expect(first).toEqual({
          ready: false,
          status:
            'deployment succeeded, Kafka brokers registering: ' +
            'readiness check started on the load generator rmqbench-loadgen',
        });
        expect(methods()).toContain('PUT');
        const second = await checkAzureCluster(clients, launch, 3, noCredentials, NOW);
        expect(second.ready).toBe(false);
        expect(second.status).toContain('readiness check running');
        const third = await checkAzureCluster(clients, launch, 3, noCredentials, NOW);
        expect(third).toEqual({
          ready: true,
          status: 'Succeeded; readiness: 3 of 3 brokers registered',
          outputs: { kafkaBootstrapServers: BOOTSTRAP, loadGeneratorResourceId: LOADGEN },
        });
        expect(scripts).toEqual([kafkaReadinessScript({ bootstrapServers: BOOTSTRAP, brokers: 3 })]);
        expect(methods()).toContain('DELETE');
        expect(arm.runCommands.size).toBe(0);
      },
    );

    test('a failed check is "not yet" before readyBy, and the next poll starts a new one', async () => {
      let outcome: 'Failed' | 'Succeeded' = 'Failed';
      await start({
        runCommandPolls: 0,
        runCommandOutcome: () =>
          outcome === 'Failed'
            ? { executionState: 'Failed', exitCode: 1, output: '', error: 'readiness: 2 of 3 brokers registered:' }
            : { executionState: 'Succeeded', exitCode: 0, output: 'readiness: 3 of 3 brokers registered', error: '' },
      });
      expect((await checkAzureCluster(clients, launch, 3, noCredentials, NOW)).status).toContain(
        'readiness check started',
      );
      const failed = await checkAzureCluster(clients, launch, 3, noCredentials, NOW);
      expect(failed).toEqual({
        ready: false,
        status: 'deployment succeeded, Kafka brokers registering: readiness: 2 of 3 brokers registered:',
      });
      expect(arm.runCommands.size).toBe(0);
      outcome = 'Succeeded';
      expect((await checkAzureCluster(clients, launch, 3, noCredentials, NOW)).status).toContain(
        'readiness check started',
      );
      expect((await checkAzureCluster(clients, launch, 3, noCredentials, NOW)).ready).toBe(true);
      expect(methods().filter((method) => method === 'PUT')).toHaveLength(2);
    });

    test('a check still failing past readyBy is an error naming what it saw last', async () => {
      await start({
        runCommandPolls: 0,
        runCommandOutcome: () => ({
          executionState: 'Failed',
          exitCode: 1,
          output: '',
          error: 'readiness: 1 of 3 brokers registered:',
        }),
      });
      await checkAzureCluster(clients, launch, 3, noCredentials, NOW);
      const late = new Date(Date.parse(launch.readyBy) + 1000);
      await expect(checkAzureCluster(clients, launch, 3, noCredentials, late)).rejects.toThrow(
        `Kafka cluster ${cluster.clusterId} did not form by ${launch.readyBy} (the ` +
          `deployment succeeded); last seen: readiness: 1 of 3 brokers registered:`,
      );
    });

    test('a Kafka deployment without the load generator output is refused before any Run Command', async () => {
      const template = {
        ...kafkaTemplate,
        outputs: { kafkaBootstrapServers: kafkaTemplate.outputs.kafkaBootstrapServers },
      };
      ({ arm, clients } = await startFakeArm({ deploymentPolls: 0 }));
      await launchResourceGroup(clients, fakeClusterConfig(template), 'run-k', cluster, NOW, { broker: 'kafka' });
      await expect(checkAzureCluster(clients, launch, 3, noCredentials, NOW)).rejects.toThrow(
        'lacks the kafkaBootstrapServers or loadGeneratorResourceId output',
      );
      expect(arm.requests.filter((request) => request.path.includes('/runCommands/'))).toHaveLength(0);
    });
  },
);

describe('kafkaReadinessScript', () => {
  test('asks BrokerApiVersionsCommand and requires as many distinct broker ids as brokers', () => {
    const script = kafkaReadinessScript({ bootstrapServers: BOOTSTRAP, brokers: 3 });
    expect(script).toContain(`org.apache.kafka.tools.BrokerApiVersionsCommand '--bootstrap-server' '${BOOTSTRAP}'`);
    expect(script).toContain(`grep -oE '\\(id: [0-9]+ rack: ' versions.txt | sort -u | wc -l`);
    expect(script).toContain('[ "$SEEN" -eq 3 ] && [ "$DOWN" -eq 0 ]');
    expect(script).toContain(`grep -cE '\\(id: [0-9]+ rack: .* -> ERROR' versions.txt`);
  });
  test('refuses bootstrap servers that are not host:port pairs and a broker count below 1', () => {
    expect(() => kafkaReadinessScript({ bootstrapServers: 'a:1; rm -rf /', brokers: 3 })).toThrow('host:port pairs');
    expect(() => kafkaReadinessScript({ bootstrapServers: BOOTSTRAP, brokers: 0 })).toThrow(
      'brokers must be a positive integer, got 0',
    );
  });
});
