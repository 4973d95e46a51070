import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ClientSecretCredential } from '@azure/identity';
import { mockClient } from 'aws-sdk-client-mock';
import {
  AzureClients,
  azureCredentialFromSecret,
  AzureClusterConfig,
  checkDeployment,
  checkRunCommand,
  DEPLOYMENTS_API_VERSION,
  deleteResourceGroup,
  launchResourceGroup,
  startRunCommand,
} from '../../lambdas/shared/azure-cluster';
import type { ScheduledCluster } from '../../state-machines/schedule';
import type { FakeArm, FakeArmOptions } from './fake-arm';
import { fakeArmClients, startFakeArm, withFakeArm } from './fake-arm-clients';

/** A tiny ARM template: one output from a parameter, one literal (the fake evaluates exactly these). */
const template = {
  $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
  contentVersion: '1.0.0.0',
  parameters: { instanceCount: { type: 'int' }, tags: { type: 'object' }, adminUsername: { type: 'string' } },
  resources: [],
  outputs: {
    amqpEndpoint: { type: 'string', value: '10.20.1.10:5672' },
    loadGeneratorVmName: { type: 'string', value: 'rmqbench-loadgen' },
    nodes: { type: 'int', value: "[parameters('instanceCount')]" },
  },
};
const config: AzureClusterConfig = {
  location: 'westeurope',
  template,
  parameters: { adminUsername: 'rmqbench' },
  expiryHours: 12,
  launchTimeoutMinutes: 30,
};
const cluster = (index: number): ScheduledCluster => ({
  index,
  clusterId: `rmqbench-run-1-c${index + 1}`,
  nodes: 3,
  topology: 'quorum',
  repetitions: [],
});
const NOW = new Date('2025-01-01T00:00:00Z');

let arm: FakeArm;
let clients: AzureClients;
beforeEach(async () => {
  ({ arm, clients } = await startFakeArm({ deploymentPolls: 2, operationPolls: 2 }));
});
afterEach(async () => arm.stop());

