import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mockClient } from 'aws-sdk-client-mock';
import { checkAzureRepetition } from '../../lambdas/check-repetition/logic';
import { AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import {
  azurePerfTestScript,
  FAULT_RAW_FILES,
  PERF_TEST_READY_WAIT_SECONDS,
  perfTestReadyLines,
  presignRawUploads,
  RAW_FILES,
  runCommandName,
  startAzureRepetition,
} from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';
import type { FakeArm } from './fake-arm';
import { fakeClusterConfig, startFakeArm } from './fake-arm-clients';

const plan = {
  name: 'azure',
  repetitions: 1,
  pauseSecondsBetweenRepetitions: 0,
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType: 'Standard_F4s_v2' }],
  workloads: [{ name: 'small', producers: 2, consumers: 3, queues: 1, messageSizeBytes: 100, durationSeconds: 30 }],
};
const schedule = buildSchedule({ plan, runId: 'run-1', target: 'azure' }, 'exec');
const cluster = schedule.clusters[0]!;
const item = cluster.repetitions[0]!;
const outputs = {
  amqpEndpoint: 'amqp://10.20.1.4:5672',
  managementUrl: 'http://10.20.1.4:15672',
  loadGeneratorResourceId:
    `/subscriptions/sub-1/resourceGroups/${cluster.clusterId}/providers` +
    `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`,
  keyVaultName: 'kvrmqbenchtest42',
  adminPasswordSecretName: 'rabbitmq-admin-password',
  loadGeneratorIdentityClientId: '00000000-1111-2222-3333-444444444444',
};
// Distinctive, so that any copy of it (raw or URI-encoded) in a request is found.
const PASSWORD = 'Zx7\'pw@Leak-Canary-4711"\\';
const parameters = { rabbitmqAdminUsername: 'admin', rabbitmqAdminPassword: PASSWORD };
const NOW = new Date('2025-01-01T00:00:00Z');
// Pre-signing is local computation with static credentials: no request leaves the process.
const presigner = () =>
  new S3Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' } });

describe('pre-signed upload URLs for the Azure load generator', () => {
  test(
    "one PUT URL per raw file, on the bucket's regional host, " +
      'at the key check-repetition reads, expiring when asked',
    async () => {
      const urls = await presignRawUploads(presigner(), 'raw-bucket', 'run-1', item, 510);
      const prefix = `/runs/run-1/raw/${item.rawKey.replace(/\.json$/, '')}`;
      expect(Object.keys(urls)).toEqual(['stdout.txt', 'perftest.csv', 'broker-metrics.jsonl']);
      for (const [file, text] of Object.entries(urls)) {
        const url = new URL(text);
        expect(url.protocol).toBe('https:');
        expect(url.host).toBe('raw-bucket.s3.eu-west-1.amazonaws.com');
        expect(url.pathname).toBe(`${prefix}/${file}`);
        expect(url.searchParams.get('X-Amz-Expires')).toBe('510');
        expect(url.searchParams.get('X-Amz-Credential')).toMatch(/^AKIAEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request$/);
        expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
      }
    },
  );

  test(
    'a repetition with a fault also gets one for the lost-message ' +
      "verifier's output, at the key check-repetition reads",
    async () => {
      const urls = await presignRawUploads(presigner(), 'raw-bucket', 'run-1', item, 510, [
        ...RAW_FILES,
        ...FAULT_RAW_FILES,
      ]);
      expect(Object.keys(urls)).toEqual(['stdout.txt', 'perftest.csv', 'broker-metrics.jsonl', 'verifier.txt']);
      expect(new URL(urls['verifier.txt']!).pathname).toBe(
        `/runs/run-1/raw/${item.rawKey.replace(/\.json$/, '')}/verifier.txt`,
      );
    },
  );
});

