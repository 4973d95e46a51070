import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { selfSignedCertificate } from '../../core/cloud/self-signed-certificate';
import type { RawRepetition } from '../../core/results/ingest';
import { checkAzureCluster } from '../../lambdas/check-cluster/azure';
import { checkAzureRepetition, type AzureStarted } from '../../lambdas/check-repetition/logic';
import { launchAzureCluster } from '../../lambdas/launch-cluster/azure';
import { launchResourceGroup, type AzureClients } from '../../lambdas/shared/azure-cluster';
import { startAzureRabbitMqRepetition } from '../../lambdas/start-repetition/azure-generators';
import { LOST_MESSAGE_VERIFIER_CLASS } from '../../lambdas/start-repetition/lost-message-verifier-java';
import { rawPrefix, runCommandName, startAzureRepetition } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';
import type { FakeArm, FakeArmOptions } from './fake-arm';
import { EMPTY_TEMPLATE, fakeClusterConfig, startFakeArm } from './fake-arm-clients';

/**
 * Several load generators on Azure (issue 27) against the fake ARM endpoint the other Azure tests use: LaunchCluster
 * deploys loadGeneratorCount VMs, CheckClusterReady wants every one listed, StartRepetition starts one managed Run
 * Command per VM with its share and its own upload URLs, CheckRepetition waits for all and names a failed one. With
 * one load generator every request is the one sent before.
 */
const NOW = new Date('2025-01-01T00:00:00.000Z');
const SHARED_START_MS = NOW.getTime() + 20_000;
const fault = { action: 'kill', node: 'leader', atSeconds: 5, healAtSeconds: 8 };
const planWith = (loadGenerators: number) => ({
  name: 'azure-lg',
  clusters: [{ name: 'q', nodes: 3, topology: { type: 'quorum' }, instanceType: 'Standard_F4s_v2', loadGenerators }],
  workloads: [{ name: 'w', producers: 4, consumers: 2, queues: 2, messageSizeBytes: 100, durationSeconds: 60, fault }],
});
const scheduled = (loadGenerators: number) => {
  const schedule = buildSchedule({ plan: planWith(loadGenerators), runId: 'run-1', target: 'azure' }, 'exec');
  return { plan: schedule.plan, cluster: schedule.clusters[0]!, item: schedule.clusters[0]!.repetitions[0]! };
};
const vmId = (clusterId: string, name: string) =>
  `/subscriptions/sub-1/resourceGroups/${clusterId}/providers/Microsoft.Compute/virtualMachines/${name}`;
const outputsFor = (clusterId: string) => ({
  amqpEndpoint: 'amqp://10.20.1.4:5672',
  managementUrl: 'http://10.20.1.4:15672',
  loadGeneratorResourceId: vmId(clusterId, 'rmqbench-loadgen'),
  loadGeneratorResourceIds: JSON.stringify([
    vmId(clusterId, 'rmqbench-loadgen'),
    vmId(clusterId, 'rmqbench-loadgen-2'),
  ]),
  keyVaultName: 'kvrmqbenchtest42',
  adminPasswordSecretName: 'rabbitmq-admin-password',
  loadGeneratorIdentityClientId: '00000000-1111-2222-3333-444444444444',
});
const parameters = { rabbitmqAdminUsername: 'admin' };
// Pre-signing is local computation with static credentials: no request leaves the process.
const presigner = () =>
  new S3Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' } });

interface RunCommandBody {
  properties: { source: { script: string }; protectedParameters: { name: string; value: string }[] };
  timeoutInSeconds?: number;
}
const runCommandPuts = (arm: FakeArm) =>
  arm.requests
    .filter((request) => request.method === 'PUT' && request.path.includes('/runCommands/'))
    .map((request) => ({ path: request.path, body: request.body as RunCommandBody }));
