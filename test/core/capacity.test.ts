import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { capacityLadder, variableRateArgs } from '../../core/capacity/capacity-plan';
import { capacitySchema } from '../../core/capacity/capacity-schema';
import {
  capacityVerdict,
  shareSlowerThan,
  stepP99Micros,
  summedQueueDepth,
  type CapacityExpectations,
} from '../../core/capacity/capacity-verdict';
import { parsePlanText, validatePlan } from '../../core/plan/plan';
import { planData } from '../../state-machines/schedule';
import { perfTestExpectations } from '../../core/perftest/perftest-output';
import { ingestRepetition } from '../../core/results/ingest';
import { repetitionItems } from '../../core/results/result-items';
import type { PerSecondSample } from '../../core/results/result-model';
import { describe as describeStats } from '../../core/results/statistics';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { aggregateRun, loadBalancerDeltas, renderMarkdownReport, runPricePerformance } from '../../core/report/report';
import { renderHtmlReport, runReportDocument } from '../../core/report/html-report';
import { latencyVsRateChart } from '../../core/report/charts';
import { renderVegaLiteToSvg } from '../../bin/render-charts';
import { issuesOf } from './plan-issues';

const spec = (fields: Record<string, unknown>) => capacitySchema.parse({ p99LatencyMs: 50, ...fields });

const plan = (workload: string, cluster = 'topology: { type: quorum }') => `
name: capacity
clusters:
  - name: three
    nodes: 3
    ${cluster}
workloads:
  - name: at-50ms
${workload}
`;

describe('the capacity ladder', () => {
  test('is geometric from minRate, ends at maxRate, and holds each step for stepSeconds', () => {
    const steps = capacityLadder(spec({ minRate: 1000, maxRate: 10_000, stepFactor: 2, stepSeconds: 10 }), 1);
    expect(steps.map((step) => step.targetRate)).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(steps.map((step) => [step.fromSeconds, step.toSeconds])).toEqual([
      [0, 10],
      [10, 20],
      [20, 30],
      [30, 40],
      [40, 50],
    ]);
  });

  test('rates are whole per producer (PerfTest limits each producer), and equal rates merge into one step', () => {
    const steps = capacityLadder(spec({ minRate: 3, maxRate: 9, stepFactor: 1.1 }), 4);
    expect(steps.map((step) => step.perProducerRate)).toEqual([1, 2]);
    expect(steps.map((step) => step.targetRate)).toEqual([4, 8]);
  });

  test('becomes one --variable-rate per step, per producer', () => {
    expect(variableRateArgs(spec({ minRate: 2000, maxRate: 8000, stepFactor: 2, stepSeconds: 15 }), 2)).toEqual([
      '--variable-rate',
      '1000:15',
      '--variable-rate',
      '2000:15',
      '--variable-rate',
      '4000:15',
    ]);
  });

  test('a ladder past 40 steps is refused', () => {
    expect(() => capacityLadder(spec({ minRate: 1, maxRate: 10_000_000, stepFactor: 1.05 }), 1)).toThrow(
      /more than 40/,
    );
  });
});

