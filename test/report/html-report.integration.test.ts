jest.setTimeout(600_000);

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { parsePlanText } from '../../core/plan/plan';
import type { RepetitionRecord, RunRecord } from '../../core/results/result-model';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { newRunId, runPlan, type RunOutcome } from '../../local/run-plan';
import type { ResultsStore } from '../../store/results-store';
import { startStore, tempDir } from '../local/helpers';

/*
 * A real local run (1 node, lb and direct, 1 and 2 queues, 2 repetitions of 3 s), reported through the
 * built CLI as users run it, and the HTML opened in headless Chromium: every chart must draw one mark
 * per data point, with no console error and no request leaving the file.
 */

const CLI = join(__dirname, '../../dist/bin/rmqbench.js');
const CHROMIUM = '/usr/bin/chromium';

const plan = parsePlanText(
  `
name: report-integration
repetitions: 2
pauseSecondsBetweenRepetitions: 0
clusters:
  - { name: one-lb, nodes: 1, topology: { type: classic }, connection: lb }
  - { name: one-direct, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: small, producers: 2, consumers: 2, queues: 1, messageSizeBytes: 100, durationSeconds: 3, ` +
    `sweep: { queues: [1, 2] } }
`,
  'report-integration.yaml',
);

describe('rmqbench report --format html on a real local run, rendered in headless Chromium', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('report');
  let store: ResultsStore;
  let endpoint: string;
  let outcome: RunOutcome;
  let browser: Browser | undefined;

  const rmqbench = (...args: string[]) => {
    const result = spawnSync(
      process.execPath,
      [CLI, ...args, '--dynamodb-endpoint', endpoint, '--table', store.tableName],
      {
        encoding: 'utf8',
        cwd: work.path,
        env: { ...process.env, RMQBENCH_HOME: join(work.path, 'home') },
        timeout: 120_000,
      },
    );
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  /** A stored copy of the real run under another id, plan or environment (for the bad-input cases). */
  const storeVariant = async (
    runId: string,
    run: Partial<RunRecord>,
    repetition: (record: RepetitionRecord) => RepetitionRecord = (r) => r,
  ) => {
    const real = (await store.getRun(outcome.runId))!.run;
    await store.putRun({ ...real, ...run, runId });
    for (const record of outcome.records) await store.putRepetition(repetition({ ...record, runId }));
  };

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm test does)`);
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (scripts/setup.sh does)`);
    const started = await startStore(processes, work.path);
    store = started.store;
    endpoint = started.local.endpoint;
    const runId = newRunId(plan.name);
    const runDir = join(work.path, 'runs', runId);
    outcome = await runPlan({
      plan,
      target: new LocalTarget({ processes, runDir, cacheDir: cacheDir() }),
      store,
      runDir,
      runId,
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await processes.stopAll();
    work.cleanup();
  });

  test('the run succeeded, so the report has something to chart', () => {
    expect(outcome.error).toBeUndefined();
    expect(outcome.records.filter((record) => record.status === 'SUCCEEDED')).toHaveLength(8);
  });

  test(
    'the HTML report draws every chart with one mark per ' + 'data point, without console errors or network requests',
    async () => {
      const { code, stdout, stderr } = rmqbench('report', outcome.runId, '--format', 'html', '--out', 'report.html');
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toMatch(/^wrote .*report\.html \(5 charts: /);
      const file = join(work.path, 'report.html');
      const html = readFileSync(file, 'utf8');
      expect(html).not.toMatch(/<script|<link|<img|@import|url\(/i);

      const page = await browser!.newPage();
      const errors: string[] = [];
      const requests: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning')
          errors.push(`${message.type()}: ${message.text()}`);
      });
      page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(`file://${file}`, { waitUntil: 'load' });

      const charts = await page.$$eval('figure.chart', (figures) =>
        figures.map((figure) => {
          const kind = figure.getAttribute('data-mark-kind')!;
          const svg = figure.querySelector('svg');
          const box = svg?.getBoundingClientRect();
          return {
            id: figure.getAttribute('data-chart')!,
            marks: figure.querySelectorAll(`svg g.mark-${kind}.role-mark path`).length,
            width: box?.width ?? 0,
            height: box?.height ?? 0,
            nonEmptyPaths: Array.from(figure.querySelectorAll(`svg g.mark-${kind}.role-mark path`)).filter(
              (path) => ((path as { getAttribute(name: string): string | null }).getAttribute('d') ?? '').length > 5,
            ).length,
          };
        }),
      );
      // Expected from the plan, not from the report: 2 clusters × 2 queue counts = 4 scenarios, 2 repetitions each.
      const scenarios = plan.scenarios.length;
      const repetitions = scenarios * plan.repetitions;
      expect(charts.map(({ id, marks }) => ({ id, marks }))).toEqual([
        { id: 'throughput-per-repetition', marks: repetitions },
        { id: 'throughput-over-time', marks: repetitions },
        { id: 'throughput-vs-queues', marks: scenarios },
        { id: 'latency-percentiles', marks: scenarios * 5 },
        // Each repetition: CPU of its one broker node and of the load generator.
        { id: 'cpu-over-time', marks: repetitions * 2 },
      ]);
      for (const chart of charts) {
        expect(chart.nonEmptyPaths).toBe(chart.marks);
        expect(chart.width).toBeGreaterThan(300);
        expect(chart.height).toBeGreaterThan(150);
      }
      expect(await page.locator('#load-balancer-vs-direct tbody tr').count()).toBe(2);
      expect(await page.locator('#price-performance').innerText()).toMatch(/ran on target local .* no cloud price/);
      expect(errors).toEqual([]);
      expect(requests).toEqual([`file://${file}`]);
      await page.close();
    },
  );

  test('report --json carries the aggregates, the lb vs direct deltas and why there is no price-performance', () => {
    const { code, stdout } = rmqbench('report', outcome.runId, '--json');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as {
      scenarios: unknown[];
      loadBalancerDeltas: { verdict: string }[];
      pricePerformance: { available: boolean };
    };
    expect(report.scenarios).toHaveLength(4);
    expect(report.loadBalancerDeltas).toHaveLength(2);
    expect(report.pricePerformance.available).toBe(false);
  });

  test(
    "report over several runs --json reads each run's stored " + 'metrics from the table (series per node and metric)',
    () => {
      const { code, stdout } = rmqbench('report', outcome.runId, outcome.runId, '--json');
      expect(code).toBe(0);
      const { runs } = JSON.parse(stdout) as {
        runs: { run: { runId: string }; repetitionMetrics?: { series: { node: string; metric: string }[] }[] }[];
      };
      expect(runs.map((entry) => entry.run.runId)).toEqual([outcome.runId, outcome.runId]);
      for (const entry of runs) {
        expect(entry.repetitionMetrics).toHaveLength(8);
        const cpuNodes = entry
          .repetitionMetrics![0]!.series.filter((series) => series.metric === 'cpuPercent')
          .map((series) => series.node);
        expect(cpuNodes).toContain('load-generator');
        expect(cpuNodes.some((node) => node.startsWith('rmqbench'))).toBe(true);
      }
    },
  );

  test('report --format png writes one chart as a PNG image', () => {
    const { code, stdout } = rmqbench(
      'report',
      outcome.runId,
      '--format',
      'png',
      '--chart',
      'latency-percentiles',
      '--out',
      'latency.png',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/wrote .*latency\.png \(latency-percentiles, \d+ bytes\)/);
    const png = readFileSync(join(work.path, 'latency.png'));
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    // IHDR width and height: the chart at 2× scale.
    expect(png.readUInt32BE(16)).toBeGreaterThan(1000);
    expect(png.readUInt32BE(20)).toBeGreaterThan(500);
  });

  test(
    'a report for an aws run of a catalogued instance ' + 'type has the cluster cost and the chapter-7 tables',
    async () => {
      await storeVariant('priced-aws-run', {
        target: 'aws',
        environment: { instanceType: 'c5.xlarge', region: 'eu-west-1' },
      });
      const { code, stdout } = rmqbench('report', 'priced-aws-run', '--format', 'html', '--out', 'priced.html');
      expect(code).toBe(0);
      expect(stdout).toMatch(/wrote/);
      const html = readFileSync(join(work.path, 'priced.html'), 'utf8');
      expect(html).toContain('1 × c5.xlarge + lb');
      // c5.xlarge in eu-west-1: $0.192/h × 730 (the 2020-07-02 Price List entry, newer than the thesis's $140.55).
      expect(html).toContain('$140.16');
      expect(html).toMatch(/Best price-performance, 1 queue</);
    },
  );

  test(
    'a priced capacity run: the hockey-stick chart draws one point per step and ' +
      'percentile in Chromium, and the capacity is priced per million messages',
    async () => {
      // The real run's repetitions, each given the same measured ladder: 1,000 and 2,000 msg/s held, 4,000 did not.
      const step = (targetRate: number, p50: number, p99: number, passed: boolean) => ({
        targetRate,
        fromSeconds: 0,
        toSeconds: 10,
        measuredSeconds: 8,
        publishRate: targetRate,
        consumeRate: targetRate,
        p50LatencyMs: p50,
        p99LatencyMs: p99,
        passed,
        failedBy: passed ? [] : ['latency' as const],
        reasons: passed ? [] : ['p99 over the bound'],
      });
      const capacity = {
        p99BoundMs: 50,
        stepFactor: 2,
        warmUpSeconds: 2,
        steps: [step(1000, 1, 5, true), step(2000, 2, 20, true), step(4000, 40, 300, false)],
        rateMsgPerSecond: 2000,
        p50LatencyMs: 2,
        p99LatencyMs: 20,
        atLeast: false,
        firstFailedRate: 4000,
        verdict: '2,000 msg/s held p99 ≤ 50 ms; 4,000 msg/s did not (p99 over the bound)',
      };
      await storeVariant(
        'capacity-run',
        { target: 'aws', environment: { instanceType: 'c5.xlarge', region: 'eu-west-1' } },
        (record) => ({ ...record, capacity }),
      );
      const { code, stdout } = rmqbench('report', 'capacity-run', '--format', 'html', '--out', 'capacity.html');
      expect(code).toBe(0);
      expect(stdout).toMatch(/\(6 charts: .*latency-vs-rate/);
      const file = join(work.path, 'capacity.html');
      const page = await browser!.newPage();
      await page.goto(`file://${file}`, { waitUntil: 'load' });
      const points = await page.$$eval(
        'figure.chart[data-chart="latency-vs-rate"] svg g.mark-symbol.role-mark path',
        (paths) => paths.length,
      );
      expect(points).toBe(outcome.records.length * 3 * 2);
      expect(await page.locator('#capacity').innerText()).toMatch(/2,000 ± 0 msg\/s/);
      await page.close();
      const markdown = rmqbench('report', 'capacity-run');
      expect(markdown.stdout).toMatch(
        /\| one-lb\/small@queues=1 \| 50 \| 2,000 ± 0 msg\/s \| 2 \/ 20 \| [0-9.]+ \| [0-9,]+ \|/,
      );
    },
  );

  test('an instance type missing from the catalog is a clear note in the report, not a crash', async () => {
    await storeVariant('unpriced-aws-run', { target: 'aws', environment: { instanceType: 'c9.galactic' } });
    const { code, stderr } = rmqbench('report', 'unpriced-aws-run', '--format', 'html', '--out', 'unpriced.html');
    expect(code).toBe(0);
    expect(stderr.trim()).toMatch(
      new RegExp(
        String.raw`^rmqbench: no price-performance section: unknown aws instance type "c9\.galactic" in the ` +
          String.raw`price catalog; known: .*c5\.xlarge`,
      ),
    );
    expect(readFileSync(join(work.path, 'unpriced.html'), 'utf8')).toContain(
      'Not available: unknown aws instance type',
    );
  });

  test('a run without a successful repetition: the HTML says so, png/compare/baseline refuse in one line', async () => {
    await storeVariant('all-failed-run', { status: 'FAILED', error: 'broker unreachable' }, (record) => {
      const { result: _result, ...rest } = record;
      return { ...rest, status: 'FAILED', error: 'PerfTest exited with code 1' };
    });
    const html = rmqbench('report', 'all-failed-run', '--format', 'html', '--out', 'failed.html');
    expect(html.code).toBe(0);
    expect(html.stderr.trim()).toMatch(
      /^rmqbench: run all-failed-run .* has no successful repetition .*: the report has no charts$/,
    );
    expect(readFileSync(join(work.path, 'failed.html'), 'utf8')).toContain('PerfTest exited with code 1');
    for (const args of [
      ['report', 'all-failed-run', '--format', 'png'],
      ['compare', outcome.runId, 'all-failed-run'],
      ['baseline', 'all-failed-run'],
    ]) {
      const { code, stderr } = rmqbench(...args);
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/all-failed-run.* has no successful repetition/);
    }
  });

  test('compare against the marked baseline, and refusal to compare runs of different plans', async () => {
    await storeVariant('second-run', {});
    const mark = rmqbench('baseline', outcome.runId);
    expect(mark.code).toBe(0);
    expect(mark.stdout).toMatch(new RegExp(`run ${outcome.runId} is now the baseline of plan "report-integration"`));

    const compared = rmqbench('compare', 'second-run', outcome.runId, '--json');
    expect(compared.code).toBe(0);
    const result = JSON.parse(compared.stdout) as {
      note: string;
      comparisons: { baselineRunId: string; rows: { verdict: string; delta: number }[] }[];
    };
    expect(result.note).toMatch(/marked baseline/);
    expect(result.comparisons[0]!.baselineRunId).toBe(outcome.runId);
    // The same records stored twice: every delta is exactly zero and inside the noise.
    expect(result.comparisons[0]!.rows.map((row) => [row.verdict, row.delta])).toEqual(
      Array(4).fill(['inside-noise', 0]),
    );

    const alone = rmqbench('compare', 'second-run');
    expect(alone.code).toBe(0);
    expect(alone.stdout).toMatch(/against baseline run/);
    expect(alone.stdout).toMatch(/load balancer vs direct/);

    await storeVariant('other-plan-run', { planName: 'another-plan' });
    const mixed = rmqbench('compare', outcome.runId, 'other-plan-run');
    expect(mixed.code).toBe(1);
    expect(mixed.stderr.trim()).toMatch(
      /^rmqbench: runs of different plans cannot be compared scenario by scenario: .* ran "another-plan"/,
    );
  });
});
