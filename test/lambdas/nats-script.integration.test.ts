import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { natsClusterTemplateFileName } from '../../cdk/BenchmarkController';
import { NATS_LOAD_LOG_FILE, NATS_LOAD_OUTPUT_FILE, natsOutputWithCrash } from '../../core/nats/nats-load-output';
import { ingestRepetition } from '../../core/results/ingest';
import { perfTestExpectations } from '../../core/perftest/perftest-output';
import { natsSmokeTestScript } from '../../lambdas/shared/nats-load-generator';
import { scenarioOf } from '../../lambdas/start-repetition/kafka-script';
import { rawPrefix } from '../../lambdas/start-repetition/logic';
import { awsNatsRepetitionScript } from '../../lambdas/start-repetition/nats-script';
import { LocalNatsCluster } from '../../local/nats-cluster';
import { ensureNatsBinaries, goCommand } from '../../local/nats-binaries';
import { cacheDir } from '../../local/paths';
import { cachedArtifactDir, PERFTEST_ARTIFACT } from '../../local/maven-artifacts';
import { ProcessRegistry } from '../../local/processes';
import { buildSchedule } from '../../state-machines/schedule';
import { startFakeAws } from './fake-aws-endpoint';
import { goTarballOfThisMachine } from '../simulated-vm/local-tarballs';
import {
  ACCOUNT,
  BUCKET,
  loadGeneratorStatements,
  REGION,
  requireAwsCli,
  runOnLoadGenerator,
} from './sandboxed-load-generator';

/**
 * The exact scripts the controller sends to the AWS load generator of a NATS cluster stack (SmokeTest's NATS smoke
 * test, StartRepetition's NATS repetition), executed with bash on a sandboxed load generator (sandboxed-load-generator
 * .ts): laid out by the real boot commands with the NATS tools, where only the Go tarball is this machine's Go packed
 * by the test (and its SHA-256 in the boot's check line); the scripts then build the load client from the source they
 * carry, with modules from a file proxy of this machine's module cache (GOPROXY: the load generator reaches
 * proxy.golang.org; the build's go.sum check runs either way), against a real 3-node JetStream cluster, uploading with
 * the NATS template's load generator role to a fake S3 that enforces it. One sandbox runs the smoke test, a smoke test
 * against a port nobody listens on, and the repetition, so the client is built once.
 */
jest.setTimeout(400_000);

