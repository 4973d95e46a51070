import { validatePlan } from '../../core/plan/plan';
import type { StoredRepetition } from '../../core/results/result-items';
import type { RepetitionMetrics } from '../../core/metrics/host-metrics';
import type { PerSecondSample, RunRecord } from '../../core/results/result-model';
import { describe as stats } from '../../core/results/statistics';
import type { ComparisonStore } from '../../bin/compare-command';
import type { StoredRun } from '../../store/results-store';

/** A plan with an lb/direct pair and two queue counts: 4 scenarios. */
export const fixturePlan = validatePlan(
  {
    name: 'fixture-plan',
    repetitions: 2,
    clusters: [
      { name: 'c-lb', nodes: 3, topology: { type: 'quorum' }, connection: 'lb' },
      { name: 'c-direct', nodes: 3, topology: { type: 'quorum' }, connection: 'direct' },
    ],
    workloads: [{ name: 'w', producers: 2, consumers: 2, queues: 1, durationSeconds: 5, sweep: { queues: [1, 2] } }],
  },
  'fixture',
);

export const SCENARIOS = fixturePlan.scenarios.map((scenario) => scenario.id);

/** As local/run-plan.ts stores it: the validated plan without its expanded scenarios. */
const { scenarios: _scenarios, ...storedPlan } = fixturePlan;

/**
 * A stored run: `rates[scenarioId]` lists the receive rate of each repetition (send = receive);
 * `null` stands for a failed repetition.
 */
export function storedRun(
  runId: string,
  rates: Record<string, readonly (number | null)[]>,
  run: Partial<RunRecord> = {},
): StoredRun {
  const repetitions: StoredRepetition[] = [];
  for (const [scenarioId, values] of Object.entries(rates)) {
    values.forEach((rate, index) => {
      const common = {
        runId,
        scenarioId,
        repetition: index + 1,
        startedAt: '2026-01-01T00:00:00Z',
        finishedAt: '2026-01-01T00:00:05Z',
        perfTestArgs: [],
      };
      if (rate === null) {
        repetitions.push({ ...common, status: 'FAILED', error: 'PerfTest exited with code 1' });
        return;
      }
      const latency = { min: 100, median: 1_000 + 10 * index, p75: 2_000, p95: 5_000, p99: 9_000 };
      repetitions.push({
        ...common,
        status: 'SUCCEEDED',
        result: {
          summary: { sendRateAvg: rate, receiveRateAvg: rate, consumerLatency: latency },
          sendRate: stats([rate]),
          receiveRate: stats([rate]),
        },
      });
    });
  }
  return {
    run: {
      runId,
      planName: fixturePlan.name,
      plan: storedPlan,
      target: 'local',
      status: 'SUCCEEDED',
      startedAt: '2026-01-01T00:00:00Z',
      finishedAt: '2026-01-01T01:00:00Z',
      environment: { instanceType: 'localhost' },
      scenarioIds: SCENARIOS,
      ...run,
    },
    repetitions,
  };
}

/** Every scenario with the same rates. */
export function uniformRates(values: readonly (number | null)[]): Record<string, readonly (number | null)[]> {
  return Object.fromEntries(SCENARIOS.map((id) => [id, values]));
}

/** Five one-second samples of a steady rate. */
export async function steadySamples(
  _runId: string,
  _scenarioId: string,
  repetition: number,
): Promise<PerSecondSample[]> {
  return [1, 2, 3, 4, 5].map((time) => ({
    time,
    published: 1000 * repetition,
    returned: 0,
    confirmed: 0,
    nacked: 0,
    received: 1000 * repetition,
  }));
}

/** Five seconds of CPU of one broker node and the load generator. */
export async function steadyMetrics(
  _runId: string,
  _scenarioId: string,
  repetition: number,
): Promise<RepetitionMetrics> {
  const cpu = (node: string, percent: number) => ({
    node,
    metric: 'cpuPercent' as const,
    unit: 'percent' as const,
    points: [1, 2, 3, 4, 5].map((t) => [t, percent] as const),
  });
  return { source: 'local-proc', series: [cpu('rmqbench1@localhost', 20 + repetition), cpu('load-generator', 40)] };
}

/**
 * The ResultsStore operations the commands use, in memory. The real store is exercised against
 * DynamoDB Local by test/report/html-report.integration.test.ts; these tests are about the commands' logic.
 */
export class InMemoryStore implements ComparisonStore {
  readonly tableName = 'in-memory';
  readonly baselines = new Map<string, string>();
  constructor(private readonly runs: readonly StoredRun[]) {}
  async getRun(runId: string): Promise<StoredRun | undefined> {
    return this.runs.find((stored) => stored.run.runId === runId);
  }
  async getBaseline(planName: string): Promise<string | undefined> {
    return this.baselines.get(planName);
  }
  async setBaseline(planName: string, runId: string): Promise<void> {
    this.baselines.set(planName, runId);
  }
}