describe('Azure repetitions through VM Run Command against a fake ARM endpoint', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  const s3Mock = mockClient(S3Client);
  beforeEach(async () => {
    ({ arm, clients } = await startFakeArm({ operationPolls: 2 }));
    await launchResourceGroup(clients, fakeClusterConfig(), 'run-1', cluster, NOW);
  });
  afterEach(async () => {
    s3Mock.reset();
    await arm.stop();
  });

  const event = {
    runId: 'run-1',
    plan: schedule.plan,
    item,
    launch: { clusterId: cluster.clusterId },
    readiness: { outputs },
  };

  test(
    "start runs PerfTest on the load generator VM of the run's resource group as a managed Run Command, " +
      'the pre-signed upload URLs only in its protected parameters, and records redacted arguments',
    async () => {
      const started = await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW);
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
      const script = properties.source.script;
      expect(script).toContain(`perf-test '--uri' 'amqp://'"$AMQP_CREDENTIALS"'@10.20.1.4:5672' `);
      expect(script).toContain('printf \'%s\\n\' "$RMQBENCH_UPLOAD_URL_STDOUT_TXT" | rmqbench-upload stdout.txt -');
      expect(script).toContain('printf \'%s\\n\' "$RMQBENCH_UPLOAD_URL_PERFTEST_CSV" | rmqbench-upload perftest.csv -');
      expect(script).not.toMatch(/X-Amz-|amazonaws\.com/);
      const urls = Object.fromEntries(properties.protectedParameters.map(({ name, value }) => [name, value]));
      expect(Object.keys(urls)).toEqual([
        'RMQBENCH_UPLOAD_URL_STDOUT_TXT',
        'RMQBENCH_UPLOAD_URL_PERFTEST_CSV',
        'RMQBENCH_UPLOAD_URL_BROKER_METRICS_JSONL',
      ]);
      expect(urls.RMQBENCH_UPLOAD_URL_STDOUT_TXT).toMatch(
        new RegExp(
          String.raw`^https:\/\/raw-bucket\.s3\.eu-west-1\.amazonaws\.com\/runs\/run-1\/raw\/[^?]+` +
            String.raw`\/stdout\.txt\?[^ ]*X-Amz-Expires=810`,
        ),
      );
      expect(urls.RMQBENCH_UPLOAD_URL_PERFTEST_CSV).toMatch(/^https:\/\/raw-bucket[^?]+\/perftest\.csv\?/);
      expect({ asyncExecution: properties.asyncExecution, timeoutInSeconds: properties.timeoutInSeconds }).toEqual({
        asyncExecution: true,
        timeoutInSeconds: 510,
      });
      // What anyone with read access to the VM sees afterwards: the resource without its protected parameters.
      const read = await clients.compute.virtualMachineRunCommands.getByVirtualMachine(
        cluster.clusterId,
        'rmqbench-loadgen',
        runCommandName(item),
      );
      expect(JSON.stringify(read)).not.toContain('X-Amz-Signature');
      expect(started).toMatchObject({
        resourceGroup: cluster.clusterId,
        vmName: 'rmqbench-loadgen',
        runCommandName: runCommandName(item),
        startedAt: NOW.toISOString(),
        doneBy: '2025-01-01T00:08:30.000Z',
      });
      expect(JSON.stringify(started.perfTestArgs)).not.toContain('Leak-Canary');
      expect(started.perfTestArgs.join(' ')).toContain('10.20.1.4:5672');
    },
  );

  test('run command names are unique per repetition and valid resource names, even for long scenario ids', () => {
    const long = (repetition: number) => ({ ...item, rawKey: `${'x'.repeat(90)}.rep-${repetition}.json` });
    expect(runCommandName(long(1))).not.toBe(runCommandName(long(2)));
    for (const name of [runCommandName(item), runCommandName(long(1))])
      expect(name).toMatch(/^rmqbench-[A-Za-z0-9-]{1,48}-[0-9a-f]{8}$/);
  });

  test(
    'the Run Command script carries no password: only the vault, ' +
      'secret and identity names it reads the password with',
    async () => {
      await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW);
      const sent = arm.requests.filter((request) => request.method === 'PUT' && request.path.includes('/runCommands/'));
      expect(sent).toHaveLength(1);
      const script = (sent[0]!.body as { properties: { source: { script: string } } }).properties.source.script;
      for (const request of arm.requests) {
        const body = JSON.stringify(request.body ?? null);
        for (const form of [PASSWORD, encodeURIComponent(PASSWORD), 'Leak-Canary'])
          expect({ path: request.path, leaked: body.includes(form) }).toEqual({ path: request.path, leaked: false });
      }
      expect(script).toContain("KEY_VAULT_NAME='kvrmqbenchtest42'");
      expect(script).toContain("ADMIN_PASSWORD_SECRET_NAME='rabbitmq-admin-password'");
      expect(script).toContain(
        'https://kvrmqbenchtest42.vault.azure.net/secrets/rabbitmq-admin-password?api-version=7.4',
      );
      expect(script).toContain(
        'http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01' +
          '&resource=https%3A%2F%2Fvault.azure.net&client_id=00000000-1111-2222-3333-444444444444',
      );
      expect(script.split('\n')[0]).toBe('set +x');
      expect(script).not.toMatch(/echo[^\n]*\$\{?(ADMIN_PASSWORD|AMQP_CREDENTIALS|TOKEN)\b/);
    },
  );

  test('start refuses a deployment without the Key Vault outputs, naming the missing ones', async () => {
    const { keyVaultName: _vault, loadGeneratorIdentityClientId: _client, ...older } = outputs;
    await expect(
      startAzureRepetition(
        clients,
        presigner(),
        'raw-bucket',
        parameters,
        { ...event, readiness: { outputs: older } },
        NOW,
      ),
    ).rejects.toThrow('lacks the output(s) keyVaultName, loadGeneratorIdentityClientId');
    await expect(
      startAzureRepetition(
        clients,
        presigner(),
        'raw-bucket',
        parameters,
        { ...event, readiness: { outputs: { ...outputs, keyVaultName: "kv'; reboot" } } },
        NOW,
      ),
    ).rejects.toThrow('output keyVaultName must be a Key Vault name');
    expect(arm.requests.filter((request) => request.path.includes('/runCommands/'))).toHaveLength(0);
  });

  test("check polls the Run Command's instance view until done, then ingests what the script uploaded", async () => {
    const started = JSON.parse(
      JSON.stringify(await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW)),
    ) as Awaited<ReturnType<typeof startAzureRepetition>>;
    const prefix = `runs/run-1/raw/${item.rawKey.replace(/\.json$/, '')}`;
    s3Mock
      .on(GetObjectCommand, { Key: `${prefix}/stdout.txt` })
      .resolves({ Body: { transformToString: async () => 'summary' } as never });
    s3Mock
      .on(GetObjectCommand, { Key: `${prefix}/perftest.csv` })
      .resolves({ Body: { transformToString: async () => 'time,sent\n' } as never });
    s3Mock.on(PutObjectCommand).resolves({});
    const checkEvent = { runId: 'run-1', plan: schedule.plan, item, started };
    const states: unknown[] = [];
    for (let poll = 0; poll < 5; poll++) {
      const state = await checkAzureRepetition(
        clients,
        new S3Client({}),
        'raw-bucket',
        checkEvent,
        new Date('2025-01-01T00:01:00Z'),
      );
      states.push(state);
      if (state.done) break;
    }
    expect(states.at(-1)).toEqual({ done: true, rawKey: item.rawKey });
    expect(states.length).toBeGreaterThan(1);
    const put = s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input;
    expect(put.Key).toBe(`runs/run-1/ingest/${item.rawKey}`);
    expect(JSON.parse(put.Body as string)).toMatchObject({
      stdout: 'summary',
      csv: 'time,sent\n',
      perfTestArgs: started.perfTestArgs,
    });
    expect(JSON.parse(put.Body as string)).not.toHaveProperty('targetError');
  });

  test('a Run Command still running after the deadline is an error; missing outputs are refused by name', async () => {
    const started = await startAzureRepetition(clients, presigner(), 'raw-bucket', parameters, event, NOW);
    await expect(
      checkAzureRepetition(
        clients,
        new S3Client({}),
        'raw-bucket',
        { runId: 'run-1', plan: schedule.plan, item, started },
        new Date('2025-01-01T00:09:00Z'),
      ),
    ).rejects.toThrow(`PerfTest for ${item.scenarioId} #1 did not finish by 2025-01-01T00:08:30.000Z`);
    await expect(
      startAzureRepetition(
        clients,
        presigner(),
        'raw-bucket',
        parameters,
        { ...event, readiness: { outputs: {} } },
        NOW,
      ),
    ).rejects.toThrow(
      'lacks the output(s) amqpEndpoint, managementUrl, loadGeneratorResourceId, ' +
        'keyVaultName, adminPasswordSecretName, loadGeneratorIdentityClientId',
    );
  });
});

