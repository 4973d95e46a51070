import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { estimateRun } from '../../core/cost/estimate';
import { validatePlan } from '../../core/plan/plan';
import { targetProblems } from '../../core/plan/target-rules';
import { clusterExpiryHours, HISTORY_EVENTS_BUDGET, repetitionPollSeconds } from '../../core/cloud/workflow-shape';
import { buildSchedule, planData } from '../../state-machines/schedule';

const plan = (workload: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  validatePlan(
    {
      name: 'shape',
      clusters: [{ name: 'c', nodes: 3, instanceType: 'c5.xlarge' }],
      workloads: [{ name: 'w', ...workload }],
      ...extra,
    },
    'test',
  );

describe('workflow limits a cloud plan must fit (issue 22, items 3 and 4)', () => {
  test('repetition checks are spread over the duration: 15 s up to ~7 min, 120 s at most', () => {
    expect(repetitionPollSeconds(60)).toBe(15);
    expect(repetitionPollSeconds(3600)).toBe(120);
    expect(repetitionPollSeconds(1200)).toBe(42);
  });

  test(
    'a plan whose one execution would record more history events ' +
      'than the budget is refused by field, naming the count',
    () => {
      const big = plan(
        { durationSeconds: 60, sweep: { messageSizeBytes: [100, 200, 300, 400, 500] } },
        { repetitions: 100 },
      );
      const events = estimateRun(big, { target: 'aws', catalog: defaultPriceCatalog }).historyEvents;
      expect(events).toBeGreaterThan(HISTORY_EVENTS_BUDGET);
      const issues = targetProblems(big, 'aws', defaultPriceCatalog);
      expect(issues).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            path: 'repetitions',
            message: expect.stringContaining(`about ${events} Step Functions history events`),
          }),
        ]),
      );
      expect(() => buildSchedule({ plan: planData(big), target: 'aws' }, 'x')).toThrow(
        /repetitions: one execution of this plan would record/,
      );
      // The same plan with a tenth of the repetitions fits.
      expect(
        targetProblems(
          plan({ durationSeconds: 60, sweep: { messageSizeBytes: [100, 200, 300, 400, 500] } }, { repetitions: 10 }),
          'aws',
          defaultPriceCatalog,
        ),
      ).toEqual([]);
    },
  );

  test('a cluster whose planned life outlasts the execution timeout is refused by its field', () => {
    const long = plan(
      { durationSeconds: 3600, sweep: { messageSizeBytes: [100, 200, 300, 400, 500, 600] } },
      { repetitions: 4 },
    );
    const fits = plan(
      { durationSeconds: 3600, sweep: { messageSizeBytes: [100, 200, 300, 400, 500] } },
      { repetitions: 4 },
    );
    expect(targetProblems(fits, 'aws', defaultPriceCatalog)).toEqual([]);
    const issues = targetProblems(long, 'aws', defaultPriceCatalog);
    expect(issues).toEqual([
      expect.objectContaining({
        path: 'clusters[0]',
        message: expect.stringMatching(
          /cluster c would run about 2\d\.\d h .* longer than an execution's 24 h timeout/,
        ),
      }),
    ]);
  });

  test(
    "a cluster's expiry covers its own repetitions: " + "the controller's 12 h for short runs, longer for long ones",
    () => {
      const hours = (repetitionHours: number) =>
        clusterExpiryHours(12, { repetitions: [{ durationSeconds: repetitionHours * 3600, pauseSeconds: 0 }] }, 30);
      expect(hours(1)).toBe(12);
      // 14 h of PerfTest, 30 min launch deadline, 30 min teardown: 15 h planned, a quarter more.
      expect(hours(14)).toBeCloseTo(((14 * 3600 + 45 + 3600) * 1.25) / 3600, 5);
      expect(hours(14)).toBeGreaterThan(14 + 1);
    },
  );
});
