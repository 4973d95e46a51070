import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { queueArgumentsFor } from '../../core/broker/broker-config';
import { cloudFailoverResult, VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import { VERIFIER_QUEUE } from '../../core/failover/failover';
import { benchmarkUserLines } from '../../lambdas/start-repetition/logic';
import {
  LOST_MESSAGE_VERIFIER_CLASS,
  LOST_MESSAGE_VERIFIER_JAVA,
} from '../../lambdas/start-repetition/lost-message-verifier-java';
import { startVerifierLines, waitVerifierLines } from '../../lambdas/start-repetition/verifier-lines';
import { PERFTEST_ARTIFACT, ensureArtifact } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { LocalRabbitCluster, type LocalNode } from '../../local/rabbitmq-cluster';
import { tempDir } from '../local/helpers';

/**
 * The load generator's Java lost-message verifier, run as the cloud scripts run it (`java -cp '<PerfTest's jars>/*'
 * LostMessageVerifier.java`, the URIs in its environment), against a real local 3-node cluster whose node leading the
 * verifier's queue is SIGKILLed mid-run; its output goes through the same core function IngestRepetition uses.
 * Short and rate-limited (12 s at 200 msg/s): other engineers' tests share the machine's two cores.
 */
jest.setTimeout(300_000);

const SECONDS = 16;
/**
 * Seconds after the verifier began publishing at which the queue's node is killed (or as soon as its leader is known,
 * if later).
 */
const KILL_AFTER_SECONDS = 5;

describe('the Java lost-message verifier on a real 3-node cluster', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('java-verifier');
  let cluster: LocalRabbitCluster;
  let perfTestLib: string;
  const source = join(work.path, `${LOST_MESSAGE_VERIFIER_CLASS}.java`);

  beforeAll(async () => {
    perfTestLib = await ensureArtifact(cacheDir(), PERFTEST_ARTIFACT);
    writeFileSync(source, LOST_MESSAGE_VERIFIER_JAVA);
    cluster = await LocalRabbitCluster.start({
      nodes: 3,
      topology: { type: 'quorum' },
      workDir: join(work.path, 'cluster'),
      processes,
    });
  });
  afterEach(async () => {
    await cluster.restartStoppedNodes();
  });
  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  /**
   * The node leading `queue`, as the management API reports it: a new quorum queue's leader shows there only at its
   * leader's next Ra tick (up to 5 s here, more on a loaded machine).
   */
  async function leaderOf(queue: string): Promise<string> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const leader = await cluster.queueNode(queue).catch(() => undefined);
      if (leader !== undefined) return leader;
      if (Date.now() > deadline) throw new Error(`queue ${queue} showed no leader within 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }

  /** Waits until `at` (epoch ms), then SIGKILLs the node named `nodeName`; returns when it was applied. */
  async function killAt(at: number, nodeName: string): Promise<Date> {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
    const appliedAt = new Date();
    await cluster.killNode(cluster.nodes.find((node) => node.name === nodeName)!);
    return appliedAt;
  }

  /**
   * Runs the verifier with its queue declared through `first` (so `first` leads it), kills the node leading the queue
   * once publishing began, and returns the stored shape.
   */
  async function runAndKill(queue: string, first: LocalNode, queueArgument: string, seconds = SECONDS) {
    const uris = [first, ...cluster.nodes.filter((node) => node !== first)].map((node) => cluster.amqpUri(node));
    const child = spawn(
      'java',
      [
        '-cp',
        join(perfTestLib, '*'),
        source,
        '--queue',
        queue,
        '--seconds',
        String(seconds),
        '--queue-arg',
        queueArgument,
      ],
      {
        env: { PATH: process.env.PATH, RMQBENCH_VERIFIER_URIS: uris.join('\n') },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const publishing = new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('publishing to')) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await Promise.race([publishing, exited]);
    const publishingAt = Date.now();
    const leaderName = await leaderOf(queue);
    const appliedAt = await killAt(publishingAt + KILL_AFTER_SECONDS * 1000, leaderName);
    const code = await exited;
    const failover = cloudFailoverResult(stdout, {
      action: 'kill',
      node: 'leader',
      nodeName: leaderName,
      appliedAt: appliedAt.toISOString(),
    });
    return { code, stderr, stdout, leaderName, failover };
  }

  test(
    'quorum queue, leader SIGKILLed: no confirmed message lost, ' +
      'the reconnects counted, the fault placed on the verifier timeline',
    async () => {
      const run = await runAndKill('rmqbench-verifier-quorum', cluster.nodes[0]!, 'x-queue-type=quorum');
      console.log(`java verifier, quorum kill-leader: ${run.stdout.trim()} stderr: ${run.stderr.trim()}`);
      expect(run.code).toBe(0);
      expect(run.leaderName).toBe(cluster.nodes[0]!.name);
      const failover = run.failover;
      expect(failover.lostMessages).toBe(0);
      expect(failover.confirmed).toBeGreaterThan(500);
      expect(failover.consumed).toBeGreaterThanOrEqual(failover.confirmed);
      expect(failover.published).toBeGreaterThanOrEqual(failover.confirmed);
      // Both clients were on the killed node (its URI is first): each recovered once at least.
      expect(failover.reconnects).toBeGreaterThanOrEqual(2);
      // JVM start and connections come before publishing, so the kill is KILL_AFTER_SECONDS or later on the verifier's
      // clock.
      expect(failover.fault.appliedAtSeconds).toBeGreaterThanOrEqual(KILL_AFTER_SECONDS);
      expect(failover.fault.appliedAtSeconds).toBeLessThan(SECONDS);
      expect(failover.receivedPerSecond.length).toBe(SECONDS);
      expect(failover.unconfirmedAtFault).toBeLessThanOrEqual(200);
    },
  );

  test('classic non-replicated queue on the killed node: confirmed messages are reported lost', async () => {
    // Shorter: what the kill takes with the node is lost whenever it dies, and the run goes on past it.
    const run = await runAndKill('rmqbench-verifier-classic', cluster.nodes[1]!, 'x-queue-type=classic', 9);
    console.log(`java verifier, classic kill-leader: ${run.stdout.trim()} stderr: ${run.stderr.trim()}`);
    expect(run.code).toBe(0);
    expect(run.leaderName).toBe(cluster.nodes[1]!.name);
    expect(run.failover.lostMessages).toBeGreaterThan(0);
    expect(run.failover.confirmed).toBeGreaterThan(run.failover.lostMessages);
  });

  test(
    "the run scripts' verifier lines (as the benchmark user, through one endpoint, PerfTest's wrapper " +
      'for the class path), the fault on the leader of rmqbench-verifier, then what CheckRepetition records',
    async () => {
      const dir = tempDir('verifier-lines');
      try {
        // PerfTest's wrapper as the boot scripts write it, pointing at this machine's PerfTest jars.
        const wrapper = join(dir.path, 'perf-test');
        writeFileSync(
          wrapper,
          `#!/bin/sh\nexec java -cp '${join(perfTestLib, '*')}' com.rabbitmq.perf.PerfTest "$@"\n`,
          {
            mode: 0o755,
          },
        );
        // One endpoint, as in the cloud; here it is the node that is killed (in the cloud, the load balancer in front
        // of all of them), so nothing is published after the kill: what counts is that nothing confirmed was lost.
        const first = cluster.nodes[2]!;
        const script = [
          'set -euo pipefail',
          `WORK=${dir.path}/work && mkdir -p "$WORK" && cd "$WORK"`,
          `MANAGEMENT_URL='${cluster.managementUrl()}'`,
          'ADMIN_CURL_CONFIG=\'user = "guest:guest"\'',
          ...benchmarkUserLines(),
          ...startVerifierLines({
            perfTestCommand: wrapper,
            amqpHost: `127.0.0.1:${first.amqpPort}`,
            seconds: SECONDS,
            queueArguments: queueArgumentsFor({ type: 'quorum' }, 3),
          }),
          // PerfTest's place in the script: as long as the verifier publishes.
          `sleep ${SECONDS}`,
          ...waitVerifierLines(),
          `cp ${VERIFIER_OUTPUT_FILE} ${dir.path}/`,
        ].join('\n');
        const child = spawn('bash', ['-c', script], {
          env: { PATH: process.env.PATH },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
        // The verifier's queue is declared through `first`, which leads it; the fault step picks that leader.
        const outputFile = join(dir.path, 'work', VERIFIER_OUTPUT_FILE);
        const waitUntil = Date.now() + 120_000;
        while (
          !(existsSync(outputFile) && readFileSync(outputFile, 'utf8').includes('publishing to')) &&
          Date.now() < waitUntil
        )
          await new Promise((resolve) => setTimeout(resolve, 200));
        const publishingAt = Date.now();
        const leaderName = await leaderOf(VERIFIER_QUEUE);
        expect(leaderName).toBe(first.name);
        const appliedAt = await killAt(publishingAt + KILL_AFTER_SECONDS * 1000, leaderName);
        expect(await exited).toBe(0);
        expect(stderr).toBe('');
        const output = readFileSync(join(dir.path, VERIFIER_OUTPUT_FILE), 'utf8');
        console.log(`verifier lines, quorum kill-leader: ${output.trim()}`);
        const failover = cloudFailoverResult(output, {
          action: 'kill',
          node: 'leader',
          nodeName: first.name,
          appliedAt: appliedAt.toISOString(),
        });
        expect(failover.lostMessages).toBe(0);
        expect(failover.confirmed).toBeGreaterThan(500);
        // The benchmark user is gone once the script exits.
        const users = await cluster.api<{ name: string }[]>('GET', '/api/users', undefined, cluster.nodes[0]);
        expect(users.map((user) => user.name)).toEqual(['guest']);
      } finally {
        dir.cleanup();
      }
    },
  );

  test(
    'no URI in the environment: exit 2 with the ' + 'reason on stderr and no result line, which the parser names',
    async () => {
      const child = spawn('java', ['-cp', join(perfTestLib, '*'), source, '--queue', 'q', '--seconds', '1'], {
        env: { PATH: process.env.PATH },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code).toBe(2);
      expect(stderr).toContain('RMQBENCH_VERIFIER_URIS holds no AMQP URI');
      expect(() =>
        cloudFailoverResult(stdout, {
          action: 'kill',
          node: 'leader',
          nodeName: 'rabbit@x',
          appliedAt: new Date().toISOString(),
        }),
      ).toThrow(/printed no result line/);
    },
  );
});