describe('capacity workloads in a plan', () => {
  test('the repetition lasts as long as the ladder, and PerfTest gets the ladder', () => {
    const parsed = parsePlanText(
      plan(
        '    capacity: { p99LatencyMs: 50, minRate: 1000, maxRate: ' +
          '8000, stepFactor: 2, stepSeconds: 10, warmUpSeconds: 3 }',
      ),
      'test.yaml',
    );
    const workload = parsed.scenarios[0]!.workload;
    expect(workload.durationSeconds).toBe(40);
    expect(perfTestExpectations(workload).capacity?.steps.map((step) => step.targetRate)).toEqual([
      1000, 2000, 4000, 8000,
    ]);
  });

  test('each field that cannot go with a capacity search is refused by name', () => {
    const issues = issuesOf(
      plan(`    durationSeconds: 60
    publishRateLimit: 100
    warmUpSeconds: 5
    fault: { action: kill, node: leader, atSeconds: 10 }
    capacity: { p99LatencyMs: 50 }`),
    );
    const paths = issues.map((issue) => issue.path);
    expect(paths).toEqual(
      expect.arrayContaining(['workloads[0].publishRateLimit', 'workloads[0].warmUpSeconds', 'workloads[0].fault']),
    );
    // durationSeconds is only reported once the rest is right (its message states the ladder's length).
    const alone = issuesOf(
      plan(
        '    durationSeconds: 60\n    capacity: { p99LatencyMs: 50, ' +
          'minRate: 100, maxRate: 400, stepFactor: 2, stepSeconds: 10 }',
      ),
    );
    expect(alone).toEqual([
      expect.objectContaining({
        path: 'workloads[0].durationSeconds',
        message: expect.stringContaining('3 steps × 10 s = 30 s'),
      }),
    ]);
  });

  test('a ladder that is upside down, too long, or all warm-up is refused at its field', () => {
    expect(issuesOf(plan('    capacity: { p99LatencyMs: 50, minRate: 5000, maxRate: 100 }'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].capacity.maxRate' }),
    ]);
    expect(issuesOf(plan('    capacity: { p99LatencyMs: 50, minRate: 1, maxRate: 1000000, stepFactor: 1.1 }'))).toEqual(
      [expect.objectContaining({ path: 'workloads[0].capacity.stepFactor' })],
    );
    expect(issuesOf(plan('    capacity: { p99LatencyMs: 50, stepSeconds: 10, warmUpSeconds: 8 }'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].capacity.warmUpSeconds' }),
    ]);
    expect(issuesOf(plan('    consumers: 0\n    capacity: { p99LatencyMs: 50 }'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].consumers' }),
    ]);
  });

  test('Kafka takes warmUpSeconds at a publishRateLimit (records to leave out), and refuses it without', () => {
    expect(() =>
      parsePlanText(plan('    publishRateLimit: 100\n    warmUpSeconds: 5', 'broker: kafka'), 'k.yaml'),
    ).not.toThrow();
    const issues = issuesOf(plan('    messageCount: 10000\n    warmUpSeconds: 5', 'broker: kafka'));
    expect(issues).toContainEqual(
      expect.objectContaining({
        path: 'workloads[0].warmUpSeconds',
        // A Kafka run without a rate is a fixed amount of work, where no warm-up has a meaning.
        message: expect.stringContaining('a fixed amount of work is measured by the time it takes in full'),
      }),
    );
  });

  test('warmUpSeconds must leave measured seconds, and has no meaning for a fixed amount of work', () => {
    expect(issuesOf(plan('    durationSeconds: 10\n    warmUpSeconds: 8'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].warmUpSeconds' }),
    ]);
    expect(issuesOf(plan('    messageCount: 1000\n    warmUpSeconds: 2'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].warmUpSeconds',
        message: expect.stringContaining('fixed amount of work'),
      }),
    ]);
  });
});

/** Per-second samples for a ladder: each second's published, received and p99 (µs) given by `at(second)`. */
function samples(
  seconds: number,
  at: (second: number) => { published: number; received: number; p99: number },
): PerSecondSample[] {
  return Array.from({ length: seconds }, (_, index) => {
    const second = index + 1;
    const { published, received, p99 } = at(second);
    return {
      time: second + 0.001,
      published,
      returned: 0,
      confirmed: 0,
      nacked: 0,
      received,
      consumerLatency: { min: 100, median: p99 / 4, p75: p99 / 3, p95: p99 / 2, p99 },
    };
  });
}

const ladder: CapacityExpectations = {
  p99LatencyMs: 50,
  stepFactor: 2,
  warmUpSeconds: 2,
  steps: capacityLadder(spec({ minRate: 1000, maxRate: 8000, stepFactor: 2, stepSeconds: 10 }), 1),
  deliveriesPerMessage: 1,
};
const rateAt = (second: number) =>
  ladder.steps.find((step) => second - 1 >= step.fromSeconds && second <= step.toSeconds)!.targetRate;

