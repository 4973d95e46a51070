import { baselineCommand, compareCommand, compareStoredRuns } from '../../bin/compare-command';
import { ComparisonError } from '../../core/results/comparison';
import { InMemoryStore, SCENARIOS, storedRun, uniformRates } from './report-fixtures';

const faster = storedRun('faster', uniformRates([20_000, 20_100, 19_900]));
const slower = storedRun('slower', uniformRates([10_000, 10_100, 9_900]));
const noisy = storedRun('noisy', uniformRates([9_000, 11_500, 9_800]));
const failed = storedRun('failed', uniformRates([null, null]), { status: 'FAILED', error: 'broker down' });
const otherPlan = storedRun('other', uniformRates([10_000, 10_000]), { planName: 'other-plan' });
const store = () => new InMemoryStore([faster, slower, noisy, failed, otherPlan]);

describe('rmqbench compare', () => {
  it(
    'compares every scenario of later runs with the ' + 'first run when no baseline is marked, flagging noise',
    async () => {
      const outcome = await compareStoredRuns(store(), ['slower', 'faster', 'noisy']);
      expect(outcome.note).toBe('baseline: run slower, the first given (no baseline is marked for this plan)');
      const rows = outcome.comparisons[0]!.rows;
      expect(rows).toHaveLength(8);
      expect(rows.filter((row) => row.candidate.runId === 'faster').map((row) => row.verdict)).toEqual(
        Array(4).fill('higher'),
      );
      expect(rows.filter((row) => row.candidate.runId === 'noisy').map((row) => row.verdict)).toEqual(
        Array(4).fill('inside-noise'),
      );
    },
  );

  it('uses the marked baseline of the plan when it is among the runs, whatever the order', async () => {
    const marked = store();
    await baselineCommand(marked, 'faster', { json: false });
    const text = await compareCommand(marked, ['slower', 'faster'], { json: false });
    expect(text).toMatch(/^baseline: run faster \(marked baseline of plan "fixture-plan"\)/);
    expect(text).toContain(`| ${SCENARIOS[0]} | −50.0% (−10,000 ± `);
    expect(text).toContain('| lower: significant (95% CI of the delta excludes 0) |');
  });

  it("compares one run with its plan's baseline and shows lb vs direct inside the run", async () => {
    const marked = store();
    await marked.setBaseline('fixture-plan', 'slower');
    const outcome = await compareStoredRuns(marked, ['faster']);
    expect(outcome.comparisons[0]!.baselineRunId).toBe('slower');
    expect(outcome.loadBalancerDeltas.map((delta) => delta.label)).toEqual([
      `${SCENARIOS[0]} vs ${SCENARIOS[2]}`,
      `${SCENARIOS[1]} vs ${SCENARIOS[3]}`,
    ]);
  });

  it(
    'refuses runs of different plans, unknown runs and ' + 'runs without a successful repetition, each in one line',
    async () => {
      await expect(compareStoredRuns(store(), ['slower', 'other'])).rejects.toThrow(
        new RegExp(
          String.raw`^runs of different plans cannot be compared scenario by scenario: slower ran plan ` +
            String.raw`"fixture-plan" but other ran "other-plan"`,
        ),
      );
      await expect(compareStoredRuns(store(), ['slower', 'nope'])).rejects.toThrow(
        new ComparisonError('no run "nope" in table in-memory (see rmqbench runs)'),
      );
      await expect(compareStoredRuns(store(), ['slower', 'failed'])).rejects.toThrow(
        new RegExp(
          String.raw`^run failed \(plan "fixture-plan", status FAILED\) has no successful repetition \(8 ` +
            String.raw`failed\): broker down; rerun it`,
        ),
      );
      await expect(compareStoredRuns(store(), ['failed'])).rejects.toThrow(
        /^run failed .* has no successful repetition/,
      );
    },
  );

  it('a single run with neither a baseline nor an lb/direct pair says what to do', async () => {
    const plain = storedRun(
      'plain',
      { [SCENARIOS[2]!]: [1, 2] },
      {
        plan: {
          name: 'x',
          clusters: [{ name: 'c-direct', nodes: 1, topology: { type: 'classic' }, connection: 'direct' }],
          workloads: [{ name: 'w' }],
        },
      },
    );
    await expect(compareStoredRuns(new InMemoryStore([plain]), ['plain'])).rejects.toThrow(
      new RegExp(
        String.raw`^nothing to compare: run plain alone: plan "fixture-plan" has no marked baseline ` +
          String.raw`\(rmqbench baseline <runId> marks one\), and plan "x" .* has no pair of clusters .*; or ` +
          String.raw`give two or more run ids$`,
      ),
    );
  });
});

describe('rmqbench baseline', () => {
  it('marks a run and says what it replaced', async () => {
    const marked = store();
    expect(await baselineCommand(marked, 'slower', { json: false })).toBe(
      'run slower is now the baseline of plan "fixture-plan" (no baseline before); rmqbench compare compares ' +
        'its later runs with it\n',
    );
    expect(JSON.parse(await baselineCommand(marked, 'faster', { json: true }))).toEqual({
      planName: 'fixture-plan',
      runId: 'faster',
      previous: 'slower',
    });
  });

  it('refuses a run without a successful repetition, and keeps the old mark', async () => {
    const marked = store();
    await marked.setBaseline('fixture-plan', 'slower');
    await expect(baselineCommand(marked, 'failed', { json: false })).rejects.toThrow(
      /^run failed .* has no successful repetition/,
    );
    expect(await marked.getBaseline('fixture-plan')).toBe('slower');
  });
});
