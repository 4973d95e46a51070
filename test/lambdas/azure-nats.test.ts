import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { checkAzureLoadGeneratorReadiness, NATS_READINESS } from '../../lambdas/check-cluster/azure-load-generator';
import { launchAzureNatsCluster } from '../../lambdas/launch-cluster/azure';
import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { natsSmokeTestScript } from '../../lambdas/shared/nats-load-generator';
import { azureNatsSmokeTest } from '../../lambdas/smoke-test/azure-load-generator';
import {
  azureNatsRepetitionScript,
  uploadUrlVariable,
  startAzureNatsRepetition,
} from '../../lambdas/start-repetition/azure-load-generator';
import { runCommandName } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';
import type { FakeArm, FakeArmOptions } from './fake-arm';
import { fakeClusterConfig, startFakeArm } from './fake-arm-clients';

/**
 * A NATS plan cluster through the Azure workflow functions (real @azure/arm-* clients against the fake ARM endpoint):
 * LaunchCluster deploys main.bicep with broker nats and the plan's sync interval, without the RabbitMQ secrets;
 * CheckClusterReady asks the load generator (the NATS smoke test's question, a Run Command of a fixed name);
 * SmokeTest runs the AWS script there; StartRepetition sends the AWS repetition script with one pre-signed upload
 * URL per output file as protected parameters. The scripts themselves run for real in nats-script.integration.test.ts.
 */
const plan = {
  name: 'nats-azure',
  clusters: [{ name: 'n', broker: 'nats', nodes: 3, instanceType: 'Standard_F4s_v2', syncInterval: 'always' }],
  workloads: [
    { name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, publishRateLimit: 100, durationSeconds: 20 },
  ],
};
const schedule = buildSchedule({ plan, target: 'local', runId: 'run-n' }, 'exec');
const cluster = schedule.clusters[0]!;
const item = cluster.repetitions[0]!;
const SERVERS = 'nats://10.20.1.100:4222,nats://10.20.1.101:4222,nats://10.20.1.102:4222';
const outputs = {
  natsServerUrls: SERVERS,
  loadGeneratorResourceId:
    `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers` +
    `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`,
};
const NOW = new Date('2025-01-01T00:00:00Z');
const presigner = () =>
  new S3Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' } });
const FILES = ['nats-load.jsonl', 'nats-load.log'];
type RunCommandPut = {
  properties: { source: { script: string }; protectedParameters: { name: string; value: string }[] };
};