/**
 * A stored repetition whose ladder (`ladder`) held up to `heldUpTo` msg/s: its p99 is 5 ms up to there and 90 ms
 * above; its flat-out rates are `rate`.
 */
function heldRepetition(runId: string, scenarioId: string, repetition: number, heldUpTo: number, rate: number) {
  const capacity = capacityVerdict(
    samples(40, (second) => ({
      published: rateAt(second),
      received: rateAt(second),
      p99: rateAt(second) > heldUpTo ? 90_000 : 5_000,
    })),
    ladder,
  );
  const result = {
    summary: { sendRateAvg: rate, receiveRateAvg: rate },
    sendRate: describeStats([rate]),
    receiveRate: describeStats([rate]),
  };
  const times = { startedAt: 'a', finishedAt: 'b', perfTestArgs: [] };
  return { runId, scenarioId, repetition, status: 'SUCCEEDED' as const, ...times, result, capacity };
}

describe('the capacity verdict', () => {
  test('the capacity is the last step before the first one over the p99 bound; warm-up seconds do not count', () => {
    const run = samples(40, (second) => {
      const rate = rateAt(second);
      // A slow first second of every step (the warm-up) and a p99 over the bound from 4000 msg/s on.
      const warm = (second - 1) % 10 === 0;
      return { published: rate, received: rate, p99: warm ? 400_000 : rate >= 4000 ? 80_000 : 20_000 };
    });
    const verdict = capacityVerdict(run, ladder);
    expect(verdict.rateMsgPerSecond).toBe(2000);
    expect(verdict.firstFailedRate).toBe(4000);
    expect(verdict.steps.map((step) => step.passed)).toEqual([true, true, false, false]);
    expect(verdict.steps[0]!.measuredSeconds).toBe(8);
    expect(verdict.steps[2]!.reasons).toEqual(['consumer latency p99 was 80 ms, over the 50 ms bound']);
    expect(verdict.steps[2]).toMatchObject({
      failedBy: ['latency'],
      p99LatencyMs: 80,
      targetRate: 4000,
      publishRate: 4000,
      consumeRate: 4000,
    });
    expect(verdict).toMatchObject({ p99BoundMs: 50, p99LatencyMs: 20, p50LatencyMs: 5 });
    expect(verdict.verdict).toMatch(/^2,000 msg\/s held p99 ≤ 50 ms; 4,000 msg\/s did not/);
  });

  test('producers behind their schedule, consumers behind the producers, or a growing queue fail a step', () => {
    const behind = capacityVerdict(
      samples(40, (second) => ({
        published: Math.min(rateAt(second), 3000),
        received: Math.min(rateAt(second), 3000),
        p99: 1000,
      })),
      ladder,
    );
    expect(behind.rateMsgPerSecond).toBe(2000);
    expect(behind.steps[2]!.reasons).toEqual([expect.stringContaining('the producers fell behind their schedule')]);
    expect(behind.steps[2]!.failedBy).toEqual(['publisher-behind']);

    const slowConsumers = capacityVerdict(
      samples(40, (second) => ({ published: rateAt(second), received: Math.min(rateAt(second), 1500), p99: 1000 })),
      ladder,
    );
    expect(slowConsumers.rateMsgPerSecond).toBe(1000);
    expect(slowConsumers.steps[1]!.failedBy).toEqual(['consumers-behind']);

    // The broker's view: the queue gains 5,000 messages during the third step although PerfTest's counts look fine.
    const depth = Array.from({ length: 41 }, (_, t) => [t, t > 22 ? (t - 22) * 300 : 0] as const);
    const growing = capacityVerdict(
      samples(40, (second) => ({ published: rateAt(second), received: rateAt(second), p99: 1000 })),
      ladder,
      depth,
    );
    expect(growing.rateMsgPerSecond).toBe(2000);
    expect(growing.steps[2]!.reasons).toEqual([expect.stringContaining('the queues grew by')]);
    expect(growing.steps[2]!.failedBy).toEqual(['queue-growing']);
  });

  test(
    'every step held: the capacity is at least the top; ' +
      'none held: no capacity; output cut short: the step says so',
    () => {
      const all = capacityVerdict(
        samples(40, (second) => ({ published: rateAt(second), received: rateAt(second), p99: 1000 })),
        ladder,
      );
      expect(all).toMatchObject({ rateMsgPerSecond: 8000, atLeast: true });
      const none = capacityVerdict(
        samples(40, (second) => ({ published: rateAt(second), received: rateAt(second), p99: 900_000 })),
        ladder,
      );
      expect(none.rateMsgPerSecond).toBeUndefined();
      expect(none.verdict).toMatch(/lower capacity.minRate/);
      const cut = capacityVerdict(
        samples(15, (second) => ({ published: rateAt(second), received: rateAt(second), p99: 1000 })),
        ladder,
      );
      expect(cut.rateMsgPerSecond).toBe(2000);
      expect(cut.steps[2]!.failedBy).toEqual(['no-samples']);
    },
  );

  test(
    "a step's p99 comes from its seconds' percentiles weighted by their messages: " +
      'one slow second among quiet ones does not fail it, a slow step does',
    () => {
      const quiet = { min: 500, median: 1000, p75: 1500, p95: 2000, p99: 3000 };
      const slow = { min: 500, median: 2000, p75: 10_000, p95: 30_000, p99: 112_000 };
      const second = (time: number, latency: typeof quiet) => ({
        time,
        published: 1000,
        returned: 0,
        confirmed: 0,
        nacked: 0,
        received: 1000,
        consumerLatency: latency,
      });
      const oneSlow = [...Array.from({ length: 9 }, (_, index) => second(index + 1, quiet)), second(10, slow)];
      // 1 % of the step is slower than ~2x ms: the slow second's 1 % above 112 ms is 0.1 % of the step.
      expect(stepP99Micros(oneSlow)).toBeLessThan(50_000);
      expect(stepP99Micros(oneSlow)).toBeGreaterThan(3000);
      expect(stepP99Micros(Array.from({ length: 10 }, (_, index) => second(index + 1, slow)))).toBeCloseTo(112_000, -3);
      expect(shareSlowerThan(quiet, 1250)).toBeCloseTo(0.375, 6);
      expect(shareSlowerThan(quiet, 6000)).toBeCloseTo(0.005, 6);
      expect(shareSlowerThan(quiet, 100)).toBe(1);
    },
  );

  test('queue depth is summed over the nodes at each second', () => {
    expect(
      summedQueueDepth([
        {
          metric: 'queueDepth',
          points: [
            [1, 5],
            [2, 7],
          ],
        },
        {
          metric: 'queueDepth',
          points: [
            [1.2, 1],
            [2.1, 2],
          ],
        },
        { metric: 'cpuPercent', points: [[1, 99]] },
      ]),
    ).toEqual([
      [1, 6],
      [2, 9],
    ]);
  });
});