describe('the AWS NATS scripts, executed on a sandboxed load generator against a real 3-node JetStream cluster', () => {
  const processes = new ProcessRegistry();
  let work: string;
  let cluster: LocalNatsCluster;

  beforeAll(async () => {
    requireAwsCli();
    work = mkdtempSync(join(tmpdir(), 'rmqbench-nats-loadgen-'));
    const binaries = await ensureNatsBinaries(cacheDir());
    cluster = await LocalNatsCluster.start({
      nodes: 3,
      workDir: join(work, 'cluster'),
      processes,
      serverBinary: binaries.server,
    });
  });
  afterAll(async () => {
    await processes.stopAll();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test(
    'the load generator builds the load client once; the smoke test passes on the cluster and names the failure ' +
      'without one; the repetition uploads its output with the role, which ingests into a SUCCEEDED record',
    async () => {
      const go = goCommand();
      const perfTestJars = cachedArtifactDir(cacheDir(), PERFTEST_ARTIFACT);
      if (!perfTestJars) throw new Error('PerfTest is not in the Maven cache: run rmqbench doctor --fix');
      const moduleCache = execFileSync(go, ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
      const plan = {
        name: 'nats-script',
        clusters: [{ name: 'n', broker: 'nats', nodes: 3, instanceType: 'c5.xlarge' }],
        workloads: [
          { name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, publishRateLimit: 200, durationSeconds: 5 },
        ],
      };
      const item = buildSchedule({ plan, target: 'aws', runId: 'run-nats' }, 'exec').clusters[0]!.repetitions[0]!;
      const serverUrls = cluster.clientUrls.join(',');
      const smoke = join(work, 'smoke.sh');
      writeFileSync(smoke, natsSmokeTestScript({ serverUrls, nodes: 3 }));
      const closed = join(work, 'smoke-closed.sh');
      writeFileSync(closed, natsSmokeTestScript({ serverUrls: 'nats://127.0.0.1:1', nodes: 3 }));
      const fake = await startFakeAws({
        statements: loadGeneratorStatements(natsClusterTemplateFileName(3)),
        secrets: {},
        region: REGION,
        account: ACCOUNT,
      });
      try {
        const repetition = awsNatsRepetitionScript({ plan, runId: 'run-nats', item, serverUrls, bucket: BUCKET });
        const run = await runOnLoadGenerator(
          work,
          {
            jarDirs: [perfTestJars],
            minDownloads: 10,
            natsTools: goTarballOfThisMachine(work, go),
            env: { GOPROXY: `file://${moduleCache}/cache/download` },
            afterBoot: [
              `bash ${smoke} > ${work}/smoke.out 2>&1 || { cat ${work}/smoke.out >&2; exit 98; }`,
              `bash ${closed} > ${work}/smoke-closed.out 2>&1 && exit 99`,
              `stat -c '%n %i %Y' /opt/nats-load/build-*/rmqbench-nats-load > ${work}/built-before.txt`,
            ],
            timeoutMs: 360_000,
          },
          fake,
          // What the repetition ran: the binary's path, inode and time, as before it.
          `${repetition.script}\nstat -c '%n %i %Y' "$NATS_LOAD" > ${work}/built-after.txt`,
        );
        expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr.slice(-3000) }).toEqual({
          code: 0,
          stderr: '',
        });
        expect(readFileSync(join(work, 'smoke.out'), 'utf8')).toMatch(
          /^smoke test: 100 messages acknowledged by 3 replicas and read back$/m,
        );
        expect(readFileSync(join(work, 'smoke-closed.out'), 'utf8')).toMatch(
          /smoke test: 100 messages were not all acknowledged by 3 replicas and read back:\n.*"type":"error"/,
        );
        // Built once, by the smoke test: the repetition found the binary of the same source.
        const built = readFileSync(join(work, 'built-before.txt'), 'utf8');
        expect(built.trim().split('\n')).toHaveLength(1);
        expect(readFileSync(join(work, 'built-after.txt'), 'utf8')).toBe(built);
        expect(fake.calls.map((call) => [call.action, call.allowed])).toEqual([
          ['s3:PutObject', true],
          ['s3:PutObject', true],
        ]);
        const prefix = `${BUCKET}/${rawPrefix('run-nats', item)}`;
        expect([...fake.objects.keys()].sort()).toEqual([
          `${prefix}/${NATS_LOAD_OUTPUT_FILE}`,
          `${prefix}/${NATS_LOAD_LOG_FILE}`,
        ]);
        const scenario = scenarioOf(plan, item);
        const record = ingestRepetition({
          runId: 'run-nats',
          scenarioId: item.scenarioId,
          repetition: 1,
          startedAt: '2025-01-01T00:00:00.000Z',
          finishedAt: '2025-01-01T00:00:30.000Z',
          perfTestArgs: repetition.args,
          expectations: perfTestExpectations(scenario.workload),
          stdout: '',
          csv: '',
          nats: {
            output: natsOutputWithCrash(
              fake.objects.get(`${prefix}/${NATS_LOAD_OUTPUT_FILE}`)!.toString('utf8'),
              fake.objects.get(`${prefix}/${NATS_LOAD_LOG_FILE}`)!.toString('utf8'),
            ),
            expectations: repetition.expectations,
          },
        });
        expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
        expect(record.result!.summary.receiveRateAvg).toBeGreaterThan(150);
        expect(record.result!.summary.receiveRateAvg).toBeLessThan(250);
        expect(record.result!.summary.confirmLatency!.p99).toBeGreaterThan(0);
      } finally {
        await fake.stop();
      }
    },
  );
});
