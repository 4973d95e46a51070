import { latencyPercentilesChart, throughputPerRepetitionChart } from '../../core/report/charts';
import { aggregateRun } from '../../core/report/report';
import { ChartRenderError, renderVegaLiteToSvg, svgToPng } from '../../bin/render-charts';
import { storedRun, uniformRates } from './report-fixtures';

// vega and vega-lite are ES modules only: these tests prove the child-process renderer works under jest.
describe('rendering Vega-Lite to SVG and PNG', () => {
  const stored = storedRun('r1', uniformRates([10_000, 12_000, 11_000]));
  const chart = throughputPerRepetitionChart(stored.run.scenarioIds, stored.repetitions);

  it('renders a chart to an SVG with one rect path per data point', async () => {
    const [svg] = await renderVegaLiteToSvg([chart.spec]);
    expect(svg).toMatch(/^<svg[^>]+xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const group = /<g class="mark-rect role-mark[^"]*"[^>]*>([\s\S]*?)<\/g>/.exec(svg!);
    expect(group).not.toBeNull();
    expect(group![1]!.match(/<path /g)).toHaveLength(chart.marks.count);
    expect(chart.marks.count).toBe(12);
  });

  it('renders several charts in one call, in order', async () => {
    const empty = { ...chart.spec, data: { values: [] } };
    const svgs = await renderVegaLiteToSvg([chart.spec, empty]);
    expect(svgs).toHaveLength(2);
    expect(svgs[1]).not.toContain('<path d="M');
  });

  it('reports an invalid spec as one ChartRenderError line naming the chart and the reason vega gives', async () => {
    const broken = {
      $schema: chart.spec.$schema,
      mark: 'bar',
      data: { values: [{ x: 1 }] },
      transform: [{ calculate: 'datum.x +', as: 'y' }],
    };
    await expect(renderVegaLiteToSvg([broken])).rejects.toThrow(ChartRenderError);
    await expect(renderVegaLiteToSvg([broken])).rejects.toThrow(
      /^rendering 1 chart\(s\) with vega failed \(exit 1\): chart 1 of 1: Unexpected end of input$/,
    );
  });

  it('rasterises an SVG to a PNG at twice its size', async () => {
    const [svg] = await renderVegaLiteToSvg([chart.spec]);
    const png = svgToPng(svg!);
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const width = Number(/width="(\d+)"/.exec(svg!)![1]);
    expect(png.readUInt32BE(16)).toBe(width * 2);
  });

  it(
    'draws a 50 ms latency bar visibly next to a 6.5 s ' + 'one (log axis: at least a tenth of the tallest bar)',
    async () => {
      const [fast, slow] = aggregateRun(stored.run, stored.repetitions);
      const latency = (ms: number) => ({
        min: ms * 1000,
        median: ms * 1000,
        p75: ms * 1000,
        p95: ms * 1000,
        p99: ms * 1000,
      });
      const latencyChart = latencyPercentilesChart([
        { ...fast!, consumerLatency: latency(50) },
        { ...slow!, consumerLatency: latency(6_500) },
      ]);
      const [svg] = await renderVegaLiteToSvg([latencyChart.spec]);
      const group = /<g class="mark-rect role-mark[^"]*"[^>]*>([\s\S]*?)<\/g>/.exec(svg!);
      // vega draws each bar as a path "Mx,yhWvHh-WZ": H is the bar's height in pixels.
      const heights = [...group![1]!.matchAll(/<path [^>]*d="M[^"]*?h[\d.]+v([\d.]+)h/g)].map((match) =>
        Number(match[1]),
      );
      expect(heights).toHaveLength(latencyChart.marks.count);
      expect(Math.min(...heights) / Math.max(...heights)).toBeGreaterThan(0.1);
    },
  );
});
