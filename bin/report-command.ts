import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  CHART_IDS,
  cpuOverTimeChart,
  latencyPercentilesChart,
  latencyVsRateChart,
  throughputOverTimeChart,
  throughputPerRepetitionChart,
  throughputVsQueuesChart,
  type ChartDefinition,
  type ChartId,
  type QueueThroughputPoint,
  type RepetitionMetricsOf,
  type RepetitionSamples,
} from '../core/report/charts';
import type { RepetitionMetrics } from '../core/metrics/host-metrics';
import type { PriceCatalog } from '../core/cost/cost-catalog';
import { renderHtmlReport, runReportDocument, thesisChapter7Document } from '../core/report/html-report';
import { loadGeneratorsItems } from '../core/report/load-generators-report';
import {
  aggregateRun,
  capacityRows,
  loadBalancerDeltas,
  pricePerformanceAcrossRuns,
  queueingLines,
  queueThroughputPoints,
  renderMarkdownReport,
  runPricePerformance,
} from '../core/report/report';
import type { PerSecondSample, ScenarioAggregate } from '../core/results/result-model';
import { THESIS_MAXIMA, THESIS_TABLES, thesisChapter7Tables } from '../core/report/thesis-ch7';
import type { StoredRun } from '../store/results-store';
import { renderVegaLiteToSvg, svgToPng } from './render-charts';

export const REPORT_FORMATS = ['markdown', 'html', 'png'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export interface ReportCommandOptions {
  readonly format: ReportFormat;
  readonly json: boolean;
  /**
   * File to write (html, png); `-` writes to stdout. @default - `<runId>.html` / `<runId>-<chart>.png` in the working
   * directory
   */
  readonly out?: string;
  /** The chart a png shows. @default 'throughput-per-repetition' */
  readonly chart?: ChartId;
  readonly catalog: PriceCatalog;
  /** @default - the current time */
  readonly now?: Date;
}

export interface ReportCommandResult {
  /** What to print on stdout. */
  readonly stdout: string | Buffer;
  /** One-line warnings for stderr. */
  readonly warnings: readonly string[];
  readonly files: readonly string[];
}

/** The report is asked for in a way that cannot work; the message says what would. */
export class ReportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReportError';
  }
}

export function isChartId(value: string): value is ChartId {
  return (CHART_IDS as readonly string[]).includes(value);
}

type SamplesSource = (runId: string, scenarioId: string, repetition: number) => Promise<PerSecondSample[]>;
/** A repetition's broker and host metrics (ResultsStore.getMetrics); undefined when none were stored. */
export type MetricsSource = (
  runId: string,
  scenarioId: string,
  repetition: number,
) => Promise<RepetitionMetrics | undefined>;

const NO_METRICS: MetricsSource = async () => undefined;

/** Every repetition's stored metrics, in the run's order (repetitions without any are left out). */
export async function metricsOfRun(stored: StoredRun, getMetrics: MetricsSource): Promise<RepetitionMetricsOf[]> {
  const found: RepetitionMetricsOf[] = [];
  for (const rep of stored.repetitions) {
    const metrics = await getMetrics(stored.run.runId, rep.scenarioId, rep.repetition);
    if (metrics) found.push({ scenarioId: rep.scenarioId, repetition: rep.repetition, metrics });
  }
  return found;
}

/** The faults a cloud target applied without the verifier, per repetition. */
function uncountedFaultsOf(repetitions: StoredRun['repetitions']) {
  return repetitions
    .filter((rep) => rep.uncountedFault !== undefined)
    .map(({ scenarioId, repetition, uncountedFault }) => ({ scenarioId, repetition, uncountedFault: uncountedFault! }));
}

/**
 * A run as `report --json` shows it, alone or beside other runs: the run, its scenarios over repetitions, and per
 * repetition the verifier's counts of fault scenarios, the faults applied without the verifier (reported as not
 * counted, never as zeros), each stored metric series (naming its node and metric) and why metrics are missing or
 * incomplete, where known. Keys without entries are left out.
 */
