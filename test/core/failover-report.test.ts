import { compareRuns, failoverMetricsIn } from '../../core/results/comparison';
import { renderHtmlReport, runReportDocument } from '../../core/report/html-report';
import { aggregateRun, renderMarkdownReport } from '../../core/report/report';
import type { StoredRepetition } from '../../core/results/result-items';
import type { FailoverResult, RunRecord } from '../../core/results/result-model';

const planData = {
  name: 'failover',
  repetitions: 3,
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' } }],
  workloads: [{ name: 'kill', durationSeconds: 20, fault: { action: 'kill', node: 'leader', atSeconds: 10 } }],
};

const runRecord = (runId: string): RunRecord => ({
  runId,
  planName: 'failover',
  plan: planData,
  target: 'local',
  status: 'SUCCEEDED',
  startedAt: '2026-11-23T10:00:00Z',
  environment: {},
  scenarioIds: ['three/kill'],
});

function failover(
  lostMessages: number,
  recoverySeconds: number | undefined,
  unavailableSeconds: number,
): FailoverResult {
  return {
    fault: { action: 'kill', node: 'leader', nodeName: 'rmqbench1@localhost', appliedAtSeconds: 10.1 },
    published: 4000,
    confirmed: 4000,
    consumed: 4000 - lostMessages,
    lostMessages,
    duplicatedMessages: 0,
    unconfirmedAtFault: 2,
    ...(recoverySeconds === undefined ? {} : { recoverySeconds }),
    unavailableSeconds,
    reconnects: 1,
    receivedPerSecond: [200, 200],
  };
}

const summary = { sendRateAvg: 1000, receiveRateAvg: 1000 };
const stat = { n: 1, mean: 1000, median: 1000, stddev: 0, ci95: 0, min: 1000, max: 1000 };
const repetition = (runId: string, index: number, result: FailoverResult): StoredRepetition => ({
  runId,
  scenarioId: 'three/kill',
  repetition: index,
  status: 'SUCCEEDED',
  startedAt: '2026-11-23T10:00:00Z',
  finishedAt: '2026-11-23T10:00:30Z',
  perfTestArgs: [],
  result: { summary, sendRate: stat, receiveRate: stat },
  failover: result,
});

const quorum = [failover(0, 0.9, 0), failover(0, 1.1, 1), failover(0, 1.0, 0)].map((result, index) =>
  repetition('quorum', index + 1, result),
);
const classic = [failover(1900, undefined, 9), failover(2100, undefined, 9), failover(2000, 12, 8)].map(
  (result, index) => repetition('classic', index + 1, result),
);

