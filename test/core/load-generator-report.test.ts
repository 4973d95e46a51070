import { runReportDocument } from '../../core/report/html-report';
import { aggregateRun, renderMarkdownReport } from '../../core/report/report';
import type { StoredRepetition } from '../../core/results/result-items';
import type { RunRecord } from '../../core/results/result-model';

const run: RunRecord = {
  runId: 'run-lg',
  planName: 'lg',
  plan: {
    name: 'lg',
    repetitions: 3,
    clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' } }],
    workloads: [{ name: 'small' }, { name: 'big' }],
  },
  target: 'local',
  status: 'SUCCEEDED',
  startedAt: '2026-11-23T10:00:00Z',
  environment: {},
  scenarioIds: ['three/small', 'three/big'],
};
const stat = { n: 1, mean: 1000, median: 1000, stddev: 0, ci95: 0, min: 1000, max: 1000 };
const repetition = (scenarioId: string, index: number, medianCpuPercent?: number): StoredRepetition => ({
  runId: run.runId,
  scenarioId,
  repetition: index,
  status: 'SUCCEEDED',
  startedAt: '2026-11-23T10:00:00Z',
  finishedAt: '2026-11-23T10:00:30Z',
  perfTestArgs: [],
  result: { summary: { sendRateAvg: 1000, receiveRateAvg: 1000 }, sendRate: stat, receiveRate: stat },
  ...(medianCpuPercent === undefined ? {} : { loadGenerator: { medianCpuPercent, bound: medianCpuPercent > 90 } }),
});

// three/big: the load generator saturated in 2 of 3 repetitions; three/small: never; one repetition without metrics (an
// older record).
const repetitions = [
  repetition('three/small', 1, 40),
  repetition('three/small', 2, 45),
  repetition('three/small', 3),
  repetition('three/big', 1, 97),
  repetition('three/big', 2, 88),
  repetition('three/big', 3, 95),
];

describe('load-generator-bound verdict in reports', () => {
  test('per scenario: how many of the repetitions with a verdict were bound', () => {
    expect(
      aggregateRun(run, repetitions).map((aggregate) => [aggregate.scenarioId, aggregate.loadGeneratorBound]),
    ).toEqual([
      ['three/small', { bound: 0, of: 2 }],
      ['three/big', { bound: 2, of: 3 }],
    ]);
  });

  test('Markdown: one verdict line for the bound scenario only', () => {
    const markdown = renderMarkdownReport(run, repetitions);
    expect(markdown).toContain(
      '## Load generator\n\n- three/big: load-generator bound (load generator CPU ' +
        "median above 90 % in 2 of 3 repetitions): the broker's maximum was not measured\n",
    );
    expect(markdown).not.toMatch(/three\/small: load-generator bound/);
  });

  test('HTML: the same line in a Load generator section; none when no scenario was bound', () => {
    const document = (reps: readonly StoredRepetition[]) =>
      runReportDocument({
        run,
        aggregates: aggregateRun(run, reps),
        failedRepetitions: [],
        charts: [],
        loadBalancerDeltas: [],
        pricePerformance: { available: false, reason: 'local' },
        generatedAt: '2026-11-23T11:00:00Z',
      });
    const section = document(repetitions).sections.find((candidate) => candidate.id === 'load-generator');
    expect(section?.blocks).toEqual([
      {
        kind: 'list',
        items: [
          expect.stringMatching(
            /^three\/big: load-generator bound .* in 2 of 3 repetitions\): the broker's maximum was not measured$/,
          ),
        ],
      },
    ]);
    expect(
      document(repetitions.filter((rep) => rep.scenarioId === 'three/small')).sections.map((candidate) => candidate.id),
    ).not.toContain('load-generator');
  });
});
