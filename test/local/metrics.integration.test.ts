jest.setTimeout(600_000);

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';
import { chromium } from 'playwright-core';
import { reportCommand } from '../../bin/report-command';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { LOAD_GENERATOR_NODE, type RepetitionMetrics } from '../../core/metrics/host-metrics';
import { parsePlanText } from '../../core/plan/plan';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { newRunId, runPlan, type RunOutcome } from '../../local/run-plan';
import type { ResultsStore } from '../../store/results-store';

const CHROMIUM = '/usr/bin/chromium';
import { startStore, tempDir } from './helpers';

/*
 * A real local run on a 3-node cluster (quorum queue, 2 repetitions of 5 s): the sampler beside PerfTest stores,
 * per repetition, CPU, RSS and disk writes of each node's beam.smp and of PerfTest's JVM, and each node's memory
 * alarm, queue depth and network bytes from the management API; the HTML report draws the CPU lines (headless
 * Chromium).
 */
const plan = parsePlanText(
  `
name: metrics
repetitions: 2
pauseSecondsBetweenRepetitions: 0
clusters:
  - { name: three, nodes: 3, topology: { type: quorum }, connection: direct }
workloads:
  - { name: small, producers: 1, consumers: 1, messageSizeBytes: 1000, durationSeconds: 5 }
`,
  'metrics.yaml',
);
const NODES = ['rmqbench1@localhost', 'rmqbench2@localhost', 'rmqbench3@localhost'];

describe('broker and host metrics of a real local run', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('metrics');
  let store: ResultsStore;
  let outcome: RunOutcome;
  const stored: RepetitionMetrics[] = [];

  beforeAll(async () => {
    ({ store } = await startStore(processes, work.path));
    const runId = newRunId(plan.name);
    const runDir = join(work.path, 'runs', runId);
    outcome = await runPlan({
      plan,
      target: new LocalTarget({ processes, runDir, cacheDir: cacheDir() }),
      store,
      runDir,
      runId,
    });
    for (const record of outcome.records) {
      const metrics = await store.getMetrics(runId, record.scenarioId, record.repetition);
      if (metrics) stored.push(metrics);
    }
  });

  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  const points = (metrics: RepetitionMetrics, node: string, metric: string) =>
    metrics.series.find((series) => series.node === node && series.metric === metric)?.points ?? [];

  test('both repetitions succeeded, each with its metrics stored and no collection error', () => {
    expect(outcome.error).toBeUndefined();
    expect(outcome.records.map((record) => [record.repetition, record.status, record.metricsError])).toEqual([
      [1, 'SUCCEEDED', undefined],
      [2, 'SUCCEEDED', undefined],
    ]);
    expect(stored).toHaveLength(2);
    expect(stored.map((metrics) => metrics.source)).toEqual(['local-proc', 'local-proc']);
  });

  test('per-second CPU of every node and of the load generator, within 0..100 % of all the host CPUs', () => {
    for (const metrics of stored) {
      for (const node of [...NODES, LOAD_GENERATOR_NODE]) {
        const cpu = points(metrics, node, 'cpuPercent');
        // 5 s of PerfTest plus its start and summary: at least 4 one-second rates.
        expect({ node, points: cpu.length >= 4 }).toEqual({ node, points: true });
        for (const [t, value] of cpu) {
          expect(t).toBeGreaterThan(0);
          expect(value).toBeGreaterThanOrEqual(0);
          expect(value).toBeLessThanOrEqual(100 + 1e-9);
        }
      }
      // The JVM publishing and consuming and the node leading the queue both worked.
      expect(Math.max(...points(metrics, LOAD_GENERATOR_NODE, 'cpuPercent').map(([, value]) => value))).toBeGreaterThan(
        0,
      );
      expect(
        Math.max(...NODES.flatMap((node) => points(metrics, node, 'cpuPercent').map(([, value]) => value))),
      ).toBeGreaterThan(0);
    }
    // The meaning of the values: a share of this many CPUs.
    expect(cpus().length).toBeGreaterThanOrEqual(1);
  });

  test(
    'RSS of each broker node in a plausible range; memory ' +
      'alarm never raised; network bytes and queue depth per node',
    () => {
      for (const metrics of stored) {
        for (const node of NODES) {
          const rss = points(metrics, node, 'memoryBytes').map(([, value]) => value);
          expect(rss.length).toBeGreaterThanOrEqual(4);
          // A RabbitMQ node with management takes tens to hundreds of MB; less than 20 MB would not be beam.smp.
          expect(Math.min(...rss)).toBeGreaterThan(20 * 1024 * 1024);
          expect(points(metrics, node, 'memoryAlarm').every(([, value]) => value === 0)).toBe(true);
          // Management polls skip a second while the previous one is still answered (a busy 2-core machine): fewer than
          // /proc's.
          expect(points(metrics, node, 'memoryAlarm').length).toBeGreaterThanOrEqual(3);
          expect(points(metrics, node, 'queueDepth').length).toBeGreaterThanOrEqual(3);
          expect(points(metrics, node, 'diskWriteBytesPerSecond').length).toBeGreaterThanOrEqual(4);
        }
      }
      // Quorum replication and the client connection move bytes: some node sent or received in some second. Asked of
      // the run, not of each 5 s repetition: the management API's octet counters lag their 1 s statistics interval when
      // the machine is busy, and in one CI run all counters of one repetition read the same in every poll.
      const network = stored.flatMap((metrics) =>
        NODES.flatMap((node) => points(metrics, node, 'networkBytesPerSecond').map(([, value]) => value)),
      );
      expect(network.length).toBeGreaterThan(0);
      expect(Math.max(...network)).toBeGreaterThan(0);
    },
  );

  test('the HTML report draws CPU over time: one line per node and the load generator in each repetition', async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (scripts/setup.sh does)`);
    const out = join(work.path, 'metrics.html');
    const run = (await store.getRun(outcome.runId))!;
    await reportCommand(
      run,
      (id, scenarioId, repetition) => store.getSamples(id, scenarioId, repetition),
      { format: 'html', json: false, out, catalog: defaultPriceCatalog },
      (id, scenarioId, repetition) => store.getMetrics(id, scenarioId, repetition),
    );
    expect(readFileSync(out, 'utf8')).toContain(
      'data-chart="cpu-over-time" data-mark-kind="line" data-expected-marks="8"',
    );
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`file://${out}`, { waitUntil: 'load' });
      const drawn = await page.$$eval('figure[data-chart="cpu-over-time"] svg g.mark-line.role-mark path', (paths) =>
        paths.map((path) => ({
          d: ((path as { getAttribute(name: string): string | null }).getAttribute('d') ?? '').length,
          label: (path as { getAttribute(name: string): string | null }).getAttribute('aria-label') ?? '',
        })),
      );
      // 2 repetitions × (3 nodes + the load generator), each a drawn path.
      expect(drawn).toHaveLength(2 * (NODES.length + 1));
      expect(drawn.every((path) => path.d > 5)).toBe(true);
      for (const node of [...NODES, LOAD_GENERATOR_NODE])
        expect(drawn.filter((path) => path.label.includes(`node: ${node}`))).toHaveLength(2);
      await page.close();
    } finally {
      await browser.close();
    }
  });
});