describe('a capacity repetition ingested', () => {
  test('carries its verdict into the stored repetition item', () => {
    const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
    // The captured 5 s flat-out run judged as a 1-step ladder at 5,000 msg/s with a 1 s bound: its p99 stayed under
    // 0.53 s and it published 6,541 msg/s, but received only 6,205 msg/s (95 %) after the first second.
    const expectations = {
      durationSeconds: 5,
      producers: 1,
      consumers: 1,
      confirms: false,
      capacity: {
        ...ladder,
        p99LatencyMs: 1000,
        warmUpSeconds: 1,
        steps: [{ targetRate: 5000, perProducerRate: 5000, fromSeconds: 0, toSeconds: 5 }],
      },
    };
    const record = ingestRepetition({
      runId: 'r',
      scenarioId: 's',
      repetition: 1,
      startedAt: 'a',
      finishedAt: 'b',
      perfTestArgs: [],
      expectations,
      stdout: fixture('basic-150b.stdout.txt'),
      csv: fixture('basic-150b.csv'),
    });
    expect(record.status).toBe('SUCCEEDED');
    expect(record.capacity).toMatchObject({
      atLeast: false,
      firstFailedRate: 5000,
      steps: [
        { measuredSeconds: 4, publishRate: 6540.8, consumeRate: 6204.5, worstSecondP99LatencyMs: 527.7, passed: false },
      ],
    });
    expect(record.capacity!.steps[0]!.reasons).toEqual([expect.stringContaining('the consumers fell behind')]);
    expect(record.capacity!.rateMsgPerSecond).toBeUndefined();
    // The step's p99 lies between its seconds' smallest (414.7 ms) and largest (527.7 ms) p99.
    expect(record.capacity!.steps[0]!.p99LatencyMs).toBeGreaterThan(414.6);
    expect(record.capacity!.steps[0]!.p99LatencyMs).toBeLessThanOrEqual(527.7);
    expect(repetitionItems(record)[0]).toMatchObject({ capacity: { firstFailedRate: 5000 } });
  });
});

