import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'amqplib';
import { parsePlanText } from '../../core/plan/plan';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { processTree } from '../../local/process-table';
import { ProcessRegistry } from '../../local/processes';
import { sleep, waitFor } from '../../local/ports';
import { LocalRabbitCluster } from '../../local/rabbitmq-cluster';
import { newRunId, runPlan } from '../../local/run-plan';
import { alivePids, startStore, tempDir } from './helpers';

const connections = ['lb', 'direct', 'leader', 'follower'] as const;
const plan = parsePlanText(
  `
name: integration
repetitions: 1
clusters:
${connections
  .map(
    (connection) =>
      `  - { name: quorum-${connection}, nodes: 3, topology: ` + `{ type: quorum }, connection: ${connection} }`,
  )
  .join('\n')}
workloads:
  - { name: small, producers: 1, consumers: 1, queues: 1, messageSizeBytes: 150, durationSeconds: 5 }
`,
  'integration.yaml',
);

jest.setTimeout(600_000);

describe('local target on a real 3-node RabbitMQ cluster', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('cluster');
  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  test(
    'runs a workload through lb, direct, leader and follower on one ' +
      'reused cluster and reads the results back from DynamoDB Local',
    async () => {
      const { store } = await startStore(processes, work.path);
      const runId = newRunId(plan.name);
      const runDir = join(work.path, 'runs', runId);
      const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
      const events: string[] = [];
      const outcome = await runPlan({
        plan,
        target,
        store,
        runDir,
        runId,
        onEvent: (event) => events.push(event.type),
      });

      expect(outcome.error).toBeUndefined();
      expect(outcome.status).toBe('SUCCEEDED');
      // One cluster served all four connection modes.
      expect(events.filter((type) => type === 'cluster-starting')).toHaveLength(1);

      const stored = await store.getRun(runId);
      expect(stored?.run.status).toBe('SUCCEEDED');
      expect(stored?.run.environment.rabbitmqVersion).toMatch(/^\d+\.\d+\.\d+$/);
      expect(stored?.run.environment.java).toMatch(/version "\d+/);
      expect(stored?.repetitions.map((rep) => rep.scenarioId).sort()).toEqual(
        connections.map((c) => `quorum-${c}/small`).sort(),
      );
      for (const rep of stored!.repetitions) {
        expect(rep.status).toBe('SUCCEEDED');
        expect(rep.result!.summary.receiveRateAvg).toBeGreaterThan(100);
        expect(rep.result!.summary.consumerLatency!.p99).toBeGreaterThan(0);
        const samples = await store.getSamples(runId, rep.scenarioId, 1);
        expect(samples.length).toBeGreaterThanOrEqual(4);
      }

      // leader and follower connect to different nodes, and the load balancer is not a node.
      const portOf = (connection: string) => {
        const rep = stored!.repetitions.find((r) => r.scenarioId === `quorum-${connection}/small`)!;
        return rep.perfTestArgs[rep.perfTestArgs.indexOf('--uri') + 1]!.replace(/.*:(\d+)$/, '$1');
      };
      expect(portOf('leader')).not.toBe(portOf('follower'));
      expect(portOf('leader')).toBe(portOf('direct'));
      expect(new Set(connections.map(portOf)).size).toBe(3);
      expect(stored!.repetitions.find((r) => r.scenarioId === 'quorum-leader/small')!.perfTestArgs).toContain(
        '--predeclared',
      );

      // Writing the same result again stores it once.
      const before = await store.getRun(runId);
      for (const record of outcome.records) await store.putRepetition(record);
      expect((await store.getRun(runId))!.repetitions).toHaveLength(before!.repetitions.length);
      expect(await store.getSamples(runId, 'quorum-lb/small', 1)).toHaveLength(
        (await store.getSamples(runId, 'quorum-lb/small', 1)).length,
      );

      // Teardown stopped every RabbitMQ node, epmd and HAProxy; only DynamoDB Local is left.
      expect(processes.running.map((p) => p.name)).toEqual(['dynamodb-local']);
    },
  );

  test('the generated broker configuration forms a cluster and applies the "N+1" mirroring topology', async () => {
    const cluster = await LocalRabbitCluster.start({
      nodes: 3,
      topology: { type: 'mirrored', mirrorTo: 2 },
      workDir: join(work.path, 'mirrored'),
      processes,
    });
    try {
      const nodes = await cluster.api<{ name: string; running: boolean }[]>('GET', '/api/nodes');
      expect(nodes.filter((node) => node.running)).toHaveLength(3);
      // Each node booted from the cluster's trimmed plugins folder (local/plugins-dir.ts) and runs the management
      // plugin from it.
      const pluginsDir = join(work.path, 'mirrored', 'plugins');
      for (const node of cluster.nodes) {
        const environment = readFileSync(`/proc/${node.process!.pid!}/environ`, 'utf8').split('\0');
        expect(environment).toContain(`RABBITMQ_PLUGINS_DIR=${pluginsDir}`);
      }
      for (const node of cluster.nodes) {
        await expect(cluster.api('GET', '/api/overview', undefined, node)).resolves.toEqual(
          expect.objectContaining({ node: node.name }),
        );
      }
      expect(readdirSync(pluginsDir)).toEqual(expect.arrayContaining([expect.stringMatching(/^rabbit-\d/)]));
      // Every node loaded its modules in one batch before it booted (local/node-boot-eval.ts), and the first node
      // booted at once as the seed while the others joined it (localFormation in local/rabbitmq-cluster.ts).
      for (const node of cluster.nodes) {
        expect(readFileSync(node.stdoutFile, 'utf8')).toMatch(
          /rmqbench: preloaded \d+ modules of \d+ applications .*: ok/,
        );
      }
      const gate = /rmqbench: waited \d+ ms for the seed node \(127\.0\.0\.1:\d+\): ok/;
      expect(cluster.nodes.map((node) => gate.test(readFileSync(node.stdoutFile, 'utf8')))).toEqual([
        false,
        true,
        true,
      ]);
      // The preload took turns: the seed announced its own, and the others waited for it.
      const turns = cluster.nodes.map((node) => {
        const stdout = readFileSync(node.stdoutFile, 'utf8');
        return [
          /rmqbench: announced the preload: ok/.test(stdout),
          /rmqbench: waited \d+ ms for the seed node to preload: ok/.test(stdout),
        ];
      });
      expect(turns).toEqual([
        [true, false],
        [false, true],
        [false, true],
      ]);
      const seedLog = /Discovered no peer nodes to cluster with/;
      expect(cluster.nodes.map((node) => seedLog.test(readFileSync(node.logFile, 'utf8')))).toEqual([
        true,
        false,
        false,
      ]);
      // "localhost" resolves from the nodes' inet configuration: no native lookup, so no inet_gethost port program,
      // whose two processes outlived a stopped node as zombies that only PID 1 reaps (writeNodeFiles).
      const programs = cluster.nodes.flatMap((node) => processTree(node.process!.pid!).map((entry) => entry.comm));
      expect(programs.filter((comm) => comm === 'beam.smp')).toHaveLength(3);
      expect(programs).not.toContain('inet_gethost');
      const policies = await cluster.listPolicies();
      expect(policies).toEqual([
        expect.objectContaining({
          name: 'rmqbench-mirroring',
          definition: expect.objectContaining({ 'ha-mode': 'exactly', 'ha-params': 2 }),
        }),
      ]);
      const leaders = await cluster.declareQueues(['perf-test-1'], true, cluster.nodes[1]!);
      expect(leaders.get('perf-test-1')).toBe(cluster.nodes[1]!.name);
      // One master plus exactly one mirror.
      const mirrors = await waitForMirrors(cluster, 'perf-test-1');
      expect(mirrors).toHaveLength(1);
      expect(mirrors[0]).not.toBe(cluster.nodes[1]!.name);
      // A connection left open, as HAProxy leaves a finished publisher's, is closed by the broker before the queues
      // are deleted (closeLeftoverConnections).
      const leftover = await connect(cluster.amqpUri(cluster.nodes[2]!));
      const closedByBroker = new Promise<string>((resolve) =>
        leftover.once('close', (e: unknown) => resolve(String(e))),
      );
      leftover.on('error', () => undefined);
      // The management API lists a new connection at its next statistics interval (5 s by default).
      await waitFor(
        async () => ((await cluster.api<unknown[]>('GET', '/api/connections')).length > 0 ? true : undefined),
        15_000,
        () => 'the connection was never listed',
        250,
      );
      await cluster.deleteBenchmarkQueues();
      expect(await cluster.api<unknown[]>('GET', '/api/queues/%2F')).toEqual([]);
      const notClosed = sleep(5_000).then(() => 'still open 5 s after deleteBenchmarkQueues');
      expect(await Promise.race([closedByBroker, notClosed])).toMatch(/CONNECTION_FORCED/);
    } finally {
      await cluster.stop();
    }
    expect(alivePids(processes).length).toBeLessThanOrEqual(1); // DynamoDB Local from the first test
  });
});

async function waitForMirrors(cluster: LocalRabbitCluster, queue: string): Promise<string[]> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const info = await cluster.api<{ slave_nodes?: string[] }>('GET', `/api/queues/%2F/${queue}`);
    if (info.slave_nodes && info.slave_nodes.length > 0) return info.slave_nodes;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return [];
}