describe('Azure cluster logic against a fake ARM endpoint', () => {
  test(
    'launch creates the resource group tagged with run id and ' +
      'expiry, and submits the template with the node count',
    async () => {
      const launch = await launchResourceGroup(clients, config, 'run-1', cluster(0), NOW);
      expect(launch).toEqual({
        clusterId: 'rmqbench-run-1-c1',
        readyBy: '2025-01-01T00:30:00.000Z',
        expiresAt: '2025-01-01T12:00:00.000Z',
      });
      expect(arm.groups.get('rmqbench-run-1-c1')).toEqual({
        location: 'westeurope',
        tags: { 'rmqbench:run-id': 'run-1', 'rmqbench:expires-at': '2025-01-01T12:00:00.000Z' },
      });
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      expect(put.path).toBe(
        '/subscriptions/sub-1/resourcegroups/rmqbench-run-1-c1' +
          '/providers/Microsoft.Resources/deployments/rmqbench-cluster',
      );
      expect(put.apiVersion).toBe(DEPLOYMENTS_API_VERSION);
      expect(put.body).toEqual({
        properties: {
          mode: 'Incremental',
          template,
          parameters: {
            adminUsername: { value: 'rmqbench' },
            instanceCount: { value: 3 },
            tags: { value: arm.groups.get('rmqbench-run-1-c1')!.tags },
          },
        },
      });
      expect(new Set(arm.requests.map((request) => request.authorization))).toEqual(new Set(['Bearer fake-token']));
    },
  );

  test(
    "the plan cluster's own parameters (version, " + 'broker configuration) take precedence over the shared ones',
    async () => {
      const shared: AzureClusterConfig = {
        ...config,
        parameters: { adminUsername: 'rmqbench', rabbitmqVersion: '3.13.7', policyCommandsJson: '[]' },
      };
      await launchResourceGroup(clients, shared, 'run-1', cluster(0), NOW, {
        rabbitmqVersion: '4.1.4',
        policyCommandsJson: '[["set_policy"]]',
      });
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      const parameters = (put.body as { properties: { parameters: Record<string, { value: unknown }> } }).properties
        .parameters;
      expect([parameters.rabbitmqVersion, parameters.policyCommandsJson, parameters.adminUsername]).toEqual([
        { value: '4.1.4' },
        { value: '[["set_policy"]]' },
        { value: 'rmqbench' },
      ]);
    },
  );

  test("the plan cluster's instance type becomes clusterVmSize, with the Standard_ prefix ARM expects", async () => {
    await launchResourceGroup(clients, config, 'run-1', { ...cluster(0), instanceType: 'F8s_v2' }, NOW);
    const put = arm.requests.find(
      (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
    )!;
    expect(
      (put.body as { properties: { parameters: Record<string, { value: unknown }> } }).properties.parameters
        .clusterVmSize,
    ).toEqual({ value: 'Standard_F8s_v2' });
  });

  test(
    'with controller egress addresses the load balancer is public and ' +
      "the NSG admits them as /32 besides the user's prefixes (deduplicated)",
    async () => {
      const withEgress: AzureClusterConfig = {
        ...config,
        parameters: { adminUsername: 'rmqbench', allowedSourceAddressPrefixes: ['198.51.100.0/24', '203.0.113.10/32'] },
        controllerEgressAddresses: ['203.0.113.10', '192.0.2.7'],
      };
      await launchResourceGroup(clients, withEgress, 'run-1', cluster(0), NOW);
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      const parameters = (put.body as { properties: { parameters: Record<string, { value: unknown }> } }).properties
        .parameters;
      expect(parameters.publicLoadBalancer).toEqual({ value: true });
      expect(parameters.allowedSourceAddressPrefixes).toEqual({
        value: ['198.51.100.0/24', '203.0.113.10/32', '192.0.2.7/32'],
      });
      expect(parameters.adminUsername).toEqual({ value: 'rmqbench' });
      expect(parameters.instanceCount).toEqual({ value: 3 });
    },
  );

  test(
    "without user prefixes the controller's address alone is " +
      'admitted; a prefixes value that is not an array is refused',
    async () => {
      await launchResourceGroup(
        clients,
        { ...config, controllerEgressAddresses: ['203.0.113.10'] },
        'run-1',
        cluster(0),
        NOW,
      );
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      expect((put.body as { properties: { parameters: Record<string, unknown> } }).properties.parameters).toMatchObject(
        {
          publicLoadBalancer: { value: true },
          allowedSourceAddressPrefixes: { value: ['203.0.113.10/32'] },
        },
      );
      await expect(
        launchResourceGroup(
          clients,
          {
            ...config,
            parameters: { allowedSourceAddressPrefixes: '10.0.0.0/8' },
            controllerEgressAddresses: ['203.0.113.10'],
          },
          'run-1',
          cluster(1),
          NOW,
        ),
      ).rejects.toThrow('template parameter allowedSourceAddressPrefixes must be an array of address prefixes');
    },
  );

  test('readiness polls the deployment until Succeeded and returns its outputs as strings', async () => {
    const launch = await launchResourceGroup(clients, config, 'run-1', cluster(0), NOW);
    await expect(checkDeployment(clients, launch, NOW)).resolves.toEqual({ ready: false, status: 'Running' });
    await expect(checkDeployment(clients, launch, NOW)).resolves.toEqual({ ready: false, status: 'Running' });
    await expect(checkDeployment(clients, launch, NOW)).resolves.toEqual({
      ready: true,
      status: 'Succeeded',
      outputs: { amqpEndpoint: '10.20.1.10:5672', loadGeneratorVmName: 'rmqbench-loadgen', nodes: '3' },
    });
  });

  test(
    'a failed deployment, and one still running after ' + 'its deadline, are errors naming the resource group',
    async () => {
      const failing = await launchResourceGroup(
        clients,
        { ...config, template: { ...template, variables: { fail: 'QuotaExceeded: not enough cores' } } },
        'run-1',
        cluster(1),
        NOW,
      );
      for (let poll = 0; poll < 2; poll++) await checkDeployment(clients, failing, NOW);
      await expect(checkDeployment(clients, failing, NOW)).rejects.toThrow(
        'deployment rmqbench-cluster in resource group rmqbench-run-1-c2 is Failed: QuotaExceeded: not enough cores',
      );
      const slow = await launchResourceGroup(clients, config, 'run-1', cluster(2), NOW);
      await expect(checkDeployment(clients, slow, new Date('2025-01-01T00:31:00Z'))).rejects.toThrow(
        'resource group rmqbench-run-1-c3 was not ready by 2025-01-01T00:30:00.000Z (deployment still Running)',
      );
    },
  );

  test(
    'a managed Run Command is created on the VM (its location, the script, protected parameters, ' +
      'async) and polled through its instance view until the script is done, then deleted',
    async () => {
      await launchResourceGroup(clients, config, 'run-1', cluster(0), NOW);
      const started = await startRunCommand(clients, 'rmqbench-run-1-c1', 'rmqbench-loadgen', {
        name: 'rmqbench-rep-1',
        script: 'echo "$SECRET_URL"',
        protectedParameters: [{ name: 'SECRET_URL', value: 'https://example/sig=1' }],
        timeoutInSeconds: 300,
      });
      expect(started).toEqual({
        resourceGroup: 'rmqbench-run-1-c1',
        vmName: 'rmqbench-loadgen',
        runCommandName: 'rmqbench-rep-1',
      });
      const put = arm.requests.find((request) => request.method === 'PUT' && request.path.includes('/runCommands/'))!;
      expect(put.path).toBe(
        '/subscriptions/sub-1/resourceGroups/rmqbench-run-1-c1/providers' +
          '/Microsoft.Compute/virtualMachines/rmqbench-loadgen/runCommands/rmqbench-rep-1',
      );
      expect(put.body).toEqual({
        location: 'westeurope',
        properties: {
          source: { script: 'echo "$SECRET_URL"' },
          protectedParameters: [{ name: 'SECRET_URL', value: 'https://example/sig=1' }],
          asyncExecution: true,
          timeoutInSeconds: 300,
        },
      });
      // A fresh client, as in the next Lambda invocation: only the names are carried over.
      const next = fakeArmClients(arm);
      const polls: unknown[] = [];
      for (let poll = 0; poll < 5; poll++) {
        const state = await checkRunCommand(next, JSON.parse(JSON.stringify(started)) as typeof started);
        polls.push(state);
        if (state.done) break;
      }
      expect(polls).toEqual([
        { done: false },
        { done: false },
        { done: true, succeeded: true, stdout: 'ran: echo "$SECRET_URL"', stderr: '' },
      ]);
      const gets = arm.requests.filter(
        (request) => request.method === 'GET' && request.path.endsWith('/runCommands/rmqbench-rep-1'),
      );
      expect(gets).toHaveLength(3);
      expect(arm.runCommands.size).toBe(0);
      expect(
        arm.requests.some(
          (request) => request.method === 'DELETE' && request.path.endsWith('/runCommands/rmqbench-rep-1'),
        ),
      ).toBe(true);
    },
  );

  test(
    'a Run Command whose script fails, or that times out, is done ' +
      "and failed with the script's stderr or the state it ended in",
    async () => {
      const failing: FakeArmOptions = {
        runCommandPolls: 0,
        runCommandOutcome: (script) =>
          script.includes('timeout')
            ? { executionState: 'TimedOut', exitCode: -1, output: '', error: '' }
            : { executionState: 'Succeeded', exitCode: 3, output: 'partial', error: 'perf-test: connection refused' },
      };
      await withFakeArm(failing, async (failingClients) => {
        await launchResourceGroup(failingClients, config, 'run-1', cluster(0), NOW);
        const request = { protectedParameters: [], timeoutInSeconds: 60 };
        const exitedNonZero = await startRunCommand(failingClients, 'rmqbench-run-1-c1', 'rmqbench-loadgen', {
          ...request,
          name: 'a',
          script: 'perf-test',
        });
        await expect(checkRunCommand(failingClients, exitedNonZero)).resolves.toEqual({
          done: true,
          succeeded: false,
          stdout: 'partial',
          stderr: 'perf-test: connection refused',
        });
        const timedOut = await startRunCommand(failingClients, 'rmqbench-run-1-c1', 'rmqbench-loadgen', {
          ...request,
          name: 'b',
          script: 'timeout',
        });
        await expect(checkRunCommand(failingClients, timedOut)).resolves.toEqual({
          done: true,
          succeeded: false,
          stdout: '',
          stderr: 'Run Command b ended TimedOut (exit code -1)',
        });
      });
    },
  );

  test(
    'teardown deletes the resource group through 202 + Location ' + 'polling, and a missing group counts as deleted',
    async () => {
      await launchResourceGroup(clients, config, 'run-1', cluster(0), NOW);
      await expect(deleteResourceGroup(clients, 'rmqbench-run-1-c1', 10_000, 10)).resolves.toEqual({ deleted: true });
      expect(arm.groups.has('rmqbench-run-1-c1')).toBe(false);
      expect(
        arm.requests.filter((request) => request.method === 'GET' && request.path.includes('/operations/')).length,
      ).toBeGreaterThanOrEqual(3);
      await expect(deleteResourceGroup(clients, 'rmqbench-run-1-c1', 10_000, 10)).resolves.toEqual({ deleted: true });
    },
  );

  test('teardown that outlasts its wait returns deleted: false and leaves ARM to finish', async () => {
    await withFakeArm({ operationPolls: 1_000 }, async (slowClients) => {
      await launchResourceGroup(slowClients, config, 'run-1', cluster(0), NOW);
      await expect(deleteResourceGroup(slowClients, 'rmqbench-run-1-c1', 300, 20)).resolves.toEqual({ deleted: false });
    });
  });

  test('an unexpected ARM call fails (the fake answers only the calls it emulates)', async () => {
    await expect(clients.resources.resourceGroups.update('anything', {})).rejects.toThrow(/does not answer PATCH/);
  });
});

describe('Azure credentials from Secrets Manager', () => {
  const secrets = mockClient(SecretsManagerClient);
  afterEach(() => secrets.reset());

  test('a service principal secret gives a ClientSecretCredential and the subscription', async () => {
    secrets.on(GetSecretValueCommand, { SecretId: 'azure-sp' }).resolves({
      SecretString: JSON.stringify({ tenantId: 't', clientId: 'c', clientSecret: 's', subscriptionId: 'sub-9' }),
    });
    const { credential, subscriptionId } = await azureCredentialFromSecret(new SecretsManagerClient({}), 'azure-sp');
    expect(credential).toBeInstanceOf(ClientSecretCredential);
    expect(subscriptionId).toBe('sub-9');
  });

  test('a secret missing fields, or not JSON, is refused with what it must contain', async () => {
    secrets
      .on(GetSecretValueCommand, { SecretId: 'partial' })
      .resolves({ SecretString: JSON.stringify({ tenantId: 't' }) });
    secrets.on(GetSecretValueCommand, { SecretId: 'text' }).resolves({ SecretString: 'password' });
    await expect(azureCredentialFromSecret(new SecretsManagerClient({}), 'partial')).rejects.toThrow(
      'secret partial lacks clientId, clientSecret, subscriptionId',
    );
    await expect(azureCredentialFromSecret(new SecretsManagerClient({}), 'text')).rejects.toThrow(
      'secret text must be JSON with tenantId, clientId, clientSecret and subscriptionId',
    );
  });
});
