import { parsePlanText } from '../../core/plan/plan';
import { aggregateRun, renderMarkdownReport, scenarioFacts, storedScenarios } from '../../core/report/report';
import type { StoredRepetition } from '../../core/results/result-items';
import type { RunRecord } from '../../core/results/result-model';
import { planData } from '../../state-machines/schedule';

const plan = parsePlanText(
  'name: p\nclusters: [{ name: k, broker: kafka, nodes: 3 }]\nworkloads:\n  - { name: w, messageSizeBytes: ' +
    '500, messageCount: 1000, consumers: 0, sweep: { acks: ["1", all], partitions: [5, 15] } }\n',
  'p.yaml',
);

/** The plan as DynamoDB gives it back: the same maps with their keys in another order. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([key, inner]) => [key, reordered(inner)]),
  );
}

const run: RunRecord = {
  runId: 'r',
  planName: 'p',
  plan: reordered(planData(plan)),
  target: 'local',
  status: 'SUCCEEDED',
  startedAt: '2026-11-23T10:00:00.000Z',
  environment: {},
  scenarioIds: plan.scenarios.map((scenario) => scenario.id),
};

describe('reports read the plan stored with a run', () => {
  test(
    'a multi-field sweep read back with its keys in another ' +
      'order still finds every scenario by the id the run recorded',
    () => {
      expect(run.scenarioIds[1]).toBe('k/w@acks=1,partitions=15');
      const found = storedScenarios(run);
      expect([...found.keys()]).toEqual(run.scenarioIds);
      expect(found.get('k/w@acks=1,partitions=15')!.workload).toMatchObject({ acks: '1', partitions: 15 });
      expect(scenarioFacts(run).get('k/w@acks=all,partitions=5')).toMatchObject({ clusterName: 'k', nodes: 3 });
    },
  );

  test("so MB/s is reported for them, and the producers' acknowledgement latency in a table of its own", () => {
    const repetitions: StoredRepetition[] = run.scenarioIds.map((scenarioId) => ({
      runId: 'r',
      scenarioId,
      repetition: 1,
      status: 'SUCCEEDED',
      startedAt: run.startedAt,
      finishedAt: run.startedAt,
      perfTestArgs: [],
      result: {
        summary: { sendRateAvg: 2000, receiveRateAvg: 0, confirmLatency: { median: 1500, p95: 20_000, p99: 31_000 } },
        sendRate: { n: 1, mean: 2000, median: 2000, stddev: 0, ci95: 0, min: 2000, max: 2000 },
        receiveRate: { n: 1, mean: 0, median: 0, stddev: 0, ci95: 0, min: 0, max: 0 },
      },
    }));
    const aggregates = aggregateRun(run, repetitions);
    expect(aggregates.map((aggregate) => aggregate.messageSizeBytes)).toEqual([500, 500, 500, 500]);
    expect(aggregates[0]!.sendMBps!.mean).toBeGreaterThan(0);
    const markdown = renderMarkdownReport(run, repetitions);
    expect(markdown).toContain('| k/w@acks=all,partitions=15 | 1/1 | 2,000 ± 0 | 0 ± 0 | 1 / 0 | — |');
    expect(markdown).toContain('| k/w@acks=all,partitions=15 | 1.50 / 20.0 / 31.0 |');
  });
});
