import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { reportCommand, ReportError, reportOverRuns, thesisChapter7Report } from '../../bin/report-command';
import { SCENARIOS, steadyMetrics, steadySamples, storedRun, uniformRates } from './report-fixtures';

const dir = () => mkdtempSync(join(tmpdir(), 'rmqbench-report-'));
const base = { catalog: defaultPriceCatalog, json: false, now: new Date('2026-01-01T00:00:00Z') };

describe('rmqbench report', () => {
  it(
    '--json (markdown format) keeps run and scenarios and ' + 'adds the lb vs direct deltas and price-performance',
    async () => {
      const result = await reportCommand(storedRun('r1', uniformRates([10_000, 10_200])), steadySamples, {
        ...base,
        format: 'markdown',
        json: true,
      });
      const report = JSON.parse(result.stdout as string) as Record<string, unknown[] & { available?: boolean }>;
      expect(Object.keys(report)).toEqual(['run', 'scenarios', 'loadBalancerDeltas', 'pricePerformance']);
      expect(report.scenarios).toHaveLength(4);
      expect(report.loadBalancerDeltas).toHaveLength(2);
      expect(report.pricePerformance!.available).toBe(false);
    },
  );

  it('reports MB/s beside msg/s: --json per scenario, the Markdown and HTML tables (12 B messages)', async () => {
    const stored = storedRun('r1', uniformRates([10_000, 30_000]));
    const json = JSON.parse(
      (await reportCommand(stored, steadySamples, { ...base, format: 'markdown', json: true })).stdout as string,
    ) as { scenarios: { messageSizeBytes: number; sendMBps: { mean: number }; receiveMBps: { mean: number } }[] };
    // 20,000 msg/s on average × 12 B = 0.24 MB/s.
    expect(json.scenarios[0]).toMatchObject({
      messageSizeBytes: 12,
      sendMBps: { mean: 0.24 },
      receiveMBps: { mean: 0.24 },
    });
    const markdown = (await reportCommand(stored, steadySamples, { ...base, format: 'markdown' })).stdout as string;
    expect(markdown).toContain('| send / receive MB/s (mean) |');
    expect(markdown.split('\n').find((line) => line.startsWith(`| ${SCENARIOS[0]} |`))).toMatch(
      /^\| [^|]+ \| 2\/2 \| 20,000 ± [\d,]+ \| 20,000 ± [\d,]+ \| 0\.24 \/ 0\.24 \| /,
    );
    const out = join(dir(), 'mb.html');
    await reportCommand(stored, steadySamples, { ...base, format: 'html', out });
    const html = readFileSync(out, 'utf8');
    expect(html).toContain('send / receive MB/s (mean)');
  });

  it('a fixed amount of work reports how long each scenario took (--json and a Markdown table)', async () => {
    const stored = storedRun('r1', uniformRates([10_000, 10_000]));
    const timed = {
      ...stored,
      repetitions: stored.repetitions.map((rep, index) =>
        rep.scenarioId === SCENARIOS[0]
          ? { ...rep, result: { ...rep.result!, completedInSeconds: 10 + 2 * (index % 2) } }
          : rep,
      ),
    };
    const json = JSON.parse(
      (await reportCommand(timed, steadySamples, { ...base, format: 'markdown', json: true })).stdout as string,
    ) as { scenarios: { completedInSeconds?: { mean: number; n: number } }[] };
    expect(json.scenarios[0]!.completedInSeconds).toMatchObject({ mean: 11, n: 2 });
    expect(json.scenarios[1]!.completedInSeconds).toBeUndefined();
    const markdown = (await reportCommand(timed, steadySamples, { ...base, format: 'markdown' })).stdout as string;
    expect(markdown).toMatch(
      new RegExp(`\\| ${SCENARIOS[0]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\| 11\\.0 ± [\\d.]+ \\|`),
    );
  });

  it('Markdown shows lb vs direct with the Welch interval, one implementation with rmqbench compare', async () => {
    const rates = {
      [SCENARIOS[0]!]: [10_000, 10_100, 9_900],
      [SCENARIOS[2]!]: [20_000, 20_100, 19_900],
      [SCENARIOS[1]!]: [1, 1],
      [SCENARIOS[3]!]: [1, 1],
    };
    const { stdout } = await reportCommand(storedRun('r1', rates), steadySamples, { ...base, format: 'markdown' });
    expect(stdout).toContain(
      `| ${SCENARIOS[0]} vs ${SCENARIOS[2]} | −50.0% (−10,000 ± 227 msg/s) | lower: significant (95% CI of the ` +
        `delta excludes 0) |`,
    );
    expect(stdout).toContain('inside the noise');
  });

  it('writes one HTML file with the five charts and says so', async () => {
    const out = join(dir(), 'r.html');
    const result = await reportCommand(
      storedRun('r1', uniformRates([10_000, 12_000])),
      steadySamples,
      { ...base, format: 'html', out },
      steadyMetrics,
    );
    expect(result.stdout).toBe(
      `wrote ${out} (5 charts: throughput-per-repetition, throughput-over-time, throughput-vs-queues, ` +
        `latency-percentiles, cpu-over-time)\n`,
    );
    expect(result.warnings).toEqual([]);
    const html = readFileSync(out, 'utf8');
    expect(html.match(/<figure class="chart"/g)).toHaveLength(5);
    expect(html).toContain('data-chart="throughput-per-repetition" data-mark-kind="rect" data-expected-marks="8"');
    // 8 repetitions, each with a broker node and the load generator.
    expect(html).toContain('data-chart="cpu-over-time" data-mark-kind="line" data-expected-marks="16"');
  });

  it('a run stored without metrics (older runs) has no CPU chart and says why in one line', async () => {
    const out = join(dir(), 'old.html');
    const result = await reportCommand(storedRun('r1', uniformRates([10_000, 12_000])), steadySamples, {
      ...base,
      format: 'html',
      out,
    });
    expect(result.stdout).toMatch(/\(4 charts: .*latency-percentiles\)\n$/);
    expect(result.warnings).toEqual([
      'chart cpu-over-time left out: no CPU metrics were stored with the repetitions (a run from before ' +
        'metrics, or a target that did not collect them)',
    ]);
  });

  it("--json: each repetition's series name their node and metric; metrics errors are listed", async () => {
    const stored = storedRun('r1', uniformRates([10_000]));
    const first = stored.repetitions[0]!;
    const withError = {
      ...stored,
      repetitions: [
        { ...first, metricsError: 'management API failed in 2 of 7 second(s) (first: timeout)' },
        ...stored.repetitions.slice(1),
      ],
    };
    const report = JSON.parse(
      (await reportCommand(withError, steadySamples, { ...base, format: 'markdown', json: true }, steadyMetrics))
        .stdout as string,
    ) as {
      repetitionMetrics: {
        scenarioId: string;
        repetition: number;
        source: string;
        series: { node: string; metric: string; unit: string; points: number[][] }[];
      }[];
      metricsErrors: { scenarioId: string; repetition: number; metricsError: string }[];
    };
    expect(report.repetitionMetrics).toHaveLength(stored.repetitions.length);
    expect(report.repetitionMetrics[0]).toEqual({
      scenarioId: first.scenarioId,
      repetition: 1,
      source: 'local-proc',
      series: [
        {
          node: 'rmqbench1@localhost',
          metric: 'cpuPercent',
          unit: 'percent',
          points: [
            [1, 21],
            [2, 21],
            [3, 21],
            [4, 21],
            [5, 21],
          ],
        },
        {
          node: 'load-generator',
          metric: 'cpuPercent',
          unit: 'percent',
          points: [
            [1, 40],
            [2, 40],
            [3, 40],
            [4, 40],
            [5, 40],
          ],
        },
      ],
    });
    expect(report.metricsErrors).toEqual([
      {
        scenarioId: first.scenarioId,
        repetition: 1,
        metricsError: 'management API failed in 2 of 7 second(s) (first: timeout)',
      },
    ]);
  });

  it(
    'an HTML report of a run without a successful ' + 'repetition has no charts, lists the failures and warns',
    async () => {
      const out = join(dir(), 'failed.html');
      const result = await reportCommand(
        storedRun('r1', uniformRates([null, null]), { status: 'FAILED' }),
        steadySamples,
        { ...base, format: 'html', out },
      );
      expect(result.warnings).toEqual([
        'run r1 (plan "fixture-plan", status FAILED) has no successful repetition (8 failed or missing): the ' +
          'report has no charts',
      ]);
      const html = readFileSync(out, 'utf8');
      expect(html).not.toContain('<figure');
      expect(html).toContain('<section id="failed-repetitions">');
    },
  );

  it(
    'refuses a PNG for a run without a successful repetition, ' + 'and a chart without data, naming what would work',
    async () => {
      await expect(
        reportCommand(storedRun('r1', uniformRates([null])), steadySamples, { ...base, format: 'png' }),
      ).rejects.toThrow(
        new ReportError(
          'run r1 (plan "fixture-plan", status SUCCEEDED) has no successful repetition (4 failed or missing): ' +
            'there is no chart to draw; see rmqbench show r1',
        ),
      );
      await expect(
        reportCommand(storedRun('r1', uniformRates([1_000])), async () => [], {
          ...base,
          format: 'png',
          chart: 'throughput-over-time',
        }),
      ).rejects.toThrow(
        new ReportError(
          'run r1 has no chart "throughput-over-time": no per-second samples were stored; try --chart ' +
            'throughput-per-repetition',
        ),
      );
    },
  );

  it(
    'leaves out throughput-vs-queues when every cluster ran one queue count, and says why in one line (warning ' +
      'and HTML)',
    async () => {
      const out = join(dir(), 'one-queue.html');
      const oneQueueCount = Object.fromEntries(
        SCENARIOS.filter((id) => id.endsWith('@queues=1')).map((id) => [id, [10_000, 11_000]]),
      );
      const result = await reportCommand(
        storedRun('r1', oneQueueCount),
        steadySamples,
        { ...base, format: 'html', out },
        steadyMetrics,
      );
      expect(result.stdout).toBe(
        `wrote ${out} (4 charts: throughput-per-repetition, throughput-over-time, latency-percentiles, ` +
          `cpu-over-time)\n`,
      );
      const why = 'every scenario of a cluster uses the same queue count (1), so there is no line to draw';
      expect(result.warnings).toEqual([`chart throughput-vs-queues left out: ${why}`]);
      const html = readFileSync(out, 'utf8');
      expect(html).not.toContain('data-chart="throughput-vs-queues"');
      expect(html).toContain(`Chart throughput-vs-queues left out: ${why}.`);
    },
  );

  it('--json names the latency unit: consumerLatencyMicroseconds, never a bare consumerLatency', async () => {
    const result = await reportCommand(storedRun('r1', uniformRates([10_000, 10_200])), steadySamples, {
      ...base,
      format: 'html',
      json: true,
      out: join(dir(), 'j.html'),
    });
    const scenarios = (JSON.parse(result.stdout as string) as { scenarios: Record<string, unknown>[] }).scenarios;
    expect(scenarios[0]).not.toHaveProperty('consumerLatency');
    // The fixture's repetitions measured a 1,000 and 1,010 µs median: the median over them is 1,005 µs.
    expect(scenarios[0]!.consumerLatencyMicroseconds).toEqual({
      min: 100,
      median: 1_005,
      p75: 2_000,
      p95: 5_000,
      p99: 9_000,
    });
  });

  it('writes a PNG of the chosen chart to stdout with --out -', async () => {
    const { stdout, files } = await reportCommand(storedRun('r1', uniformRates([1_000, 2_000])), steadySamples, {
      ...base,
      format: 'png',
      chart: 'latency-percentiles',
      out: '-',
    });
    expect(files).toEqual([]);
    expect((stdout as Buffer).subarray(1, 4).toString('latin1')).toBe('PNG');
  });

  it("warns, but still writes the report, when a cloud run's instance type is not in the catalog", async () => {
    const out = join(dir(), 'unknown.html');
    const run = storedRun('r1', uniformRates([1_000, 2_000]), {
      target: 'aws',
      environment: { instanceType: 'x9.mega' },
    });
    const result = await reportCommand(run, steadySamples, { ...base, format: 'html', out }, steadyMetrics);
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^no price-performance section: unknown aws instance type "x9\.mega" in the price catalog; known: /,
      ),
    ]);
    expect(readFileSync(out, 'utf8')).toContain('Not available: unknown aws instance type');
  });
});

