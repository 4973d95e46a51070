import { LOAD_GENERATOR_NODE, type RepetitionMetrics } from '../metrics/host-metrics';
import type { StoredRepetition } from '../results/result-items';
import type { CapacityResult } from '../capacity/capacity-verdict';
import {
  megabytesPerSecond,
  type LatencyPercentiles,
  type PerSecondSample,
  type ScenarioAggregate,
} from '../results/result-model';

/**
 * Vega-Lite specifications for the report's charts, built from stored results. Pure: rendering them
 * (vega in a child process, see bin/render-charts.ts) is somebody else's job.
 *
 * Every chart says how many data marks it draws (`marks`), so a test can check the rendered SVG
 * against the data rather than against a snapshot of pixels.
 */

export const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';

/** A Vega-Lite top-level specification (kept loose: the renderer validates it). */
export type VegaLiteSpec = { readonly $schema: string } & Readonly<Record<string, unknown>>;

export type ChartId =
  | 'throughput-per-repetition'
  | 'throughput-over-time'
  | 'throughput-vs-queues'
  | 'latency-percentiles'
  | 'cpu-over-time'
  | 'latency-vs-rate';

export const CHART_IDS: readonly ChartId[] = [
  'throughput-per-repetition',
  'throughput-over-time',
  'throughput-vs-queues',
  'latency-percentiles',
  'cpu-over-time',
  'latency-vs-rate',
];

/** The data marks a chart draws: vega renders each as a `<path>` inside `<g class="mark-<kind> role-mark">`. */
export interface ExpectedMarks {
  readonly kind: 'rect' | 'line' | 'symbol';
  readonly count: number;
}

export interface ChartDefinition {
  readonly id: ChartId;
  readonly title: string;
  /** One sentence under the chart: what is plotted and how to read it. */
  readonly caption: string;
  readonly spec: VegaLiteSpec;
  readonly marks: ExpectedMarks;
}

const WIDTH = 640;
const HEIGHT = 280;
const FONT = 'DejaVu Sans, Liberation Sans, Arial, sans-serif';
const CONFIG = {
  font: FONT,
  view: { stroke: null },
  axis: { labelFontSize: 11, titleFontSize: 12, labelLimit: 220 },
  legend: { labelLimit: 320 },
};

function spec(body: Record<string, unknown>): VegaLiteSpec {
  return { $schema: VEGA_LITE_SCHEMA, width: WIDTH, height: HEIGHT, background: 'white', config: CONFIG, ...body };
}

/**
 * Mean receive and send rate of every successful repetition, grouped by scenario (the thesis's
 * figures 4.1–5.12: one bar per test run). A failed repetition has no bar; its scenario keeps its place.
 */
export function throughputPerRepetitionChart(
  scenarioIds: readonly string[],
  repetitions: readonly StoredRepetition[],
  messageSizes: ReadonlyMap<string, number> = new Map(),
): ChartDefinition {
  const values = repetitions
    .filter((rep) => rep.status === 'SUCCEEDED' && rep.result !== undefined)
    .map((rep) => {
      const { receiveRateAvg, sendRateAvg } = rep.result!.summary;
      const size = messageSizes.get(rep.scenarioId);
      const mb = (rate: number) => Number(megabytesPerSecond(rate, size!).toPrecision(3));
      return {
        scenario: rep.scenarioId,
        repetition: rep.repetition,
        receiveRate: Math.round(receiveRateAvg),
        sendRate: Math.round(sendRateAvg),
        ...(size === undefined ? {} : { receiveMBps: mb(receiveRateAvg), sendMBps: mb(sendRateAvg) }),
      };
    })
    .sort((a, b) => scenarioIds.indexOf(a.scenario) - scenarioIds.indexOf(b.scenario) || a.repetition - b.repetition);
  return {
    id: 'throughput-per-repetition',
    title: 'Throughput per repetition',
    caption:
      'Average receive rate of each successful repetition (PerfTest summary), ' +
      'one bar per repetition, grouped by scenario.',
    marks: { kind: 'rect', count: values.length },
    spec: spec({
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: {
          field: 'scenario',
          type: 'nominal',
          sort: [...scenarioIds],
          title: 'scenario',
          axis: { labelAngle: -25, labelLimit: 320 },
        },
        xOffset: { field: 'repetition', type: 'ordinal' },
        y: { field: 'receiveRate', type: 'quantitative', title: 'receive rate (msg/s)' },
        color: { field: 'repetition', type: 'ordinal', title: 'repetition', scale: { scheme: 'tableau10' } },
        tooltip: [
          { field: 'scenario', type: 'nominal' },
          { field: 'repetition', type: 'ordinal' },
          { field: 'receiveRate', type: 'quantitative', title: 'receive msg/s', format: ',' },
          { field: 'sendRate', type: 'quantitative', title: 'send msg/s', format: ',' },
          ...(messageSizes.size > 0
            ? [
                { field: 'receiveMBps', type: 'quantitative', title: 'receive MB/s' },
                { field: 'sendMBps', type: 'quantitative', title: 'send MB/s' },
              ]
            : []),
        ],
      },
    }),
  };
}

