jest.setTimeout(600_000);

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadGeneratorNode, type RepetitionMetrics } from '../../core/metrics/host-metrics';
import { parsePlanText } from '../../core/plan/plan';
import { renderMarkdownReport } from '../../core/report/report';
import type { StoredRepetition } from '../../core/results/result-items';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { newRunId, runPlan, type RunOutcome } from '../../local/run-plan';
import type { ResultsStore } from '../../store/results-store';
import { alivePids, startStore, tempDir } from './helpers';

/*
 * Issue 27 on the real 3-node cluster: one workload (4 producers, 4 consumers, 4 quorum queues) run by two PerfTest
 * processes, each with its own queues, producers and consumers; the stored repetition sums their rates, keeps each
 * generator's figures and CPU series, and records how far apart their clocks started.
 */
const plan = parsePlanText(
  `
name: load-generators
repetitions: 1
clusters:
  - { name: three, nodes: 3, topology: { type: quorum }, connection: direct, loadGenerators: 2 }
workloads:
  - name: split
    producers: 4
    consumers: 4
    queues: 4
    messageSizeBytes: 200
    publishRateLimit: 500
    durationSeconds: 6
`,
  'load-generators.yaml',
);

describe('several load generators on a real 3-node local cluster', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('load-generators');
  let store: ResultsStore;
  let outcome: RunOutcome;
  let runDir: string;
  let record: StoredRepetition;
  let metrics: RepetitionMetrics | undefined;

  beforeAll(async () => {
    ({ store } = await startStore(processes, work.path));
    const runId = newRunId(plan.name);
    runDir = join(work.path, 'runs', runId);
    outcome = await runPlan({
      plan,
      target: new LocalTarget({ processes, runDir, cacheDir: cacheDir() }),
      store,
      runDir,
      runId,
    });
    record = (await store.getRun(runId))!.repetitions[0]!;
    metrics = await store.getMetrics(runId, record.scenarioId, 1);
  });

  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  test('two PerfTest processes ran, each on its own queues with half the producers and consumers', () => {
    expect([outcome.status, record.status, record.error]).toEqual(['SUCCEEDED', 'SUCCEEDED', undefined]);
    const rawDir = join(runDir, 'raw', record.scenarioId.replace(/[^A-Za-z0-9._=-]+/g, '_'), 'rep-1');
    const args = ['lg-1', 'lg-2'].map((id) => {
      const stdout = join(rawDir, id, 'perftest.stdout.txt');
      expect(existsSync(stdout)).toBe(true);
      return readFileSync(stdout, 'utf8');
    });
    for (const stdout of args) expect(stdout).toMatch(/sending rate avg: \d+ msg\/s/);
    expect(record.loadGenerators!.map((lg) => [lg.id, lg.producers, lg.consumers, lg.queues])).toEqual([
      ['lg-1', 2, 2, ['perf-test-1', 'perf-test-2']],
      ['lg-2', 2, 2, ['perf-test-3', 'perf-test-4']],
    ]);
    expect(record.loadGeneratorSplit).toMatch(/^split by queue over 2 load generators/);
  });

  test("the repetition's rates are the generators' sum, near the 4 × 500 msg/s the producers were limited to", () => {
    const [one, two] = record.loadGenerators!;
    expect(record.result!.summary.sendRateAvg).toBe(one!.sendRate + two!.sendRate);
    expect(record.result!.summary.receiveRateAvg).toBe(one!.receiveRate + two!.receiveRate);
    expect(record.result!.summary.sendRateAvg).toBeGreaterThan(1500);
    // PerfTest's rate limiter catches up after a slow second, so a summary may run a few per cent over.
    expect(record.result!.summary.sendRateAvg).toBeLessThan(2400);
    // Each generator carried about half.
    for (const lg of record.loadGenerators!) expect(lg.sendRate).toBeGreaterThan(700);
    const p99 = Math.max(one!.consumerLatency!.p99, two!.consumerLatency!.p99);
    expect(record.result!.summary.consumerLatency!.p99).toBe(p99);
  });

  test('the start skew is recorded, and each generator has its own CPU series and figure', () => {
    expect(record.startSkewMs).toBeGreaterThanOrEqual(0);
    expect(record.startSkewMs).toBeLessThan(5000);
    for (const id of ['lg-1', 'lg-2']) {
      const series = metrics!.series.find((one) => one.node === loadGeneratorNode(id) && one.metric === 'cpuPercent');
      expect(series!.points.length).toBeGreaterThan(3);
    }
    for (const lg of record.loadGenerators!) expect(lg.cpuPercent).toBeGreaterThan(0);
    expect(record.loadGenerator!.medianCpuPercent).toBe(
      Math.max(...record.loadGenerators!.map((lg) => lg.cpuPercent!)),
    );
  });

  test('the report states the split and each generator, and show --json has them on the repetition', async () => {
    const stored = (await store.getRun(record.runId))!;
    const report = renderMarkdownReport(stored.run, stored.repetitions);
    expect(report).toContain('## Load generators');
    expect(report).toMatch(
      /- three\/split #1 \(sent \/ received\): lg-1 \d+ \/ \d+ msg\/s, p99 [\d.]+ ms, CPU [\d.]+ %; lg-2 /,
    );
    expect(stored.repetitions[0]!.loadGenerators).toHaveLength(2);
  });

  test('nothing is left running', () => {
    expect(alivePids(processes).length).toBe(1); // DynamoDB Local, stopped in afterAll
  });
});
