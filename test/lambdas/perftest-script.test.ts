import { execFileSync, spawnSync } from 'node:child_process';
import { AWS_CLI_ENVIRONMENT } from '../../core/cloud/aws-cli-environment';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PERF_TEST_COMMAND, PERF_TEST_HOME, loadGeneratorBootCommands } from '../../cdk/user-data/load-generator';
import { generateBrokerConfig } from '../../core/broker/broker-config';
import { BROKER_SAMPLE_PATHS, BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import { VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import { VERIFIER_QUEUE } from '../../core/failover/failover';
import { SAMPLER_GRACE_SECONDS, startBrokerSamplerLines } from '../../lambdas/start-repetition/broker-sampler';
import {
  azurePerfTestScript,
  BENCHMARK_USER_TAGS,
  PERF_TEST_READY_WAIT_SECONDS,
  perfTestScript,
  RAW_FILES,
  rawPrefix,
  uploadUrlVariable,
} from '../../lambdas/start-repetition/logic';
import {
  LOST_MESSAGE_VERIFIER_CLASS,
  LOST_MESSAGE_VERIFIER_JAVA,
} from '../../lambdas/start-repetition/lost-message-verifier-java';
import { startVerifierLines, VERIFIER_GRACE_SECONDS } from '../../lambdas/start-repetition/verifier-lines';
import { repetitionGenerators } from '../../lambdas/start-repetition/generators';
import { SSM_COMMAND_SIZE_LIMIT_BYTES, startPerfTest } from '../../lambdas/shared/aws-cluster';
import { buildSchedule } from '../../state-machines/schedule';

const plan = (topology: Record<string, unknown>) => ({
  name: 'p',
  clusters: [{ name: 'c', nodes: 3, instanceType: 'c5.xlarge', topology }],
  workloads: [
    { name: 'w', durationSeconds: 10, ...(topology.type === 'stream' ? { autoAck: false, prefetch: 100 } : {}) },
  ],
});
const item = (target: 'aws' | 'azure', topology: Record<string, unknown>) =>
  buildSchedule(
    {
      plan: {
        ...plan(topology),
        clusters: [{ ...plan(topology).clusters[0]!, instanceType: target === 'aws' ? 'c5.xlarge' : 'F4s_v2' }],
      },
      target,
      runId: 'r',
    },
    'exec',
  ).clusters[0]!.repetitions[0]!;
const awsScript = (topology: Record<string, unknown>) =>
  perfTestScript({
    plan: plan(topology),
    runId: 'r',
    item: item('aws', topology),
    endpoint: 'nlb:5672',
    managementUrl: 'http://nlb:15672',
    secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:admin',
    bucket: 'b',
  });
const azureScript = (topology: Record<string, unknown>) =>
  azurePerfTestScript({
    plan: { ...plan(topology), clusters: [{ ...plan(topology).clusters[0]!, instanceType: 'F4s_v2' }] },
    item: item('azure', topology),
    endpoint: '10.20.1.10:5672',
    managementUrl: 'http://10.20.1.10:15672',
    username: 'rmqbench-admin',
    password: { keyVaultName: 'kv', secretName: 'admin', identityClientId: 'id' },
  });

describe('the PerfTest run scripts of the cloud targets', () => {
  test.each([
    [{ type: 'quorum' }, ['x-queue-type=quorum', 'x-quorum-initial-group-size=3']],
    [{ type: 'quorum', replicationFactor: 2 }, ['x-queue-type=quorum', 'x-quorum-initial-group-size=2']],
    [{ type: 'stream' }, ['x-queue-type=stream', 'x-initial-cluster-size=3']],
  ])(
    "a %j plan declares its queues with the generator's arguments on every target (not classic queues)",
    (topology, expected) => {
      const generated = generateBrokerConfig({
        topology: topology as never,
        rabbitmqVersion: '4.1.4',
        peerDiscovery: { backend: 'aws' },
        nodeCount: 3,
      }).queueArguments;
      expect(Object.entries(generated).map(([key, value]) => `${key}=${value}`)).toEqual(expected);
      for (const { redactedArgs } of [awsScript(topology), azureScript(topology)]) {
        const queueArgs = redactedArgs.flatMap((arg, index) =>
          arg === '--queue-args' || arg === '-qa' ? [redactedArgs[index + 1]!] : [],
        );
        expect(queueArgs.join(',').split(',')).toEqual(expect.arrayContaining(expected));
      }
    },
  );

  test(
    'the AWS script runs the wrapper the boot script installs, ' +
      'which runs the jars where the boot script puts them',
    () => {
      const { script } = awsScript({ type: 'quorum' });
      expect(script).toContain(`\n${PERF_TEST_COMMAND} `);
      expect(script).not.toMatch(/\/opt\/perftest\b/);
      const boot = loadGeneratorBootCommands({ resultsBucketName: 'b', resultsPrefix: 'runs/' }).join('\n');
      expect(boot).toContain(`install -d ${PERF_TEST_HOME}/lib`);
      expect(boot).toContain(
        `cat > ${PERF_TEST_COMMAND} <<'RMQBENCH_WRAPPER'\n#!/bin/sh\n` +
          `exec java -cp '${PERF_TEST_HOME}/lib/*' com.rabbitmq.perf.PerfTest "$@"`,
      );
    },
  );

  test(
    'the AWS script never puts the admin credentials in a process argument: ' +
      'curl reads them on stdin, PerfTest runs as a per-run user deleted on exit',
    () => {
      const { script } = awsScript({ type: 'quorum' });
      expect(script).toContain('printf \'%s\\n\' "$ADMIN_CURL_CONFIG" | curl -sSf -K -');
      expect(script).toMatch(/^trap 'admin_api DELETE "users\/\$BENCH_USER"/m);
      expect(script).toContain('amqp://$BENCH_USER:$BENCH_PASS@nlb:5672');
      expect(script).not.toMatch(/\$USER:\$PASS|\$ADMIN_CURL_CONFIG"? [^|]/);
      expect(loadGeneratorBootCommands({ resultsBucketName: 'b', resultsPrefix: 'runs/' })).toContain(
        'mount -o remount,hidepid=2 /proc',
      );
    },
  );

  test('the AWS script waits for the boot to have installed PerfTest before the broker user, verifier or run', () => {
    const { script } = awsScript({ type: 'quorum' });
    const wait = script.indexOf(`command -v ${PERF_TEST_COMMAND} >/dev/null 2>&1 && break`);
    expect(wait).toBeGreaterThan(script.indexOf('ADMIN_CURL_CONFIG='));
    expect(wait).toBeLessThan(script.indexOf('BENCH_USER='));
    expect(wait).toBeLessThan(script.indexOf(`\n${PERF_TEST_COMMAND} `));
    expect(script).toContain(`(${PERF_TEST_COMMAND} not there after ${PERF_TEST_READY_WAIT_SECONDS} s)`);
  });

  test("an unreadable admin secret stops the AWS script first, with the CLI's error and its meaning", () => {
    const { script } = awsScript({ type: 'quorum' });
    // The script's own lines run by bash against a stand-in `aws` that refuses, as the CLI does on AccessDenied.
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-secret-'));
    try {
      writeFileSync(
        join(dir, 'aws'),
        '#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n' +
          'echo "An error occurred (AccessDeniedException) when calling the GetSecretValue operation: ' +
          'User: arn:aws:sts::1:assumed-role/LoadGeneratorRole/i-1 is not authorized to perform: ' +
          'secretsmanager:GetSecretValue" >&2\nexit 254\n',
        { mode: 0o755 },
      );
      const run = spawnSync('/bin/bash', ['-c', script], {
        encoding: 'utf8',
        env: { PATH: `${dir}:/usr/bin:/bin`, HOME: dir, TMPDIR: dir },
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/is not authorized to perform: secretsmanager:GetSecretValue\n/);
      expect(run.stderr).toContain(
        'rmqbench: the load generator could not read the admin secret ' +
          'arn:aws:secretsmanager:eu-west-1:1:secret:admin with its instance role ' +
          '(it needs secretsmanager:GetSecretValue on that secret); PerfTest did not start',
      );
      expect(run.stderr).not.toContain('Traceback');
      // Its working folder went with it (mktemp under TMPDIR, which is the test's folder).
      expect(readdirSync(dir).filter((name) => name.startsWith('tmp.'))).toEqual([]);
      // Nothing ran after the read: no user created, no upload.
      expect(readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n')).toEqual([
        'secretsmanager get-secret-value --secret-id arn:aws:secretsmanager:eu-west-1:1:secret:admin ' +
          '--query SecretString --output text',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(
    'a failed PerfTest fails the script with its status after ' +
      'the upload, its output tail on stderr: nothing hides it',
    () => {
      for (const { script } of [awsScript({ type: 'quorum' }), azureScript({ type: 'quorum' })]) {
        expect(script).not.toContain('|| echo "exit');
        const lines = script.split('\n');
        const upload = lines.findIndex(
          (line) => line.includes('s3 cp stdout.txt') || line.includes('rmqbench-upload stdout.txt'),
        );
        const exit = lines.indexOf('  exit "$PERF_TEST_STATUS"');
        expect(upload).toBeGreaterThan(0);
        expect(exit).toBeGreaterThan(upload);
        // The credential is masked through awk's environment, never its arguments.
        expect(script).not.toMatch(/awk -v/);
      }
    },
  );
});

describe('the management API sampler in the run scripts', () => {
  test.each([
    ['aws', () => awsScript({ type: 'quorum' }).script, /^\/usr\/local\/bin\/perf-test /m],
    ['azure', () => azureScript({ type: 'quorum' }).script, /^perf-test /m],
  ])(
    '%s: starts in the background before PerfTest, is stopped and ' +
      'awaited after it, before any upload; bounded by the duration + %s s',
    (_target, script, perfTest) => {
      const lines = script().split('\n');
      const started = lines.indexOf('sample_broker & SAMPLER_PID=$!');
      const perfTestLine = lines.findIndex((line) => perfTest.test(line));
      const stopped = lines.indexOf('touch sampler.stop');
      const firstUpload = lines.findIndex((line) => /s3 cp|rmqbench-upload/.test(line));
      expect(started).toBeGreaterThan(0);
      expect(perfTestLine).toBeGreaterThan(started);
      expect(stopped).toBeGreaterThan(perfTestLine);
      expect(lines[stopped + 1]).toBe('wait "$SAMPLER_PID" || true');
      expect(firstUpload).toBeGreaterThan(stopped);
      // The workload's 10 s + SAMPLER_GRACE_SECONDS: an orphaned sampler stops by itself.
      expect(script()).toContain(`local stop_at=$(( $(date +%s) + ${10 + SAMPLER_GRACE_SECONDS} ))`);
    },
  );

  test(
    'the sampler reads as the per-run benchmark user, ' +
      "now tagged monitoring, with its credentials on curl's stdin only",
    () => {
      for (const { script } of [awsScript({ type: 'quorum' }), azureScript({ type: 'quorum' })]) {
        expect(BENCHMARK_USER_TAGS).toBe('monitoring');
        expect(script).toContain(`printf '{"password":"%s","tags":"monitoring"}' "$BENCH_PASS" > user.json`);
        const lines = script.split('\n');
        const get = lines.indexOf('sample_get() {');
        expect(lines[get + 1]).toBe(
          `  printf 'user = "%s:%s"\\n' "$BENCH_USER" "$BENCH_PASS" | ` +
            `curl -sS --max-time 2 -K - "$MANAGEMENT_URL$1" 2> /dev/null | tr -d '\\r\\n'`,
        );
        // Each path is asked once, and once more on a new connection when the first request got no answer.
        const requests = lines.filter((line) => line.startsWith('    body='));
        expect(
          requests.map(
            (line) =>
              /^ {4}body=\$\(sample_get '([^']+)'\); \[ -n "\$body" \] \|\| body=\$\(sample_get '\1'\); /.exec(
                line,
              )?.[1],
          ),
        ).toEqual(Object.values(BROKER_SAMPLE_PATHS));
      }
    },
  );

  test('every AWS CLI call of the script reads the instance credentials patiently: the settings come first', () => {
    const lines = awsScript({ type: 'quorum' }).script.split('\n');
    const settings = lines.indexOf(AWS_CLI_ENVIRONMENT);
    expect(settings).toBeGreaterThanOrEqual(0);
    expect(lines.findIndex((line) => /\baws (s3|secretsmanager) /.test(line))).toBeGreaterThan(settings);
  });

  test("the sampler's file is uploaded with the raw files, and a failed upload of it does not fail the script", () => {
    expect(RAW_FILES).toContain(BROKER_SAMPLES_FILE);
    expect(awsScript({ type: 'quorum' }).script).toContain(`aws s3 cp ${BROKER_SAMPLES_FILE} 's3://b/runs/r/raw/`);
    expect(awsScript({ type: 'quorum' }).script).toMatch(
      new RegExp(
        `aws s3 cp ${BROKER_SAMPLES_FILE} '[^']+' \\|\\| echo 'rmqbench: could not upload ${BROKER_SAMPLES_FILE}' >&2$`,
        'm',
      ),
    );
    expect(azureScript({ type: 'quorum' }).script).toContain(
      `| rmqbench-upload ${BROKER_SAMPLES_FILE} - || echo 'rmqbench: could not upload ${BROKER_SAMPLES_FILE}' >&2`,
    );
  });

  test("the sampler's bound must be a positive whole number of seconds", () => {
    expect(() => startBrokerSamplerLines(0)).toThrow(/maxSeconds must be a positive integer, got 0/);
    expect(() => startBrokerSamplerLines(1.5)).toThrow(/got 1.5/);
  });
});

describe('the lost-message verifier in the run scripts (scenarios with a fault only)', () => {
  const fault = { action: 'kill', node: 'leader', atSeconds: 5, healAtSeconds: 8 };
  const withFault = (target: 'aws' | 'azure') => {
    const faultPlan = (topology: Record<string, unknown>) => ({
      ...plan(topology),
      // 60 s: azure refuses a leader fault with less than 45 s after atSeconds (core/plan/target-rules.ts).
      workloads: [{ ...plan(topology).workloads[0]!, durationSeconds: 60, fault }],
    });
    const topology = { type: 'quorum' };
    const instanceType = target === 'aws' ? 'c5.xlarge' : 'F4s_v2';
    const scheduled = faultPlan(topology);
    const planned = { ...scheduled, clusters: [{ ...scheduled.clusters[0]!, instanceType }] };
    const faultItem = buildSchedule({ plan: planned, target, runId: 'r' }, 'exec').clusters[0]!.repetitions[0]!;
    return target === 'aws'
      ? perfTestScript({
          plan: planned,
          runId: 'r',
          item: faultItem,
          endpoint: 'nlb:5672',
          managementUrl: 'http://nlb:15672',
          secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:admin',
          bucket: 'b',
        }).script
      : azurePerfTestScript({
          plan: planned,
          item: faultItem,
          endpoint: '10.20.1.10:5672',
          managementUrl: 'http://10.20.1.10:15672',
          username: 'rmqbench-admin',
          password: { keyVaultName: 'kv', secretName: 'admin', identityClientId: 'id' },
        }).script;
  };

  test(
    "the largest script (with the verifier) stays far below SendCommand's 64 KB " +
      'document limit, and one over it is refused before anything is sent',
    async () => {
      expect(Buffer.byteLength(withFault('aws'))).toBeLessThan(SSM_COMMAND_SIZE_LIMIT_BYTES / 2);
      expect(Buffer.byteLength(withFault('azure'))).toBeLessThan(SSM_COMMAND_SIZE_LIMIT_BYTES / 2);
      let sent = 0;
      const ssm = { send: async () => ++sent } as unknown as Parameters<typeof startPerfTest>[0];
      await expect(startPerfTest(ssm, 'i-1', 'x'.repeat(SSM_COMMAND_SIZE_LIMIT_BYTES), 60)).rejects.toThrow(
        /run script is 65536 bytes, too close to SendCommand's 64 KB document limit/,
      );
      expect(sent).toBe(0);
    },
  );

  test('no fault, no verifier: nothing of it in either script', () => {
    for (const { script } of [awsScript({ type: 'quorum' }), azureScript({ type: 'quorum' })]) {
      expect(script).not.toContain(LOST_MESSAGE_VERIFIER_CLASS);
      expect(script).not.toContain(VERIFIER_OUTPUT_FILE);
    }
  });

  test.each([
    ['aws', 'nlb:5672', /^\/usr\/local\/bin\/perf-test /m],
    ['azure', '10.20.1.10:5672', /^perf-test /m],
  ] as const)(
    '%s: started after the benchmark user exists and before PerfTest, ' +
      'with the URI in its environment only; awaited after PerfTest, before the uploads',
    (target, host, perfTest) => {
      const script = withFault(target);
      const lines = script.split('\n');
      const userCreated = lines.findIndex((line) => line.startsWith('admin_api PUT "permissions/'));
      const started = lines.findIndex((line) =>
        line.includes(`java -cp "$VERIFIER_CLASSPATH" ${LOST_MESSAGE_VERIFIER_CLASS}.java`),
      );
      const perfTestLine = lines.findIndex((line) => perfTest.test(line));
      const waited = lines.findIndex((line) => line.includes('wait "$VERIFIER_PID"'));
      const firstUpload = lines.findIndex((line) => /s3 cp|rmqbench-upload/.test(line));
      expect(userCreated).toBeGreaterThan(0);
      expect(started).toBeGreaterThan(userCreated);
      expect(perfTestLine).toBeGreaterThan(started);
      expect(waited).toBeGreaterThan(perfTestLine);
      expect(firstUpload).toBeGreaterThan(waited);
      expect(lines[started]).toBe(
        `  RMQBENCH_VERIFIER_URIS="amqp://$BENCH_USER:$BENCH_PASS@${host}" ` +
          `timeout ${60 + VERIFIER_GRACE_SECONDS} ` +
          `java -cp "$VERIFIER_CLASSPATH" ${LOST_MESSAGE_VERIFIER_CLASS}.java ` +
          `--queue 'rmqbench-verifier' --seconds 60 ` +
          `--queue-arg 'x-queue-type=quorum' --queue-arg 'x-quorum-initial-group-size=3' ` +
          `> ${VERIFIER_OUTPUT_FILE} 2>&1 & VERIFIER_PID=$!`,
      );
      // The verifier's queue is the one the fault step finds the leader of.
      expect(VERIFIER_QUEUE).toBe('rmqbench-verifier');
    },
  );

  test('its output is uploaded beside the raw files, and a failed upload does not fail the script', () => {
    expect(withFault('aws')).toMatch(
      new RegExp(
        `^aws s3 cp ${VERIFIER_OUTPUT_FILE} 's3://b/runs/r/raw/[^']+/${VERIFIER_OUTPUT_FILE}' \\|\\| ` +
          `echo 'rmqbench: could not upload ${VERIFIER_OUTPUT_FILE}' >&2$`,
        'm',
      ),
    );
    const azure = withFault('azure');
    expect(azure).toContain(
      `| rmqbench-upload ${VERIFIER_OUTPUT_FILE} - || echo 'rmqbench: could not upload ${VERIFIER_OUTPUT_FILE}' >&2`,
    );
    // Its pre-signed URL is required only where the verifier runs.
    expect(azure).toContain(`: "\${${uploadUrlVariable(VERIFIER_OUTPUT_FILE)}:?`);
    expect(azureScript({ type: 'quorum' }).script).not.toContain(uploadUrlVariable(VERIFIER_OUTPUT_FILE));
  });

  test(
    'the source in the script decodes to the verifier, ' +
      "and the class path comes from either cloud's PerfTest wrapper",
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-verifier-lines-'));
      try {
        const lines = withFault('aws').split('\n');
        const decode = lines.find((line) =>
          line.includes(`| base64 -d | gunzip > ${LOST_MESSAGE_VERIFIER_CLASS}.java`),
        )!;
        const wrapperLine = lines.find((line) => line.startsWith('VERIFIER_WRAPPER='))!;
        const classpath = lines.find((line) => line.startsWith('VERIFIER_CLASSPATH='))!;
        // Each script looks the wrapper up as it runs PerfTest: by its path on AWS, on PATH on Azure.
        expect(wrapperLine).toBe(`VERIFIER_WRAPPER=$(command -v '${PERF_TEST_COMMAND}') || VERIFIER_WRAPPER=''`);
        expect(withFault('azure')).toContain("\nVERIFIER_WRAPPER=$(command -v 'perf-test') || VERIFIER_WRAPPER=''\n");
        // The wrappers as the boot scripts write them: cdk/user-data/load-generator.ts (AWS),
        // bicep/cloud-init/rmqbench-loadgen-setup.sh (Azure, $home expanded).
        const wrappers = {
          aws: `#!/bin/sh\nexec java -cp '${PERF_TEST_HOME}/lib/*' com.rabbitmq.perf.PerfTest "$@"\n`,
          azure:
            `#!/bin/sh\nexec java \${PERF_TEST_JAVA_OPTS:-} -cp ` +
            `'/opt/perf-test/2.22.1/lib/*' com.rabbitmq.perf.PerfTest "$@"\n`,
        };
        expect(loadGeneratorBootCommands({ resultsBucketName: 'b', resultsPrefix: 'runs/' }).join('\n')).toContain(
          wrappers.aws,
        );
        expect(readFileSync(join(__dirname, '../../bicep/cloud-init/rmqbench-loadgen-setup.sh'), 'utf8')).toContain(
          `exec java \\\${PERF_TEST_JAVA_OPTS:-} -cp '$home/lib/*' com.rabbitmq.perf.PerfTest`,
        );
        const found: Record<string, string> = {};
        for (const [cloud, wrapper] of Object.entries(wrappers)) {
          // Executable, as the boot scripts make it (command -v finds executables only).
          writeFileSync(join(dir, 'perf-test'), wrapper, { mode: 0o755 });
          const script = [
            decode,
            wrapperLine.replace(`'${PERF_TEST_COMMAND}'`, `'${join(dir, 'perf-test')}'`),
            classpath,
            'printf "%s" "$VERIFIER_CLASSPATH"',
          ].join('\n');
          found[cloud] = execFileSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir, encoding: 'utf8' });
          expect(readFileSync(join(dir, `${LOST_MESSAGE_VERIFIER_CLASS}.java`), 'utf8')).toBe(
            LOST_MESSAGE_VERIFIER_JAVA,
          );
        }
        expect(found).toEqual({ aws: '/opt/perf-test/lib/*', azure: '/opt/perf-test/2.22.1/lib/*' });
        // No wrapper where the script looks: an empty class path (the verifier then records why it did not run), never
        // a failed script.
        const missing = [
          wrapperLine.replace(`'${PERF_TEST_COMMAND}'`, `'${join(dir, 'absent')}'`),
          classpath,
          'printf "[%s]" "$VERIFIER_CLASSPATH"',
        ].join('\n');
        expect(execFileSync('bash', ['-euo', 'pipefail', '-c', missing], { cwd: dir, encoding: 'utf8' })).toBe('[]');
        // gzip and base64 keep the script well under the source's size.
        expect(decode.length).toBeLessThan(LOST_MESSAGE_VERIFIER_JAVA.length / 2);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test('bad inputs are refused by name', () => {
    expect(() =>
      startVerifierLines({ perfTestCommand: PERF_TEST_COMMAND, amqpHost: 'nlb:5672', seconds: 0, queueArguments: {} }),
    ).toThrow(/the verifier's seconds must be a positive integer, got 0/);
    expect(() =>
      startVerifierLines({
        perfTestCommand: PERF_TEST_COMMAND,
        amqpHost: 'nlb:5672; rm -rf /',
        seconds: 5,
        queueArguments: {},
      }),
    ).toThrow(/the verifier's AMQP host must be host\[:port\], got "nlb:5672; rm -rf \/"/);
  });
});

describe('the run script of one of several load generators (issue 27)', () => {
  const severalPlan = {
    name: 'lg',
    clusters: [{ name: 'q', nodes: 3, instanceType: 'c5.xlarge', topology: { type: 'quorum' }, loadGenerators: 2 }],
    workloads: [{ name: 'w', producers: 2, consumers: 2, queues: 2, durationSeconds: 5 }],
  };
  const lgItem = buildSchedule({ plan: severalPlan, target: 'aws', runId: 'run-lg' }, 'exec').clusters[0]!
    .repetitions[0]!;
  const generators = repetitionGenerators(severalPlan, lgItem, 1_735_689_620_000)!;
  const scriptOf = (index: number) =>
    perfTestScript({
      plan: severalPlan,
      runId: 'run-lg',
      item: lgItem,
      endpoint: 'nlb:5672',
      managementUrl: 'http://nlb:15672',
      secretArn: 'arn:secret',
      bucket: 'raw',
      generator: generators.runs[index]!,
    });

  test('each runs its share after the shared start and uploads under generator-<index>/; only 0 samples', () => {
    const prefix = `s3://raw/${rawPrefix('run-lg', lgItem)}`;
    const [first, second] = [scriptOf(0), scriptOf(1)];
    expect(first.redactedArgs).toEqual(expect.arrayContaining(['--queue', 'perf-test-1']));
    expect(second.redactedArgs).toEqual(expect.arrayContaining(['--queue', 'perf-test-2']));
    for (const [index, { script }] of [first, second].entries()) {
      expect(script).toContain('WAIT_MS=$(( 1735689620000 - $(date +%s%3N) ))');
      expect(script).toContain(`'${prefix}/generator-${index}/stdout.txt'`);
      expect(script).toContain(`'${prefix}/generator-${index}/started-at.txt'`);
    }
    expect(first.script).toContain(`'${prefix}/broker-metrics.jsonl'`);
    expect(second.script).not.toContain('broker-metrics.jsonl');
  });
});
