import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudFormationClient, CreateStackCommand, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ListCommandsCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import {
  DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER,
  KAFKA_CONTROLLER_BROKER_COUNTS,
  kafkaClusterTemplateFileName,
  synthesizeClusterTemplates,
} from '../../cdk/BenchmarkController';
import { ingestRepetition, type RawRepetition } from '../../core/results/ingest';
import { checkRepetition } from '../../lambdas/check-repetition/logic';
import { checkStack, deleteStack, expiredStacks, stacksOfRun } from '../../lambdas/shared/aws-cluster';
import { launchStack, planClusterOf, type AwsClusterConfig } from '../../lambdas/shared/aws-launch';
import { kafkaSmokeTest } from '../../lambdas/smoke-test/load-generator-smoke';
import { rawPrefix } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';
import { motoClientConfig, startMoto, type Moto } from '../cloud/moto';

/**
 * The AWS dispatch of a Kafka plan cluster with the real SDK v3 clients against moto (server mode, test/cloud/moto.ts),
 * which creates the synthesized Kafka cluster templates' resources (EC2 instances, the private hosted zone, the load
 * generator...) and resolves their intrinsics: launch (template by broker count, parameters, tags), readiness (the
 * stack's outputs), the Kafka smoke test and a repetition over SSM Run Command (moto records the command and answers
 * Success; the scripts themselves run for real in kafka-script.integration.test.ts), the assembly of the raw output
 * into
 * the ingest object and its parsing, and teardown and the sweeper finding the stack by the same tags as RabbitMQ's.
 *
 * Two things moto lacks are provided: the SSM parameters the templates read (the controller's pinned node image, CDK's
 * bootstrap version) are put into its parameter store, and the load generator's public Amazon Linux 2023 image
 * parameter
 * (/aws/service/..., reserved in moto and not among those it ships) is renamed in the uploaded template to one put
 * there.
 */
jest.setTimeout(120_000);

const BUCKET = 'rmqbench-raw';
const TEMPLATES = 'rmqbench-templates';
const PUBLIC_AL2023 = '/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-x86_64';
const FIXTURES = join(__dirname, '../fixtures/kafka');