/** The per-second samples of one repetition, as the store returns them. */
export interface RepetitionSamples {
  readonly scenarioId: string;
  readonly repetition: number;
  readonly samples: readonly PerSecondSample[];
}

/** Messages received per second over the run time, one line per repetition, colored by scenario. */
export function throughputOverTimeChart(series: readonly RepetitionSamples[]): ChartDefinition {
  const withData = series.filter((one) => one.samples.length > 0);
  const values = withData.flatMap((one) =>
    one.samples.map((sample) => ({
      scenario: one.scenarioId,
      repetition: one.repetition,
      series: `${one.scenarioId} #${one.repetition}`,
      time: sample.time,
      received: sample.received,
    })),
  );
  return {
    id: 'throughput-over-time',
    title: 'Throughput over time',
    caption:
      'Messages received per second during each successful repetition ' +
      '(PerfTest samples, one per second, joined by straight segments); one line per repetition.',
    marks: { kind: 'line', count: withData.length },
    spec: spec({
      data: { values },
      // Straight segments between the measured samples: a smoothed curve would invent values between them.
      mark: { type: 'line', interpolate: 'linear', tooltip: true },
      encoding: {
        x: { field: 'time', type: 'quantitative', title: 'time since start (s)' },
        y: { field: 'received', type: 'quantitative', title: 'received (msg/s)' },
        color: { field: 'scenario', type: 'nominal', title: 'scenario', scale: { scheme: 'tableau10' } },
        detail: { field: 'series', type: 'nominal' },
        strokeDash: { field: 'repetition', type: 'ordinal', title: 'repetition' },
      },
    }),
  };
}

/** One point of figures 6.1–6.4: a scenario's mean throughput at its queue count. */
export interface QueueThroughputPoint {
  /** The line it belongs to: the instance type (and cluster, when a run has several). */
  readonly series: string;
  readonly queues: number;
  /** Mean receive rate over the repetitions, msg/s. */
  readonly throughput: number;
  readonly scenarioId: string;
}

/** Throughput against the number of queues, one line per instance type (figures 6.1–6.4). */
export function throughputVsQueuesChart(points: readonly QueueThroughputPoint[]): ChartDefinition {
  const values = [...points]
    .sort((a, b) => a.series.localeCompare(b.series) || a.queues - b.queues)
    .map((point) => ({ ...point, throughput: Math.round(point.throughput) }));
  const queueCounts = [...new Set(values.map((point) => point.queues))].sort((a, b) => a - b);
  // tableau10 repeats colors beyond ten lines (the thesis compares eleven instance types).
  const scheme = new Set(values.map((point) => point.series)).size > 10 ? 'category20' : 'tableau10';
  return {
    id: 'throughput-vs-queues',
    title: 'Throughput vs number of queues',
    caption: 'Mean receive rate over the repetitions at each queue count, one line per instance type (and cluster).',
    marks: { kind: 'symbol', count: values.length },
    spec: spec({
      data: { values },
      mark: { type: 'line', point: { size: 60, filled: true }, tooltip: true },
      encoding: {
        // A log scale keeps 1, 2, 10 and 200 queues (Table 6.1) readable on one axis.
        x: {
          field: 'queues',
          type: 'quantitative',
          title: 'queues',
          scale: {
            type: queueCounts.length > 1 && queueCounts.at(-1)! / queueCounts[0]! >= 10 ? 'log' : 'linear',
            zero: false,
            nice: false,
          },
          axis: { values: queueCounts, format: 'd' },
        },
        y: { field: 'throughput', type: 'quantitative', title: 'receive rate (msg/s)' },
        color: { field: 'series', type: 'nominal', title: 'instance type', scale: { scheme } },
        tooltip: [
          { field: 'series', type: 'nominal', title: 'instance type' },
          { field: 'scenarioId', type: 'nominal', title: 'scenario' },
          { field: 'queues', type: 'quantitative' },
          { field: 'throughput', type: 'quantitative', title: 'msg/s', format: ',' },
        ],
      },
    }),
  };
}

