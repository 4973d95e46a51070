import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brokerMetricsFromSamples, BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import { startBrokerSamplerLines, stopBrokerSamplerLines } from '../../lambdas/start-repetition/broker-sampler';
import { benchmarkUserLines } from '../../lambdas/start-repetition/logic';
import { ProcessRegistry } from '../../local/processes';
import { LocalRabbitCluster, type LocalNode } from '../../local/rabbitmq-cluster';
import { tempDir } from '../local/helpers';

/**
 * The broker sampler's shell lines, as the cloud run scripts run them on the load generator (bash, set -euo pipefail,
 * the
 * per-run benchmark user created by the same lines through the management API, the sampler in the background while
 * "PerfTest" runs, then stopped), against a real local 3-node cluster; its output is parsed by the same core function
 * IngestRepetition uses. PerfTest itself is replaced by a sleep: the sandboxed load generator test
 * (perftest-script.integration.test.ts) runs the whole script with PerfTest.
 */
jest.setTimeout(300_000);

const execFileAsync = promisify(execFile);
const RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl';

describe('the management API sampler on a real 3-node cluster', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('broker-sampler');
  let cluster: LocalRabbitCluster;

  beforeAll(async () => {
    cluster = await LocalRabbitCluster.start({
      nodes: 3,
      topology: { type: 'quorum' },
      workDir: join(work.path, 'cluster'),
      processes,
    });
  });
  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  /** rabbitmqctl against one local node (its cookie is in the node's HOME, epmd on the cluster's port). */
  const ctl = (node: LocalNode, ...args: string[]) =>
    execFileAsync(RABBITMQCTL, ['-n', node.name, ...args], {
      env: { PATH: process.env.PATH, LANG: 'C.UTF-8', HOME: node.dir, ERL_EPMD_PORT: String(cluster.epmdPort) },
      timeout: 60_000,
    });

  /**
   * The sampler between the benchmark user's creation and its deletion, with `seconds` of "PerfTest"; returns the
   * script's exit, stderr and the sampler's file.
   */
  async function runSampler(seconds: number, managementUrl = cluster.managementUrl()) {
    const dir = tempDir('sampler-run');
    const script = [
      'set -euo pipefail',
      `WORK=${dir.path} && cd "$WORK"`,
      `MANAGEMENT_URL='${managementUrl}'`,
      // The local cluster's administrator (guest, loopback only); in the cloud it comes from Secrets Manager or Key
      // Vault.
      'ADMIN_CURL_CONFIG=\'user = "guest:guest"\'',
      ...benchmarkUserLines(),
      ...startBrokerSamplerLines(seconds + 30),
      `sleep ${seconds}`,
      ...stopBrokerSamplerLines(),
      `cp ${BROKER_SAMPLES_FILE} ${join(work.path, 'last-samples.jsonl')}`,
    ].join('\n');
    try {
      const child = spawn('bash', ['-c', script], {
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: dir.path },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      return { code, stderr, samples: readFileSync(join(work.path, 'last-samples.jsonl'), 'utf8') };
    } finally {
      dir.cleanup();
    }
  }

  test(
    'queue depth on the leader, no memory alarm on any node, at most ' +
      'one line a second, and the benchmark user gone afterwards',
    async () => {
      const leader = cluster.nodes[1]!;
      const leaders = await cluster.declareQueues(['perf-test-1'], true, leader);
      for (let index = 0; index < 25; index++) {
        await cluster.api('POST', '/api/exchanges/%2F/amq.default/publish', {
          properties: { delivery_mode: 2 },
          routing_key: 'perf-test-1',
          payload: `m${index}`,
          payload_encoding: 'string',
        });
      }
      // A queue that is not a benchmark queue does not count.
      await cluster.api('PUT', '/api/queues/%2F/someone-elses', { durable: true, arguments: {} }, cluster.nodes[0]);
      await cluster.api('POST', '/api/exchanges/%2F/amq.default/publish', {
        properties: {},
        routing_key: 'someone-elses',
        payload: 'x',
        payload_encoding: 'string',
      });
      // A quorum queue's count reaches the management API at its leader's Ra tick (quorum_tick_interval, 5 s by
      // default: deps/rabbit/src/rabbit_quorum_queue.erl make_ra_conf, handle_tick -> rabbit_core_metrics:queue_stats):
      // wait for
      // it.
      const deadline = Date.now() + 30_000;
      while ((await cluster.api<{ messages?: number }>('GET', '/api/queues/%2F/perf-test-1')).messages !== 25) {
        if (Date.now() > deadline) throw new Error('perf-test-1 did not show 25 messages within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const startedAt = new Date();
      const run = await runSampler(5);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      const parsed = brokerMetricsFromSamples(run.samples, startedAt);
      expect(parsed.unusable).toBe(0);
      // Once a second at most, on whole seconds from its start (a slow round skips a second, never doubles one): over 5
      // s of "PerfTest" at most 6 lines and never two within one second; how many depends on the machine's load.
      expect(parsed.samples).toBeGreaterThanOrEqual(2);
      expect(parsed.samples).toBeLessThanOrEqual(7);
      const times = parsed.metrics.series[0]!.points.map(([t]) => t);
      for (let index = 1; index < times.length; index++)
        expect(times[index]! - times[index - 1]!).toBeGreaterThanOrEqual(0.9);
      const series = (node: string, metric: string) =>
        parsed.metrics.series
          .find((one) => one.node === node && one.metric === metric)
          ?.points.map(([, value]) => value);
      const leaderName = leaders.get('perf-test-1')!;
      for (const node of cluster.nodes) {
        expect(series(node.name, 'memoryAlarm')).toEqual(Array(parsed.samples).fill(0));
        expect(series(node.name, 'queueDepth')).toEqual(Array(parsed.samples).fill(node.name === leaderName ? 25 : 0));
      }
      const users = await cluster.api<{ name: string }[]>('GET', '/api/users');
      expect(users.map((user) => user.name)).toEqual(['guest']);
      await cluster.api('DELETE', '/api/queues/%2F/someone-elses');
    },
  );

  test('a memory alarm raised on one node shows as 1 on that node only', async () => {
    const alarmed = cluster.nodes[2]!;
    await ctl(alarmed, 'set_vm_memory_high_watermark', '0.000001');
    try {
      const startedAt = new Date();
      const run = await runSampler(3);
      expect(run.code).toBe(0);
      const parsed = brokerMetricsFromSamples(run.samples, startedAt);
      const alarms = (node: string) =>
        parsed.metrics.series
          .find((one) => one.node === node && one.metric === 'memoryAlarm')!
          .points.map(([, value]) => value);
      expect(alarms(alarmed.name)).toContain(1);
      for (const node of cluster.nodes.filter((candidate) => candidate !== alarmed))
        expect(alarms(node.name)).not.toContain(1);
    } finally {
      await ctl(alarmed, 'set_vm_memory_high_watermark', '0.4');
    }
  });

  test(
    'a request that gets no answer is sent once more on a new connection: ' +
      'through a balancer that hands every other connection to a killed node, every sample is whole',
    async () => {
      // Every other GET (the sampler's requests) is closed unanswered, as by a killed node behind the load balancer
      // before its health check takes it out; every other connection reaches the cluster's management API (the
      // benchmark user's PUTs and DELETE go through unharmed).
      const managementPort = Number(new URL(cluster.managementUrl()).port);
      let gets = 0;
      let dropped = 0;
      const open = new Set<Socket>();
      const track = (socket: Socket) => (open.add(socket), socket.on('close', () => open.delete(socket)));
      const balancer = createServer((client) => {
        track(client);
        client.on('error', () => client.destroy());
        client.once('data', (first: Buffer) => {
          if (first.toString('latin1').startsWith('GET ') && gets++ % 2 === 0) {
            dropped++;
            client.destroy();
            return;
          }
          const upstream = track(connect(managementPort, '127.0.0.1'));
          upstream.on('error', () => (client.destroy(), upstream.destroy()));
          upstream.write(first);
          client.pipe(upstream).pipe(client);
        });
      });
      await new Promise<void>((resolve) => balancer.listen(0, '127.0.0.1', resolve));
      const port = (balancer.address() as { port: number }).port;
      try {
        const startedAt = new Date();
        const run = await runSampler(3, `http://127.0.0.1:${port}`);
        expect(run.code).toBe(0);
        const parsed = brokerMetricsFromSamples(run.samples, startedAt);
        expect({ unusable: parsed.unusable, unanswered: parsed.unanswered }).toEqual({ unusable: 0, unanswered: 0 });
        expect(parsed.samples).toBeGreaterThanOrEqual(2);
        // Half the sampler's requests met a dropped connection, and every one of them was asked again.
        expect(dropped).toBeGreaterThanOrEqual(3 * parsed.samples);
      } finally {
        for (const socket of open) socket.destroy();
        await new Promise((resolve) => balancer.close(resolve));
      }
    },
  );

  test(
    'a management API that does not answer leaves null samples, ' + 'never fails the script, and the parser says so',
    async () => {
      // The benchmark user is created through $MANAGEMENT_URL, so only the sampler is pointed at a port nothing listens
      // on.
      const dir = tempDir('sampler-down');
      try {
        const script = [
          'set -euo pipefail',
          `cd ${dir.path}`,
          "MANAGEMENT_URL='http://127.0.0.1:9'",
          'BENCH_USER=u BENCH_PASS=p',
          ...startBrokerSamplerLines(30),
          'sleep 2',
          ...stopBrokerSamplerLines(),
          `cat ${BROKER_SAMPLES_FILE}`,
        ].join('\n');
        const { stdout } = await execFileAsync('bash', ['-c', script], {
          env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
        });
        expect(stdout).toMatch(/^\{"t":\d+\.\d{3},"nodes":null,"alarms":null,"queues":null\}$/m);
        expect(() => brokerMetricsFromSamples(stdout, new Date())).toThrow(
          /holds \d+ unusable lines? \(first: line 1: no answer from \/api\/nodes\?columns=name,running\)/,
        );
      } finally {
        dir.cleanup();
      }
    },
  );
});
