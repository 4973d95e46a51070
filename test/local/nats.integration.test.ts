jest.setTimeout(180_000);

import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NATS_SERVER_VERSION } from '../../core/nats/nats-versions';
import { parsePlanText } from '../../core/plan/plan';
import { renderMarkdownReport } from '../../core/report/report';
import { ingestRunDir } from '../../local/ingest-run-dir';
import { LocalTarget } from '../../local/local-target';
import { LocalNatsCluster } from '../../local/nats-cluster';
import { ensureNatsBinaries, type NatsBinaries } from '../../local/nats-binaries';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import type { RunEvent } from '../../local/run-plan';
import { newRunId } from '../../local/run-plan';
import { runPlanWorkflow } from '../../local/workflow-runner';
import type { ResultsStore } from '../../store/results-store';
import { alivePids, startStore, tempDir } from './helpers';

// Two workloads on a 3-node JetStream cluster with sync_interval always: a rate for 3 s (pull consumer, explicit
// acks, R3 file stream), and a fixed amount of work flat out (2 producers, 2 push consumers acknowledging every
// 100th message, an R3 memory stream).
const plan = parsePlanText(
  `
name: nats-local
clusters:
  - { name: nats-3, broker: nats, nodes: 3, syncInterval: always }
workloads:
  - { name: steady, messageSizeBytes: 100, publishRateLimit: 2000, durationSeconds: 3 }
  - name: fixed
    producers: 2
    consumers: 2
    messageSizeBytes: 1000
    messageCount: 20000
    durationSeconds: 30
    storage: memory
    consumerMode: push
    ackPolicy: all
`,
  'nats-local.yaml',
);

/** Every jetstream store directory left under `dir`. */
function storeDirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((path) => /(^|\/)jetstream$/.test(path));
}