describe('rmqbench report <runId> <runId>...', () => {
  const c5 = storedRun('run-c5', uniformRates([10_000, 10_000]), {
    target: 'aws',
    environment: { instanceType: 'c5.xlarge', region: 'us-east-1' },
  });
  const m5 = storedRun('run-m5', uniformRates([30_000, 30_000]), {
    target: 'aws',
    environment: { instanceType: 'm5.xlarge', region: 'us-east-1' },
  });
  const local = storedRun('run-local', uniformRates([50_000, 50_000]));

  it('compares instance types measured in different runs in one price-performance table per queue count', async () => {
    const { stdout, warnings } = await reportOverRuns([c5, m5, local], { ...base, format: 'markdown' });
    const text = stdout as string;
    for (const runId of ['run-c5', 'run-m5', 'run-local']) expect(text).toContain(`Run \`${runId}\``);
    expect(text).toContain('# Price-performance across 3 runs');
    // Both runs' clusters are candidates; the local run cannot be priced and is left out with its reason.
    expect(text).toMatch(/\| 3 × c5\.xlarge \+ lb \| run-c5 \| \$/);
    expect(text).toMatch(/\| 3 × m5\.xlarge \+ lb \| run-m5 \| \$/);
    expect(warnings).toEqual([
      expect.stringMatching(/^left out of price-performance: run run-local ran on target local/),
    ]);
    const json = JSON.parse(
      (await reportOverRuns([c5, m5], { ...base, format: 'markdown', json: true })).stdout as string,
    ) as {
      runs: { run: { runId: string } }[];
      pricePerformance: { available: boolean; tables: { queues: number; rows: string[][] }[] };
    };
    expect(json.runs.map((entry) => entry.run.runId)).toEqual(['run-c5', 'run-m5']);
    expect(json.pricePerformance.tables.map((table) => table.queues)).toEqual([1, 2]);
    // Each table's rows name candidates from both runs.
    const cells = json.pricePerformance.tables[0]!.rows.flat().join(' ');
    expect(cells).toContain('c5.xlarge');
    expect(cells).toContain('m5.xlarge');
  });

  it(
    'says why there is no price-performance when no run ' + 'can be priced, and refuses html/png for several runs',
    async () => {
      const { stdout, warnings } = await reportOverRuns([local, local], { ...base, format: 'markdown' });
      expect(stdout).toContain('Not available: run run-local ran on target local');
      expect(warnings).toEqual([expect.stringMatching(/^no price-performance section: /)]);
      await expect(reportOverRuns([c5, m5], { ...base, format: 'html' })).rejects.toThrow(
        new ReportError('a report over 2 runs is Markdown or --json; --format html takes one run id'),
      );
    },
  );

  it(
    '--json over several runs gives each run what report <runId> --json gives: fault counts, uncounted faults, ' +
      'metrics and their errors',
    async () => {
      const first = c5.repetitions[0]!;
      const fault = { action: 'kill' as const, node: 'leader' as const, nodeName: 'i-0abc', appliedAtSeconds: 10 };
      const failover = {
        fault,
        published: 905,
        confirmed: 900,
        consumed: 900,
        lostMessages: 0,
        duplicatedMessages: 2,
        unconfirmedAtFault: 5,
        recoverySeconds: 4,
        unavailableSeconds: 2,
        reconnects: 1,
        receivedPerSecond: [90, 90, 0, 0, 85],
      };
      const faulted = {
        ...c5,
        repetitions: [
          { ...first, failover, metricsError: 'metrics unavailable: AccessDenied' },
          ...c5.repetitions.slice(1),
        ],
      };
      const uncounted = {
        ...m5,
        repetitions: [
          { ...m5.repetitions[0]!, uncountedFault: { fault, reason: 'the verifier printed nothing' } },
          ...m5.repetitions.slice(1),
        ],
      };
      const { runs } = JSON.parse(
        (await reportOverRuns([faulted, uncounted], { ...base, format: 'markdown', json: true }, steadyMetrics))
          .stdout as string,
      ) as {
        runs: {
          run: { runId: string };
          failoverRepetitions?: unknown[];
          uncountedFaults?: unknown[];
          repetitionMetrics?: { scenarioId: string; repetition: number; series: { node: string; metric: string }[] }[];
          metricsErrors?: unknown[];
        }[];
      };
      expect(runs.map((entry) => entry.run.runId)).toEqual(['run-c5', 'run-m5']);
      expect(runs[0]!.failoverRepetitions).toEqual([
        { scenarioId: first.scenarioId, repetition: first.repetition, failover },
      ]);
      expect(runs[0]!.metricsErrors).toEqual([
        {
          scenarioId: first.scenarioId,
          repetition: first.repetition,
          metricsError: 'metrics unavailable: AccessDenied',
        },
      ]);
      expect(runs[0]!.uncountedFaults).toBeUndefined();
      expect(runs[1]!.uncountedFaults).toEqual([
        {
          scenarioId: m5.repetitions[0]!.scenarioId,
          repetition: m5.repetitions[0]!.repetition,
          uncountedFault: { fault, reason: 'the verifier printed nothing' },
        },
      ]);
      expect(runs[1]!.failoverRepetitions).toBeUndefined();
      // Every repetition of both runs has its series, each naming its node and metric.
      for (const entry of runs) {
        expect(entry.repetitionMetrics).toHaveLength(
          entry === runs[0] ? faulted.repetitions.length : uncounted.repetitions.length,
        );
        expect(entry.repetitionMetrics![0]!.series.map(({ node, metric }) => `${node}/${metric}`)).toEqual([
          'rmqbench1@localhost/cpuPercent',
          'load-generator/cpuPercent',
        ]);
      }
      // Without a metrics source (as before), no repetitionMetrics key at all.
      const without = JSON.parse(
        (await reportOverRuns([c5, m5], { ...base, format: 'markdown', json: true })).stdout as string,
      ) as { runs: Record<string, unknown>[] };
      expect(without.runs.map((entry) => Object.keys(entry))).toEqual([
        ['run', 'scenarios'],
        ['run', 'scenarios'],
      ]);
    },
  );
});