describe('the verifier numbers in reports and comparisons', () => {
  test(
    'over repetitions: mean and 95% CI per metric under the report names; ' +
      'recoverySeconds over the repetitions that recovered',
    () => {
      const [aggregate] = aggregateRun(runRecord('classic'), classic);
      expect(Object.keys(aggregate!.failover!)).toEqual([
        'lostMessages',
        'duplicatedMessages',
        'unconfirmedAtFault',
        'recoverySeconds',
        'unavailableSeconds',
        'reconnects',
      ]);
      expect(aggregate!.failover!.lostMessages).toMatchObject({ n: 3, mean: 2000 });
      expect(aggregate!.failover!.lostMessages!.ci95).toBeGreaterThan(0);
      expect(aggregate!.failover!.recoverySeconds).toMatchObject({ n: 1, mean: 12 });
    },
  );

  test(
    'the Markdown report has the failover section: per scenario ' +
      'and per repetition, "not recovered" where it never came back',
    () => {
      const text = renderMarkdownReport(runRecord('classic'), classic);
      expect(text).toContain('## Failover (lost-message verifier)');
      expect(text).toMatch(
        /\| three\/kill \| 3 \| 2,000 ± [\d,.]+ \| 0 ± 0 \| 2 ± 0 \| 12 ± 0 \| 8\.67 ± [\d.]+ \| 1 ± 0 \|/,
      );
      expect(text).toContain(
        '| three/kill #1 | kill rmqbench1@localhost (leader) at 10.1 s | ' +
          '4,000 | 2,100 | 1,900 | 0 | 2 | not recovered | 9 | 1 |',
      );
    },
  );

  test('a run without faults has no failover section', () => {
    const plain = quorum.map(({ failover: _failover, ...rest }) => rest);
    expect(renderMarkdownReport(runRecord('quorum'), plain)).not.toContain('Failover');
    expect(aggregateRun(runRecord('quorum'), plain)[0]!.failover).toBeUndefined();
  });

  test(
    'a cloud run whose faults were applied without the verifier says "lost messages ' +
      'not counted on aws" per repetition, and has no failover numbers at all (no zeros)',
    () => {
      const uncounted = quorum.map(({ failover: _failover, ...rest }) => ({
        ...rest,
        uncountedFault: {
          fault: {
            action: 'kill' as const,
            node: 'leader' as const,
            nodeName: 'rabbit@10.0.1.5',
            appliedAtSeconds: 12.5,
            healedAtSeconds: 21,
          },
          reason: 'lost messages not counted on aws: no verifier',
        },
      }));
      const text = renderMarkdownReport({ ...runRecord('aws'), target: 'aws' }, uncounted);
      expect(text).toContain('## Faults applied, lost messages not counted');
      expect(text).toContain(
        '- three/kill #1: kill rabbit@10.0.1.5 (leader) at 12.5 s, ' +
          'healed at 21 s: lost messages not counted on aws: no verifier',
      );
      expect(text).not.toContain('## Failover (lost-message verifier)');
      expect(aggregateRun({ ...runRecord('aws'), target: 'aws' }, uncounted)[0]!.failover).toBeUndefined();
    },
  );

  test('the HTML report document has a failover section with both tables', () => {
    const document = runReportDocument({
      run: runRecord('quorum'),
      aggregates: aggregateRun(runRecord('quorum'), quorum),
      failoverRepetitions: quorum,
      failedRepetitions: [],
      charts: [],
      loadBalancerDeltas: [],
      pricePerformance: { available: false, reason: 'local run' },
      generatedAt: '2026-11-23T11:00:00Z',
    });
    const section = document.sections.find((candidate) => candidate.id === 'failover');
    expect(
      section?.blocks
        .filter((block) => block.kind === 'table')
        .map((block) => (block.kind === 'table' ? block.rows.length : 0)),
    ).toEqual([1, 3]);
  });

  test(
    'the HTML report of a cloud run lists each fault applied ' +
      'without the verifier as "not counted", and has no failover table',
    () => {
      const uncounted = quorum.map(({ failover: _failover, ...rest }) => ({
        ...rest,
        uncountedFault: {
          fault: {
            action: 'kill' as const,
            node: 'leader' as const,
            nodeName: 'rabbit@10.0.1.5',
            appliedAtSeconds: 12.5,
            healedAtSeconds: 21,
          },
          reason: 'lost messages not counted on aws: no verifier',
        },
      }));
      const run: RunRecord = { ...runRecord('aws'), target: 'aws' };
      const html = renderHtmlReport(
        runReportDocument({
          run,
          aggregates: aggregateRun(run, uncounted),
          uncountedFaults: uncounted,
          failedRepetitions: [],
          charts: [],
          loadBalancerDeltas: [],
          pricePerformance: { available: false, reason: 'test' },
          generatedAt: '2026-11-23T11:00:00Z',
        }),
      );
      expect(html).toContain('<section id="faults-not-counted">');
      expect(html).toContain(
        'three/kill #1: kill rabbit@10.0.1.5 (leader) at 12.5 s, ' +
          'healed at 21 s: lost messages not counted on aws: no verifier',
      );
      expect(html.match(/lost messages not counted on aws: no verifier/g)).toHaveLength(uncounted.length);
      expect(html).not.toContain('<section id="failover">');
    },
  );

  test('comparison verdicts cover each verifier metric: classic loses significantly more than quorum', () => {
    const runs = [
      { run: runRecord('quorum'), aggregates: aggregateRun(runRecord('quorum'), quorum) },
      { run: runRecord('classic'), aggregates: aggregateRun(runRecord('classic'), classic) },
    ];
    expect(failoverMetricsIn(runs)).toEqual([
      'lostMessages',
      'duplicatedMessages',
      'unconfirmedAtFault',
      'recoverySeconds',
      'unavailableSeconds',
      'reconnects',
    ]);
    const [lost] = compareRuns(runs[0]!, [runs[1]!], 'lostMessages').rows;
    expect(lost).toMatchObject({ metric: 'lostMessages', verdict: 'higher', delta: 2000 });
    const [recovery] = compareRuns(runs[0]!, [runs[1]!], 'recoverySeconds').rows;
    expect(recovery).toMatchObject({ verdict: 'too-few-repetitions' });
  });
});
