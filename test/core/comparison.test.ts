import {
  baselineMarkFor,
  chooseBaseline,
  compareLoadBalancerToDirect,
  compareRuns,
  compareScenarios,
  ComparisonError,
  loadBalancerPairs,
  welchTest,
  type RunResults,
} from '../../core/results/comparison';
import { validatePlan } from '../../core/plan/plan';
import type { RunRecord, ScenarioAggregate } from '../../core/results/result-model';
import { describe as describeValues, tCritical95, type Stats } from '../../core/results/statistics';

function stats(n: number, mean: number, stddev: number): Stats {
  return {
    n,
    mean,
    median: mean,
    stddev,
    ci95: n > 1 ? (tCritical95(n - 1) * stddev) / Math.sqrt(n) : 0,
    min: mean,
    max: mean,
  };
}

const planData = {
  name: 'lb-vs-direct',
  repetitions: 5,
  clusters: [
    { name: 'three-lb', nodes: 3, connection: 'lb' },
    { name: 'three-direct', nodes: 3, connection: 'direct' },
    { name: 'five-direct', nodes: 5, connection: 'direct' },
  ],
  workloads: [{ name: 'small', sweep: { messageSizeBytes: [12, 150] } }],
};
const plan = validatePlan(planData, 'test plan');

function run(runId: string, aggregates: ScenarioAggregate[], overrides: Partial<RunRecord> = {}): RunResults {
  return {
    run: {
      runId,
      planName: 'lb-vs-direct',
      plan: planData,
      target: 'aws',
      status: 'SUCCEEDED',
      startedAt: '2025-01-01T00:00:00Z',
      environment: {},
      scenarioIds: aggregates.map((aggregate) => aggregate.scenarioId),
      ...overrides,
    },
    aggregates,
  };
}

function aggregate(scenarioId: string, receive: Stats | undefined, failed = 0): ScenarioAggregate {
  return {
    scenarioId,
    repetitionsSucceeded: receive?.n ?? 0,
    repetitionsFailed: failed,
    ...(receive === undefined ? {} : { receiveRate: receive, sendRate: receive }),
  };
}

const SCENARIO = 'three-direct/small@messageSizeBytes=12';

describe('noise rule (Welch t-test at 95%)', () => {
  // n = 5 each, stddev 500: standard error 316.2, 8 degrees of freedom, t = 2.306, so the
  // 95% interval of the delta is ±729.2 msg/s.
  it('flags a 1000 msg/s difference as significant, even though the two 95% CIs (±620.8) overlap', () => {
    const result = welchTest(stats(5, 20_000, 500), stats(5, 21_000, 500))!;
    expect(result.degreesOfFreedom).toBeCloseTo(8, 10);
    expect(result.ci95).toBeCloseTo(2.306 * Math.sqrt(100_000), 6);
    expect(result.significant).toBe(true);
    expect(20_000 + stats(5, 20_000, 500).ci95).toBeGreaterThan(21_000 - stats(5, 21_000, 500).ci95);
  });

  it('calls a 500 msg/s difference inside the noise', () => {
    expect(welchTest(stats(5, 20_000, 500), stats(5, 20_500, 500))!.significant).toBe(false);
  });

  it('uses the Welch–Satterthwaite degrees of freedom for unequal variances', () => {
    // s²/n: 1000²/4 = 250000 and 100²/10 = 1000; df = 251000² / (250000²/3 + 1000²/9) ≈ 3.02
    expect(welchTest(stats(4, 0, 1000), stats(10, 0, 100))!.degreesOfFreedom).toBeCloseTo(3.0236, 3);
  });

  it('treats any difference between spread-free samples as real and no difference as noise', () => {
    expect(welchTest(stats(3, 10, 0), stats(3, 11, 0))!.significant).toBe(true);
    expect(welchTest(stats(3, 10, 0), stats(3, 10, 0))!.significant).toBe(false);
  });

  it('refuses to judge with a single repetition on a side', () => {
    expect(welchTest(stats(1, 10, 0), stats(5, 11, 1))).toBeUndefined();
  });
});