async function runJson(stored: StoredRun, aggregates: ReturnType<typeof aggregateRun>, getMetrics: MetricsSource) {
  const { run, repetitions } = stored;
  const failoverRepetitions = repetitions
    .filter((rep) => rep.failover !== undefined)
    .map(({ scenarioId, repetition, failover }) => ({ scenarioId, repetition, failover: failover! }));
  const uncountedFaults = uncountedFaultsOf(repetitions);
  const metrics = await metricsOfRun(stored, getMetrics);
  const metricsErrors = repetitions
    .filter((rep) => rep.metricsError !== undefined)
    .map(({ scenarioId, repetition, metricsError }) => ({ scenarioId, repetition, metricsError: metricsError! }));
  return {
    run,
    scenarios: aggregatesForJson(aggregates),
    ...(failoverRepetitions.length > 0 ? { failoverRepetitions } : {}),
    ...(uncountedFaults.length > 0 ? { uncountedFaults } : {}),
    ...(metrics.length > 0
      ? {
          repetitionMetrics: metrics.map(({ scenarioId, repetition, metrics: { source, series } }) => ({
            scenarioId,
            repetition,
            source,
            series,
          })),
        }
      : {}),
    ...(metricsErrors.length > 0 ? { metricsErrors } : {}),
  };
}

/** `rmqbench report <runId> [--format markdown|html|png] [--out FILE] [--chart ID] [--json]`. */
export async function reportCommand(
  stored: StoredRun,
  getSamples: SamplesSource,
  options: ReportCommandOptions,
  getMetrics: MetricsSource = NO_METRICS,
): Promise<ReportCommandResult> {
  const { run, repetitions } = stored;
  const aggregates = aggregateRun(run, repetitions);
  const deltas = loadBalancerDeltas(run, aggregates);
  const pricePerformance = runPricePerformance(run, aggregates, options.catalog);
  const data = {
    ...(await runJson(stored, aggregates, options.json ? getMetrics : NO_METRICS)),
    loadBalancerDeltas: deltas,
    pricePerformance,
  };
  const context: ReportContext = {
    stored,
    aggregates,
    deltas,
    pricePerformance,
    data,
    getSamples,
    getMetrics,
    options,
  };
  if (options.format === 'markdown') return markdownReport(context);
  if (options.format === 'png') return pngChart(context);
  return htmlReport(context);
}

/** What every output format of `report` starts from. */
interface ReportContext {
  readonly stored: StoredRun;
  readonly aggregates: ReturnType<typeof aggregateRun>;
  readonly deltas: ReturnType<typeof loadBalancerDeltas>;
  readonly pricePerformance: ReturnType<typeof runPricePerformance>;
  readonly data: Record<string, unknown>;
  readonly getSamples: SamplesSource;
  readonly getMetrics: MetricsSource;
  readonly options: ReportCommandOptions;
}

const nothingToChart = ({ run, repetitions }: StoredRun) =>
  `run ${run.runId} (plan "${run.planName}", status ${run.status}) has no successful repetition ` +
  `(${repetitions.length} failed or missing)`;

/** `--format markdown`: to stdout (or the JSON data with --json), or to --out. */
function markdownReport({ stored, pricePerformance, data, options }: ReportContext): ReportCommandResult {
  const { run, repetitions } = stored;
  if (options.json || options.out === undefined || options.out === '-') {
    return {
      stdout: options.json ? json(data) : renderMarkdownReport(run, repetitions, pricePerformance),
      warnings: [],
      files: [],
    };
  }
  writeFileSync(options.out, renderMarkdownReport(run, repetitions, pricePerformance));
  return { stdout: `wrote ${resolve(options.out)}\n`, warnings: [], files: [resolve(options.out)] };
}

/** `--format png`: one chart (--chart, default the throughput per repetition) rendered to PNG. */
async function pngChart(context: ReportContext): Promise<ReportCommandResult> {
  const { stored, aggregates, data, getSamples, getMetrics, options } = context;
  const { run, repetitions } = stored;
  const chartId = options.chart ?? 'throughput-per-repetition';
  if (!repetitions.some((rep) => rep.status === 'SUCCEEDED'))
    throw new ReportError(`${nothingToChart(stored)}: there is no chart to draw; see rmqbench show ${run.runId}`);
  const { charts, omitted } = await chartsFor(stored, aggregates, getSamples, getMetrics);
  const chart = charts.find((candidate) => candidate.id === chartId);
  if (chart === undefined) {
    const why = omitted.find((candidate) => candidate.id === chartId)?.reason ?? 'no data';
    throw new ReportError(`run ${run.runId} has no chart "${chartId}": ${why}; try --chart throughput-per-repetition`);
  }
  const [svg] = await renderVegaLiteToSvg([chart.spec]);
  const png = svgToPng(svg!);
  const out = options.out ?? `${run.runId}-${chartId}.png`;
  if (out === '-') return { stdout: png, warnings: [], files: [] };
  writeFileSync(out, png);
  const file = resolve(out);
  return {
    stdout: options.json ? json({ ...data, files: [file] }) : `wrote ${file} (${chartId}, ${png.length} bytes)\n`,
    warnings: [],
    files: [file],
  };
}