const PERCENTILES: readonly { key: keyof LatencyPercentiles; label: string }[] = [
  { key: 'min', label: 'min' },
  { key: 'median', label: 'median' },
  { key: 'p75', label: '75th' },
  { key: 'p95', label: '95th' },
  { key: 'p99', label: '99th' },
];

/** PerfTest reports latency in whole microseconds. */
const LOG_AXIS_FLOOR_MS = 0.001;

/** The largest power of ten strictly below the smallest value (1 for an empty chart). */
function logAxisMinimum(values: readonly number[]): number {
  if (values.length === 0) return 1;
  return Number(`1e${Math.ceil(Math.log10(Math.min(...values))) - 1}`);
}

/** Consumer latency percentiles (median over repetitions) per scenario, in milliseconds, on a log axis. */
export function latencyPercentilesChart(aggregates: readonly ScenarioAggregate[]): ChartDefinition {
  const withLatency = aggregates.filter((aggregate) => aggregate.consumerLatency !== undefined);
  const values = withLatency.flatMap((aggregate) =>
    // A percentile the tool did not report (Kafka's: min, 75th) has no bar.
    PERCENTILES.flatMap(({ key, label }) => {
      const us = aggregate.consumerLatency![key];
      if (us === undefined) return [];
      return [
        {
          scenario: aggregate.scenarioId,
          percentile: label,
          latencyMs: Number((us / 1000).toFixed(3)),
          // A log axis has no 0: a bar below PerfTest's 1 µs resolution is drawn at 1 µs (the tooltip keeps the
          // measured value).
          barMs: Math.max(Number((us / 1000).toFixed(3)), LOG_AXIS_FLOOR_MS),
        },
      ];
    }),
  );
  const axisMinimum = logAxisMinimum(values.map((row) => row.barMs));
  return {
    id: 'latency-percentiles',
    title: 'Consumer latency percentiles',
    caption:
      'Consumer latency (publish to consume) per scenario: ' +
      'each percentile is the median over the successful repetitions.',
    marks: { kind: 'rect', count: values.length },
    spec: spec({
      data: { values },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: { field: 'percentile', type: 'ordinal', sort: PERCENTILES.map((p) => p.label), title: 'percentile' },
        xOffset: { field: 'scenario', type: 'nominal', sort: withLatency.map((a) => a.scenarioId) },
        // A log axis keeps a 0.2 ms scenario readable next to a 6.5 s one (a linear axis flattens it to nothing).
        // On a log axis vega-lite gives a bar no baseline (there is no 0): each bar is drawn from the axis minimum,
        // which sits a power
        // of ten below the smallest bar so that it too has a height.
        y: {
          field: 'barMs',
          type: 'quantitative',
          title: 'latency (ms, log scale)',
          scale: { type: 'log', domainMin: axisMinimum },
        },
        y2: { datum: axisMinimum },
        color: {
          field: 'scenario',
          type: 'nominal',
          title: 'scenario',
          sort: withLatency.map((a) => a.scenarioId),
          scale: { scheme: 'tableau10' },
        },
        tooltip: [
          { field: 'scenario', type: 'nominal' },
          { field: 'percentile', type: 'ordinal' },
          { field: 'latencyMs', type: 'quantitative', title: 'ms', format: '.2f' },
        ],
      },
    }),
  };
}

