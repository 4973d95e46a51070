import { launchAzureCluster, launchAzureKafkaCluster } from '../../lambdas/launch-cluster/azure';
import type { AzureClients, AzureClusterConfig } from '../../lambdas/shared/azure-cluster';
import { EXPIRES_AT_TAG, RUN_ID_TAG } from '../../lambdas/shared/env';
import type { ScheduledCluster } from '../../state-machines/schedule';
import type { FakeArm } from './fake-arm';
import { EMPTY_TEMPLATE, startFakeArm, withFakeArm } from './fake-arm-clients';

const ADMIN_PASSWORD = 'admin-password-"quoted"-1234';
const ERLANG_COOKIE = 'erlang-cookie-0123456789abcdef';
const config: AzureClusterConfig = {
  location: 'westeurope',
  template: EMPTY_TEMPLATE,
  // What the controller's shared parameters hold (AZURE_PARAMETERS_JSON and the secret's `parameters`).
  parameters: {
    adminUsername: 'rmqbench',
    adminSshPublicKey: 'ssh-ed25519 AAAA test',
    allowedSourceAddressPrefixes: ['198.51.100.0/24'],
    rabbitmqAdminPassword: ADMIN_PASSWORD,
    erlangCookie: ERLANG_COOKIE,
  },
  expiryHours: 12,
  launchTimeoutMinutes: 30,
  controllerEgressAddresses: ['203.0.113.10'],
};
const cluster: ScheduledCluster = {
  index: 0,
  clusterId: 'rmqbench-run-1-c1',
  nodes: 3,
  topology: 'kafka',
  instanceType: 'Standard_F4s_v2',
  repetitions: [],
};
const NOW = new Date('2025-01-01T00:00:00Z');

type DeploymentPut = {
  properties: { mode: string; template: unknown; parameters: Record<string, { value: unknown }> };
};