/** `--format html` (the default): the whole report with its charts, and warnings for what it leaves out. */
async function htmlReport(context: ReportContext): Promise<ReportCommandResult> {
  const { stored, aggregates, deltas, pricePerformance, data, getSamples, getMetrics, options } = context;
  const { run, repetitions } = stored;
  const succeeded = repetitions.some((rep) => rep.status === 'SUCCEEDED');
  const warnings: string[] = [];
  const { charts, omitted } = succeeded
    ? await chartsFor(stored, aggregates, getSamples, getMetrics)
    : { charts: [], omitted: [] };
  if (!succeeded) warnings.push(`${nothingToChart(stored)}: the report has no charts`);
  for (const { id, reason } of omitted) warnings.push(`chart ${id} left out: ${reason}`);
  if (!pricePerformance.available && run.target !== 'local')
    warnings.push(`no price-performance section: ${pricePerformance.reason}`);
  const svgs = await renderVegaLiteToSvg(charts.map((chart) => chart.spec));
  const html = renderHtmlReport(
    runReportDocument({
      run,
      aggregates,
      failoverRepetitions: repetitions.filter((rep) => rep.failover !== undefined),
      uncountedFaults: uncountedFaultsOf(repetitions),
      failedRepetitions: repetitions.filter((rep) => rep.status === 'FAILED'),
      queueingNotes: queueingLines(repetitions),
      loadGenerators: loadGeneratorsItems(repetitions),
      charts: charts.map((chart, index) => ({
        chart: { id: chart.id, title: chart.title, caption: chart.caption, marks: chart.marks },
        svg: svgs[index]!,
      })),
      omittedCharts: omitted,
      loadBalancerDeltas: deltas,
      pricePerformance,
      generatedAt: (options.now ?? new Date()).toISOString(),
    }),
  );
  const out = options.out ?? `${run.runId}.html`;
  if (out === '-') return { stdout: html, warnings, files: [] };
  writeFileSync(out, html);
  const file = resolve(out);
  const summary =
    `wrote ${file} (${charts.length} chart${charts.length === 1 ? '' : 's'}: ` +
    `${charts.map((chart) => chart.id).join(', ') || 'none'})\n`;
  return {
    stdout: options.json
      ? json({ ...data, files: [file], charts: charts.map(({ id, marks }) => ({ id, marks })) })
      : summary,
    warnings,
    files: [file],
  };
}

/** A chart the report leaves out, with the one-line reason. */
export interface OmittedChart {
  readonly id: ChartId;
  readonly reason: string;
}