describe('a NATS plan cluster through the Azure workflow functions (fake ARM)', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  const start = async (options: FakeArmOptions = {}) => {
    ({ arm, clients } = await startFakeArm({ operationPolls: 1, runCommandPolls: 1, deploymentPolls: 1, ...options }));
  };
  afterEach(async () => arm.stop());

  test('LaunchCluster deploys broker nats with its sync interval, no RabbitMQ secret, no public balancer', async () => {
    await start();
    const config = {
      ...fakeClusterConfig(),
      parameters: { rabbitmqAdminPassword: 'admin-password-123456', allowedSourceAddressPrefixes: ['198.51.100.0/24'] },
      controllerEgressAddresses: ['203.0.113.10'],
    };
    await launchAzureNatsCluster(clients, config, 'run-n', cluster, 'always', NOW);
    const put = arm.requests.find(
      (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
    )!;
    const parameters = (put.body as { properties: { parameters: Record<string, { value: unknown }> } }).properties
      .parameters;
    expect(parameters.broker).toEqual({ value: 'nats' });
    expect(parameters.natsSyncInterval).toEqual({ value: 'always' });
    expect(parameters.instanceCount).toEqual({ value: 3 });
    expect(parameters.publicLoadBalancer).toBeUndefined();
    expect(parameters.rabbitmqAdminPassword).toBeUndefined();
    expect(JSON.stringify(put.body)).not.toContain('admin-password-123456');
  });

  test('CheckClusterReady starts the readiness question on the load generator, ready when it passes', async () => {
    const scripts: string[] = [];
    await start({
      runCommandOutcome: (script) => (
        scripts.push(script),
        { executionState: 'Succeeded', exitCode: 0, output: 'smoke test: 100 messages acknowledged', error: '' }
      ),
    });
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-n', cluster, NOW, { broker: 'nats' });
    const launch = { clusterId: cluster.clusterId, readyBy: '2025-01-01T00:30:00Z' };
    const first = await checkAzureLoadGeneratorReadiness(clients, launch, outputs, 3, NATS_READINESS, NOW);
    expect(first).toEqual({
      ready: false,
      status:
        'deployment succeeded, NATS servers forming a meta group: ' +
        'readiness check started on the load generator rmqbench-loadgen',
    });
    let state = first;
    for (let poll = 0; poll < 5 && !state.ready; poll++)
      state = await checkAzureLoadGeneratorReadiness(clients, launch, outputs, 3, NATS_READINESS, NOW);
    expect(state).toMatchObject({ ready: true, outputs });
    // The smoke test's script (its suffix aside) under the readiness command's fixed name.
    expect(scripts[0]!.replace(/[0-9a-f]{8}/g, 'X')).toBe(
      natsSmokeTestScript({ serverUrls: SERVERS, nodes: 3, suffix: 'X' }).replace(/[0-9a-f]{8}/g, 'X'),
    );
    expect(arm.requests.some((request) => request.path.endsWith('/runCommands/rmqbench-nats-readiness'))).toBe(true);
  });

  test('CheckClusterReady fails past readyBy naming what the load generator saw', async () => {
    await start({
      runCommandOutcome: () => ({ executionState: 'Failed', exitCode: 1, output: '', error: 'smoke test: no servers' }),
    });
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-n', cluster, NOW, { broker: 'nats' });
    const launch = { clusterId: cluster.clusterId, readyBy: '2025-01-01T00:30:00Z' };
    // Before readyBy a failed check is "not yet"; the status says what the load generator saw.
    let status = '';
    for (let poll = 0; poll < 6 && !status.includes('no servers'); poll++)
      status = (await checkAzureLoadGeneratorReadiness(clients, launch, outputs, 3, NATS_READINESS, NOW)).status;
    expect(status).toMatch(/^deployment succeeded, NATS servers forming a meta group: smoke test: no servers$/);
    // Past it, the next failure is the run's error, naming it.
    const late = new Date('2025-01-01T00:31:00Z');
    let error: unknown;
    for (let poll = 0; poll < 6 && error === undefined; poll++)
      await checkAzureLoadGeneratorReadiness(clients, launch, outputs, 3, NATS_READINESS, late).catch(
        (caught: unknown) => (error = caught),
      );
    expect(String(error)).toMatch(/NATS cluster rmqbench-run-n-c1 did not form by 2025-01-01T00:30:00Z .*last seen: /);
  });

  test('SmokeTest runs the AWS NATS smoke test on the load generator and names its failure', async () => {
    const scripts: string[] = [];
    await start({
      runCommandOutcome: (script) => (
        scripts.push(script),
        {
          executionState: 'Failed',
          exitCode: 1,
          output: '',
          error: 'smoke test: 100 messages were not all acknowledged',
        }
      ),
    });
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-n', cluster, NOW, { broker: 'nats' });
    const fast = { pollMs: 0, sleep: async () => undefined, suffix: 'feed1234' };
    await expect(azureNatsSmokeTest(clients, cluster.clusterId, outputs, 3, fast)).rejects.toThrow(
      'NATS smoke test on the load generator rmqbench-loadgen failed: ' +
        'smoke test: 100 messages were not all acknowledged',
    );
    expect(scripts).toEqual([natsSmokeTestScript({ serverUrls: SERVERS, nodes: 3, suffix: 'feed1234' })]);
    await expect(
      azureNatsSmokeTest(
        clients,
        cluster.clusterId,
        { loadGeneratorResourceId: outputs.loadGeneratorResourceId },
        3,
        fast,
      ),
    ).rejects.toThrow(/lacks the natsServerUrls or loadGeneratorResourceId output/);
  });

  test('StartRepetition sends the script with one pre-signed URL per output file as protected parameters', async () => {
    const s3Mock = mockClient(S3Client);
    s3Mock.on(PutObjectCommand).resolves({});
    await start();
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-n', cluster, NOW, { broker: 'nats' });
    const event = {
      runId: 'run-n',
      plan: schedule.plan,
      item,
      launch: { clusterId: cluster.clusterId },
      readiness: { outputs },
    };
    const started = await startAzureNatsRepetition(clients, presigner(), 'raw-bucket', event, NOW);
    const put = arm.requests.find((request) => request.method === 'PUT' && request.path.includes('/runCommands/'))!;
    expect(put.path).toMatch(new RegExp(`/runCommands/${runCommandName(item)}$`));
    const { properties } = put.body as RunCommandPut;
    const urls = Object.fromEntries(properties.protectedParameters.map(({ name, value }) => [name, value]));
    expect(Object.keys(urls)).toEqual(FILES.map(uploadUrlVariable));
    for (const file of FILES)
      expect(urls[uploadUrlVariable(file)]).toMatch(new RegExp(`/runs/run-n/raw/[^?]+/${file.replace('.', '\\.')}\\?`));
    expect(properties.source.script).not.toMatch(/X-Amz-|amazonaws\.com/);
    const script = azureNatsRepetitionScript({ plan: schedule.plan, item, serverUrls: SERVERS });
    for (const file of FILES)
      expect(script.script).toContain(`printf '%s\\n' "$${uploadUrlVariable(file)}" | rmqbench-upload ${file} -`);
    expect(started.perfTestArgs.slice(0, 3)).toEqual(['rmqbench-nats-load', '-servers', SERVERS]);
    await expect(
      startAzureNatsRepetition(
        clients,
        presigner(),
        'raw-bucket',
        { ...event, readiness: { outputs: { ...outputs, natsServerUrls: '' } } },
        NOW,
      ),
    ).rejects.toThrow('lacks the output(s) natsServerUrls');
    s3Mock.restore();
  });
});