describe('LaunchCluster on Azure for a Kafka plan cluster (real @azure/arm-* clients against the fake ARM)', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  beforeEach(async () => {
    ({ arm, clients } = await startFakeArm({ deploymentPolls: 2, operationPolls: 2 }));
  });
  afterEach(async () => arm.stop());

  test(
    'deploys main.bicep with broker kafka: no certificate, no public load ' +
      'balancer, no RabbitMQ broker texts, the source prefixes unchanged',
    async () => {
      const launch = await launchAzureKafkaCluster(clients, config, 'run-1', cluster, NOW);
      expect(launch).toEqual({
        clusterId: 'rmqbench-run-1-c1',
        readyBy: '2025-01-01T00:30:00.000Z',
        expiresAt: '2025-01-01T12:00:00.000Z',
      });
      const group = arm.requests.find(
        (request) => request.method === 'PUT' && /\/resourcegroups\/rmqbench-run-1-c1$/i.test(request.path),
      )!;
      expect(group.body).toEqual({
        location: 'westeurope',
        tags: { [RUN_ID_TAG]: 'run-1', [EXPIRES_AT_TAG]: '2025-01-01T12:00:00.000Z' },
      });
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      const body = put.body as DeploymentPut;
      expect(body.properties.mode).toBe('Incremental');
      const parameters = body.properties.parameters;
      expect(parameters.broker).toEqual({ value: 'kafka' });
      expect(parameters.instanceCount).toEqual({ value: 3 });
      expect(parameters.clusterVmSize).toEqual({ value: 'Standard_F4s_v2' });
      // main.bicep fails a kafka deployment with publicLoadBalancer true; the controller's egress /32 would be of no
      // use to private brokers.
      expect(parameters.publicLoadBalancer).toBeUndefined();
      expect(parameters.allowedSourceAddressPrefixes).toEqual({ value: ['198.51.100.0/24'] });
      // Neither the RabbitMQ broker texts nor its secrets (given in the shared parameters): main.bicep creates no
      // RabbitMQ secret for kafka.
      for (const name of [
        'tlsCertificatePem',
        'tlsPrivateKeyPem',
        'rabbitmqConf',
        'enabledPluginsFile',
        'policyCommandsJson',
        'rabbitmqVersion',
        'rabbitmqAdminPassword',
        'erlangCookie',
      ]) {
        expect({ name, value: parameters[name] }).toEqual({ name, value: undefined });
      }
      // The deployment was really submitted: the fake ARM holds it for CheckClusterReady to poll.
      expect(arm.deployments.has('rmqbench-run-1-c1')).toBe(true);
    },
  );

  test("no source prefix given: the controller's egress addresses go, as main.bicep takes one", async () => {
    const parameters = { ...config.parameters, allowedSourceAddressPrefixes: [] };
    await launchAzureKafkaCluster(clients, { ...config, parameters }, 'run-1', cluster, NOW);
    const put = arm.requests.find(
      (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
    )!;
    const sent = (put.body as DeploymentPut).properties.parameters;
    expect(sent.allowedSourceAddressPrefixes).toEqual({ value: ['203.0.113.10/32'] });
    expect(sent.publicLoadBalancer).toBeUndefined();
    // Without an egress address either, the launch is refused by name before anything is created.
    const requests = arm.requests.length;
    await expect(
      launchAzureKafkaCluster(clients, { ...config, parameters, controllerEgressAddresses: [] }, 'run-1', cluster, NOW),
    ).rejects.toThrow(/allowedSourceAddressPrefixes is empty and the controller has no egress address/);
    expect(arm.requests.length).toBe(requests);
  });

  test('a Kafka launch needs no RabbitMQ secret: without any, the deployment is submitted with none', async () => {
    const { rabbitmqAdminPassword: _password, erlangCookie: _cookie, ...withoutSecrets } = config.parameters;
    await launchAzureKafkaCluster(clients, { ...config, parameters: withoutSecrets }, 'run-1', cluster, NOW);
    const put = arm.requests.find(
      (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
    )!;
    const parameters = (put.body as DeploymentPut).properties.parameters;
    expect(Object.keys(parameters).sort()).toEqual([
      'adminSshPublicKey',
      'adminUsername',
      'allowedSourceAddressPrefixes',
      'broker',
      'clusterVmSize',
      'instanceCount',
      'tags',
    ]);
    expect(arm.deployments.has('rmqbench-run-1-c1')).toBe(true);
  });

  test.each([
    ['both missing', {}, ['rabbitmqAdminPassword is missing', 'erlangCookie is missing']],
    ['the cookie missing', { rabbitmqAdminPassword: ADMIN_PASSWORD }, ['erlangCookie is missing']],
    [
      'a short password',
      { rabbitmqAdminPassword: 'short-pw-11', erlangCookie: ERLANG_COOKIE },
      ['rabbitmqAdminPassword must be at least 12 characters'],
    ],
    [
      'a short cookie',
      { rabbitmqAdminPassword: ADMIN_PASSWORD, erlangCookie: 'cookie-0123456789ab' },
      ['erlangCookie must be at least 20 characters'],
    ],
    [
      'a cookie that is not a string',
      { rabbitmqAdminPassword: ADMIN_PASSWORD, erlangCookie: 12345678901234567890 },
      ['erlangCookie must be a string'],
    ],
  ])(
    'a RabbitMQ launch with %s is refused by name, never quoting a value, before anything is created',
    async (_case, secrets, problems) => {
      const { rabbitmqAdminPassword: _password, erlangCookie: _cookie, ...rest } = config.parameters;
      const error = (await launchAzureCluster(
        clients,
        { ...config, parameters: { ...rest, ...secrets } },
        'run-1',
        { ...cluster, topology: 'quorum' },
        NOW,
      ).catch((caught: unknown) => caught)) as Error;
      expect(error.message).toMatch(/^a RabbitMQ cluster on Azure needs its secrets as template parameters: /);
      for (const problem of problems) expect(error.message).toContain(problem);
      expect(error.message).toContain('service principal secret');
      for (const value of ['short-pw-11', 'cookie-0123456789ab', ADMIN_PASSWORD, ERLANG_COOKIE])
        expect(error.message).not.toContain(value);
      expect(arm.requests).toEqual([]);
    },
  );

  test.each([['0.0.0.0/0'], ['Internet'], ['AzureCloud.westeurope']])(
    'allowedSourceAddressPrefixes with %s is refused by name before anything is created',
    async (prefix) => {
      const open = {
        ...config,
        parameters: { ...config.parameters, allowedSourceAddressPrefixes: ['198.51.100.0/24', prefix] },
      };
      await expect(launchAzureKafkaCluster(clients, open, 'run-1', cluster, NOW)).rejects.toThrow(
        `refused: ${prefix} (`,
      );
      await expect(
        launchAzureKafkaCluster(
          clients,
          { ...config, parameters: { ...config.parameters, allowedSourceAddressPrefixes: '10.0.0.0/8' } },
          'run-1',
          cluster,
          NOW,
        ),
      ).rejects.toThrow(/must be an array/);
      expect(arm.requests).toEqual([]);
    },
  );

  test.each([
    ['kafka', (quotingClients: AzureClients) => launchAzureKafkaCluster(quotingClients, config, 'run-1', cluster, NOW)],
    [
      'rabbitmq',
      (quotingClients: AzureClients) =>
        launchAzureCluster(quotingClients, config, 'run-1', { ...cluster, topology: 'quorum' }, NOW),
    ],
  ])(
    'a %s launch failure is re-thrown without the admin ' +
      'password or Erlang cookie, even when ARM quotes the parameters back',
    async (_broker, launch) => {
      const quoting = {
        rejectDeployment: (body: unknown) =>
          `invalid template: ${JSON.stringify((body as DeploymentPut).properties.parameters)}`,
      };
      await withFakeArm(quoting, async (quotingClients) => {
        const error = (await launch(quotingClients).catch((caught: unknown) => caught)) as Error;
        expect(error.message).toMatch(/^launching resource group rmqbench-run-1-c1 failed: .*invalid template: /);
        if (_broker === 'rabbitmq') {
          expect(error.message).toContain('"rabbitmqAdminPassword":{"value":"<rabbitmqAdminPassword>"}');
          expect(error.message).toContain('"erlangCookie":{"value":"<erlangCookie>"}');
        } else {
          // A Kafka launch never sends them, so ARM has nothing of them to quote.
          expect(error.message).not.toContain('rabbitmqAdminPassword');
          expect(error.message).not.toContain('erlangCookie');
        }
        expect(error.message).not.toContain('admin-password');
        expect(error.message).not.toContain(ERLANG_COOKIE);
        expect(error.message).not.toContain('PRIVATE KEY');
      });
    },
  );
});