describe('capacity in the report', () => {
  const planData = {
    name: 'capacity',
    repetitions: 2,
    clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType: 'c5.xlarge' }],
    workloads: [
      {
        name: 'at-50ms',
        capacity: { p99LatencyMs: 50, minRate: 1000, maxRate: 8000, stepFactor: 2, stepSeconds: 10, warmUpSeconds: 2 },
      },
    ],
  };
  const scenarioId = parsePlanText(JSON.stringify(planData), 'plan.json').scenarios[0]!.id;
  // Repetition 1 held up to 4,000 msg/s, repetition 2 up to 2,000: the scenario's capacity is the lower.
  const repetition = (n: number, heldUpTo: number) => heldRepetition('run-c', scenarioId, n, heldUpTo, 1);
  const run = {
    runId: 'run-c',
    planName: 'capacity',
    plan: planData,
    target: 'aws' as const,
    status: 'SUCCEEDED' as const,
    startedAt: '2026-11-25T10:00:00Z',
    finishedAt: '2026-11-25T10:10:00Z',
    environment: { region: 'eu-west-1' },
    scenarioIds: [scenarioId],
  };
  const repetitions = [repetition(1, 4000), repetition(2, 2000)];

  test('the scenario capacity is the lowest over the repetitions, priced per million messages by its cluster', () => {
    const aggregates = aggregateRun(run, repetitions);
    expect(aggregates[0]!.capacity).toMatchObject({
      rateMsgPerSecond: { mean: 3000, n: 2 },
      atLeast: false,
      p99BoundMs: 50,
      p50LatencyMs: 1.3,
      p99LatencyMs: 5,
      noneHeld: 0,
    });
    const priced = runPricePerformance(run, aggregates, defaultPriceCatalog);
    if (!priced.available) throw new Error(priced.reason);
    const hourly = priced.costs[0]!.hourlyUsd;
    expect(priced.capacity).toEqual([
      expect.objectContaining({
        scenarioId,
        rateMsgPerSecond: 3000,
        usdPerMillionMessages: (hourly / (3000 * 3600)) * 1e6,
        msgPerSecondPerUsdHour: 3000 / hourly,
      }),
    ]);
    const markdown = renderMarkdownReport(run, repetitions, priced);
    expect(markdown).toContain('## Capacity at a latency target');
    const ci = Math.round(aggregates[0]!.capacity!.rateMsgPerSecond!.ci95).toLocaleString('en-US');
    expect(markdown).toContain(
      `| ${scenarioId} | 50 | 3,000 ± ${ci} msg/s | ` +
        `1.3 / 5 | ${((hourly / (3000 * 3600)) * 1e6).toPrecision(3)} ` +
        `| ${Math.round(3000 / hourly).toLocaleString('en-US')} |`,
    );
    expect(markdown).toMatch(/#1: 4,000 msg\/s held p99 ≤ 50 ms; 8,000 msg\/s did not/);
    expect(markdown).toContain('each step × 2 the one before');
  });

  test('the HTML report has a capacity section; a local run has no price for it', () => {
    const local = { ...run, target: 'local' as const };
    const aggregates = aggregateRun(local, repetitions);
    const html = renderHtmlReport(
      runReportDocument({
        run: local,
        aggregates,
        failedRepetitions: [],
        charts: [],
        loadBalancerDeltas: [],
        pricePerformance: runPricePerformance(local, aggregates, defaultPriceCatalog),
        generatedAt: 'now',
      }),
    );
    expect(html).toContain('Capacity at a latency target');
    expect(html).toMatch(
      /<td class="num">3,000 ± [\d,]+ msg\/s<\/td><td class="num">1.3 \/ 5<\/td><td class="num">—<\/td>/,
    );
  });
});

