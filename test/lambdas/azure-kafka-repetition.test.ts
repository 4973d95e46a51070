import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { mockClient } from 'aws-sdk-client-mock';
import { checkAzureRepetition } from '../../lambdas/check-repetition/logic';
import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import {
  azureKafkaRepetitionScript,
  uploadUrlVariable,
  startAzureKafkaRepetition,
} from '../../lambdas/start-repetition/azure-load-generator';
import { awsKafkaRepetitionScript } from '../../lambdas/start-repetition/kafka-script';
import { runCommandName } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';
import type { FakeArm } from './fake-arm';
import { fakeClusterConfig, startFakeArm } from './fake-arm-clients';

const plan = {
  name: 'kafka-azure',
  clusters: [{ name: 'k', broker: 'kafka', nodes: 3, instanceType: 'Standard_F4s_v2' }],
  workloads: [
    { name: 'w', producers: 2, consumers: 2, messageSizeBytes: 100, messageCount: 1000, durationSeconds: 30 },
  ],
};
// ValidatePlan still refuses broker kafka on azure: the schedule is built as for local (its shape does not depend on
// the target).
const schedule = buildSchedule({ plan, target: 'local', runId: 'run-k' }, 'exec');
const cluster = schedule.clusters[0]!;
const item = cluster.repetitions[0]!;
const BOOTSTRAP = '10.20.1.99:9092,10.20.1.100:9092,10.20.1.101:9092';
const outputs = {
  kafkaBootstrapServers: BOOTSTRAP,
  loadGeneratorResourceId:
    `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers` +
    `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`,
};
const NOW = new Date('2025-01-01T00:00:00Z');
// Pre-signing is local computation with static credentials: no request leaves the process.
const presigner = () =>
  new S3Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' } });
const FILES = ['producer-1.txt', 'producer-2.txt', 'consumer-1.txt', 'consumer-2.txt'];

