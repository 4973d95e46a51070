import {
  latencyPercentilesChart,
  throughputOverTimeChart,
  throughputPerRepetitionChart,
  throughputVsQueuesChart,
  VEGA_LITE_SCHEMA,
} from '../../core/report/charts';
import { aggregateRun, queueThroughputPoints } from '../../core/report/report';
import { SCENARIOS, storedRun, uniformRates } from '../bin/report-fixtures';

type Values = Record<string, unknown>[];
const values = (chart: { spec: Record<string, unknown> }) => (chart.spec.data as { values: Values }).values;

describe('throughput per repetition (figures 4.1–5.12)', () => {
  const stored = storedRun('r1', { ...uniformRates([10_000, 12_000]), [SCENARIOS[3]!]: [11_000, null] });
  const chart = throughputPerRepetitionChart(stored.run.scenarioIds, stored.repetitions);

  it('draws one bar per successful repetition and none for a failed one', () => {
    expect(chart.marks).toEqual({ kind: 'rect', count: 7 });
    expect(values(chart)).toHaveLength(7);
    expect(values(chart).filter((row) => row.scenario === SCENARIOS[3])).toEqual([
      { scenario: SCENARIOS[3], repetition: 1, receiveRate: 11_000, sendRate: 11_000 },
    ]);
  });

  it('with the message sizes, each bar carries its MB/s for the tooltip', () => {
    const sized = throughputPerRepetitionChart(
      stored.run.scenarioIds,
      stored.repetitions,
      new Map([[SCENARIOS[3]!, 500]]),
    );
    // 11,000 msg/s × 500 B = 5.5 MB/s.
    expect(values(sized).filter((row) => row.scenario === SCENARIOS[3])).toEqual([
      { scenario: SCENARIOS[3], repetition: 1, receiveRate: 11_000, sendRate: 11_000, receiveMBps: 5.5, sendMBps: 5.5 },
    ]);
    const tooltip = (sized.spec.encoding as { tooltip: { field: string; title?: string }[] }).tooltip;
    expect(tooltip.map((field) => field.title ?? field.field)).toEqual([
      'scenario',
      'repetition',
      'receive msg/s',
      'send msg/s',
      'receive MB/s',
      'send MB/s',
    ]);
    expect((chart.spec.encoding as { tooltip: unknown[] }).tooltip).toHaveLength(4);
  });

  it('keeps the plan order of the scenarios on the x axis, so a failed scenario keeps its place', () => {
    const x = (chart.spec.encoding as { x: { sort: string[] } }).x;
    expect(x.sort).toEqual(SCENARIOS);
    expect(chart.spec.$schema).toBe(VEGA_LITE_SCHEMA);
  });
});

describe('throughput over time', () => {
  it('draws one line per repetition that has samples', () => {
    const sample = (time: number) => ({ time, published: 5, returned: 0, confirmed: 0, nacked: 0, received: 5 });
    const chart = throughputOverTimeChart([
      { scenarioId: 'a/w', repetition: 1, samples: [sample(1), sample(2)] },
      { scenarioId: 'a/w', repetition: 2, samples: [sample(1)] },
      { scenarioId: 'b/w', repetition: 1, samples: [] },
    ]);
    expect(chart.marks).toEqual({ kind: 'line', count: 2 });
    expect(values(chart)).toHaveLength(3);
  });

  it('joins the measured samples with straight segments: no smoothing that invents values between seconds', () => {
    const chart = throughputOverTimeChart([{ scenarioId: 'a/w', repetition: 1, samples: [] }]);
    expect(chart.spec.mark).toEqual(expect.objectContaining({ type: 'line', interpolate: 'linear' }));
  });
});

describe('throughput vs queues (figures 6.1–6.4)', () => {
  it("has one point per scenario, a line per cluster when the run has several, from the plan's queue counts", () => {
    const stored = storedRun('r1', uniformRates([10_000, 14_000]));
    const points = queueThroughputPoints([
      { run: stored.run, aggregates: aggregateRun(stored.run, stored.repetitions) },
    ]);
    expect(points.map(({ series, queues, throughput }) => [series, queues, throughput])).toEqual([
      ['localhost · c-lb', 1, 12_000],
      ['localhost · c-lb', 2, 12_000],
      ['localhost · c-direct', 1, 12_000],
      ['localhost · c-direct', 2, 12_000],
    ]);
    expect(throughputVsQueuesChart(points).marks).toEqual({ kind: 'symbol', count: 4 });
  });

  it('uses a log scale when queue counts span a factor of 10 or more (1 to 200 in Table 6.1)', () => {
    const scale = (queues: number[]) =>
      (
        throughputVsQueuesChart(
          queues.map((q) => ({ series: 'c5.xlarge', queues: q, throughput: 1, scenarioId: `s${q}` })),
        ).spec.encoding as { x: { scale: { type: string } } }
      ).x.scale.type;
    expect(scale([1, 2, 10, 200])).toBe('log');
    expect(scale([1, 2])).toBe('linear');
  });

  it('skips scenarios without a successful repetition', () => {
    const stored = storedRun('r1', { ...uniformRates([10_000]), [SCENARIOS[0]!]: [null] });
    const points = queueThroughputPoints([
      { run: stored.run, aggregates: aggregateRun(stored.run, stored.repetitions) },
    ]);
    expect(points.map((point) => point.scenarioId)).toEqual(SCENARIOS.slice(1));
  });

  it('takes the queue count from the scenario id when the stored plan no longer validates', () => {
    const stored = storedRun('r1', uniformRates([10_000]), { plan: { name: 'old-format' } });
    const points = queueThroughputPoints([
      { run: stored.run, aggregates: aggregateRun(stored.run, stored.repetitions) },
    ]);
    expect(points.map((point) => point.queues)).toEqual([1, 2, 1, 2]);
  });
});

describe('latency percentiles', () => {
  it('draws five bars (min, median, 75th, 95th, 99th) per scenario with latency, in milliseconds', () => {
    const stored = storedRun('r1', uniformRates([10_000, 12_000]));
    const chart = latencyPercentilesChart(aggregateRun(stored.run, stored.repetitions));
    expect(chart.marks).toEqual({ kind: 'rect', count: 20 });
    expect(
      values(chart)
        .slice(0, 5)
        .map((row) => [row.percentile, row.latencyMs]),
    ).toEqual([
      ['min', 0.1],
      ['median', 1.005],
      ['75th', 2],
      ['95th', 5],
      ['99th', 9],
    ]);
  });

  it(
    "puts latency on a log axis; a value below PerfTest's " + '1 µs resolution is drawn at 1 µs, its tooltip keeps 0',
    () => {
      const stored = storedRun('r1', uniformRates([10_000]));
      const [first, ...rest] = aggregateRun(stored.run, stored.repetitions);
      const chart = latencyPercentilesChart([
        { ...first!, consumerLatency: { min: 0, median: 10, p75: 20, p95: 30, p99: 40 } },
        ...rest,
      ]);
      expect((chart.spec.encoding as { y: { scale: unknown } }).y.scale).toEqual({ type: 'log', domainMin: 0.0001 });
      expect(values(chart)[0]).toEqual(expect.objectContaining({ percentile: 'min', latencyMs: 0, barMs: 0.001 }));
    },
  );
});
