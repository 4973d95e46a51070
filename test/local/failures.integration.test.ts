import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePlanText } from '../../core/plan/plan';
import { ingestRunDir } from '../../local/ingest-run-dir';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { freePorts } from '../../local/ports';
import { ProcessRegistry } from '../../local/processes';
import { LocalRabbitCluster } from '../../local/rabbitmq-cluster';
import { newRunId, runPlan } from '../../local/run-plan';
import { ResultsStore, StoreError } from '../../store/results-store';
import { startStore, tempDir } from './helpers';

const singleNodePlan = (repetitions: number, durationSeconds: number) =>
  parsePlanText(
    `
name: failures
repetitions: ${repetitions}
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: small, messageSizeBytes: 150, durationSeconds: ${durationSeconds} }
`,
    'failures.yaml',
  );

jest.setTimeout(600_000);

describe('failures are clear and lose nothing already stored', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('failures');
  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  test('a broker that never starts times out with the node log tail in the error', async () => {
    // Stands in for a broker that hangs at boot: it logs, never listens, and must be stopped by us.
    const hanging = join(work.path, 'hanging-rabbitmq-server');
    writeFileSync(
      hanging,
      '#!/bin/sh\nmkdir -p "$RABBITMQ_LOG_BASE"\n' +
        'echo "simulated boot hang: waiting for tables" >> "$RABBITMQ_LOG_BASE/$RABBITMQ_NODENAME.log"\n' +
        'exec sleep 600\n',
    );
    chmodSync(hanging, 0o755);
    const local = new ProcessRegistry();
    const started = Date.now();
    await expect(
      LocalRabbitCluster.start({
        nodes: 1,
        topology: { type: 'classic' },
        workDir: join(work.path, 'hang'),
        processes: local,
        startTimeoutMs: 3000,
        serverCommand: hanging,
      }),
    ).rejects.toThrow(/did not form within 3 s[\s\S]*simulated boot hang: waiting for tables/);
    expect(Date.now() - started).toBeLessThan(30_000);
    await local.stopAll();
    expect(local.running).toEqual([]);
  });

  test('a broker that exits at boot fails at once with its output', async () => {
    const crashing = join(work.path, 'crashing-rabbitmq-server');
    writeFileSync(crashing, '#!/bin/sh\necho "simulated crash: eaddrinuse"\nexit 1\n');
    chmodSync(crashing, 0o755);
    const local = new ProcessRegistry();
    await expect(
      LocalRabbitCluster.start({
        nodes: 1,
        topology: { type: 'classic' },
        workDir: join(work.path, 'crash'),
        processes: local,
        startTimeoutMs: 60_000,
        serverCommand: crashing,
      }),
    ).rejects.toThrow(/exited while starting[\s\S]*simulated crash: eaddrinuse/);
    await local.stopAll();
  });

  test('DynamoDB not reachable is a clear error naming the endpoint', async () => {
    const [port] = await freePorts(1);
    const store = ResultsStore.forEndpoint(`http://127.0.0.1:${port}`, 'unreachable');
    const error = await store.ensureTable().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(
      new RegExp(`DynamoDB at http://127\\.0\\.0\\.1:${port}: could not describe the table in table unreachable`),
    );
  });

  test(
    'a PerfTest that exits early is recorded as FAILED with ' + 'what was missing, and earlier repetitions stay stored',
    async () => {
      const { store } = await startStore(processes, work.path);
      const plan = singleNodePlan(2, 8);
      const runId = newRunId(plan.name);
      const runDir = join(work.path, 'runs', runId);
      const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
      let killed = false;
      const outcomeSoFar: string[] = [];
      const outcome = await runPlan({
        plan,
        target,
        store,
        runDir,
        runId,
        onEvent: (event) => {
          // Kill PerfTest three seconds into the second repetition.
          if (event.type === 'progress' && !killed && event.progress.time >= 3 && outcomeSoFar.length === 1) {
            killed = true;
            const perfTest = processes.running.find((p) => p.name === 'perftest');
            if (perfTest?.pid) process.kill(-perfTest.pid, 'SIGKILL');
          }
          if (event.type === 'repetition-finished') outcomeSoFar.push(event.record.status);
        },
      });
      expect(killed).toBe(true);
      expect(outcome.status).toBe('PARTIAL');
      const stored = await store.getRun(runId);
      expect(stored!.run.status).toBe('PARTIAL');
      const [first, second] = [...stored!.repetitions].sort((a, b) => a.repetition - b.repetition);
      expect(first).toMatchObject({ status: 'SUCCEEDED' });
      expect(first!.result!.summary.receiveRateAvg).toBeGreaterThan(0);
      expect(second).toMatchObject({ status: 'FAILED' });
      expect(second!.error).toMatch(/PerfTest exited with code .*missing.*sending rate avg/);
      expect(second!.result).toBeUndefined();
    },
  );

  test(
    'DynamoDB going away mid-run fails the run, keeps what ' + 'was stored, and the raw output can be stored later',
    async () => {
      const dataPath = join(work.path, 'ddb-data');
      const local = new ProcessRegistry();
      const first = await startStore(local, work.path, dataPath);
      const plan = singleNodePlan(2, 4);
      const runId = newRunId(plan.name);
      const runDir = join(work.path, 'runs', runId);
      const target = new LocalTarget({ processes: local, runDir, cacheDir: cacheDir() });
      const outcome = await runPlan({
        plan,
        target,
        store: first.store,
        runDir,
        runId,
        onEvent: (event) => {
          if (event.type === 'repetition-started' && event.repetition === 2) void first.local.process.stop(0);
        },
      });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error).toMatch(/could not store .* repetition 2/);
      expect(outcome.error).toContain(`rmqbench ingest ${runDir}`);
      expect(local.running.map((p) => p.name)).toEqual([]);

      // The same data folder still holds the first repetition.
      const again = await startStore(local, work.path, dataPath);
      const store = new ResultsStore(again.store.client, first.store.tableName);
      const stored = await store.getRun(runId);
      expect(stored!.repetitions.map((rep) => rep.repetition)).toEqual([1]);
      expect(stored!.repetitions[0]!.status).toBe('SUCCEEDED');

      // Storing the raw output later completes the run; storing it twice changes nothing.
      for (let attempt = 0; attempt < 2; attempt++) {
        expect(await ingestRunDir(store, runDir)).toEqual({ runId, stored: 2, status: 'SUCCEEDED' });
      }
      const completed = await store.getRun(runId);
      expect(completed!.run.status).toBe('SUCCEEDED');
      expect(completed!.repetitions.map((rep) => rep.repetition).sort()).toEqual([1, 2]);
      await local.stopAll();
    },
  );
});