describe('compareRuns (run vs baseline, cloud vs cloud)', () => {
  const baseline = run('run-a', [
    aggregate(SCENARIO, stats(5, 20_000, 500)),
    aggregate('three-lb/small@messageSizeBytes=12', stats(5, 18_000, 400)),
  ]);
  const candidate = run('run-b', [
    aggregate(SCENARIO, stats(5, 21_000, 500)),
    aggregate('three-lb/small@messageSizeBytes=12', stats(5, 18_200, 400)),
  ]);

  it('gives per scenario the delta, its percentage, its 95% interval and a verdict', () => {
    const comparison = compareRuns(baseline, [candidate]);
    expect(comparison.baselineRunId).toBe('run-a');
    const [first, second] = comparison.rows;
    expect(first).toMatchObject({ label: SCENARIO, verdict: 'higher', delta: 1000, deltaPercent: 5 });
    expect(first!.welch!.ci95).toBeCloseTo(729.2, 1);
    expect(second).toMatchObject({ verdict: 'inside-noise', delta: 200 });
  });

  it('reports a drop as lower', () => {
    expect(compareRuns(candidate, [baseline]).rows[0]!.verdict).toBe('lower');
  });

  it('labels rows with target and run when comparing clouds', () => {
    const azure = run('run-z', candidate.aggregates as ScenarioAggregate[], { target: 'azure' });
    expect(compareRuns(baseline, [azure]).rows[0]!.label).toBe(`${SCENARIO} (aws run-a → azure run-z)`);
  });

  it('compares the send rate when asked', () => {
    expect(compareRuns(baseline, [candidate], 'sendRate').rows[0]!.metric).toBe('sendRate');
  });

  it('works on aggregates computed by statistics.describe', () => {
    const a = run('a', [aggregate(SCENARIO, describeValues([20_100, 19_900, 20_050, 19_950]))]);
    const b = run('b', [aggregate(SCENARIO, describeValues([20_120, 19_880, 20_060, 19_990]))]);
    expect(compareRuns(a, [b]).rows[0]!.verdict).toBe('inside-noise');
  });

  it('marks a scenario with no successful repetition as no-data, saying how many failed', () => {
    const broken = run('run-c', [
      aggregate(SCENARIO, undefined, 3),
      aggregate('three-lb/small@messageSizeBytes=12', stats(5, 18_000, 400)),
    ]);
    const row = compareRuns(baseline, [broken]).rows[0]!;
    expect(row.verdict).toBe('no-data');
    expect(row.message).toBe(`${SCENARIO} in run run-c has no successful repetition (3 failed)`);
  });

  it('marks a scenario present in only one run as no-data', () => {
    const partial = run('run-d', [aggregate(SCENARIO, stats(5, 20_000, 500))]);
    const rows = compareRuns(baseline, [partial]).rows;
    expect(rows[1]).toMatchObject({
      verdict: 'no-data',
      message: 'three-lb/small@messageSizeBytes=12 in run run-d has no result',
    });
  });

  it('says a single repetition is too few to tell noise from a difference', () => {
    const once = run('run-e', [aggregate(SCENARIO, stats(1, 25_000, 0))]);
    const row = compareRuns(baseline, [once]).rows[0]!;
    expect(row).toMatchObject({ verdict: 'too-few-repetitions', delta: 5000 });
    expect(row.message).toMatch(/run run-e: one successful repetition, at least 2 are needed/);
  });

  it('refuses runs of different plans with a message naming both plans', () => {
    const other = run('run-x', candidate.aggregates as ScenarioAggregate[], { planName: 'other-plan' });
    expect(() => compareRuns(baseline, [other])).toThrow(ComparisonError);
    expect(() => compareRuns(baseline, [other])).toThrow(
      'runs of different plans cannot be compared scenario by scenario: ' +
        'run-a ran plan "lb-vs-direct" but run-x ran "other-plan"',
    );
  });

  it('refuses a run with no successful repetition at all', () => {
    const failed = run('run-f', [aggregate(SCENARIO, undefined, 5)], { status: 'FAILED', error: 'broker unreachable' });
    expect(() => compareRuns(baseline, [failed])).toThrow(
      'run run-f (plan "lb-vs-direct", status FAILED) has no successful ' +
        'repetition (5 failed): broker unreachable; rerun it or compare another run',
    );
  });

  it('refuses a single run and a run given twice', () => {
    expect(() => compareRuns(baseline, [])).toThrow(/give at least two run ids/);
    expect(() => compareRuns(baseline, [baseline])).toThrow('run run-a is given twice; give distinct run ids');
  });
});

