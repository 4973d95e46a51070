/**
 * The Run Command script StartRepetition sends to the Azure load generator (lambdas/start-repetition/logic.ts
 * azurePerfTestScript), executed as managed Run Command does (bash, as root, minimal environment, protected parameters
 * as
 * environment variables) on a simulated load-generator
 * VM next to a simulated cluster VM booted by the real node script (see harness.ts). The script reads the admin
 * password
 * from the fake Key Vault with the VM identity's IMDS token, runs PerfTest against the cluster, and uploads both raw
 * files with the real bicep/cloud-init/rmqbench-upload.sh to a pre-signed URL the fake answers over HTTPS. Stand-ins:
 * PerfTest from the local Maven cache behind the same `perf-test` wrapper the load generator's setup installs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { brokerMetricsFromSamples } from '../../core/broker/broker-samples';
import { cloudVerifierCounts, parseVerifierOutput, VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import { VERIFIER_QUEUE } from '../../core/failover/failover';
import { ingestRepetition } from '../../core/results/ingest';
import {
  azurePerfTestScript,
  FAULT_RAW_FILES,
  RAW_FILES,
  uploadUrlParameters,
} from '../../lambdas/start-repetition/logic';
import { cachedArtifactDir, PERFTEST_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { buildSchedule } from '../../state-machines/schedule';
import {
  IDENTITY_CLIENT_ID,
  KEY_VAULT,
  SCALE_SET,
  SECRETS,
  nodeFiles,
  renderClusterCloudInit,
  runCloudInit,
} from './azure-cluster';
import { SimulatedHub, type SimulatedVm } from './harness';

jest.setTimeout(900_000);

const UPLOAD_HOST = 'rmqbenchsimuploads.blob.core.windows.net';
const ADMIN_PASSWORD = 'simulated-admin-password';

describe('the Azure Run Command script on a simulated load generator', () => {
  const hub = new SimulatedHub({
    subnet: 7,
    fakeScript: 'fake-azure.py',
    httpsNames: ['management.azure.com', `${KEY_VAULT}.vault.azure.net`, UPLOAD_HOST],
    state: {
      subscriptionId: '00000000-0000-0000-0000-000000000097',
      resourceGroup: 'rmqbench-sim',
      scaleSetName: SCALE_SET,
      identityClientId: IDENTITY_CLIENT_ID,
      vaultName: KEY_VAULT,
      secrets: { [SECRETS.cookie]: 'SIMULATEDCOOKIEVALUE0123456789', [SECRETS.password]: ADMIN_PASSWORD },
    },
  });
  let node: SimulatedVm;
  let loadGenerator: SimulatedVm;
  let adminUsername: string;

  beforeAll(async () => {
    const jars = cachedArtifactDir(cacheDir(), PERFTEST_ARTIFACT);
    if (!jars) throw new Error('PerfTest is not in the Maven cache: run rmqbench doctor --fix (scripts/setup.sh does)');
    await hub.start();
    const cloudConfig = await renderClusterCloudInit();
    const files = nodeFiles(cloudConfig, {});
    adminUsername = /^RABBITMQ_ADMIN_USERNAME=(.*)$/m.exec(files['/etc/rmqbench/node.env']!.content)![1]!;
    node = hub.createVm('rmqbench-vmss_7a7a7a7a', 'rmqbenchLG7NODE', files);
    const boot = await runCloudInit(hub, node, cloudConfig);
    if (boot.status !== 0)
      throw new Error(`the cluster node did not boot: ${boot.stderr}\n${await hub.diagnostics(node)}`);
    // The load generator's tools (bicep/cloud-init/rmqbench-loadgen-setup.sh installs them from Maven Central and the
    // repository).
    loadGenerator = hub.createVm('rmqbench-loadgen', 'rmqbenchLOADGEN', {
      '/usr/local/sbin/perf-test': {
        mode: 0o755,
        content: `#!/bin/sh\nexec java \${PERF_TEST_JAVA_OPTS:-} -cp '${jars}/*' com.rabbitmq.perf.PerfTest "$@"\n`,
      },
      '/usr/local/sbin/rmqbench-upload': {
        mode: 0o755,
        content: readFileSync(join(__dirname, '../../bicep/cloud-init/rmqbench-upload.sh'), 'utf8'),
      },
    });
  });
  afterAll(() => hub.cleanup());

  /**
   * The Run Command script of the plan's first repetition, and the protected parameters that hand it the pre-signed
   * URLs of `files`.
   */
  const runCommandFor = (plan: Record<string, unknown>, files: readonly string[]) => {
    const item = buildSchedule({ plan, target: 'azure', runId: 'run-azure' }, 'exec').clusters[0]!.repetitions[0]!;
    const uploadUrls = Object.fromEntries(
      files.map((file) => [file, `https://${UPLOAD_HOST}/raw/${file}?sv=2024-11-04&sig=SIMULATED`]),
    );
    const { script } = azurePerfTestScript({
      plan,
      item,
      endpoint: `${node.ip}:5672`,
      managementUrl: `http://${node.ip}:15672`,
      username: adminUsername,
      password: { keyVaultName: KEY_VAULT, secretName: SECRETS.password, identityClientId: IDENTITY_CLIENT_ID },
    });
    return {
      script,
      item,
      protectedParameters: Object.fromEntries(uploadUrlParameters(uploadUrls).map(({ name, value }) => [name, value])),
    };
  };

  test(
    'reads the password from Key Vault with the VM identity, runs PerfTest as a ' +
      'per-run user (quorum queue on the broker, user gone afterwards) and uploads ' +
      "the raw files with the broker sampler's lines; no secret in the script",
    async () => {
      const plan = {
        name: 'azure-script',
        clusters: [{ name: 'q', nodes: 1, instanceType: 'F4s_v2', topology: { type: 'quorum' } }],
        workloads: [{ name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: 5 }],
      };
      const { script, item, protectedParameters } = runCommandFor(plan, RAW_FILES);
      expect(script).not.toContain(ADMIN_PASSWORD);
      expect(script).not.toContain('sig=');
      // Managed Run Command runs the script as root with a minimal environment plus its protected parameters as
      // variables.
      const run = await hub.exec(loadGenerator, script, {
        env: {
          PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          HOME: '/root',
          ...protectedParameters,
        },
        timeoutMs: 300_000,
      });
      expect({ status: run.status, stderr: run.stderr.slice(-1500) }).toEqual({
        status: 0,
        stderr: expect.any(String),
      });
      expect(run.stderr + run.stdout).not.toContain(ADMIN_PASSWORD);
      const uploaded = (file: string) => readFileSync(join(hub.dir, 'uploads', 'raw', file), 'utf8');
      const record = ingestRepetition({
        runId: 'run-azure',
        scenarioId: item.scenarioId,
        repetition: 1,
        startedAt: '2025-01-01T00:00:00.000Z',
        finishedAt: '2025-01-01T00:00:10.000Z',
        perfTestArgs: [],
        expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
        stdout: uploaded('stdout.txt'),
        csv: uploaded('perftest.csv'),
      });
      expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
      expect(record.result!.summary.receiveRateAvg).toBeGreaterThan(0);
      // The broker sampler read the node's management API beside PerfTest as the benchmark user: every line usable.
      const broker = brokerMetricsFromSamples(uploaded('broker-metrics.jsonl'), new Date(Date.now() - 600_000));
      expect({ unusable: broker.unusable, firstProblem: broker.firstProblem, unanswered: broker.unanswered }).toEqual({
        unusable: 0,
        firstProblem: undefined,
        unanswered: 0,
      });
      // Several seconds of PerfTest (JVM start included); how many lines depends on the machine's load.
      expect(broker.samples).toBeGreaterThanOrEqual(2);
      expect(broker.metrics.series.map((series) => series.metric)).toEqual(['memoryAlarm', 'queueDepth']);
      expect(broker.metrics.series[0]!.node).toMatch(/^rabbit@/);
      // PerfTest ran as a per-run benchmark user, which the script deleted on exit: only the admin user is left.
      const users = await hub.exec(node, 'rabbitmqctl -q list_users --formatter json');
      expect((JSON.parse(users.stdout) as { user: string }[]).map((user) => user.user)).toEqual([adminUsername]);
      const queues = await hub.exec(node, 'rabbitmqctl -q list_queues name type --formatter json');
      expect(JSON.parse(queues.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: 'perf-test-1', type: 'quorum' })]),
      );
    },
  );

  test(
    'a scenario with a fault: the lost-message verifier runs beside PerfTest ' +
      'as the benchmark user and its output goes to its own pre-signed URL',
    async () => {
      // The fault step runs on the nodes and is not part of this test: the verifier's counts without a fault.
      const plan = {
        name: 'azure-fault',
        clusters: [{ name: 'q', nodes: 1, instanceType: 'F4s_v2', topology: { type: 'quorum' } }],
        workloads: [
          {
            name: 'w',
            producers: 1,
            consumers: 1,
            messageSizeBytes: 100,
            // 27 s: azure refuses a fault on a node index with less than 25 s after atSeconds (one Run Command).
            durationSeconds: 27,
            fault: { action: 'kill', node: 0, atSeconds: 2, healAtSeconds: 4 },
          },
        ],
      };
      const { script, protectedParameters } = runCommandFor(plan, [...RAW_FILES, ...FAULT_RAW_FILES]);
      const run = await hub.exec(loadGenerator, script, {
        env: {
          PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          HOME: '/root',
          ...protectedParameters,
        },
        timeoutMs: 300_000,
      });
      // The stderr only when the script failed (a successful one prints the boot lines' noise there).
      expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr.slice(-1500) }).toEqual({
        status: 0,
        stderr: '',
      });
      expect(run.stderr + run.stdout).not.toContain(ADMIN_PASSWORD);
      const output = readFileSync(join(hub.dir, 'uploads', 'raw', VERIFIER_OUTPUT_FILE), 'utf8');
      const counts = cloudVerifierCounts(parseVerifierOutput(output), { action: 'kill', node: 0 });
      expect(counts).toMatchObject({ lostMessages: 0, duplicatedMessages: 0 });
      expect(counts.confirmed).toBeGreaterThan(0);
      expect(counts.consumed).toBe(counts.confirmed);
      const queues = await hub.exec(node, 'rabbitmqctl -q list_queues name type --formatter json');
      expect(JSON.parse(queues.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: VERIFIER_QUEUE, type: 'quorum' })]),
      );
    },
  );
});