/** The broker and host metrics of one repetition, as the store returns them. */
export interface RepetitionMetricsOf {
  readonly scenarioId: string;
  readonly repetition: number;
  readonly metrics: RepetitionMetrics;
}

/**
 * CPU per node and of the load generator over the run time: one panel per repetition (a chart per repetition,
 * stacked, sharing the axes), one line per node. cpuPercent is a share of all the host's CPUs (100 = every core).
 */
export function cpuOverTimeChart(repetitions: readonly RepetitionMetricsOf[]): ChartDefinition {
  const lines = repetitions.flatMap((one) =>
    one.metrics.series
      .filter((series) => series.metric === 'cpuPercent' && series.points.length > 0)
      // The load generator last, so that it takes the same color in every panel.
      .sort(
        (a, b) =>
          Number(a.node === LOAD_GENERATOR_NODE) - Number(b.node === LOAD_GENERATOR_NODE) ||
          a.node.localeCompare(b.node),
      )
      .map((series) => ({ one, series })),
  );
  const values = lines.flatMap(({ one, series }) =>
    series.points.map(([time, cpu]) => ({
      panel: `${one.scenarioId} #${one.repetition}`,
      node: series.node,
      time,
      cpuPercent: Number(cpu.toFixed(1)),
    })),
  );
  const panels = [...new Set(values.map((value) => value.panel))];
  const nodes = [...new Set(lines.map(({ series }) => series.node))].sort(
    (a, b) => Number(a === LOAD_GENERATOR_NODE) - Number(b === LOAD_GENERATOR_NODE) || a.localeCompare(b),
  );
  return {
    id: 'cpu-over-time',
    title: 'CPU per node over time',
    caption:
      'CPU of each broker node and of the load generator in each second of each repetition ' +
      '(one panel per repetition), as a share of all the CPUs of its host: 100 % = every core busy.',
    marks: { kind: 'line', count: lines.length },
    // A faceted chart: width and height are those of each panel, not of the whole figure.
    spec: {
      $schema: VEGA_LITE_SCHEMA,
      background: 'white',
      config: CONFIG,
      data: { values },
      facet: {
        row: {
          field: 'panel',
          type: 'nominal',
          sort: panels,
          title: null,
          header: { labelAngle: 0, labelAlign: 'left', labelAnchor: 'start', labelOrient: 'top', labelFontSize: 12 },
        },
      },
      spec: {
        width: WIDTH,
        height: 140,
        mark: { type: 'line', interpolate: 'linear', tooltip: true },
        encoding: {
          x: { field: 'time', type: 'quantitative', title: 'time since start (s)' },
          // 0..100 % of the host, widened when a second measured a little more (sampling jitter): no line leaves its
          // panel.
          y: {
            field: 'cpuPercent',
            type: 'quantitative',
            title: 'CPU (% of host)',
            scale: { domain: [0, Math.max(100, Math.ceil(Math.max(0, ...values.map((value) => value.cpuPercent))))] },
          },
          color: { field: 'node', type: 'nominal', title: 'node', sort: nodes, scale: { scheme: 'tableau10' } },
        },
      },
    },
  };
}

/** A capacity repetition as the store returns it. */
export interface CapacityRepetition {
  readonly scenarioId: string;
  readonly repetition: number;
  readonly capacity?: CapacityResult;
}

/**
 * The "hockey stick" of capacity workloads: consumer latency p50 and p99 of every step against its offered rate (both
 * log scales), one line per scenario, repetition and percentile; the p99 bound as a horizontal rule and each
 * scenario's capacity (its repetitions' mean) as a vertical one. One point per step and percentile.
 */