/** The charts that have something to show for this run, in report order, and why the others are left out. */
export async function chartsFor(
  stored: StoredRun,
  aggregates: ReturnType<typeof aggregateRun>,
  getSamples: SamplesSource,
  getMetrics: MetricsSource = NO_METRICS,
): Promise<{ charts: ChartDefinition[]; omitted: OmittedChart[] }> {
  const { run, repetitions } = stored;
  const series: RepetitionSamples[] = [];
  const metrics: RepetitionMetricsOf[] = [];
  for (const rep of repetitions.filter((candidate) => candidate.status === 'SUCCEEDED')) {
    series.push({
      scenarioId: rep.scenarioId,
      repetition: rep.repetition,
      samples: await getSamples(run.runId, rep.scenarioId, rep.repetition),
    });
    const stored = await getMetrics(run.runId, rep.scenarioId, rep.repetition);
    if (stored) metrics.push({ scenarioId: rep.scenarioId, repetition: rep.repetition, metrics: stored });
  }
  const queuePoints = queueThroughputPoints([{ run, aggregates }]);
  // Each chart with why it would be empty, and (throughput vs queues) why it would compare nothing although it has
  // points.
  const candidates: { chart: ChartDefinition; emptyBecause: string; comparesNothingBecause?: string }[] = [
    {
      chart: throughputPerRepetitionChart(
        run.scenarioIds,
        repetitions,
        new Map(
          aggregates.flatMap((aggregate) =>
            aggregate.messageSizeBytes === undefined
              ? []
              : [[aggregate.scenarioId, aggregate.messageSizeBytes] as const],
          ),
        ),
      ),
      emptyBecause: 'no data',
    },
    { chart: throughputOverTimeChart(series), emptyBecause: 'no per-second samples were stored' },
    {
      chart: throughputVsQueuesChart(queuePoints),
      emptyBecause: 'no scenario has a throughput to plot',
      comparesNothingBecause: nothingToCompareAcrossQueueCounts(queuePoints),
    },
    { chart: latencyPercentilesChart(aggregates), emptyBecause: 'no consumer latency was measured' },
    {
      chart: cpuOverTimeChart(metrics),
      emptyBecause:
        'no CPU metrics were stored with the repetitions (a run from before metrics, or a target that did not ' +
        'collect them)',
    },
    // Only a run with capacity workloads has a latency-against-rate curve (others are not told it is missing).
    ...(repetitions.some((rep) => rep.capacity !== undefined)
      ? [
          {
            chart: latencyVsRateChart(
              repetitions,
              capacityRows(aggregates).map(({ scenarioId, capacity }) => ({
                scenarioId,
                ...(capacity.rateMsgPerSecond ? { rate: capacity.rateMsgPerSecond.mean } : {}),
              })),
            ),
            emptyBecause: 'no capacity step measured a consumer latency',
          },
        ]
      : []),
  ];
  const charts: ChartDefinition[] = [];
  const omitted: OmittedChart[] = [];
  for (const { chart, emptyBecause, comparesNothingBecause } of candidates) {
    const reason = chart.marks.count === 0 ? emptyBecause : comparesNothingBecause;
    if (reason === undefined) charts.push(chart);
    else omitted.push({ id: chart.id, reason });
  }
  return { charts, omitted };
}

/**
 * Why a throughput-vs-queues chart would compare nothing (no line has two queue counts), or undefined when it compares
 * something.
 */
function nothingToCompareAcrossQueueCounts(points: readonly QueueThroughputPoint[]): string | undefined {
  if (points.length === 0) return 'no scenario has a throughput to plot';
  const countsPerSeries = new Map<string, Set<number>>();
  for (const point of points)
    countsPerSeries.set(point.series, (countsPerSeries.get(point.series) ?? new Set()).add(point.queues));
  if ([...countsPerSeries.values()].some((counts) => counts.size > 1)) return undefined;
  const counts = [...new Set(points.map((point) => point.queues))].sort((a, b) => a - b);
  return `every scenario of a cluster uses the same queue count (${counts.join(', ')}), so there is no line to draw`;
}

/**
 * Scenario aggregates as `report --json` prints them: latency fields carry their unit in their name
 * (PerfTest measures microseconds; the Markdown and HTML reports show milliseconds).
 */
export function aggregatesForJson(aggregates: readonly ScenarioAggregate[]) {
  return aggregates.map(({ consumerLatency, confirmLatency, ...rest }) => ({
    ...rest,
    ...(consumerLatency ? { consumerLatencyMicroseconds: consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatencyMicroseconds: confirmLatency } : {}),
  }));
}

/**
 * `rmqbench report --thesis-ch7 [--format markdown|html|png] [--out FILE] [--json]`: no run needed, no store opened.
 */
