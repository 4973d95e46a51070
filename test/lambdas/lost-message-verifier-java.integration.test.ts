import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloudFailoverResult } from '../../core/cloud-verifier';
import { LOST_MESSAGE_VERIFIER_CLASS, LOST_MESSAGE_VERIFIER_JAVA } from '../../lambdas/start-repetition/lost-message-verifier-java';
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

const SECONDS = 12;
/** Seconds after the verifier began publishing at which the queue's node is killed. */
const KILL_AFTER_SECONDS = 4;

describe('the Java lost-message verifier on a real 3-node cluster', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('java-verifier');
  let cluster: LocalRabbitCluster;
  let perfTestLib: string;
  const source = join(work.path, `${LOST_MESSAGE_VERIFIER_CLASS}.java`);

  beforeAll(async () => {
    perfTestLib = await ensureArtifact(cacheDir(), PERFTEST_ARTIFACT);
    writeFileSync(source, LOST_MESSAGE_VERIFIER_JAVA);
    cluster = await LocalRabbitCluster.start({ nodes: 3, topology: { type: 'quorum' }, workDir: join(work.path, 'cluster'), processes });
  });
  afterEach(async () => {
    await cluster.restartStoppedNodes();
  });
  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  /** Runs the verifier with its queue declared through `first` (so `first` leads it), kills the node leading the queue once publishing began, and returns the stored shape. */
  async function runAndKill(queue: string, first: LocalNode, queueArgument: string) {
    const uris = [first, ...cluster.nodes.filter((node) => node !== first)].map((node) => cluster.amqpUri(node));
    const child = spawn('java', ['-cp', join(perfTestLib, '*'), source, '--queue', queue, '--seconds', String(SECONDS), '--queue-arg', queueArgument], {
      env: { PATH: process.env.PATH, RMQBENCH_VERIFIER_URIS: uris.join('\n') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
    // A new quorum queue's leader reaches the management API a moment after the declare.
    let leaderName: string | undefined;
    for (let tries = 0; leaderName === undefined; tries++) {
      leaderName = await cluster.queueNode(queue).catch((error: unknown) => {
        if (tries >= 50) throw error;
        return undefined;
      });
      if (leaderName === undefined) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await new Promise((resolve) => setTimeout(resolve, KILL_AFTER_SECONDS * 1000));
    const leader = cluster.nodes.find((node) => node.name === leaderName)!;
    const appliedAt = new Date();
    await cluster.killNode(leader);
    const code = await exited;
    const failover = cloudFailoverResult(stdout, { action: 'kill', node: 'leader', nodeName: leaderName, appliedAt: appliedAt.toISOString() });
    return { code, stderr, stdout, leaderName, failover };
  }

  test('quorum queue, leader SIGKILLed: no confirmed message lost, the reconnects counted, the fault placed on the verifier timeline', async () => {
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
    // JVM start and connections come before publishing, so the kill is KILL_AFTER_SECONDS or later on the verifier's clock.
    expect(failover.fault.appliedAtSeconds).toBeGreaterThanOrEqual(KILL_AFTER_SECONDS);
    expect(failover.fault.appliedAtSeconds).toBeLessThan(SECONDS);
    expect(failover.receivedPerSecond.length).toBe(SECONDS);
    expect(failover.unconfirmedAtFault).toBeLessThanOrEqual(200);
  });

  test('classic non-replicated queue on the killed node: confirmed messages are reported lost', async () => {
    const run = await runAndKill('rmqbench-verifier-classic', cluster.nodes[1]!, 'x-queue-type=classic');
    console.log(`java verifier, classic kill-leader: ${run.stdout.trim()} stderr: ${run.stderr.trim()}`);
    expect(run.code).toBe(0);
    expect(run.leaderName).toBe(cluster.nodes[1]!.name);
    expect(run.failover.lostMessages).toBeGreaterThan(0);
    expect(run.failover.confirmed).toBeGreaterThan(run.failover.lostMessages);
  });

  test('no URI in the environment: exit 2 with the reason on stderr and no result line, which the parser names', async () => {
    const child = spawn('java', ['-cp', join(perfTestLib, '*'), source, '--queue', 'q', '--seconds', '1'], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('RMQBENCH_VERIFIER_URIS holds no AMQP URI');
    expect(() => cloudFailoverResult(stdout, { action: 'kill', node: 'leader', nodeName: 'rabbit@x', appliedAt: new Date().toISOString() })).toThrow(/printed no result line/);
  });
});