describe('load balancer vs direct', () => {
  it('pairs clusters that differ only in connection, for every sweep value, direct as baseline', () => {
    expect(loadBalancerPairs(plan)).toEqual([
      {
        baselineScenarioId: 'three-direct/small@messageSizeBytes=12',
        candidateScenarioId: 'three-lb/small@messageSizeBytes=12',
      },
      {
        baselineScenarioId: 'three-direct/small@messageSizeBytes=150',
        candidateScenarioId: 'three-lb/small@messageSizeBytes=150',
      },
    ]);
  });

  it('compares each pair within one run', () => {
    const results = run(
      'run-lb',
      plan.scenarios.map((scenario) =>
        aggregate(scenario.id, stats(5, scenario.cluster.connection === 'lb' ? 15_000 : 20_000, 500)),
      ),
    );
    const rows = compareLoadBalancerToDirect(results);
    expect(rows.map((row) => [row.label, row.verdict, row.deltaPercent])).toEqual([
      ['three-lb/small@messageSizeBytes=12 vs three-direct/small@messageSizeBytes=12', 'lower', -25],
      ['three-lb/small@messageSizeBytes=150 vs three-direct/small@messageSizeBytes=150', 'lower', -25],
    ]);
  });

  it('explains when the plan has no lb/direct pair', () => {
    const single = { ...planData, clusters: [planData.clusters[0]] };
    const results = run('run-s', [aggregate('three-lb/small@messageSizeBytes=12', stats(3, 1, 0))], { plan: single });
    expect(() => compareLoadBalancerToDirect(results)).toThrow(
      /has no pair of clusters that differ only in connection/,
    );
  });

  it('compares two scenarios named by the caller, and names an unknown one', () => {
    const results = run('run-n', [aggregate('a/w', stats(3, 100, 1)), aggregate('b/w', stats(3, 100.5, 1))]);
    expect(compareScenarios(results, 'a/w', 'b/w').verdict).toBe('inside-noise');
    expect(() => compareScenarios(results, 'a/w', 'c/w')).toThrow(
      'run run-n has no scenario "c/w"; its scenarios are: a/w, b/w',
    );
  });
});

describe('baseline', () => {
  const a = run('a', [aggregate(SCENARIO, stats(3, 1, 0))]);
  const b = run('b', [aggregate(SCENARIO, stats(3, 1, 0))]);

  it('uses the marked baseline of the plan when it is among the runs', () => {
    const chosen = chooseBaseline([a, b], { planName: 'lb-vs-direct', runId: 'b' });
    expect(chosen.baseline.run.runId).toBe('b');
    expect(chosen.candidates.map((r) => r.run.runId)).toEqual(['a']);
    expect(chosen.note).toMatch(/marked baseline/);
  });

  it('falls back to the first run and says why', () => {
    expect(chooseBaseline([a, b]).note).toBe('baseline: run a, the first given (no baseline is marked for this plan)');
    expect(chooseBaseline([a, b], { planName: 'lb-vs-direct', runId: 'zzz' }).note).toMatch(
      /marked baseline zzz .* is not among the runs given/,
    );
  });

  it('will not mark a run without a successful repetition as baseline', () => {
    expect(baselineMarkFor(a)).toEqual({ planName: 'lb-vs-direct', runId: 'a' });
    expect(() => baselineMarkFor(run('f', [aggregate(SCENARIO, undefined, 2)]))).toThrow(
      /has no successful repetition \(2 failed\)/,
    );
  });
});