describe('a capacity plan round trip', () => {
  test('the plan a workflow carries (execution input, run record) validates again with the same ladder', () => {
    const first = parsePlanText(
      plan('    capacity: { p99LatencyMs: 50, minRate: 1000, maxRate: 8000, stepFactor: 2, stepSeconds: 10 }'),
      'test.yaml',
    );
    const again = validatePlan(JSON.parse(JSON.stringify(planData(first))), 'the execution input');
    expect(again.scenarios[0]!.workload.durationSeconds).toBe(40);
    expect(again.scenarios[0]!.workload.capacity).toEqual(first.scenarios[0]!.workload.capacity);
  });
});

describe('a saturated run whose queue grew', () => {
  const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
  const raw = {
    runId: 'r',
    scenarioId: 's',
    repetition: 1,
    startedAt: 'a',
    finishedAt: 'b',
    perfTestArgs: [],
    expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
    stdout: fixture('basic-150b.stdout.txt'),
    csv: fixture('basic-150b.csv'),
  };
  const depth = (values: number[]) => ({
    source: 'local-proc',
    series: [
      {
        node: 'rmqbench1@localhost',
        metric: 'queueDepth' as const,
        unit: 'messages' as const,
        points: values.map((value, t) => [t + 1, value] as const),
      },
    ],
  });

  test('carries a note that its latencies are queueing time, in the stored item and the report', () => {
    // The captured run received 28,886 messages; its queue grew by 3,000 (over 2 % and over 1,000).
    const record = ingestRepetition({ ...raw, metrics: depth([0, 500, 1500, 2200, 3000]) });
    expect(record.queueingNote).toMatch(
      new RegExp(
        String.raw`^the queues grew by 3,000 messages during the run: publishers outran consumers, so its ` +
          String.raw`latencies are mostly queueing time`,
      ),
    );
    const run = {
      runId: 'r',
      planName: 'p',
      plan: {},
      target: 'local' as const,
      status: 'SUCCEEDED' as const,
      startedAt: 'a',
      environment: {},
      scenarioIds: ['s'],
    };
    expect(renderMarkdownReport(run, [record])).toContain(
      `## Latency is queueing time\n\n- s #1: ${record.queueingNote}`,
    );
  });

  test('a queue that stayed level, or no broker samples, carries no note', () => {
    expect(ingestRepetition({ ...raw, metrics: depth([10, 40, 0, 20, 30]) }).queueingNote).toBeUndefined();
    expect(ingestRepetition(raw).queueingNote).toBeUndefined();
  });
});

