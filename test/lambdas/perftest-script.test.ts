import { PERF_TEST_COMMAND, PERF_TEST_HOME, loadGeneratorBootCommands } from '../../cdk/user-data/load-generator';
import { generateBrokerConfig } from '../../core/broker-config';
import { azurePerfTestScript, perfTestScript } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';

const plan = (topology: Record<string, unknown>) => ({ name: 'p', clusters: [{ name: 'c', nodes: 3, instanceType: 'c5.xlarge', topology }], workloads: [{ name: 'w', durationSeconds: 10, ...(topology.type === 'stream' ? { autoAck: false, prefetch: 100 } : {}) }] });
const item = (target: 'aws' | 'azure', topology: Record<string, unknown>) =>
  buildSchedule({ plan: { ...plan(topology), clusters: [{ ...plan(topology).clusters[0]!, instanceType: target === 'aws' ? 'c5.xlarge' : 'F4s_v2' }] }, target, runId: 'r' }, 'exec').clusters[0]!.repetitions[0]!;
const awsScript = (topology: Record<string, unknown>) => perfTestScript({ plan: plan(topology), runId: 'r', item: item('aws', topology), endpoint: 'nlb:5672', managementUrl: 'http://nlb:15672', secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:admin', bucket: 'b' });
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
  ])('a %j plan declares its queues with the generator\'s arguments on every target (not classic queues)', (topology, expected) => {
    const generated = generateBrokerConfig({ topology: topology as never, rabbitmqVersion: '4.1.4', peerDiscovery: { backend: 'aws' }, nodeCount: 3 }).queueArguments;
    expect(Object.entries(generated).map(([key, value]) => `${key}=${value}`)).toEqual(expected);
    for (const { redactedArgs } of [awsScript(topology), azureScript(topology)]) {
      const queueArgs = redactedArgs.flatMap((arg, index) => (arg === '--queue-args' || arg === '-qa' ? [redactedArgs[index + 1]!] : []));
      expect(queueArgs.join(',').split(',')).toEqual(expect.arrayContaining(expected));
    }
  });

  test('the AWS script runs the wrapper the boot script installs, which runs the jars where the boot script puts them', () => {
    const { script } = awsScript({ type: 'quorum' });
    expect(script).toContain(`\n${PERF_TEST_COMMAND} `);
    expect(script).not.toMatch(/\/opt\/perftest\b/);
    const boot = loadGeneratorBootCommands({ resultsBucketName: 'b', resultsPrefix: 'runs/' }).join('\n');
    expect(boot).toContain(`install -d ${PERF_TEST_HOME}/lib`);
    expect(boot).toContain(`cat > ${PERF_TEST_COMMAND} <<'RMQBENCH_WRAPPER'\n#!/bin/sh\nexec java -cp '${PERF_TEST_HOME}/lib/*' com.rabbitmq.perf.PerfTest "$@"`);
  });

  test('the AWS script never puts the admin credentials in a process argument: curl reads them on stdin, PerfTest runs as a per-run user deleted on exit', () => {
    const { script } = awsScript({ type: 'quorum' });
    expect(script).toContain('printf \'%s\\n\' "$ADMIN_CURL_CONFIG" | curl -sSf -K -');
    expect(script).toMatch(/^trap 'admin_api DELETE "users\/\$BENCH_USER"/m);
    expect(script).toContain('amqp://$BENCH_USER:$BENCH_PASS@nlb:5672');
    expect(script).not.toMatch(/\$USER:\$PASS|\$ADMIN_CURL_CONFIG"? [^|]/);
    expect(loadGeneratorBootCommands({ resultsBucketName: 'b', resultsPrefix: 'runs/' })).toContain('mount -o remount,hidepid=2 /proc');
  });

  test('a failed PerfTest fails the script with its status after the upload, its output tail on stderr: nothing hides it', () => {
    for (const { script } of [awsScript({ type: 'quorum' }), azureScript({ type: 'quorum' })]) {
      expect(script).not.toContain('|| echo "exit');
      const lines = script.split('\n');
      const upload = lines.findIndex((line) => line.includes('s3 cp stdout.txt') || line.includes('rmqbench-upload stdout.txt'));
      const exit = lines.indexOf('  exit "$PERF_TEST_STATUS"');
      expect(upload).toBeGreaterThan(0);
      expect(exit).toBeGreaterThan(upload);
      // The credential is masked through awk's environment, never its arguments.
      expect(script).not.toMatch(/awk -v/);
    }
  });
});