describe('Kafka repetitions on the Azure load generator', () => {
  test('the script is the AWS one with the uploads through rmqbench-upload (URL on stdin) instead of aws s3 cp', () => {
    const azure = azureKafkaRepetitionScript({ plan, item, bootstrapServers: BOOTSTRAP, suffix: 'abc123' });
    const aws = awsKafkaRepetitionScript({ plan, runId: 'run-k', item, bootstrapServers: BOOTSTRAP, bucket: 'raw' });
    expect(azure.files).toEqual({
      producers: ['producer-1.txt', 'producer-2.txt'],
      consumers: ['consumer-1.txt', 'consumer-2.txt'],
    });
    expect(azure.timeoutSeconds).toBe(aws.timeoutSeconds);
    for (const file of FILES)
      expect(azure.script).toContain(
        `printf '%s\\n' "$${uploadUrlVariable(file)}" | rmqbench-upload ${file} - || UPLOAD_FAILED=1`,
      );
    expect(azure.script).not.toContain('aws s3 cp');
    expect(azure.script.match(/org\.apache\.kafka\.tools\.ProducerPerformance/g)).toHaveLength(2);
    expect(azure.script.match(/org\.apache\.kafka\.tools\.ConsumerPerformance/g)).toHaveLength(2);
    expect(azure.script).toContain(`'--bootstrap-server' '${BOOTSTRAP}'`);
    expect(() => azureKafkaRepetitionScript({ plan, item, bootstrapServers: '10.0.0.1:9092;reboot' })).toThrow(
      /must be host:port pairs/,
    );
  });

  test(
    'run by bash without one of its upload URLs, the script ' +
      'stops before anything else, naming the missing parameter',
    () => {
      const { script } = azureKafkaRepetitionScript({ plan, item, bootstrapServers: BOOTSTRAP });
      const env = Object.fromEntries(
        FILES.filter((file) => file !== 'consumer-2.txt').map((file) => [
          uploadUrlVariable(file),
          'https://example.invalid/x',
        ]),
      );
      const run = spawnSync('bash', ['-c', script], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, ...env },
        timeout: 30_000,
        // stdin not a socket: bash sources ~/.bashrc (which may put other commands first on PATH) when stdin is a
        // socket, as Node's pipes are, and SHLVL is under 2 (bash(1), INVOCATION, "run by the remote shell daemon").
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain(
        'rmqbench: the protected parameter RMQBENCH_UPLOAD_URL_CONSUMER_2_TXT ' +
          '(pre-signed upload URL of consumer-2.txt) is missing',
      );
      expect(run.stderr).not.toContain('Kafka tools');
    },
  );

  describe('through a managed Run Command against the fake ARM (real @azure/arm-compute client)', () => {
    let arm: FakeArm;
    let clients: AzureClients;
    const s3Mock = mockClient(S3Client);
    beforeEach(async () => {
      ({ arm, clients } = await startFakeArm({ operationPolls: 2 }));
      await launchResourceGroup(clients, fakeClusterConfig(), 'run-k', cluster, NOW, { broker: 'kafka' });
    });
    afterEach(async () => {
      s3Mock.reset();
      await arm.stop();
    });
    const event = {
      runId: 'run-k',
      plan: schedule.plan,
      item,
      launch: { clusterId: cluster.clusterId },
      readiness: { outputs },
    };

    test(
      'start sends the script with one pre-signed URL per ' + 'tool output as protected parameters, none in the script',
      async () => {
        const started = await startAzureKafkaRepetition(clients, presigner(), 'raw-bucket', event, NOW);
        const put = arm.requests.find((request) => request.method === 'PUT' && request.path.includes('/runCommands/'))!;
        expect(put.path).toBe(
          `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers/Microsoft.Compute` +
            `/virtualMachines/rmqbench-loadgen/runCommands/${runCommandName(item)}`,
        );
        const properties = (
          put.body as {
            properties: {
              source: { script: string };
              protectedParameters: { name: string; value: string }[];
              asyncExecution: boolean;
              timeoutInSeconds: number;
            };
          }
        ).properties;
        expect(properties.source.script).not.toMatch(/X-Amz-|amazonaws\.com/);
        const urls = Object.fromEntries(properties.protectedParameters.map(({ name, value }) => [name, value]));
        expect(Object.keys(urls)).toEqual(FILES.map(uploadUrlVariable));
        for (const file of FILES)
          expect(urls[uploadUrlVariable(file)]).toMatch(
            new RegExp(
              `^https://raw-bucket\\.s3\\.eu-west-1\\.amazonaws\\.com` +
                `/runs/run-k/raw/[^?]+/${file.replace('.', '\\.')}` +
                `\\?[^ ]*X-Amz-Expires=740`,
            ),
          );
        expect({ asyncExecution: properties.asyncExecution, timeoutInSeconds: properties.timeoutInSeconds }).toEqual({
          asyncExecution: true,
          timeoutInSeconds: 440,
        });
        const read = await clients.compute.virtualMachineRunCommands.getByVirtualMachine(
          cluster.clusterId,
          'rmqbench-loadgen',
          runCommandName(item),
        );
        expect(JSON.stringify(read)).not.toContain('X-Amz-Signature');
        expect(started).toMatchObject({
          resourceGroup: cluster.clusterId,
          vmName: 'rmqbench-loadgen',
          startedAt: NOW.toISOString(),
          doneBy: '2025-01-01T00:08:20.000Z',
        });
        expect(started.perfTestArgs[0]).toMatch(/^TopicCommand --bootstrap-server 10\.20\.1\.99:9092/);
      },
    );

    test('start refuses a deployment without kafkaBootstrapServers, naming it, before any Run Command', async () => {
      await expect(
        startAzureKafkaRepetition(
          clients,
          presigner(),
          'raw-bucket',
          {
            ...event,
            readiness: {
              outputs: { loadGeneratorResourceId: outputs.loadGeneratorResourceId, kafkaBootstrapServers: '' },
            },
          },
          NOW,
        ),
      ).rejects.toThrow('lacks the output(s) kafkaBootstrapServers');
      expect(arm.requests.filter((request) => request.path.includes('/runCommands/'))).toHaveLength(0);
    });

    test(
      'CheckRepetition polls the Run Command until done, ' +
        "then reads back every tool's file from the same raw prefix",
      async () => {
        const started = JSON.parse(
          JSON.stringify(await startAzureKafkaRepetition(clients, presigner(), 'raw-bucket', event, NOW)),
        ) as Awaited<ReturnType<typeof startAzureKafkaRepetition>>;
        const prefix = `runs/run-k/raw/${item.rawKey.replace(/\.json$/, '')}`;
        for (const file of FILES)
          s3Mock
            .on(GetObjectCommand, { Key: `${prefix}/${file}` })
            .resolves({ Body: { transformToString: async () => `output of ${file}` } as never });
        s3Mock.on(PutObjectCommand).resolves({});
        const checkEvent = { runId: 'run-k', plan: schedule.plan, item, started };
        let state: Awaited<ReturnType<typeof checkAzureRepetition>> | undefined;
        for (let poll = 0; poll < 5 && !state?.done; poll++)
          state = await checkAzureRepetition(
            clients,
            new S3Client({}),
            'raw-bucket',
            checkEvent,
            new Date('2025-01-01T00:01:00Z'),
          );
        expect(state).toEqual({ done: true, rawKey: item.rawKey });
        expect(
          s3Mock
            .commandCalls(GetObjectCommand)
            .map((call) => call.args[0].input.Key)
            .sort(),
        ).toEqual(FILES.map((file) => `${prefix}/${file}`).sort());
        const body = JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string) as {
          kafka?: unknown;
          perfTestArgs: string[];
        };
        expect(JSON.stringify(body.kafka)).toContain('output of producer-2.txt');
        expect(body.perfTestArgs).toEqual(started.perfTestArgs);
      },
    );
  });
});