/** Each protected parameter's URL path (the key it uploads to), without the signature's query. */
const uploadKeys = (body: RunCommandBody) =>
  Object.fromEntries(body.properties.protectedParameters.map(({ name, value }) => [name, new URL(value).pathname]));

describe('several load generators on Azure (issue 27), against the fake ARM endpoint', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  const start = async (options: FakeArmOptions = {}) =>
    ({ arm, clients } = await startFakeArm({ operationPolls: 1, deploymentPolls: 0, runCommandPolls: 1, ...options }));
  const s3Mock = mockClient(S3Client);
  afterEach(async () => {
    s3Mock.reset();
    await arm.stop();
  });

  test('LaunchCluster deploys loadGeneratorCount VMs and tells CheckClusterReady; with one, as before', async () => {
    await start();
    const config = {
      ...fakeClusterConfig(),
      parameters: { rabbitmqAdminPassword: 'admin-password-1234', erlangCookie: 'erlang-cookie-0123456789' },
    };
    const deployed = (clusterId: string) =>
      (
        arm.requests.find(
          (request) =>
            request.method === 'PUT' &&
            request.path.includes(`/${clusterId}/`) &&
            request.path.endsWith('/deployments/rmqbench-cluster'),
        )!.body as { properties: { parameters: Record<string, { value: unknown }> } }
      ).properties.parameters;
    const two = scheduled(2).cluster;
    const one = { ...scheduled(1).cluster, clusterId: 'rmqbench-run-1-one' };
    const launchedTwo = await launchAzureCluster(clients, config, 'run-1', two, NOW, {}, 2);
    const launchedOne = await launchAzureCluster(clients, config, 'run-1', one, NOW, {}, 1);
    expect(deployed(two.clusterId).loadGeneratorCount).toEqual({ value: 2 });
    expect(launchedTwo).toMatchObject({ clusterId: two.clusterId, loadGenerators: 2 });
    expect(deployed(one.clusterId)).not.toHaveProperty('loadGeneratorCount');
    expect(launchedOne).not.toHaveProperty('loadGenerators');
  });

  test('CheckClusterReady wants every load generator VM listed, in index order, before the cluster', async () => {
    await start();
    const { cluster } = scheduled(2);
    const certificate = selfSignedCertificate({
      commonName: 'rmqbench test',
      notAfter: new Date('2030-01-01'),
      now: NOW,
    });
    const templateListing = (ids: string[]) => ({
      ...EMPTY_TEMPLATE,
      outputs: {
        managementHttpsUrl: { type: 'string', value: 'https://203.0.113.7:15671' },
        tlsCertificatePem: { type: 'string', value: certificate.certificatePem },
        loadGeneratorResourceIds: { type: 'array', value: ids },
      },
    });
    const nodes = JSON.stringify([1, 2, 3].map((index) => ({ name: `rabbit@node-${index}`, running: true })));
    const get = async () => ({ status: 200, body: nodes });
    const launch = { clusterId: cluster.clusterId, readyBy: '2025-01-01T00:30:00Z', loadGenerators: 2 };
    const credentials = { username: 'admin', password: 'admin-password-1234' };
    const ids = [vmId(cluster.clusterId, 'rmqbench-loadgen'), vmId(cluster.clusterId, 'rmqbench-loadgen-2')];

    await launchResourceGroup(clients, fakeClusterConfig(templateListing(ids.slice(0, 1))), 'run-1', cluster, NOW);
    await expect(checkAzureCluster(clients, launch, 3, credentials, NOW, get)).rejects.toThrow(
      `the deployment in resource group ${cluster.clusterId} lists 1 load generator VM(s) ` +
        '(its loadGeneratorResourceIds output) but the plan cluster has loadGenerators: 2',
    );
    // One generator as before: the same deployment is ready (the count is not checked).
    const { loadGenerators: _count, ...launchOfOne } = launch;
    await expect(checkAzureCluster(clients, launchOfOne, 3, credentials, NOW, get)).resolves.toMatchObject({
      ready: true,
    });

    await launchResourceGroup(clients, fakeClusterConfig(templateListing(ids)), 'run-1', cluster, NOW);
    const ready = await checkAzureCluster(clients, launch, 3, credentials, NOW, get);
    expect(ready.ready).toBe(true);
    expect(JSON.parse(ready.outputs!.loadGeneratorResourceIds!)).toEqual(ids);
  });

  test(
    'StartRepetition starts one Run Command per VM, each with its share, the shared start and its own ' +
      "generator-<i>/ upload URLs; the verifier and the broker sampler only in generator 0's",
    async () => {
      await start();
      const { plan, cluster, item } = scheduled(2);
      await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, NOW);
      const event = {
        runId: 'run-1',
        plan,
        item,
        launch: { clusterId: cluster.clusterId },
        readiness: { outputs: outputsFor(cluster.clusterId) },
      };
      // The state CheckRepetition reads (lambdas/check-repetition/logic.ts).
      const started: AzureStarted = await startAzureRabbitMqRepetition(
        clients,
        presigner(),
        'raw-bucket',
        parameters,
        event,
        NOW,
      );

      // Sent at once: put in generator order.
      const generatorOf = (path: string) => (path.includes('/rmqbench-loadgen-2/') ? 1 : 0);
      const puts = runCommandPuts(arm).sort((a, b) => generatorOf(a.path) - generatorOf(b.path));
      expect(puts.map((put) => put.path)).toEqual(
        ['rmqbench-loadgen', 'rmqbench-loadgen-2'].map(
          (vm) => `${vmId(cluster.clusterId, vm)}/runCommands/${runCommandName(item)}`,
        ),
      );
      const prefix = `/${rawPrefix('run-1', item)}`;
      for (const [index, { body }] of puts.entries()) {
        const script = body.properties.source.script;
        expect(script).toContain(`'--producers' '2' '--consumers' '1'`);
        expect(script).toContain(`'--queue' 'perf-test-${index + 1}'`);
        expect(script).toContain(`WAIT_MS=$(( ${SHARED_START_MS} - $(date +%s%3N) ))`);
        expect(script).toContain(
          'printf \'%s\\n\' "$RMQBENCH_UPLOAD_URL_STARTED_AT_TXT" | rmqbench-upload started-at.txt -',
        );
        const own = (file: string) => `${prefix}/generator-${index}/${file}`;
        expect(uploadKeys(body)).toEqual({
          RMQBENCH_UPLOAD_URL_STDOUT_TXT: own('stdout.txt'),
          RMQBENCH_UPLOAD_URL_PERFTEST_CSV: own('perftest.csv'),
          ...(index === 0
            ? {
                RMQBENCH_UPLOAD_URL_BROKER_METRICS_JSONL: `${prefix}/broker-metrics.jsonl`,
                RMQBENCH_UPLOAD_URL_VERIFIER_TXT: `${prefix}/verifier.txt`,
              }
            : {}),
          RMQBENCH_UPLOAD_URL_STARTED_AT_TXT: own('started-at.txt'),
        });
      }
      const [first, second] = puts.map((put) => put.body.properties.source.script) as [string, string];
      expect(first).toContain(LOST_MESSAGE_VERIFIER_CLASS);
      expect(second).not.toContain(LOST_MESSAGE_VERIFIER_CLASS);
      expect(first).toContain('broker-metrics.jsonl');
      expect(second).not.toContain('broker-metrics');
      expect(started).toMatchObject({
        vmName: 'rmqbench-loadgen',
        startedAt: new Date(SHARED_START_MS).toISOString(),
        generators: [{ vmName: 'rmqbench-loadgen' }, { vmName: 'rmqbench-loadgen-2' }],
      });
      expect(started.generators![1]!.perfTestArgs).toEqual(expect.arrayContaining(['--queue', 'perf-test-2']));
    },
  );

  test('with one load generator StartRepetition sends exactly the Run Command it sent before', async () => {
    await start();
    const { plan, cluster, item } = scheduled(1);
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, NOW);
    const event = {
      runId: 'run-1',
      plan,
      item,
      launch: { clusterId: cluster.clusterId },
      readiness: { outputs: outputsFor(cluster.clusterId) },
    };
    const now = await startAzureRabbitMqRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW);
    const before = await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW);
    const [current, previous] = runCommandPuts(arm);
    // The URLs' signatures carry the signing second: compared by key, the rest byte for byte.
    const withoutUrls = ({ path, body }: { path: string; body: RunCommandBody }) => ({
      path,
      body: { ...body, properties: { ...body.properties, protectedParameters: uploadKeys(body) } },
    });
    expect(withoutUrls(current!)).toEqual(withoutUrls(previous!));
    expect(current!.path).toContain('/virtualMachines/rmqbench-loadgen/');
    expect(Object.values(uploadKeys(current!.body))).not.toContainEqual(expect.stringContaining('generator-'));
    expect(current!.body.properties.source.script).not.toContain('WAIT_MS');
    expect(now).toEqual(before);
    expect(now).not.toHaveProperty('generators');
  });

  test(
    'CheckRepetition waits for every Run Command (keeping a finished one until the last is done), ' +
      'reads generator-<i>/, and names a failed generator',
    async () => {
      const failSecond = (script: string) =>
        script.includes(`'--queue' 'perf-test-2'`)
          ? { executionState: 'Failed' as const, exitCode: 1, output: '', error: 'PerfTest exited with status 1:' }
          : { executionState: 'Succeeded' as const, exitCode: 0, output: 'ok', error: '' };
      await start({ runCommandPolls: 1, runCommandOutcome: failSecond });
      const { plan, cluster, item } = scheduled(2);
      await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, NOW);
      const event = {
        runId: 'run-1',
        plan,
        item,
        launch: { clusterId: cluster.clusterId },
        readiness: { outputs: outputsFor(cluster.clusterId) },
      };
      const started = await startAzureRabbitMqRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW);
      s3Mock.on(GetObjectCommand).rejects(Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' }));
      s3Mock.on(PutObjectCommand).resolves({});
      const checkEvent = { runId: 'run-1', plan, item, started: JSON.parse(JSON.stringify(started)) as typeof started };
      // Generator 0's command is one GET ahead: it finishes a poll before generator 1's.
      await clients.compute.virtualMachineRunCommands.getByVirtualMachine(
        cluster.clusterId,
        'rmqbench-loadgen',
        runCommandName(item),
      );
      const check = () => checkAzureRepetition(clients, new S3Client({}), 'raw-bucket', checkEvent, NOW);
      await expect(check()).resolves.toEqual({ done: false });
      expect(arm.requests.filter((request) => request.method === 'DELETE')).toEqual([]);
      await expect(check()).resolves.toEqual({ done: true, rawKey: item.rawKey });
      const raw = JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string) as RawRepetition;
      expect(raw.targetError).toBe(
        'load generator lg-2 (rmqbench-loadgen-2): the Run Command failed: PerfTest exited with status 1:',
      );
      const read = s3Mock.commandCalls(GetObjectCommand).map((call) => call.args[0].input.Key!);
      for (const index of [0, 1]) expect(read).toContain(`${rawPrefix('run-1', item)}/generator-${index}/stdout.txt`);
      expect(raw.loadGenerators!.outputs.map((output) => output.id)).toEqual(['lg-1', 'lg-2']);
      // Both Run Commands deleted once the last was done (their protected parameters with them).
      const deleted = arm.requests.filter((request) => request.method === 'DELETE').map((request) => request.path);
      expect(deleted.sort()).toEqual(
        runCommandPuts(arm)
          .map((put) => put.path)
          .sort(),
      );
    },
  );
});