describe(
  'the Azure Run Command script, run by bash with ' + 'stand-ins for IMDS, Key Vault, PerfTest and the uploader',
  () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'rmqbench-runcommand-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    const stub = (name: string, body: string) => {
      writeFileSync(join(dir, name), `#!/usr/bin/env bash\n${body}\n`);
      chmodSync(join(dir, name), 0o755);
    };
    /**
     * Runs the script as Run Command would (bash), with `vaultAnswers` the secret-read stand-in's exit codes in turn
     * (22: HTTP error, e.g. 403 before the role propagates).
     */
    const allUploadUrls = {
      RMQBENCH_UPLOAD_URL_STDOUT_TXT: 'https://example.test/stdout',
      RMQBENCH_UPLOAD_URL_PERFTEST_CSV: 'https://example.test/csv',
      RMQBENCH_UPLOAD_URL_BROKER_METRICS_JSONL: 'https://example.test/broker',
    };
    /**
     * `perfTestAfterSleeps`: PerfTest's stand-in is on PATH only after that many `sleep` calls (the boot still
     * installing it when the Run Command starts; Infinity: never), and PATH then holds no other directory where a real
     * one could be.
     */
    const run = (
      vaultAnswers: number[],
      uploadUrls: Record<string, string> = allUploadUrls,
      perfTestAfterSleeps?: number,
    ) => {
      const { script } = azurePerfTestScript({
        plan: schedule.plan,
        item,
        endpoint: outputs.amqpEndpoint,
        managementUrl: outputs.managementUrl,
        username: 'admin',
        password: {
          keyVaultName: outputs.keyVaultName,
          secretName: outputs.adminPasswordSecretName,
          identityClientId: outputs.loadGeneratorIdentityClientId,
        },
      });
      writeFileSync(join(dir, 'vault-answers'), vaultAnswers.join('\n') + '\n');
      // The secret's exact bytes (quotes and backslashes included), for the Key Vault stand-in.
      writeFileSync(join(dir, 'password'), PASSWORD);
      stub(
        'curl',
        `case "$*" in
  *169.254.169.254*client_id=${outputs.loadGeneratorIdentityClientId}*) ` +
          `[[ " $* " == *" -H Metadata:true "* ]] || exit 22; echo '{"access_token":"token-1"}' ;;
  *https://${outputs.keyVaultName}.vault.azure.net/secrets/${outputs.adminPasswordSecretName}?api-version=7.4*)
    config=$(cat); [[ "$config" == *'Authorization: Bearer token-1'* ]] || exit 22
    answer=$(head -n 1 "${dir}/vault-answers"); sed -i 1d "${dir}/vault-answers"; [ "$answer" = 0 ] || exit "$answer"
    jq -n --rawfile value "${dir}/password" '{value: $value}' ;;
  *http://10.20.1.4:15672/api/*) echo "$* | $(cat)" >> "${dir}/management-calls"
    # The queues an earlier repetition left: one of the benchmark's, one that is not.
    [[ "$*" == *' -X GET '*'/api/queues/%2F?columns=name' ]] && echo '[{"name":"perf-test-1"},{"name":"orders"}]'
    true ;;
  *) exit 7 ;;
esac`,
      );
      // PerfTest's stand-in lasts until the sampler's first round (3 requests) is in, at most 10 s: an instant PerfTest
      // would stop the background sampler before it ever ran (the real one runs for the workload's duration).
      stub(
        perfTestAfterSleeps === undefined ? 'perf-test' : 'perf-test.staged',
        `printf '%s\\n' "$@" > "${dir}/perf-test-args"; echo 'perf-test summary'
for _ in $(seq 200); do [ "$(grep -c -- '--max-time' "${dir}/management-calls" ` +
          `2> /dev/null)" -ge 3 ] && break; /usr/bin/sleep 0.05; done`,
      );
      stub('rmqbench-upload', `echo "upload $1 $2 $(cat)" >> "${dir}/uploads"`);
      // Every call is counted; the staged PerfTest stand-in goes onto PATH at the perfTestAfterSleeps-th one.
      stub(
        'sleep',
        `echo "$*" >> "${dir}/sleeps"; [ "$(wc -l < "${dir}/sleeps")" ` +
          `= "${perfTestAfterSleeps ?? 0}" ] && mv "${dir}/perf-test.staged" "${dir}/perf-test"; true`,
      );
      const path = perfTestAfterSleeps === undefined ? `${dir}:${process.env.PATH ?? ''}` : `${dir}:/usr/bin:/bin`;
      // The protected parameters reach the script as environment variables, as the Linux VM agent hands them over.
      // stdin not a socket, so that bash does not source ~/.bashrc (bash(1), INVOCATION), which may reorder PATH.
      return spawnSync('bash', ['-c', script], {
        encoding: 'utf8',
        env: { ...process.env, ...uploadUrls, PATH: path },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    };

    test(
      "the password read from Key Vault reaches only curl's stdin, " +
        'to create a per-run benchmark user PerfTest connects as, deleted on exit',
      () => {
        const result = run([22, 0]);
        expect(result.status).toBe(0);
        const uri = readFileSync(join(dir, 'perf-test-args'), 'utf8')
          .split('\n')
          .find((arg) => arg.startsWith('amqp://'))!;
        const match = /^amqp:\/\/(rmqbench-run-[0-9a-f]{12}):([0-9a-f]{48})@10\.20\.1\.4:5672$/.exec(uri);
        expect(match).not.toBeNull();
        const allCalls = readFileSync(join(dir, 'management-calls'), 'utf8').trim().split('\n');
        // The administrator's calls (-sSf); the broker sampler's are checked below.
        const calls = allCalls.filter((call) => call.startsWith('-sSf '));
        // The stand-in prints its arguments, then what it read on stdin: the curl config line, quotes and backslashes
        // escaped.
        const config = `user = "admin:${PASSWORD.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
        expect(calls.map((call) => call.replace(/ -H content-type: application\/json/, ''))).toEqual([
          `-sSf -K - -X PUT --data-binary @user.json http://10.20.1.4:15672/api/users/${match![1]} | ${config}`,
          `-sSf -K - -X PUT --data-binary @permissions.json ` +
            `http://10.20.1.4:15672/api/permissions/%2F/${match![1]} | ${config}`,
          // The benchmark queues an earlier repetition left are deleted before PerfTest starts; others are not.
          `-sSf -K - -X GET http://10.20.1.4:15672/api/queues/%2F?columns=name | ${config}`,
          `-sSf -K - -X DELETE http://10.20.1.4:15672/api/queues/%2F/perf-test-1 | ${config}`,
          `-sSf -K - -X DELETE http://10.20.1.4:15672/api/users/${match![1]} | ${config}`,
        ]);
        expect(calls.every((call) => !call.split(' | ')[0]!.includes('Leak-Canary'))).toBe(true);
        expect(`${result.stdout}${result.stderr}`).not.toContain('Leak-Canary');
        // Each URL reaches the uploader on stdin, never in its arguments.
        expect(readFileSync(join(dir, 'uploads'), 'utf8')).toBe(
          'upload stdout.txt - https://example.test/stdout\nupload perftest.csv - https://example.test/csv\n' +
            'upload broker-metrics.jsonl - https://example.test/broker\n',
        );
        // The broker sampler read the management API as the benchmark user, its credentials on stdin only.
        const samplerCalls = allCalls.filter((call) => !call.startsWith('-sSf '));
        expect(samplerCalls.length).toBeGreaterThanOrEqual(3);
        for (const call of samplerCalls)
          expect(call).toMatch(
            new RegExp(
              `^-sS --max-time 2 -K - http://10\\.20\\.1\\.4:15672/api/\\S+ \\| user = "${match![1]}:${match![2]}"$`,
            ),
          );
      },
    );

    test(
      'a secret that stays unreadable fails the Run Command, ' +
        'naming the vault and the secret, without running PerfTest',
      () => {
        const result = run(Array.from({ length: 30 }, () => 22));
        expect(result.status).toBe(1);
        expect(result.stderr).toContain(
          'could not read secret rabbitmq-admin-password from Key Vault kvrmqbenchtest42',
        );
        expect(() => readFileSync(join(dir, 'perf-test-args'))).toThrow();
      },
    );

    test(
      'a Run Command that starts while the boot is still installing ' +
        'PerfTest waits for it, then reads the secret and runs it',
      () => {
        const result = run([0], allUploadUrls, 3);
        expect(result.status).toBe(0);
        expect(readFileSync(join(dir, 'sleeps'), 'utf8').split('\n').slice(0, 3)).toEqual(['5', '5', '5']);
        // The secret was read (its one answer consumed) and PerfTest ran.
        expect(readFileSync(join(dir, 'vault-answers'), 'utf8')).toBe('');
        expect(readFileSync(join(dir, 'perf-test-args'), 'utf8')).toContain('amqp://');
      },
    );

    test(
      `a load generator whose boot never installs PerfTest fails the Run Command ` +
        `after ${PERF_TEST_READY_WAIT_SECONDS} s, naming the boot log, before any secret is read`,
      () => {
        const result = run([0], allUploadUrls, Infinity);
        expect(result.status).toBe(1);
        expect(result.stderr).toContain(
          `the load generator has not installed PerfTest (perf-test not on PATH ` +
            `after ${PERF_TEST_READY_WAIT_SECONDS} s): see its boot log, /var/log/cloud-init-output.log`,
        );
        expect(readFileSync(join(dir, 'sleeps'), 'utf8').trim().split('\n')).toHaveLength(
          PERF_TEST_READY_WAIT_SECONDS / 5,
        );
        expect(readFileSync(join(dir, 'vault-answers'), 'utf8')).toBe('0\n');
        expect(() => readFileSync(join(dir, 'management-calls'))).toThrow();
      },
    );

    test('the wait for PerfTest takes whole seconds only', () => {
      expect(perfTestReadyLines(10, 5)[0]).toContain('$(seq 1 2)');
      expect(() => perfTestReadyLines(2, 5)).toThrow('waitSeconds >= pollSeconds >= 1');
      expect(() => perfTestReadyLines(10, 0)).toThrow('waitSeconds >= pollSeconds >= 1');
    });

    test('a missing upload URL parameter fails the Run Command before anything runs, naming the parameter', () => {
      const result = run([0], {
        RMQBENCH_UPLOAD_URL_STDOUT_TXT: 'https://example.test/stdout',
        RMQBENCH_UPLOAD_URL_BROKER_METRICS_JSONL: 'https://example.test/broker',
      });
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain(
        'the protected parameter RMQBENCH_UPLOAD_URL_PERFTEST_CSV (pre-signed upload URL of perftest.csv) is missing',
      );
      expect(() => readFileSync(join(dir, 'perf-test-args'))).toThrow();
      expect(() => readFileSync(join(dir, 'management-calls'))).toThrow();
    });
  },
);
