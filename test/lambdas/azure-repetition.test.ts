import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { TokenCredential } from '@azure/core-auth';
import { mockClient } from 'aws-sdk-client-mock';
import { checkAzureRepetition } from '../../lambdas/check-repetition/logic';
import { azureClients, AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { presignRawUploads, startAzureRepetition } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';
import { FakeArm } from './fake-arm';

const fakeCredential: TokenCredential = { getToken: async () => ({ token: 'fake-token', expiresOnTimestamp: Date.now() + 3_600_000 }) };
const plan = {
  name: 'azure',
  repetitions: 1,
  pauseSecondsBetweenRepetitions: 0,
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' } }],
  workloads: [{ name: 'small', producers: 2, consumers: 3, queues: 1, messageSizeBytes: 100, durationSeconds: 30 }],
};
const schedule = buildSchedule({ plan, runId: 'run-1', target: 'azure' }, 'exec');
const cluster = schedule.clusters[0]!;
const item = cluster.repetitions[0]!;
const outputs = { amqpEndpoint: 'amqp://10.20.1.4:5672', loadGeneratorResourceId: `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers/Microsoft.Compute/virtualMachines/rmqbench-loadgen` };
const parameters = { rabbitmqAdminUsername: 'admin', rabbitmqAdminPassword: "p@ss'word" };
const NOW = new Date('2025-01-01T00:00:00Z');
const template = { $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#', contentVersion: '1.0.0.0', resources: [] };
// Pre-signing is local computation with static credentials: no request leaves the process.
const presigner = () => new S3Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' } });

describe('pre-signed upload URLs for the Azure load generator', () => {
  test('one PUT URL per raw file, on the bucket\'s regional host, at the key check-repetition reads, expiring when asked', async () => {
    const urls = await presignRawUploads(presigner(), 'raw-bucket', 'run-1', item, 510);
    const prefix = `/runs/run-1/raw/${item.rawKey.replace(/\.json$/, '')}`;
    expect(Object.keys(urls)).toEqual(['stdout.txt', 'perftest.csv']);
    for (const [file, text] of Object.entries(urls)) {
      const url = new URL(text);
      expect(url.protocol).toBe('https:');
      expect(url.host).toBe('raw-bucket.s3.eu-west-1.amazonaws.com');
      expect(url.pathname).toBe(`${prefix}/${file}`);
      expect(url.searchParams.get('X-Amz-Expires')).toBe('510');
      expect(url.searchParams.get('X-Amz-Credential')).toMatch(/^AKIAEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request$/);
      expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    }
  });
});

describe('Azure repetitions through VM Run Command against a fake ARM endpoint', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  const s3Mock = mockClient(S3Client);
  beforeEach(async () => {
    arm = new FakeArm({ operationPolls: 2 });
    await arm.start();
    clients = azureClients(fakeCredential, 'sub-1', { endpoint: arm.endpoint, tlsOptions: { ca: arm.ca } });
    await launchResourceGroup(clients, { location: 'westeurope', template, parameters: {}, expiryHours: 12, launchTimeoutMinutes: 30 }, 'run-1', cluster, NOW);
  });
  afterEach(async () => {
    s3Mock.reset();
    await arm.stop();
  });

  const event = { runId: 'run-1', plan: schedule.plan, item, launch: { clusterId: cluster.clusterId }, readiness: { outputs } };

  test('start runs PerfTest on the load generator VM of the run\'s resource group, uploading to pre-signed URLs, and records redacted arguments', async () => {
    const started = await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW, 10);
    const post = arm.requests.find((request) => request.method === 'POST')!;
    expect(post.path).toBe(`/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers/Microsoft.Compute/virtualMachines/rmqbench-loadgen/runCommand`);
    const script = (post.body as { commandId: string; script: string[] }).script.join('\n');
    expect((post.body as { commandId: string }).commandId).toBe('RunShellScript');
    expect(script).toContain(`'amqp://admin:p%40ss'\\''word@10.20.1.4:5672'`);
    expect(script).toMatch(/^rmqbench-upload stdout\.txt 'https:\/\/raw-bucket\.s3\.eu-west-1\.amazonaws\.com\/runs\/run-1\/raw\/[^']+\/stdout\.txt\?[^']*X-Amz-Expires=510[^']*'$/m);
    expect(script).toMatch(/^rmqbench-upload perftest\.csv 'https:\/\/raw-bucket[^']+\/perftest\.csv\?[^']+'$/m);
    expect(started).toMatchObject({ resourceGroup: cluster.clusterId, vmName: 'rmqbench-loadgen', startedAt: NOW.toISOString(), doneBy: '2025-01-01T00:03:30.000Z' });
    expect(JSON.stringify(started.perfTestArgs)).not.toContain('ss');
    expect(started.perfTestArgs.join(' ')).toContain('10.20.1.4:5672');
  });

  test('check polls the serialized Run Command until done, then ingests what the script uploaded', async () => {
    const started = JSON.parse(JSON.stringify(await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW, 10))) as Awaited<ReturnType<typeof startAzureRepetition>>;
    const prefix = `runs/run-1/raw/${item.rawKey.replace(/\.json$/, '')}`;
    s3Mock.on(GetObjectCommand, { Key: `${prefix}/stdout.txt` }).resolves({ Body: { transformToString: async () => 'summary' } as never });
    s3Mock.on(GetObjectCommand, { Key: `${prefix}/perftest.csv` }).resolves({ Body: { transformToString: async () => 'time,sent\n' } as never });
    s3Mock.on(PutObjectCommand).resolves({});
    const checkEvent = { runId: 'run-1', plan: schedule.plan, item, started };
    const states: unknown[] = [];
    for (let poll = 0; poll < 5; poll++) {
      const state = await checkAzureRepetition(clients, new S3Client({}), 'raw-bucket', checkEvent, new Date('2025-01-01T00:01:00Z'));
      states.push(state);
      if (state.done) break;
    }
    expect(states.at(-1)).toEqual({ done: true, rawKey: item.rawKey });
    expect(states.length).toBeGreaterThan(1);
    const put = s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input;
    expect(put.Key).toBe(`runs/run-1/ingest/${item.rawKey}`);
    expect(JSON.parse(put.Body as string)).toMatchObject({ stdout: 'summary', csv: 'time,sent\n', perfTestArgs: started.perfTestArgs });
    expect(JSON.parse(put.Body as string)).not.toHaveProperty('targetError');
  });

  test('a Run Command still running after the deadline is an error; missing outputs or password are refused by name', async () => {
    const started = await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW, 10);
    await expect(checkAzureRepetition(clients, new S3Client({}), 'raw-bucket', { runId: 'run-1', plan: schedule.plan, item, started }, new Date('2025-01-01T00:04:00Z'))).rejects.toThrow(
      `PerfTest for ${item.scenarioId} #1 did not finish by 2025-01-01T00:03:30.000Z`,
    );
    await expect(startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, { ...event, readiness: { outputs: {} } }, NOW)).rejects.toThrow('has no amqpEndpoint / loadGeneratorResourceId output');
    await expect(startAzureRepetition(clients, presigner(), 'raw-bucket', {}, event, NOW)).rejects.toThrow('lack rabbitmqAdminPassword');
  });
});
