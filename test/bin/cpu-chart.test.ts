import { cpuOverTimeChart, type RepetitionMetricsOf } from '../../core/report/charts';
import type { MetricSeries } from '../../core/metrics/host-metrics';
import { renderVegaLiteToSvg } from '../../bin/render-charts';

const cpu = (node: string, values: number[]): MetricSeries => ({
  node,
  metric: 'cpuPercent',
  unit: 'percent',
  points: values.map((value, index) => [index + 1, value] as const),
});
const repetitions: RepetitionMetricsOf[] = [
  {
    scenarioId: 'three/small',
    repetition: 1,
    metrics: {
      source: 'local-proc',
      series: [
        cpu('load-generator', [30, 60, 62]),
        cpu('rmqbench1@localhost', [10, 20, 21]),
        cpu('rmqbench2@localhost', [5, 6, 7]),
        { node: 'rmqbench1@localhost', metric: 'memoryBytes', unit: 'bytes', points: [[1, 1e8]] },
      ],
    },
  },
  // A node killed for the whole repetition has an empty series: no line for it.
  {
    scenarioId: 'three/small',
    repetition: 2,
    metrics: {
      source: 'local-proc',
      series: [cpu('load-generator', [50, 51]), cpu('rmqbench1@localhost', [12, 14]), cpu('rmqbench2@localhost', [])],
    },
  },
];

describe('CPU over time chart', () => {
  test('one line per node with CPU points per repetition, load generator included; other metrics left out', () => {
    const chart = cpuOverTimeChart(repetitions);
    expect(chart.marks).toEqual({ kind: 'line', count: 5 });
    const values = (chart.spec.data as { values: { panel: string; node: string; cpuPercent: number }[] }).values;
    expect(new Set(values.map((value) => value.panel))).toEqual(new Set(['three/small #1', 'three/small #2']));
    expect(
      values
        .filter((value) => value.panel === 'three/small #1' && value.node === 'load-generator')
        .map((value) => value.cpuPercent),
    ).toEqual([30, 60, 62]);
    expect(values.some((value) => value.cpuPercent === 1e8)).toBe(false);
  });

  test('no metrics, no line', () => {
    expect(cpuOverTimeChart([]).marks.count).toBe(0);
  });

  test('vega renders it with one line path per node and repetition, in a panel per repetition', async () => {
    const chart = cpuOverTimeChart(repetitions);
    const [svg] = await renderVegaLiteToSvg([chart.spec]);
    // Vega draws each line in a group of its own (one per node and panel): the paths in line-mark groups are the lines.
    const lineGroups = [...svg!.matchAll(/<g class="mark-line role-mark[^"]*"[^>]*>([\s\S]*?)<\/g>/g)];
    expect(lineGroups.reduce((sum, group) => sum + (group[1]!.match(/<path /g)?.length ?? 0), 0)).toBe(
      chart.marks.count,
    );
    expect(svg).toContain('three/small #1');
    expect(svg).toContain('three/small #2');
    expect(svg).toContain('load-generator');
  });
});

describe('CPU over time chart scale', () => {
  test('0..100 % of the host, widened to a second measured above 100 %', () => {
    const domain = (values: number[]) =>
      (
        cpuOverTimeChart([{ scenarioId: 's', repetition: 1, metrics: { source: 't', series: [cpu('n', values)] } }])
          .spec.spec as { encoding: { y: { scale: { domain: number[] } } } }
      ).encoding.y.scale.domain;
    expect(domain([10, 20])).toEqual([0, 100]);
    expect(domain([10, 100.4])).toEqual([0, 101]);
  });

  test('the rendered SVG refers to nothing (no url(), which the self-contained HTML report forbids)', async () => {
    const [svg] = await renderVegaLiteToSvg([cpuOverTimeChart(repetitions).spec]);
    expect(svg).not.toMatch(/url\(/);
  });
});