describe('NATS JetStream on the local target', () => {
  const storeProcesses = new ProcessRegistry();
  const work = tempDir('nats');
  let store: ResultsStore;
  let binaries: NatsBinaries;
  beforeAll(async () => {
    binaries = await ensureNatsBinaries(cacheDir());
    ({ store } = await startStore(storeProcesses, work.path));
  });
  afterAll(async () => {
    await storeProcesses.stopAll();
    work.cleanup();
  });

  test('three nodes become ready with one JetStream meta leader, and stop leaving no process or store', async () => {
    const processes = new ProcessRegistry();
    try {
      const started = Date.now();
      const cluster = await LocalNatsCluster.start({
        nodes: 3,
        workDir: join(work.path, 'three'),
        processes,
        serverBinary: binaries.server,
      });
      expect(Date.now() - started).toBeLessThan(15_000);
      for (const node of cluster.nodes) {
        expect(await cluster.jetStreamEnabled(node)).toBe(true);
        expect(await cluster.metaCluster(node)).toMatchObject({ name: 'rmqbench', cluster_size: 3 });
      }
      expect(cluster.nodes.map((node) => node.name)).toContain(await cluster.metaLeader());
      await cluster.stop();
      for (const node of cluster.nodes) expect(existsSync(node.storeDir)).toBe(false);
      expect(alivePids(processes)).toEqual([]);
    } finally {
      await processes.stopAll();
    }
  });

  test(
    'a run through the workflow definition: receive rates and latency percentiles stored, reported with the broker ' +
      'named, host metrics of each server and the load client, nothing left running',
    async () => {
      const processes = new ProcessRegistry();
      const runId = newRunId(plan.name);
      const runDir = join(work.path, 'runs', runId);
      const events: RunEvent[] = [];
      try {
        const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
        target.preflight(plan);
        const outcome = await runPlanWorkflow({
          plan,
          target,
          store,
          runDir,
          runId,
          onEvent: (event) => events.push(event),
        });
        expect(outcome.records.map((record) => [record.scenarioId, record.status, record.error])).toEqual([
          ['nats-3/steady', 'SUCCEEDED', undefined],
          ['nats-3/fixed', 'SUCCEEDED', undefined],
        ]);
        expect(outcome.status).toBe('SUCCEEDED');
        expect(events.filter((event) => event.type === 'cluster-starting')).toEqual([
          { type: 'cluster-starting', nodes: 3, topology: 'classic', broker: 'nats' },
        ]);
        expect(events.some((event) => event.type === 'progress' && event.progress.sent > 0)).toBe(true);
        expect(processes.running).toEqual([]);
        expect(alivePids(processes)).toEqual([]);
        expect(storeDirs(join(runDir, 'clusters'))).toEqual([]);
        // The servers ran with the cluster's sync interval.
        expect(existsSync(join(runDir, 'clusters', 'cluster-1', 'nats2', 'nats-server.conf'))).toBe(true);

        const stored = (await store.getRun(runId))!;
        expect(stored.run.environment.natsServerVersion).toBe(NATS_SERVER_VERSION);
        const steady = stored.repetitions.find((rep) => rep.scenarioId === 'nats-3/steady')!;
        // 6000 messages at about 2000/s, each with its send time: receive rate and both latencies.
        expect(steady.result!.summary.sendRateAvg).toBeGreaterThan(1000);
        expect(steady.result!.summary.sendRateAvg).toBeLessThan(2500);
        expect(steady.result!.summary.receiveRateAvg).toBeGreaterThan(1000);
        const latency = steady.result!.summary.consumerLatency!;
        expect(latency.min).toBeLessThanOrEqual(latency.median);
        expect(latency.median).toBeLessThanOrEqual(latency.p99);
        expect(steady.result!.summary.confirmLatency!.p99).toBeGreaterThan(0);
        expect(steady.perfTestArgs.join(' ')).toMatch(
          new RegExp(
            '^rmqbench-nats-load -servers (nats://127\\.0\\.0\\.1:\\d+,){2}nats://127\\.0\\.0\\.1:\\d+ ' +
              '-stream rmqbench-steady-[0-9a-f]{6} .* -rate 2000 -duration 3 .* -storage file -replicas 3 ',
          ),
        );
        const samples = await store.getSamples(runId, 'nats-3/steady', 1);
        expect(samples.length).toBeGreaterThanOrEqual(2);
        // Every second that received messages carries their latency (a first second before the consumer's first
        // delivery has none: seen once in CI under load).
        const receiving = samples.filter((sample) => sample.received > 0);
        expect(receiving.length).toBeGreaterThanOrEqual(2);
        for (const sample of receiving) expect(sample.consumerLatency).toBeDefined();
        const fixed = stored.repetitions.find((rep) => rep.scenarioId === 'nats-3/fixed')!;
        expect(fixed.result!.completedInSeconds).toBeGreaterThan(0);
        expect(fixed.perfTestArgs.join(' ')).toMatch(/-messages 10000 .*-consumer-mode push -ack all -storage memory/);
        const metrics = (await store.getMetrics(runId, 'nats-3/steady', 1))!;
        expect(steady.metricsError).toBeUndefined();
        expect([...new Set(metrics.series.map((series) => series.node))].sort()).toEqual([
          'load-generator',
          'nats1',
          'nats2',
          'nats3',
        ]);

        const report = renderMarkdownReport(stored.run, stored.repetitions);
        expect(report).toContain('Brokers: nats-3 NATS JetStream, 3 node(s), sync_interval always.');
        expect(report).toMatch(/\| nats-3\/steady \| 1\/1 \| [\d,]+ ± [\d,]+ \| [\d,]+ ± [\d,]+ \| .* \| [\d.]+ \/ /);
        expect(report).toMatch(/\| nats-3\/fixed \| [\d.]+ ± /);

        expect(readdirSync(join(runDir, 'raw', 'nats-3_steady', 'rep-1')).sort()).toEqual([
          'nats-load.jsonl',
          'nats-load.log',
        ]);
        await expect(ingestRunDir(store, runDir)).resolves.toMatchObject({ stored: 2, status: 'SUCCEEDED' });
      } finally {
        await processes.stopAll();
      }
    },
  );

  test('a server that never becomes ready fails the run with its log tail, and nothing is left', async () => {
    const hanging = join(work.path, 'hanging-nats-server');
    writeFileSync(hanging, '#!/bin/sh\necho "simulated nats-server hang: no routes"\nexec sleep 600\n');
    chmodSync(hanging, 0o755);
    const hangPlan = parsePlanText(
      'name: nats-hang\nclusters: [{ name: n, broker: nats, nodes: 3 }]\n' +
        'workloads: [{ name: w, messageCount: 100 }]\n',
      'hang.yaml',
    );
    const processes = new ProcessRegistry();
    const runId = newRunId(hangPlan.name);
    const runDir = join(work.path, 'runs', runId);
    try {
      const target = new LocalTarget({
        processes,
        runDir,
        cacheDir: cacheDir(),
        clusterStartTimeoutMs: 2000,
        natsServerCommand: hanging,
      });
      const outcome = await runPlanWorkflow({ plan: hangPlan, target, store, runDir, runId, onEvent: () => undefined });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error).toMatch(
        new RegExp(
          'NATS cluster of 3 node\\(s\\) did not become ready within 2 s \\(JetStream enabled on 0; ' +
            'meta leader per node: nats1: none, nats2: none, nats3: none\\); nats1 log tail:[\\s\\S]*' +
            'simulated nats-server hang',
        ),
      );
      expect((await store.getRun(runId))?.run.status).toBe('FAILED');
      expect(processes.running).toEqual([]);
      expect(alivePids(processes)).toEqual([]);
      expect(storeDirs(join(runDir, 'clusters'))).toEqual([]);
    } finally {
      await processes.stopAll();
    }
  });

  test(
    "kill the verifier stream's leader mid-run, heal it: the verifier counts no acknowledged message lost, the " +
      'outage and the recovery are measured, the load dipped with it, and the healed node runs until teardown',
    async () => {
      const faultPlan = parsePlanText(
        'name: nats-failover\nclusters: [{ name: js, broker: nats, nodes: 3 }]\nworkloads:\n' +
          '  - name: failover\n    publishRateLimit: 400\n    durationSeconds: 18\n' +
          '    fault: { action: kill, node: leader, atSeconds: 3, healAtSeconds: 14 }\n',
        'nats-failover.yaml',
      );
      const processes = new ProcessRegistry();
      const runId = newRunId(faultPlan.name);
      const runDir = join(work.path, 'runs', runId);
      const events: RunEvent[] = [];
      try {
        const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
        const outcome = await runPlanWorkflow({
          plan: faultPlan,
          target,
          store,
          runDir,
          runId,
          onEvent: (event) => events.push(event),
        });
        // A failed repetition's own error leads the failure message (the run's says only "no repetition succeeded").
        expect([outcome.status, outcome.error, outcome.records.map((record) => record.error)]).toEqual([
          'SUCCEEDED',
          undefined,
          [undefined],
        ]);
        const faults = events.flatMap((event) => (event.type === 'fault' ? [[event.action, event.nodeName]] : []));
        expect(faults).toEqual([
          ['kill', expect.stringMatching(/^nats[123]$/)],
          ['heal', faults[0]![1]],
        ]);
        const [record] = (await store.getRun(runId))!.repetitions;
        const failover = record!.failover!;
        expect(failover.fault).toMatchObject({ action: 'kill', node: 'leader', nodeName: faults[0]![1] });
        expect(failover.fault.appliedAtSeconds).toBeGreaterThanOrEqual(3);
        expect(failover.fault.healedAtSeconds).toBeGreaterThan(failover.fault.appliedAtSeconds);
        // R3 acknowledges a write once two of three nodes hold it: killing one loses none of them.
        expect(failover.confirmed).toBeGreaterThan(1000);
        expect(failover.lostMessages).toBe(0);
        expect(failover.consumed + (failover.undeliveredMessages ?? 0)).toBeGreaterThanOrEqual(failover.confirmed);
        // A new stream leader takes a Raft election (nats-server's election timeout is 4 to 9 s).
        expect(failover.unavailableSeconds).toBeGreaterThanOrEqual(1);
        expect(failover.recoverySeconds).toBeDefined();
        // The load's stream was led by the same node: its receive rate fell to nothing too.
        const samples = await store.getSamples(runId, 'js/failover', 1);
        expect(samples.some((sample) => sample.time > 3 && sample.received === 0)).toBe(true);
        expect(readdirSync(join(runDir, 'raw', 'js_failover', 'rep-1')).sort()).toEqual([
          'nats-load.jsonl',
          'nats-load.log',
          'nats-verifier.jsonl',
          'nats-verifier.log',
        ]);
        expect(processes.running).toEqual([]);
        expect(alivePids(processes)).toEqual([]);
        expect(storeDirs(join(runDir, 'clusters'))).toEqual([]);
      } finally {
        await processes.stopAll();
      }
    },
  );
});
