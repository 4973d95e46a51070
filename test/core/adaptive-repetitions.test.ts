import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  adaptiveOutcome,
  ciHalfWidthPercent,
  settledCheck,
  settledDecision,
  type AdaptiveRepetitionView,
} from '../../core/results/adaptive-repetitions';

const FIXTURES = join(__dirname, '..', 'fixtures', 'perftest');

/** The receive rate PerfTest recorded in a fixture run (its summary line), as a repetition stores it. */
function recordedReceiveRate(name: string): number {
  const stdout = readFileSync(join(FIXTURES, `${name}.stdout.txt`), 'utf8');
  return Number(/receiving rate avg: (\d+) msg\/s/.exec(stdout)![1]);
}

const rule = { min: 2, max: 5, ciPercent: 5 };

const stored = (
  scenarioId: string,
  rates: readonly (number | 'FAILED' | { skipped: string })[],
): AdaptiveRepetitionView[] =>
  rates.map((rate, index) =>
    rate === 'FAILED'
      ? { scenarioId, repetition: index + 1, status: 'FAILED' }
      : typeof rate === 'object'
        ? { scenarioId, repetition: index + 1, status: 'SKIPPED', skipReason: rate.skipped }
        : { scenarioId, repetition: index + 1, status: 'SUCCEEDED', result: { summary: { receiveRateAvg: rate } } },
  );

describe('the stopping rule: 95% CI half-width of the receive rate within ciPercent of the mean', () => {
  test('the half-width is Student t over the repetitions: 2 rates use t(1) = 12.706', () => {
    // mean 20,200, sample sd 282.84: 12.706 × 282.84 / √2 = 2,541 = 12.58 % of the mean.
    expect(ciHalfWidthPercent([20_000, 20_400])).toBeCloseTo(12.58, 2);
    expect(ciHalfWidthPercent([20_000])).toBeUndefined();
    expect(ciHalfWidthPercent([0, 0])).toBeUndefined();
  });

  test('recorded rates of one steady workload settle after min: the 150 B run read twice agrees with itself', () => {
    const rate = recordedReceiveRate('basic-150b');
    expect(rate).toBe(5994);
    // Two repetitions 0.5 % apart: 12.706 × 21.2 / √2 / 6009 = 3.2 % ≤ 5 %.
    const decision = settledDecision(rule, [rate, rate * 1.005]);
    expect(decision.settled).toBe(true);
    expect(decision.ciHalfWidthPercent).toBeCloseTo(3.17, 1);
    expect(decision.reason).toBe('settled: CI half-width 3.2 % ≤ 5 % after 2 repetitions');
  });

  test('recorded rates of different workloads do not settle: the half-width is reported against the threshold', () => {
    const rates = ['basic-150b', 'quorum-150b', 'two-queues-12b'].map(recordedReceiveRate);
    expect(rates).toEqual([5994, 13604, 9121]);
    const decision = settledDecision(rule, rates);
    expect(decision.settled).toBe(false);
    // mean 9,573, sd 3,825: 4.303 × 3,825 / √3 = 9,502 = 99.3 % of the mean.
    expect(decision.ciHalfWidthPercent).toBeCloseTo(99.3, 0);
    expect(decision.reason).toMatch(/^not settled: CI half-width 99\.\d % > 5 % after 3 repetitions$/);
  });

  test('fewer successful repetitions than min never settle, however close they are', () => {
    const decision = settledDecision({ min: 3, max: 5, ciPercent: 5 }, [5994, 5994]);
    expect(decision).toEqual({
      settled: false,
      repetitions: 2,
      reason: 'not settled: 2 repetitions succeeded, at least 3 needed',
    });
  });

  test('the threshold is inclusive: a half-width exactly at ciPercent settles', () => {
    const width = ciHalfWidthPercent([100, 110])!;
    expect(settledDecision({ min: 2, max: 5, ciPercent: width }, [100, 110]).settled).toBe(true);
    expect(settledDecision({ min: 2, max: 5, ciPercent: width - 0.01 }, [100, 110]).settled).toBe(false);
  });
});

describe('CheckSettled on the stored repetitions of a scenario', () => {
  const item = { runId: 'r', scenarioId: 'c/w', repetition: 3 };
  const now = '2026-11-26T12:00:00.000Z';

  test('a settled scenario skips the repetition and gives the SKIPPED record with the reason', () => {
    // 12.706 × 7.07 / √2 = 63.5 msg/s = 1.1 % of 6,005 (the other scenario's scattered rates do not count).
    const outcome = settledCheck(rule, item, [...stored('c/w', [6000, 6010]), ...stored('other', [1, 1000])], now);
    expect(outcome.skip).toBe(true);
    expect(outcome).toMatchObject({
      record: {
        runId: 'r',
        scenarioId: 'c/w',
        repetition: 3,
        status: 'SKIPPED',
        startedAt: now,
        finishedAt: now,
        perfTestArgs: [],
        skipReason: 'settled: CI half-width 1.1 % ≤ 5 % after 2 repetitions',
      },
    });
  });

  test('only the scenario’s earlier repetitions count; a failed one gives no rate', () => {
    // Repetition 2 failed: one rate is fewer than min, so repetition 3 runs.
    const outcome = settledCheck(rule, item, stored('c/w', [6000, 'FAILED', 6000, 6000]), now);
    expect(outcome).toEqual({ skip: false, reason: 'not settled: 1 repetition succeeded, at least 2 needed' });
  });

  test('once a repetition was skipped, the later ones are skipped for the same reason', () => {
    const reason = 'settled: CI half-width 1.5 % ≤ 5 % after 2 repetitions';
    const outcome = settledCheck(
      rule,
      { ...item, repetition: 4 },
      stored('c/w', [6000, 6010, { skipped: reason }]),
      now,
    );
    expect(outcome).toMatchObject({ skip: true, reason, record: { repetition: 4, skipReason: reason } });
  });
});

describe('how an adaptive scenario ended, for the reports', () => {
  test('settled: repetitions run, skipped, and the recorded reason', () => {
    const reason = 'settled: CI half-width 1.5 % ≤ 5 % after 2 repetitions';
    expect(adaptiveOutcome(rule, 'c/w', stored('c/w', [6000, 6010, { skipped: reason }, { skipped: reason }]))).toEqual(
      { scenarioId: 'c/w', ...rule, ran: 2, skipped: 2, stoppedBecause: 'settled', reason },
    );
  });

  test('max reached: every repetition ran and the last half-width is given', () => {
    const outcome = adaptiveOutcome({ ...rule, max: 3 }, 'c/w', stored('c/w', [5994, 13604, 9121]));
    expect(outcome.stoppedBecause).toBe('max reached');
    expect(outcome.ran).toBe(3);
    expect(outcome.reason).toMatch(/^max reached: CI half-width 99\.\d % > 5 % after 3 repetitions$/);
  });

  test('incomplete: the run ended before the scenario settled or reached max', () => {
    expect(adaptiveOutcome(rule, 'c/w', stored('c/w', [5994]))).toMatchObject({
      stoppedBecause: 'incomplete',
      ran: 1,
      reason: 'incomplete: 1 of at most 5 repetitions ran (the run ended before the scenario settled)',
    });
  });
});
