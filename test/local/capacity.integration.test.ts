jest.setTimeout(600_000);

import { groupScenariosByCluster, parsePlanText, type Scenario } from '../../core/plan/plan';
import { ingestRepetition } from '../../core/results/ingest';
import type { RepetitionRecord } from '../../core/results/result-model';
import { LocalTarget, type RabbitClusterHandle } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { tempDir } from './helpers';

/*
 * Issue 25's check on a real 3-node quorum cluster with the real PerfTest: the same messages flat out, then the
 * capacity search at a 50 ms and at a 500 ms p99 bound. The 50 ms capacity lies between the ladder's first step and
 * the saturated receive rate measured here; the 500 ms capacity is at least as high (a looser bound never holds less).
 */
// 250, 1,000 and 4,000 msg/s: were the top to hold at 50 ms, the capacity is the ladder's top, still at most the
// saturated rate (a rate the cluster cannot carry is not achieved, so that step fails). The first step is low enough
// to hold 50 ms on a busy machine too (at 1,000 a CI rehearsal with other work beside it once held none, and so had
// no capacity to compare). Each step measures 10 s after a 3 s warm-up: the step's p99 is the 1 % its messages' slowest
// (core/capacity/capacity-verdict.ts stepP99Micros), so a stall of ~100 ms at 250 msg/s (25 slow messages) is 2 % of
// a 5 s window and fails it, as it did once in a CI rehearsal (after 4 s windows had failed before), and 1 % of 10 s.
// The saturated run comes last: when it came first, the run after it (the 250 msg/s step) stalled twice on 2026-11-28
// (p99 78 ms in CI; 266 ms, worst second 348 ms, in a rehearsal), having started as the saturated run's backlog was
// deleted with its queue: a quorum queue's segment files on three nodes, unlinked on an ext4 mounted `discard` here.
const ladder = 'minRate: 250, maxRate: 4000, stepFactor: 4, stepSeconds: 13, warmUpSeconds: 3';
const plan = parsePlanText(
  `
name: capacity-bounds
clusters:
  - { name: three, nodes: 3, topology: { type: quorum }, connection: direct }
workloads:
  - { name: p99-50ms, producers: 1, consumers: 1, messageSizeBytes: 150, capacity: { p99LatencyMs: 50, ${ladder} } }
  - { name: p99-500ms, producers: 1, consumers: 1, messageSizeBytes: 150, capacity: { p99LatencyMs: 500, ${ladder} } }
  - { name: saturated, producers: 1, consumers: 1, messageSizeBytes: 150, durationSeconds: 8 }
`,
  'capacity-bounds.yaml',
);

describe('capacity at two latency bounds on a real 3-node quorum cluster', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('capacity');
  let target: LocalTarget;
  let handle: RabbitClusterHandle;
  const records = new Map<string, RepetitionRecord>();

  beforeAll(async () => {
    target = new LocalTarget({ processes, runDir: work.path, cacheDir: cacheDir() });
    target.preflight(plan);
    handle = await target.launchRabbitMq(groupScenariosByCluster(plan)[0]!, 0);
    for (const scenario of plan.scenarios as Scenario[]) {
      let record = ingestRepetition(await target.runRepetition(handle, 'capacity-run', scenario, 1));
      // The machine's stall, not the search: a CI machine's pause of 100+ ms put the 250 msg/s step's p99 at 78 ms
      // (worst second 136 ms) with both rates on target. Such a first step is run once more and that run judged;
      // a step that failed by anything else, or by latency again, stays failed.
      const first = record.capacity?.steps[0];
      if (first && !first.passed && first.failedBy.join() === 'latency') {
        console.warn(
          `${scenario.workload.name}: the first step failed by latency alone, run once more: ${JSON.stringify(first)}`,
        );
        record = ingestRepetition(await target.runRepetition(handle, 'capacity-run', scenario, 2));
      }
      records.set(scenario.workload.name, record);
    }
  });
  afterAll(async () => {
    if (handle) await target.teardown(handle);
    await processes.stopAll();
    work.cleanup();
  });

  test('every run succeeded; the capacity runs stepped through the ladder and judged each step', () => {
    for (const [name, record] of records)
      expect([name, record.status, record.error]).toEqual([name, 'SUCCEEDED', undefined]);
    for (const name of ['p99-50ms', 'p99-500ms']) {
      const { steps } = records.get(name)!.capacity!;
      expect(steps[0]!.targetRate).toBe(250);
      expect(steps.length).toBeGreaterThanOrEqual(2);
    }
  });

  test('at 50 ms the capacity lies between the first step and the saturated receive rate', () => {
    const saturated = records.get('saturated')!.result!.summary.receiveRateAvg;
    const capacity = records.get('p99-50ms')!.capacity!;
    // The first step whole (its rates, p99, queue growth and reasons) when it did not hold: objectContaining prints
    // the received step entire, where toMatchObject would print only `passed`.
    expect(capacity.steps[0]).toEqual(expect.objectContaining({ passed: true }));
    expect(capacity.rateMsgPerSecond).toBeGreaterThanOrEqual(250);
    expect(capacity.rateMsgPerSecond!).toBeLessThanOrEqual(saturated);
    expect(capacity.p99LatencyMs!).toBeLessThanOrEqual(50);
  });

  test('at 500 ms the capacity is at least the 50 ms one', () => {
    const at500 = records.get('p99-500ms')!.capacity!;
    expect(at500.steps[0]).toEqual(expect.objectContaining({ passed: true }));
    const at50 = records.get('p99-50ms')!.capacity!.rateMsgPerSecond ?? 0;
    expect(at500.rateMsgPerSecond!).toBeGreaterThanOrEqual(at50);
    expect(at500.p99LatencyMs!).toBeLessThanOrEqual(500);
  });
});