describe('a Kafka plan cluster through the AWS workflow functions, against moto', () => {
  let moto: Moto;
  let cfn: CloudFormationClient;
  let ssm: SSMClient;
  let s3: S3Client;
  let config: AwsClusterConfig;

  beforeAll(async () => {
    moto = await startMoto();
    cfn = new CloudFormationClient(motoClientConfig(moto));
    ssm = new SSMClient(motoClientConfig(moto));
    s3 = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
    for (const bucket of [BUCKET, TEMPLATES]) await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const kafkaTemplateUrls: Record<string, string> = {};
    for (const brokers of KAFKA_CONTROLLER_BROKER_COUNTS) {
      const body = readFileSync(
        join(synthesizeClusterTemplates(), kafkaClusterTemplateFileName(brokers)),
        'utf8',
      ).replace(PUBLIC_AL2023, '/test/al2023-image');
      await s3.send(
        new PutObjectCommand({ Bucket: TEMPLATES, Key: kafkaClusterTemplateFileName(brokers), Body: body }),
      );
      kafkaTemplateUrls[String(brokers)] =
        `https://s3.amazonaws.com/${TEMPLATES}/${kafkaClusterTemplateFileName(brokers)}`;
    }
    for (const name of [DEFAULT_CLUSTER_NODE_IMAGE_PARAMETER, '/test/al2023-image'])
      await ssm.send(
        new PutParameterCommand({ Name: name, Type: 'String', DataType: 'aws:ec2:image', Value: 'ami-12c6146b' }),
      );
    await ssm.send(new PutParameterCommand({ Name: '/cdk-bootstrap/hnb659fds/version', Type: 'String', Value: '29' }));
    // The controller VPC: two private subnets in two zones.
    const network = {
      Resources: {
        Vpc: { Type: 'AWS::EC2::VPC', Properties: { CidrBlock: '10.0.0.0/16' } },
        A: {
          Type: 'AWS::EC2::Subnet',
          Properties: { VpcId: { Ref: 'Vpc' }, CidrBlock: '10.0.0.0/20', AvailabilityZone: 'us-east-1a' },
        },
        B: {
          Type: 'AWS::EC2::Subnet',
          Properties: { VpcId: { Ref: 'Vpc' }, CidrBlock: '10.0.16.0/20', AvailabilityZone: 'us-east-1b' },
        },
      },
      Outputs: { Vpc: { Value: { Ref: 'Vpc' } }, A: { Value: { Ref: 'A' } }, B: { Value: { Ref: 'B' } } },
    };
    await cfn.send(new CreateStackCommand({ StackName: 'controller-network', TemplateBody: JSON.stringify(network) }));
    const outputs = Object.fromEntries(
      ((await cfn.send(new DescribeStacksCommand({ StackName: 'controller-network' }))).Stacks![0]!.Outputs ?? []).map(
        (output) => [output.OutputKey!, output.OutputValue!],
      ),
    );
    config = {
      templateUrls: { '4.1.4': 'https://s3.amazonaws.com/unused/rabbitmq.json' },
      kafkaTemplateUrls,
      defaultRabbitmqVersion: '4.1.4',
      cloudFormationRoleArn: 'arn:aws:iam::123456789012:role/cfn',
      resultsBucketName: BUCKET,
      expiryHours: 12,
      launchTimeoutMinutes: 30,
      network: {
        vpcId: outputs.Vpc!,
        privateSubnetIds: [outputs.A!, outputs.B!],
        availabilityZones: ['us-east-1a', 'us-east-1b'],
        clientSecurityGroupId: 'sg-unused',
      },
    };
  });
  afterAll(async () => {
    await moto?.stop();
  });

  const plan = {
    name: 'kafka-aws',
    clusters: [
      { name: 'k1', broker: 'kafka', nodes: 1, instanceType: 'c5.xlarge' },
      { name: 'k3', broker: 'kafka', nodes: 3, instanceType: 'c5.2xlarge' },
    ],
    workloads: [
      { name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, messageCount: 200000, durationSeconds: 60 },
    ],
  };
  const NOW = new Date('2030-01-01T00:00:00Z');

  test(
    'launch picks the template of the broker count, passes the network and instance type, tags run and expiry; ' +
      'each stack gets a zone of its own; readiness returns the bootstrap servers and the load generator',
    async () => {
      const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-k' }, 'exec');
      expect(schedule.clusters.map((cluster) => cluster.nodes)).toEqual([1, 3]);
      const launches = [];
      for (const cluster of schedule.clusters)
        launches.push(await launchStack(cfn, config, 'run-k', cluster, planClusterOf(plan, cluster), NOW));
      const servers: string[] = [];
      for (const [index, launch] of launches.entries()) {
        const stack = (await cfn.send(new DescribeStacksCommand({ StackName: launch.clusterId }))).Stacks![0]!;
        expect(stack.StackStatus).toBe('CREATE_COMPLETE');
        expect(
          Object.fromEntries(
            stack
              .Parameters!.filter(
                (parameter) =>
                  !parameter.ParameterKey!.startsWith('SsmParameterValue') &&
                  parameter.ParameterKey !== 'BootstrapVersion',
              )
              .map((parameter) => [parameter.ParameterKey, parameter.ParameterValue]),
          ),
        ).toEqual({
          ResultsBucketName: BUCKET,
          VpcId: config.network.vpcId,
          PrivateSubnetIds: expect.stringContaining(config.network.privateSubnetIds[0]!),
          AvailabilityZones: expect.stringContaining('us-east-1a'),
          InstanceType: index === 0 ? 'c5.xlarge' : 'c5.2xlarge',
        });
        expect(stack.Tags).toEqual([
          { Key: 'rmqbench:run-id', Value: 'run-k' },
          { Key: 'rmqbench:expires-at', Value: '2030-01-01T12:00:00.000Z' },
        ]);
        const readiness = await checkStack(cfn, launch, NOW);
        expect(readiness.ready).toBe(true);
        const outputs = (readiness as { outputs: Record<string, string> }).outputs;
        const bootstrap = Object.entries(outputs).find(([key]) => key.includes('BootstrapServers'))![1];
        const stackUuid = stack.StackId!.split('/')[2]!;
        expect(bootstrap.split(',')).toEqual(
          Array.from(
            { length: schedule.clusters[index]!.nodes },
            (_, broker) => `kafka-${broker + 1}.${stackUuid}.rmqbench.internal:9092`,
          ),
        );
        expect(Object.entries(outputs).filter(([key]) => key.includes('InstanceId'))).toHaveLength(1);
        servers.push(bootstrap);
      }
      // Two clusters of one run in the one VPC: zones of different names.
      expect(servers[0]!.split('.')[1]).not.toBe(servers[1]!.split('.')[1]);
      // Teardown and the sweeper find them by the same tags as a RabbitMQ stack.
      expect((await stacksOfRun(cfn, 'run-k')).sort()).toEqual(launches.map((launch) => launch.clusterId).sort());
      expect(
        (await expiredStacks(cfn, 'rmqbench-', new Date('2030-01-01T13:00:00Z'))).map((stack) => stack.name).sort(),
      ).toEqual(launches.map((launch) => launch.clusterId).sort());
      for (const launch of launches) await deleteStack(cfn, config.cloudFormationRoleArn, launch.clusterId);
      expect(await stacksOfRun(cfn, 'run-k')).toEqual([]);
    },
  );

  test('a Kafka broker count without a template is refused by name, before anything is created', async () => {
    const four = { ...plan, clusters: [{ name: 'k4', broker: 'kafka', nodes: 4, instanceType: 'c5.xlarge' }] };
    // ValidatePlan refuses it first (core/plan/target-rules.ts); the launcher refuses it on its own too.
    expect(() => buildSchedule({ plan: four, target: 'aws', runId: 'run-4' }, 'exec')).toThrow(
      /clusters\[0\]\.nodes: a Kafka cluster on aws has 1, 3, 5 brokers/,
    );
    const cluster = { index: 0, clusterId: 'rmqbench-run-4-c1', nodes: 4, topology: 'quorum', repetitions: [] };
    await expect(
      launchStack(cfn, config, 'run-4', cluster, { broker: 'kafka', nodes: 4, topology: { type: 'quorum' } }, NOW),
    ).rejects.toThrow(
      "the AWS target has no Kafka cluster template for 4 broker(s): it launches 1, 3, 5 (the plan cluster's nodes)",
    );
    expect(await stacksOfRun(cfn, 'run-4')).toEqual([]);
  });

  test(
    'the smoke test and a repetition go to the load generator over Run Command; ' +
      "the repetition's uploaded tool output is assembled and ingested as the same record",
    async () => {
      const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-r' }, 'exec');
      const cluster = schedule.clusters[1]!;
      const launch = await launchStack(cfn, config, 'run-r', cluster, planClusterOf(plan, cluster), NOW);
      const { outputs } = (await checkStack(cfn, launch, NOW)) as { outputs: Record<string, string> };
      const instanceId = Object.entries(outputs).find(([key]) => key.includes('InstanceId'))![1];
      const bootstrap = Object.entries(outputs).find(([key]) => key.includes('BootstrapServers'))![1];

      await expect(kafkaSmokeTest(ssm, instanceId, bootstrap, 3, { sleep: async () => undefined })).resolves.toEqual({
        status: 'Success',
        brokers: 3,
      });
      const smokes = (await ssm.send(new ListCommandsCommand({}))).Commands!.filter((command) =>
        command.Parameters?.commands?.[0]?.includes('rmqbench-smoke-'),
      );
      expect(smokes).toHaveLength(1);
      const smoke = smokes[0]!;
      // moto 5 lists more instance ids on a command than it was sent to; the one sent to is among them.
      expect(smoke.InstanceIds).toContain(instanceId);
      expect(smoke.DocumentName).toBe('AWS-RunShellScript');
      expect(smoke.Parameters!.commands![0]).toContain(`'--bootstrap-server' '${bootstrap}' '--create'`);
      expect(smoke.Parameters!.commands![0]).toContain("'--partitions' '3' '--replication-factor' '3'");

      // StartRepetition's handler, with its clients built from the environment (AWS_ENDPOINT_URL: moto).
      const item = cluster.repetitions[0]!;
      const started = (await withEnv({ ...moto.env, RAW_OUTPUT_BUCKET: BUCKET }, async () => {
        type StartRepetition = typeof import('../../lambdas/start-repetition/index');
        const { handler } = (await import('../../lambdas/start-repetition/index')) as StartRepetition;
        return handler({ runId: 'run-r', target: 'aws', plan, item, launch, readiness: { outputs } });
      })) as { commandId: string; instanceId: string; startedAt: string; doneBy: string; perfTestArgs: string[] };
      expect(started).toMatchObject({
        instanceId,
        commandId: expect.any(String),
        perfTestArgs: [
          expect.stringMatching(
            new RegExp(
              String.raw`^TopicCommand --bootstrap-server \S+ --create --topic rmqbench-w-[0-9a-f]{6} --partitions ` +
                String.raw`1 --replication-factor 3$`,
            ),
          ),
          expect.stringMatching(/^ProducerPerformance /),
          expect.stringMatching(/^ConsumerPerformance /),
        ],
      });
      const command = (await ssm.send(new ListCommandsCommand({ CommandId: started.commandId }))).Commands![0]!;
      expect(command.Parameters!.commands![0]).toContain('org.apache.kafka.tools.ProducerPerformance');
      expect(command.Parameters!.commands![0]).toContain(
        `aws s3 cp producer-1.txt 's3://${BUCKET}/${rawPrefix('run-r', item)}/producer-1.txt'`,
      );
      // Longer than a PerfTest repetition: the tools' wait, the consumers' join and drain.
      expect(Number(command.Parameters!.executionTimeout![0])).toBeGreaterThan(item.durationSeconds + 120);

      // What the load generator's script uploads: captured real tool output (test/fixtures/kafka).
      const prefix = rawPrefix('run-r', item);
      for (const [file, fixture] of [
        ['producer-1.txt', 'one-producer-1.txt'],
        ['consumer-1.txt', 'one-consumer-1.txt'],
      ] as const) {
        await s3.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: `${prefix}/${file}`,
            Body: readFileSync(join(FIXTURES, fixture), 'utf8'),
          }),
        );
      }
      const checked = await checkRepetition(ssm, s3, BUCKET, { runId: 'run-r', plan, item, started });
      expect(checked).toEqual({ done: true, rawKey: item.rawKey });
      const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `runs/run-r/ingest/${item.rawKey}` }));
      const raw = JSON.parse(await object.Body!.transformToString()) as RawRepetition;
      expect(raw.kafka!.expectations).toEqual({ producers: 1, consumers: 1, recordsPerProducer: 200000 });
      expect([raw.stdout, raw.csv, raw.targetError]).toEqual(['', '', undefined]);
      // Kafka has no management API: no broker samples are read or carried (IngestRepetition adds no broker series).
      expect('brokerSamples' in raw).toBe(false);
      const record = ingestRepetition(raw);
      expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
      expect(record.result!.summary.sendRateAvg).toBeGreaterThan(0);
      await deleteStack(cfn, config.cloudFormationRoleArn, launch.clusterId);
    },
  );
});

/**
 * Runs `body` with extra environment variables and a fresh module registry (the handlers read their environment at
 * load).
 */
async function withEnv<T>(env: NodeJS.ProcessEnv, body: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    let result: Promise<T> | undefined;
    jest.isolateModules(() => {
      result = body();
    });
    return await result!;
  } finally {
    process.env = saved;
  }
}
