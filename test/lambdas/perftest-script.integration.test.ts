import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterTemplateFileName, CONTROLLER_DEFAULT_RELEASE } from '../../cdk/BenchmarkController';
import { brokerMetricsFromSamples, BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import { cloudVerifierCounts, parseVerifierOutput, VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import { VERIFIER_QUEUE } from '../../core/failover/failover';
import { ingestRepetition } from '../../core/results/ingest';
import { FAULT_RAW_FILES, perfTestScript, RAW_FILES, rawPrefix } from '../../lambdas/start-repetition/logic';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { parsePerfTestOutput } from '../../core/perftest/perftest-output';
import type { RawRepetition } from '../../core/results/ingest';
import { checkRepetition } from '../../lambdas/check-repetition/logic';
import { generatorFolder, repetitionGenerators, STARTED_AT_FILE } from '../../lambdas/start-repetition/generators';
import { cachedArtifactDir, PERFTEST_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { LocalRabbitCluster } from '../../local/rabbitmq-cluster';
import { buildSchedule } from '../../state-machines/schedule';
import { startFakeAws, type FakeAws } from './fake-aws-endpoint';
import {
  ACCOUNT,
  BUCKET,
  loadGeneratorStatements,
  REGION,
  requireAwsCli,
  runOnLoadGenerator as runSandboxed,
} from './sandboxed-load-generator';

/**
 * The exact script StartRepetition sends to the AWS load generator, executed with bash on a sandboxed load generator:
 * - laid out by the real boot commands of cdk/user-data/load-generator.ts, in a mount + PID namespace whose /opt,
 *   /usr/local/bin and /etc are private (tmpfs, tmpfs, overlay), so nothing on this machine changes. Two boot lines
 *   are substituted, by exact match, and nothing else: `dnf install` of Corretto (this machine's Java runs PerfTest)
 *   and each `curl` from Maven Central (the same jar is copied from the local Maven cache; the boot's own SHA-256
 *   check then verifies it against the pinned sums);
 * - with the real AWS CLI (PyPI awscli v1, scripts/setup.sh) pointed at a local endpoint (AWS_ENDPOINT_URL) that
 *   answers Secrets Manager and S3 and authorizes each call with the load generator role's policy taken from the
 *   synthesized cluster template. Its other policy, AmazonSSMManagedInstanceCore, grants no secretsmanager: or s3:
 *   action (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonSSMManagedInstanceCore.html);
 * - against a real RabbitMQ node started by the test.
 */
jest.setTimeout(300_000);

const SECRET_ARN = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:ClusterAdminCredentials-AbCdEf`;

/** The load generator role's statements in the cluster template; its Ref to the admin secret resolves to SECRET_ARN. */
const statements = () =>
  loadGeneratorStatements(clusterTemplateFileName(CONTROLLER_DEFAULT_RELEASE), (template) => {
    const secretId = Object.keys(template.Resources).find(
      (id) => template.Resources[id]!.Type === 'AWS::SecretsManager::Secret' && id.startsWith('ClusterAdmin'),
    )!;
    return { [secretId]: SECRET_ARN };
  });

describe('the AWS run script, executed on a sandboxed load generator', () => {
  const processes = new ProcessRegistry();
  let work: string;
  let cluster: LocalRabbitCluster;
  let jarDir: string;

  beforeAll(async () => {
    requireAwsCli();
    const cached = cachedArtifactDir(cacheDir(), PERFTEST_ARTIFACT);
    if (!cached)
      throw new Error('PerfTest is not in the Maven cache: run rmqbench doctor --fix (scripts/setup.sh does)');
    jarDir = cached;
    work = mkdtempSync(join(tmpdir(), 'rmqbench-loadgen-'));
    cluster = await LocalRabbitCluster.start({
      nodes: 1,
      topology: { type: 'quorum' },
      workDir: join(work, 'cluster'),
      processes,
    });
  });
  afterAll(async () => {
    await processes.stopAll();
    rmSync(work, { recursive: true, force: true });
  });

  const runOnLoadGenerator = (fake: FakeAws, script: string) =>
    runSandboxed(
      work,
      {
        jarDirs: [jarDir],
        minDownloads: 20,
        // The boot remounted this namespace's /proc with hidepid=2: an unprivileged user cannot see PID 1 (this shell,
        // root).
        afterBoot: [
          'if runuser -u nobody -- test -e /proc/1/cmdline; then echo "hidepid: ' +
            '/proc/1 visible to nobody"; else echo "hidepid: other users see no process of root"; fi',
        ],
      },
      fake,
      script,
    );

  const plan = {
    name: 'script',
    clusters: [{ name: 'q', nodes: 1, instanceType: 'c5.xlarge', topology: { type: 'quorum' } }],
    workloads: [{ name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: 5 }],
  };
  const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-script' }, 'exec');
  const item = schedule.clusters[0]!.repetitions[0]!;
  const script = () =>
    perfTestScript({
      plan,
      runId: 'run-script',
      item,
      endpoint: `127.0.0.1:${cluster.nodes[0]!.amqpPort}`,
      managementUrl: managementUrl(),
      secretArn: SECRET_ARN,
      bucket: BUCKET,
    }).script;
  const credentials = JSON.stringify({ username: 'guest', password: 'guest' });
  const managementUrl = () => `http://127.0.0.1:${cluster.nodes[0]!.managementPort}`;
  const users = async () => (await admin<{ name: string }[]>('GET', '/api/users')).map((user) => user.name);

  /** A management API call as the node's administrator (guest), its JSON answer parsed. */
  const admin = async <T = unknown>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${managementUrl()}${path}`, {
      method,
      headers: {
        authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
        'content-type': 'application/json',
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const queueNames = async () =>
    (await admin<{ name: string }[]>('GET', '/api/queues/%2F?columns=name')).map((queue) => queue.name);

  test(
    'with the role the template grants it reads the secret, deletes the queues an earlier repetition left, runs ' +
      "PerfTest with the broker sampler beside it, uploads the raw files, and the queue is the plan's quorum queue",
    async () => {
      const fake = await startFakeAws({
        statements: statements(),
        secrets: { [SECRET_ARN]: credentials },
        region: REGION,
        account: ACCOUNT,
      });
      try {
        // What an earlier repetition on the same cluster could leave: a benchmark queue declared with other arguments
        // (a classic one where the plan asks for quorum: PerfTest's declare would be refused, PRECONDITION_FAILED),
        // holding a message, and the lost-message verifier's queue. The script deletes both before PerfTest starts.
        await admin('PUT', '/api/queues/%2F/perf-test-1', { durable: true, auto_delete: false, arguments: {} });
        await admin('PUT', `/api/queues/%2F/${VERIFIER_QUEUE}`, { durable: true, auto_delete: false, arguments: {} });
        await admin('POST', '/api/exchanges/%2F/amq.default/publish', {
          routing_key: 'perf-test-1',
          payload: 'stale',
          payload_encoding: 'string',
          properties: {},
        });
        const run = await runOnLoadGenerator(fake, script());
        expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
        expect(await queueNames()).toEqual(['perf-test-1']);
        expect(fake.calls.map((call) => [call.action, call.allowed])).toEqual([
          ['secretsmanager:GetSecretValue', true],
          ['s3:PutObject', true],
          ['s3:PutObject', true],
          ['s3:PutObject', true],
        ]);
        const prefix = `${BUCKET}/${rawPrefix('run-script', item)}`;
        expect([...fake.objects.keys()].sort()).toEqual(RAW_FILES.map((file) => `${prefix}/${file}`).sort());
        const record = ingestRepetition({
          runId: 'run-script',
          scenarioId: item.scenarioId,
          repetition: 1,
          startedAt: '2025-01-01T00:00:00.000Z',
          finishedAt: '2025-01-01T00:00:10.000Z',
          perfTestArgs: [],
          expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
          stdout: fake.objects.get(`${prefix}/stdout.txt`)!.toString('utf8'),
          csv: fake.objects.get(`${prefix}/perftest.csv`)!.toString('utf8'),
        });
        expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
        expect(record.result!.summary.receiveRateAvg).toBeGreaterThan(0);
        // The sampler read the management API as the benchmark user (monitoring tag) while PerfTest ran: every line
        // usable,
        // the node's memory alarm and queue depth per second (the queue exists once PerfTest declared it).
        const broker = brokerMetricsFromSamples(
          fake.objects.get(`${prefix}/${BROKER_SAMPLES_FILE}`)!.toString('utf8'),
          new Date(Date.now() - 600_000),
        );
        expect({ unusable: broker.unusable, firstProblem: broker.firstProblem, unanswered: broker.unanswered }).toEqual(
          {
            unusable: 0,
            firstProblem: undefined,
            unanswered: 0,
          },
        );
        // Several seconds of PerfTest (JVM start included); how many lines depends on the machine's load.
        expect(broker.samples).toBeGreaterThanOrEqual(2);
        expect(broker.metrics.series.map((series) => [series.node, series.metric])).toEqual([
          [cluster.nodes[0]!.name, 'memoryAlarm'],
          [cluster.nodes[0]!.name, 'queueDepth'],
        ]);
        expect(broker.metrics.series[0]!.points.every(([, value]) => value === 0)).toBe(true);
        // The broker declared what the plan asked for (before issue 15.3, cloud repetitions declared classic queues).
        const response = await fetch(
          `http://127.0.0.1:${cluster.nodes[0]!.managementPort}/api/queues/%2F/perf-test-1`,
          {
            headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
          },
        );
        expect(((await response.json()) as { type: string; arguments: Record<string, unknown> }).type).toBe('quorum');
        // PerfTest ran as a per-run benchmark user (it declared the queue through it), which the script deleted on
        // exit.
        expect(await users()).toEqual(['guest']);
        expect(run.stdout).toContain('hidepid: other users see no process of root');
      } finally {
        await fake.stop();
      }
    },
  );

  test(
    'a scenario with a fault: the lost-message verifier runs beside PerfTest as the ' +
      'benchmark user, with the jars the boot installed, and its output is uploaded and usable',
    async () => {
      // The fault step is not part of this test (it runs on the nodes): the verifier's counts without a fault.
      const faultPlan = {
        ...plan,
        workloads: [{ ...plan.workloads[0]!, fault: { action: 'kill', node: 0, atSeconds: 2, healAtSeconds: 4 } }],
      };
      const faultItem = buildSchedule({ plan: faultPlan, target: 'aws', runId: 'run-script' }, 'exec').clusters[0]!
        .repetitions[0]!;
      const faultScript = perfTestScript({
        plan: faultPlan,
        runId: 'run-script',
        item: faultItem,
        endpoint: `127.0.0.1:${cluster.nodes[0]!.amqpPort}`,
        managementUrl: managementUrl(),
        secretArn: SECRET_ARN,
        bucket: BUCKET,
      }).script;
      const fake = await startFakeAws({
        statements: statements(),
        secrets: { [SECRET_ARN]: credentials },
        region: REGION,
        account: ACCOUNT,
      });
      try {
        const run = await runOnLoadGenerator(fake, faultScript);
        expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
        const prefix = `${BUCKET}/${rawPrefix('run-script', faultItem)}`;
        expect([...fake.objects.keys()].sort()).toEqual(
          [...RAW_FILES, ...FAULT_RAW_FILES].map((file) => `${prefix}/${file}`).sort(),
        );
        const output = fake.objects.get(`${prefix}/${VERIFIER_OUTPUT_FILE}`)!.toString('utf8');
        const counts = cloudVerifierCounts(parseVerifierOutput(output), { action: 'kill', node: 0 });
        expect(counts).toMatchObject({ lostMessages: 0, duplicatedMessages: 0, reconnects: 0 });
        expect(counts.confirmed).toBeGreaterThan(0);
        expect(counts.consumed).toBe(counts.confirmed);
        expect(counts.receivedPerSecond).toHaveLength(5);
        // The verifier's queue was declared with the plan's queue type, and the benchmark user is gone.
        const response = await fetch(`${managementUrl()}/api/queues/%2F/${VERIFIER_QUEUE}`, {
          headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
        });
        expect(((await response.json()) as { type: string }).type).toBe('quorum');
        expect(await users()).toEqual(['guest']);
      } finally {
        await fake.stop();
      }
    },
  );

  test(
    'two load generators (issue 27): each runs its share from the shared start and uploads under generator-<i>/ of ' +
      'one repetition; check-repetition and the ingest make one repetition of both, rates summed',
    async () => {
      const twoPlan = {
        ...plan,
        clusters: [{ ...plan.clusters[0]!, loadGenerators: 2 }],
        workloads: [{ ...plan.workloads[0]!, producers: 2, consumers: 2, queues: 2, durationSeconds: 4 }],
      };
      const twoItem = buildSchedule({ plan: twoPlan, target: 'aws', runId: 'run-two' }, 'exec').clusters[0]!
        .repetitions[0]!;
      // As StartRepetition sets it (SHARED_START_DELAY_SECONDS ahead): on an idle machine both sandboxes boot before.
      const startAtMs = Date.now() + 15_000;
      const generators = repetitionGenerators(twoPlan, twoItem, startAtMs)!;
      const scripts = generators.runs.map((run) =>
        perfTestScript({
          plan: twoPlan,
          runId: 'run-two',
          item: twoItem,
          endpoint: `127.0.0.1:${cluster.nodes[0]!.amqpPort}`,
          managementUrl: managementUrl(),
          secretArn: SECRET_ARN,
          bucket: BUCKET,
          generator: run,
        }),
      );
      const fake = await startFakeAws({
        statements: statements(),
        secrets: { [SECRET_ARN]: credentials },
        region: REGION,
        account: ACCOUNT,
      });
      try {
        // Each sandbox notes when its boot ended, to tell a generator that waited from one that arrived late.
        const runs = await Promise.all(
          scripts.map(({ script }) =>
            runSandboxed(
              work,
              { jarDirs: [jarDir], minDownloads: 20, afterBoot: ['echo "booted-at $(date +%s%3N)"'] },
              fake,
              script,
            ),
          ),
        );
        const bootedAt = runs.map((run) => Number(/^booted-at (\d+)$/m.exec(run.stdout)?.[1]));
        for (const run of runs)
          expect({ code: run.code, stderr: run.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
        const prefix = rawPrefix('run-two', twoItem);
        const own = (index: number, file: string) => `${BUCKET}/${prefix}/${generatorFolder(index)}/${file}`;
        expect([...fake.objects.keys()].sort()).toEqual(
          [
            ...[0, 1].flatMap((index) =>
              RAW_FILES.filter((file) => file !== BROKER_SAMPLES_FILE).map((f) => own(index, f)),
            ),
            own(0, STARTED_AT_FILE),
            own(1, STARTED_AT_FILE),
            `${BUCKET}/${prefix}/${BROKER_SAMPLES_FILE}`,
          ].sort(),
        );
        expect(fake.calls.every((call) => call.allowed)).toBe(true);
        // Neither PerfTest began before the shared start; one whose sandbox booted well ahead of it waited for it and
        // began within a second (one that booted late, on a loaded machine, starts at once: its lateness is the skew).
        const startedAt = [0, 1].map((index) =>
          Number(fake.objects.get(own(index, STARTED_AT_FILE))!.toString('utf8')),
        );
        for (const [index, at] of startedAt.entries()) {
          expect(at - startAtMs).toBeGreaterThanOrEqual(0);
          expect(bootedAt[index]).toBeGreaterThan(0);
          if (bootedAt[index]! < startAtMs - 8_000) expect(at - startAtMs).toBeLessThan(1_000);
        }

        // CheckRepetition over what the generators uploaded: SSM answers each command with its run's exit code, S3 is
        // the fake's objects.
        const commandOf = (index: number) => ({ commandId: `cmd-${index}`, instanceId: `i-${index}` });
        const ssm = {
          send: async (command: { input: { CommandId: string } }) => ({
            Status: runs[Number(command.input.CommandId.slice(4))]!.code === 0 ? 'Success' : 'Failed',
            ResponseCode: runs[Number(command.input.CommandId.slice(4))]!.code,
          }),
        } as unknown as SSMClient;
        const stored = new Map<string, string>();
        const s3 = {
          send: async (command: GetObjectCommand | PutObjectCommand) => {
            const key = `${command.input.Bucket}/${command.input.Key}`;
            if (command instanceof PutObjectCommand) return void stored.set(key, command.input.Body as string);
            const object = fake.objects.get(key);
            if (!object) throw Object.assign(new Error(`NoSuchKey ${key}`), { name: 'NoSuchKey' });
            return { Body: { transformToString: async () => object.toString('utf8') } };
          },
        } as unknown as S3Client;
        const started = {
          ...commandOf(0),
          startedAt: new Date(startAtMs).toISOString(),
          doneBy: new Date(startAtMs + 600_000).toISOString(),
          perfTestArgs: scripts[0]!.redactedArgs,
          generators: scripts.map(({ redactedArgs }, index) => ({ ...commandOf(index), perfTestArgs: redactedArgs })),
          loadGeneratorSplit: generators.split,
        };
        const event = { runId: 'run-two', plan: twoPlan, item: twoItem, started };
        await expect(checkRepetition(ssm, s3, BUCKET, event)).resolves.toEqual({ done: true, rawKey: twoItem.rawKey });
        const raw = JSON.parse(stored.get(`${BUCKET}/runs/run-two/ingest/${twoItem.rawKey}`)!) as RawRepetition;
        expect(raw.loadGenerators!.outputs.map((output) => output.startedAtMs)).toEqual(startedAt);
        const record = ingestRepetition(raw);
        expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
        expect(record.loadGenerators!.map(({ id, queues }) => [id, queues])).toEqual([
          ['lg-1', ['perf-test-1']],
          ['lg-2', ['perf-test-2']],
        ]);
        expect(record.startSkewMs).toBe(Math.abs(startedAt[1]! - startedAt[0]!));
        // The repetition's rate is the sum of each generator's own PerfTest summary, both of which measured traffic.
        const ownRates = raw.loadGenerators!.outputs.map(
          (output) => parsePerfTestOutput(output.stdout, output.csv, output.expectations).summary.sendRateAvg,
        );
        for (const rate of ownRates) expect(rate).toBeGreaterThan(0);
        expect(record.result!.summary.sendRateAvg).toBeCloseTo(ownRates[0]! + ownRates[1]!, 3);
        expect(record.loadGenerators!.map((figures) => figures.sendRate)).toEqual(ownRates);
        // Generator 0 sampled the broker for the repetition; the ingest read its samples.
        expect(raw.brokerSamples).not.toBe('');
      } finally {
        await fake.stop();
      }
    },
  );

  test(
    'a role without the secret grant (as before issue 15.1) ' +
      'is refused by the fake as AWS would, and the script stops there',
    async () => {
      const withoutSecret = statements().filter(
        (statement) => ![statement.Action].flat().some((action) => action.startsWith('secretsmanager:')),
      );
      const fake = await startFakeAws({
        statements: withoutSecret,
        secrets: { [SECRET_ARN]: credentials },
        region: REGION,
        account: ACCOUNT,
      });
      try {
        const run = await runOnLoadGenerator(fake, script());
        expect(run.code).not.toBe(0);
        expect(run.stderr).toMatch(/AccessDeniedException.*not authorized to perform: secretsmanager:GetSecretValue/);
        expect(fake.calls).toEqual([{ action: 'secretsmanager:GetSecretValue', resource: SECRET_ARN, allowed: false }]);
        expect(fake.objects.size).toBe(0);
      } finally {
        await fake.stop();
      }
    },
  );

  test(
    'a PerfTest that cannot connect fails the script with ' + 'its status and output tail after uploading its output',
    async () => {
      const fake = await startFakeAws({
        statements: statements(),
        secrets: { [SECRET_ARN]: credentials },
        region: REGION,
        account: ACCOUNT,
      });
      try {
        // A port nothing listens on: PerfTest fails to connect.
        const broken = perfTestScript({
          plan,
          runId: 'run-script',
          item,
          endpoint: '127.0.0.1:9',
          managementUrl: managementUrl(),
          secretArn: SECRET_ARN,
          bucket: BUCKET,
        }).script;
        const run = await runOnLoadGenerator(fake, broken);
        expect(run.code).not.toBe(0);
        expect(run.stderr).toMatch(/^PerfTest exited with status \d+:$/m);
        expect(run.stderr).not.toContain('guest:guest');
        expect(fake.objects.size).toBe(3);
      } finally {
        await fake.stop();
      }
    },
  );
});