describe('rmqbench report --thesis-ch7', () => {
  it('--json gives Tables 7.4–7.7 as the thesis prints them', async () => {
    const { stdout } = await thesisChapter7Report({ ...base, format: 'markdown', json: true });
    const { tables } = JSON.parse(stdout as string) as {
      tables: { table: string; queues: number; rows: string[][] }[];
    };
    expect(tables.map((table) => [table.table, table.queues])).toEqual([
      ['7.4', 1],
      ['7.5', 2],
      ['7.6', 10],
      ['7.7', 200],
    ]);
    expect(tables[0]!.rows[0]).toEqual([
      'Up to 10k-20k',
      't3.xlarge (35% - 70%)',
      'c5.xlarge (18% - 36%)',
      'm5.xlarge (20% - 41%)',
    ]);
  });

  it('HTML has the four tables and the maxima chart, one point per instance type and queue count', async () => {
    const out = join(dir(), 'thesis.html');
    await thesisChapter7Report({ ...base, format: 'html', out });
    const html = readFileSync(out, 'utf8');
    expect(html.match(/<caption>Table 7\.\d: best price-performance/g)).toHaveLength(4);
    expect(html).toContain('data-mark-kind="symbol" data-expected-marks="44"');
    expect(html.match(/<g class="mark-symbol role-mark[^"]*"[^>]*>([\s\S]*?)<\/g>/)![1]!.match(/<path /g)).toHaveLength(
      44,
    );
  });
});