export function latencyVsRateChart(
  repetitions: readonly CapacityRepetition[],
  capacities: readonly { readonly scenarioId: string; readonly rate?: number }[] = [],
): ChartDefinition {
  const judged = repetitions.filter(
    (rep): rep is CapacityRepetition & { capacity: CapacityResult } => rep.capacity !== undefined,
  );
  const values = stepLatencyPoints(judged);
  const bounds = [...new Set(judged.map((rep) => rep.capacity.p99BoundMs))].map((bound) => ({ bound }));
  const chosen = capacities.flatMap((capacity) =>
    capacity.rate === undefined ? [] : [{ scenario: capacity.scenarioId, rate: capacity.rate }],
  );
  return {
    id: 'latency-vs-rate',
    title: 'Latency against offered rate',
    caption:
      'Consumer latency p50 (solid) and p99 (dashed) of each capacity step against its publish rate; ' +
      "the dotted horizontal line is the p99 bound, the vertical lines each scenario's capacity. " +
      'Hollow points did not hold.',
    marks: { kind: 'symbol', count: values.length },
    spec: spec({ layer: latencyVsRateLayers(values, bounds, chosen) }),
  };
}

/** One point per capacity step and percentile (p50, p99), latencies floored for the log axis. */
function stepLatencyPoints(judged: readonly (CapacityRepetition & { capacity: CapacityResult })[]) {
  return judged.flatMap((rep) =>
    rep.capacity.steps.flatMap((step) =>
      (['p50', 'p99'] as const).flatMap((percentile) => {
        const latencyMs = percentile === 'p50' ? step.p50LatencyMs : step.p99LatencyMs;
        if (latencyMs === undefined) return [];
        return [
          {
            scenario: rep.scenarioId,
            percentile,
            series: `${rep.scenarioId} #${rep.repetition} ${percentile}`,
            rate: step.targetRate,
            latencyMs: Math.max(latencyMs, LOG_AXIS_FLOOR_MS),
            passed: step.passed ? 'held' : 'did not hold',
          },
        ];
      }),
    ),
  );
}

/** The chart's layers: the steps' lines, their points (hollow when a step failed), the bound and each capacity. */
function latencyVsRateLayers(
  values: ReturnType<typeof stepLatencyPoints>,
  bounds: readonly { bound: number }[],
  chosen: readonly { scenario: string; rate: number }[],
): Record<string, unknown>[] {
  const color = { field: 'scenario', type: 'nominal', title: 'scenario', scale: { scheme: 'tableau10' } };
  const x = { field: 'rate', type: 'quantitative', title: 'offered rate (msg/s, log scale)', scale: { type: 'log' } };
  const y = {
    field: 'latencyMs',
    type: 'quantitative',
    title: 'consumer latency (ms, log scale)',
    scale: { type: 'log' },
  };
  const fill = {
    condition: {
      test: "datum.passed === 'held'",
      field: 'scenario',
      type: 'nominal',
      legend: null,
      scale: { scheme: 'tableau10' },
    },
    value: 'white',
  };
  const tooltip = [
    { field: 'series', type: 'nominal' },
    { field: 'rate', type: 'quantitative', title: 'msg/s' },
    { field: 'latencyMs', type: 'quantitative', title: 'ms', format: '.1f' },
    { field: 'passed', type: 'nominal', title: 'step' },
  ];
  const detail = { field: 'series', type: 'nominal' };
  const strokeDash = { field: 'percentile', type: 'nominal', title: 'percentile' };
  return [
    { data: { values }, mark: { type: 'line', interpolate: 'linear' }, encoding: { x, y, color, detail, strokeDash } },
    {
      data: { values },
      mark: { type: 'point', size: 40, tooltip: true },
      encoding: { x, y: { field: 'latencyMs', type: 'quantitative' }, color, fill, tooltip },
    },
    ...(bounds.length === 0
      ? []
      : [
          {
            data: { values: bounds },
            mark: { type: 'rule', strokeDash: [2, 3], color: 'black' },
            encoding: { y: { field: 'bound', type: 'quantitative' } },
          },
        ]),
    ...(chosen.length === 0
      ? []
      : [
          {
            data: { values: chosen },
            mark: { type: 'rule', strokeWidth: 1.5 },
            encoding: { x: { field: 'rate', type: 'quantitative' }, color },
          },
        ]),
  ];
}
