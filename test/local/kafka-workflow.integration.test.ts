jest.setTimeout(600_000);

import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePlanText } from '../../core/plan/plan';
import { renderMarkdownReport } from '../../core/report/report';
import { ingestRunDir } from '../../local/ingest-run-dir';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import type { RunEvent } from '../../local/run-plan';
import { newRunId } from '../../local/run-plan';
import { runPlanWorkflow } from '../../local/workflow-runner';
import type { ResultsStore } from '../../store/results-store';
import { alivePids, startStore, tempDir } from './helpers';

// One neutral workload (no broker-only field) runs on both brokers: a rate for 6 s (a transfer that spans several of
// the consumer's 1 s rows even on a loaded machine), which Kafka's
// ProducerPerformance turns into publishRateLimit × durationSeconds records.
const sideBySide = parsePlanText(
  `
name: kafka-and-rabbitmq
clusters:
  - { name: kafka-3, broker: kafka, nodes: 3 }
  - { name: rabbit-1, nodes: 1, connection: direct }
workloads:
  - { name: steady, messageSizeBytes: 100, publishRateLimit: 2000, durationSeconds: 6 }
`,
  'side-by-side.yaml',
);

describe('Kafka runs through the deployed workflow definition on the local target', () => {
  const storeProcesses = new ProcessRegistry();
  const work = tempDir('kafka-workflow');
  let store: ResultsStore;
  beforeAll(async () => {
    ({ store } = await startStore(storeProcesses, work.path));
  });
  afterAll(async () => {
    await storeProcesses.stopAll();
    work.cleanup();
  });

  test(
    'a 3-broker Kafka cluster and a RabbitMQ node run the same plan: ' +
      'results stored, reported side by side, nothing left running',
    async () => {
      const processes = new ProcessRegistry();
      const runId = newRunId(sideBySide.name);
      const runDir = join(work.path, 'runs', runId);
      const events: RunEvent[] = [];
      try {
        const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
        target.preflight(sideBySide);
        const outcome = await runPlanWorkflow({
          plan: sideBySide,
          target,
          store,
          runDir,
          runId,
          onEvent: (event) => events.push(event),
        });
        expect(outcome.records.map((record) => [record.scenarioId, record.status, record.error])).toEqual([
          ['kafka-3/steady', 'SUCCEEDED', undefined],
          ['rabbit-1/steady', 'SUCCEEDED', undefined],
        ]);
        expect(outcome.error).toBeUndefined();
        expect(outcome.status).toBe('SUCCEEDED');
        // Each broker got its own cluster, torn down before the next started.
        expect(events.filter((event) => event.type === 'cluster-starting')).toEqual([
          { type: 'cluster-starting', nodes: 3, topology: 'classic', broker: 'kafka' },
          { type: 'cluster-starting', nodes: 1, topology: 'classic', broker: 'rabbitmq' },
        ]);
        expect(processes.running).toEqual([]);
        expect(alivePids(processes)).toEqual([]);
        // The producer's 1 s reports reach the progress display as PerfTest's do.
        const rabbitStart = events.findIndex(
          (event) => event.type === 'cluster-starting' && event.broker === 'rabbitmq',
        );
        expect(events.slice(0, rabbitStart).some((event) => event.type === 'progress' && event.progress.sent > 0)).toBe(
          true,
        );

        const stored = (await store.getRun(runId))!;
        expect(stored.run.status).toBe('SUCCEEDED');
        expect(stored.run.environment.kafkaVersion).toBe('4.3.1');
        const kafka = stored.repetitions.find((rep) => rep.scenarioId === 'kafka-3/steady')!;
        expect(kafka.status).toBe('SUCCEEDED');
        // 12000 records at about 2000/s: a rate near the limit, the acknowledgement latency, the consumer's rate.
        expect(kafka.result!.summary.sendRateAvg).toBeGreaterThan(500);
        expect(kafka.result!.summary.sendRateAvg).toBeLessThan(2500);
        expect(kafka.result!.summary.receiveRateAvg).toBeGreaterThan(0);
        expect(kafka.result!.summary.confirmLatency!.p99).toBeGreaterThanOrEqual(
          kafka.result!.summary.confirmLatency!.median,
        );
        expect(kafka.perfTestArgs.join(' ')).toMatch(
          new RegExp(
            String.raw`^TopicCommand --create --topic rmqbench-steady-[0-9a-f]{6} --partitions 1 ` +
              String.raw`--replication-factor 3 ProducerPerformance .*--num-records 12000 --record-size 100 ` +
              String.raw`--throughput 2000`,
          ),
        );
        expect((await store.getSamples(runId, 'kafka-3/steady', 1)).length).toBeGreaterThanOrEqual(2);
        // Host metrics of a Kafka repetition: CPU, RSS and disk writes of each broker JVM and of the tools (no queue
        // depth).
        const metrics = (await store.getMetrics(runId, 'kafka-3/steady', 1))!;
        expect(kafka.metricsError).toBeUndefined();
        expect([...new Set(metrics.series.map((series) => series.node))].sort()).toEqual([
          'kafka1',
          'kafka2',
          'kafka3',
          'load-generator',
        ]);
        expect([...new Set(metrics.series.map((series) => series.metric))].sort()).toEqual([
          'cpuPercent',
          'diskWriteBytesPerSecond',
          'memoryBytes',
        ]);
        const toolCpu = metrics.series.find(
          (series) => series.node === 'load-generator' && series.metric === 'cpuPercent',
        )!.points;
        expect(toolCpu.length).toBeGreaterThanOrEqual(2);
        expect(Math.max(...toolCpu.map(([, value]) => value))).toBeGreaterThan(0);
        const rabbit = stored.repetitions.find((rep) => rep.scenarioId === 'rabbit-1/steady')!;
        expect(rabbit.status).toBe('SUCCEEDED');

        const report = renderMarkdownReport(stored.run, stored.repetitions);
        expect(report).toMatch(/\| kafka-3\/steady \| 1\/1 \| [\d,]+ ± /);
        expect(report).toMatch(/\| rabbit-1\/steady \| 1\/1 \| [\d,]+ ± /);

        // The raw tool output is kept, and `rmqbench ingest` reads the run folder back the same way.
        expect(readdirSync(join(runDir, 'raw', 'kafka-3_steady', 'rep-1')).sort()).toEqual([
          'consumer-1.txt',
          'producer-1.txt',
        ]);
        await expect(ingestRunDir(store, runDir)).resolves.toMatchObject({ stored: 2, status: 'SUCCEEDED' });
      } finally {
        await processes.stopAll();
      }
    },
  );

  test(
    "kill the verifier partition's leader mid-run, heal it: the Kafka verifier counts every confirmed record, " +
      'the outage and the recovery are measured, and the healed broker runs until teardown',
    async () => {
      const faultPlan = parsePlanText(
        'name: kafka-failover\nclusters: [{ name: k3, broker: kafka, nodes: 3 }]\nworkloads:\n' +
          '  - name: failover\n    publishRateLimit: 300\n    durationSeconds: 24\n    acks: all\n' +
          // Two in-sync replicas for an acks=all write: with one broker killed, two of three are still there.
          '    minInsyncReplicas: 2\n' +
          '    fault: { action: kill, node: leader, atSeconds: 4, healAtSeconds: 18 }\n',
        'kafka-failover.yaml',
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
        expect([outcome.status, outcome.error]).toEqual(['SUCCEEDED', undefined]);
        const faults = events.flatMap((event) => (event.type === 'fault' ? [[event.action, event.nodeName]] : []));
        expect(faults).toEqual([
          ['kill', expect.stringMatching(/^kafka[123]$/)],
          ['heal', faults[0]![1]],
        ]);
        const failover = (await store.getRun(runId))!.repetitions[0]!.failover!;
        console.log(
          'kafka kill-leader: ' +
            JSON.stringify({ ...failover, receivedPerSecond: failover.receivedPerSecond.join(',') }),
        );
        expect(failover.fault).toMatchObject({ action: 'kill', node: 'leader', nodeName: faults[0]![1] });
        expect(failover.fault.healedAtSeconds).toBeGreaterThan(failover.fault.appliedAtSeconds);
        expect(failover.confirmed).toBeGreaterThan(1000);
        // Every confirmed record is accounted for: consumed, still in the log (undelivered) or lost.
        expect(failover.consumed + (failover.undeliveredMessages ?? 0) + failover.lostMessages).toBeGreaterThanOrEqual(
          failover.confirmed,
        );
        expect(failover.unconfirmedAtFault).toBeGreaterThanOrEqual(0);
        expect(failover.receivedPerSecond.length).toBeGreaterThanOrEqual(20);
        // The partition's new leader is elected once the controller fences the dead broker: seconds of nothing.
        expect(failover.unavailableSeconds).toBeGreaterThanOrEqual(1);
        expect(readdirSync(join(runDir, 'raw', 'k3_failover', 'rep-1')).sort()).toEqual([
          'consumer-1.txt',
          'kafka-verifier.control',
          'kafka-verifier.log',
          'producer-1.txt',
        ]);
        expect(processes.running).toEqual([]);
        expect(alivePids(processes)).toEqual([]);
      } finally {
        await processes.stopAll();
      }
    },
  );

  test('a Kafka broker that never registers fails the run with its log tail, and nothing is left running', async () => {
    const hanging = join(work.path, 'hanging-java');
    writeFileSync(hanging, '#!/bin/sh\necho "simulated broker hang: no controller quorum"\nexec sleep 600\n');
    chmodSync(hanging, 0o755);
    const plan = parsePlanText(
      'name: kafka-hang\nclusters: [{ name: k, broker: kafka, nodes: 1 }]\n' +
        'workloads: [{ name: w, messageCount: 100 }]\n',
      'hang.yaml',
    );
    const processes = new ProcessRegistry();
    const runId = newRunId(plan.name);
    const runDir = join(work.path, 'runs', runId);
    try {
      const target = new LocalTarget({
        processes,
        runDir,
        cacheDir: cacheDir(),
        clusterStartTimeoutMs: 3000,
        kafkaBrokerJavaCommand: hanging,
      });
      const outcome = await runPlanWorkflow({ plan, target, store, runDir, runId, onEvent: () => undefined });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error).toMatch(
        new RegExp(
          String.raw`did not form within 3 s \(0 registered\); broker 1 log tail:[\s\S]*simulated broker hang: ` +
            String.raw`no controller quorum`,
        ),
      );
      const stored = await store.getRun(runId);
      expect(stored?.run.status).toBe('FAILED');
      expect(stored?.run.error).toContain('simulated broker hang');
      expect(processes.running).toEqual([]);
      expect(alivePids(processes)).toEqual([]);
      expect(existsSync(join(runDir, 'clusters', 'cluster-1', 'kafka1', 'data'))).toBe(false);
    } finally {
      await processes.stopAll();
    }
  });
});