export async function thesisChapter7Report(options: Omit<ReportCommandOptions, 'chart'>): Promise<ReportCommandResult> {
  const tables = thesisChapter7Tables(options.catalog);
  if (options.json) return { stdout: json({ tables }), warnings: [], files: [] };
  if (options.format === 'markdown') {
    const lines = ['# Price-performance: thesis chapter 7 reproduced', ''];
    for (const table of tables) {
      lines.push(
        `## Table ${table.table}: ${table.queues} queue${table.queues === 1 ? '' : 's'}`,
        '',
        '| throughput | first choice (capacity) | second | third |',
        '|---|---|---|---|',
      );
      for (const row of table.rows) lines.push(`| ${row.join(' | ')} |`);
      lines.push('');
    }
    return { stdout: lines.join('\n'), warnings: [], files: [] };
  }
  const chart = throughputVsQueuesChart(
    THESIS_TABLES.flatMap(({ queues }) =>
      Object.entries(THESIS_MAXIMA[queues]).map(([instanceType, throughput]) => ({
        series: instanceType,
        queues,
        throughput,
        scenarioId: `thesis ${instanceType} ${queues} queues`,
      })),
    ),
  );
  const [svg] = await renderVegaLiteToSvg([chart.spec]);
  const out = options.out ?? (options.format === 'png' ? 'thesis-ch7-throughput-vs-queues.png' : 'thesis-ch7.html');
  const content =
    options.format === 'png'
      ? svgToPng(svg!)
      : renderHtmlReport(
          thesisChapter7Document({
            tables,
            chart: {
              chart: {
                id: chart.id,
                title: chart.title,
                caption: 'Maximum throughput per instance type at 1, 2, 10 and 200 queues, as used for Tables 7.4–7.7.',
                marks: chart.marks,
              },
              svg: svg!,
            },
            generatedAt: (options.now ?? new Date()).toISOString(),
          }),
        );
  if (out === '-') return { stdout: content, warnings: [], files: [] };
  writeFileSync(out, content);
  return { stdout: `wrote ${resolve(out)}\n`, warnings: [], files: [resolve(out)] };
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * `rmqbench report <runId> <runId>...`: each run's report, then price-performance across them (Tables 7.4–7.7 from
 * instance types measured in different runs, as the thesis's chapter 7 compares them). Markdown or --json: the HTML
 * and PNG reports draw one run's charts.
 */
export async function reportOverRuns(
  stored: readonly StoredRun[],
  options: Pick<ReportCommandOptions, 'format' | 'json' | 'catalog' | 'out'>,
  getMetrics: MetricsSource = NO_METRICS,
): Promise<ReportCommandResult> {
  if (options.format !== 'markdown')
    throw new ReportError(
      `a report over ${stored.length} runs is Markdown or --json; --format ${options.format} takes one run id`,
    );
  const runs = stored.map(({ run, repetitions }) => ({ run, aggregates: aggregateRun(run, repetitions) }));
  const pricePerformance = pricePerformanceAcrossRuns(runs, options.catalog);
  const warnings = pricePerformance.available
    ? pricePerformance.leftOut.map((reason) => `left out of price-performance: ${reason}`)
    : [`no price-performance section: ${pricePerformance.reason}`];
  if (options.json) {
    // Each run as `report <runId> --json` shows it (fault counts, metrics and their errors), then price-performance
    // across them.
    const runsJson = [];
    for (const [index, { aggregates }] of runs.entries())
      runsJson.push(await runJson(stored[index]!, aggregates, getMetrics));
    return { stdout: json({ runs: runsJson, pricePerformance }), warnings, files: [] };
  }
  const lines = stored.map(({ run, repetitions }) => renderMarkdownReport(run, repetitions).trimEnd());
  lines.push('', `# Price-performance across ${stored.length} runs`, '');
  if (!pricePerformance.available) lines.push(`Not available: ${pricePerformance.reason}.`);
  else {
    lines.push('| cluster | run | per hour | per month (730 h) |', '|---|---|---|---|');
    for (const cost of pricePerformance.costs)
      lines.push(
        `| ${cost.description} | ${cost.runId} | $${cost.hourlyUsd.toFixed(3)} | $${cost.monthlyUsd.toFixed(0)} |`,
      );
    for (const table of pricePerformance.tables) {
      lines.push(
        '',
        `## ${table.queues} queue${table.queues === 1 ? '' : 's'}`,
        '',
        '| throughput | first choice (capacity) | second | third |',
        '|---|---|---|---|',
      );
      for (const row of table.rows) lines.push(`| ${row.join(' | ')} |`);
    }
  }
  const markdown = `${lines.join('\n')}\n`;
  if (options.out === undefined || options.out === '-') return { stdout: markdown, warnings, files: [] };
  writeFileSync(options.out, markdown);
  return { stdout: `wrote ${resolve(options.out)}\n`, warnings, files: [resolve(options.out)] };
}