describe('the latency-against-rate chart', () => {
  test('draws one point per step and percentile, the bound and the chosen rate, rendered by vega', async () => {
    const verdict = capacityVerdict(
      samples(40, (second) => ({
        published: rateAt(second),
        received: rateAt(second),
        p99: rateAt(second) >= 4000 ? 80_000 : 20_000,
      })),
      ladder,
    );
    const chart = latencyVsRateChart(
      [
        { scenarioId: 'c/w', repetition: 1, capacity: verdict },
        { scenarioId: 'c/w', repetition: 2, capacity: verdict },
        { scenarioId: 'c/x', repetition: 1 },
      ],
      [{ scenarioId: 'c/w', rate: 2000 }],
    );
    expect(chart.marks).toEqual({ kind: 'symbol', count: 2 * 4 * 2 });
    const [svg] = await renderVegaLiteToSvg([chart.spec]);
    const points = svg!.match(/<g class="mark-symbol role-mark[^"]*"[^>]*>(.*?)<\/g>/s)?.[1] ?? '';
    expect(points.match(/<path /g)).toHaveLength(16);
    // Two rules: the 50 ms bound and the chosen 2,000 msg/s.
    expect(svg!.match(/<g class="mark-rule role-mark[^"]*"/g)).toHaveLength(2);
  });
});

describe('capacity compared (Welch)', () => {
  const planData = {
    name: 'capacity-lb',
    repetitions: 3,
    clusters: [
      { name: 'lb', nodes: 3, topology: { type: 'quorum' }, connection: 'lb' },
      { name: 'direct', nodes: 3, topology: { type: 'quorum' }, connection: 'direct' },
    ],
    workloads: [
      {
        name: 'at-50ms',
        capacity: { p99LatencyMs: 50, minRate: 1000, maxRate: 8000, stepFactor: 2, stepSeconds: 10, warmUpSeconds: 2 },
      },
    ],
  };
  const ids = parsePlanText(JSON.stringify(planData), 'plan.json').scenarios.map((scenario) => scenario.id);
  const [lbId, directId] = [ids.find((id) => id.startsWith('lb'))!, ids.find((id) => id.startsWith('direct'))!];
  // Every repetition of the direct scenario held 4,000 msg/s; the load-balanced one held 2,000 twice and 4,000 once.
  const repetition = (scenarioId: string, n: number, heldUpTo: number) =>
    heldRepetition('run-w', scenarioId, n, heldUpTo, 5000);
  const run = {
    runId: 'run-w',
    planName: 'capacity-lb',
    plan: planData,
    target: 'local' as const,
    status: 'SUCCEEDED' as const,
    startedAt: 'a',
    environment: {},
    scenarioIds: ids,
  };
  const repetitions = [
    ...[1, 2, 3].map((n) => repetition(directId, n, 4000)),
    ...[
      [1, 2000],
      [2, 2000],
      [3, 4000],
    ].map(([n, held]) => repetition(lbId, n!, held!)),
  ];

  test('the load balancer is compared with direct on the capacity rate beside the receive rate', () => {
    const deltas = loadBalancerDeltas(run, aggregateRun(run, repetitions));
    expect(deltas.map((delta) => delta.metric)).toEqual(['receiveRate', 'capacityRate']);
    const capacity = deltas.find((delta) => delta.metric === 'capacityRate')!;
    // lb mean 2,666.7 against direct 4,000: a drop of a third.
    expect(capacity.delta).toBeCloseTo(-4000 / 3, 3);
    expect(capacity.deltaPercent).toBeCloseTo(-100 / 3, 3);
    const markdown = renderMarkdownReport(run, repetitions);
    expect(markdown).toContain(
      '| load balancer vs direct (direct is the baseline) | ' +
        'capacity at the p99 bound change (delta ± 95% CI) | verdict |',
    );
    expect(markdown).toContain(
      '| load balancer vs direct (direct is the baseline) | receive rate change (delta ± 95% CI) | verdict |',
    );
  });

  test('a run without capacity workloads is compared on the receive rate alone', () => {
    const flat = repetitions.map(({ capacity: _capacity, ...rest }) => rest);
    expect(loadBalancerDeltas(run, aggregateRun(run, flat)).map((delta) => delta.metric)).toEqual(['receiveRate']);
  });
});