describe('rmqbench report with fault scenarios', () => {
  const failover = (lostMessages: number) => ({
    fault: {
      action: 'kill' as const,
      node: 'leader' as const,
      nodeName: 'rmqbench1@localhost',
      appliedAtSeconds: 10.1,
    },
    published: 4000,
    confirmed: 4000,
    consumed: 4000 - lostMessages,
    lostMessages,
    duplicatedMessages: 0,
    unconfirmedAtFault: 10,
    recoverySeconds: 1.5,
    unavailableSeconds: 0,
    reconnects: 1,
    receivedPerSecond: [200, 200],
  });
  const withFailover = () => {
    const stored = storedRun('f1', uniformRates([10_000, 10_200]));
    return {
      ...stored,
      repetitions: stored.repetitions.map((rep, index) =>
        rep.scenarioId === SCENARIOS[0] ? { ...rep, failover: failover(index) } : rep,
      ),
    };
  };

  it(
    '--json carries the verifier numbers over repetitions (scenarios[].failover) and per repetition ' +
      '(failoverRepetitions), by name',
    async () => {
      const json = JSON.parse(
        (await reportCommand(withFailover(), steadySamples, { ...base, format: 'markdown', json: true }))
          .stdout as string,
      ) as {
        scenarios: { scenarioId: string; failover?: Record<string, { n: number; mean: number; ci95: number }> }[];
        failoverRepetitions: { scenarioId: string; repetition: number; failover: { lostMessages: number } }[];
      };
      const first = json.scenarios.find((scenario) => scenario.scenarioId === SCENARIOS[0])!;
      expect(Object.keys(first.failover!)).toEqual([
        'lostMessages',
        'duplicatedMessages',
        'unconfirmedAtFault',
        'recoverySeconds',
        'unavailableSeconds',
        'reconnects',
      ]);
      expect(first.failover!.lostMessages).toMatchObject({ n: 2, mean: 0.5 });
      expect(json.scenarios.find((scenario) => scenario.scenarioId === SCENARIOS[1])!.failover).toBeUndefined();
      expect(
        json.failoverRepetitions.map((rep) => [rep.scenarioId, rep.repetition, rep.failover.lostMessages]),
      ).toEqual([
        [SCENARIOS[0], 1, 0],
        [SCENARIOS[0], 2, 1],
      ]);
    },
  );

  it('the HTML report has the failover section with both tables', async () => {
    const out = join(dir(), 'report.html');
    await reportCommand(withFailover(), steadySamples, { ...base, format: 'html', out });
    const html = readFileSync(out, 'utf8');
    expect(html).toContain('Failover (lost-message verifier)');
    expect(html).toContain('kill rmqbench1@localhost (leader) at 10.1 s');
  });
});
