jest.setTimeout(600_000);

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { groupScenariosByCluster, parsePlanText } from '../../core/plan/plan';
import { ingestRepetition } from '../../core/results/ingest';
import type { RepetitionRecord } from '../../core/results/result-model';
import { LocalTarget, type LocalClusterHandle } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { tempDir } from './helpers';

/*
 * Issue 25 on Kafka: a capacity ladder on a real 1-broker KRaft cluster with the real ProducerPerformance and
 * ConsumerPerformance, one producer run per step (--throughput, --warmup-records), judged at ingest.
 */
const plan = parsePlanText(
  `
name: kafka-capacity
clusters:
  - { name: k, broker: kafka, nodes: 1 }
workloads:
  - name: ladder
    producers: 1
    consumers: 1
    messageSizeBytes: 150
    capacity: { p99LatencyMs: 500, minRate: 500, maxRate: 2000, stepFactor: 2, stepSeconds: 6, warmUpSeconds: 2 }
`,
  'kafka-capacity.yaml',
);

describe('a Kafka capacity ladder on a real local broker', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('kafka-capacity');
  let target: LocalTarget;
  let handle: LocalClusterHandle;
  let record: RepetitionRecord;

  beforeAll(async () => {
    target = new LocalTarget({ processes, runDir: work.path, cacheDir: cacheDir() });
    target.preflight(plan);
    handle = await target.launch(groupScenariosByCluster(plan)[0]!, 0);
    record = ingestRepetition(await target.runRepetition(handle, 'kafka-capacity-run', plan.scenarios[0]!, 1));
  });
  afterAll(async () => {
    if (handle) await target.teardown(handle);
    await processes.stopAll();
    work.cleanup();
  });

  test('each step ran its own producer at its rate, and the verdict names the capacity at the ack p99 bound', () => {
    expect([record.status, record.error]).toEqual(['SUCCEEDED', undefined]);
    const { capacity } = record;
    expect(capacity!.steps.map((step) => step.targetRate)).toEqual([500, 1000, 2000]);
    const first = capacity!.steps[0]!;
    expect(first.passed).toBe(true);
    expect(first.publishRate).toBeGreaterThan(0.98 * 500);
    expect(first.consumeRate).toBeGreaterThan(0.9 * 500);
    expect(first.p99LatencyMs!).toBeLessThanOrEqual(500);
    expect(capacity!.rateMsgPerSecond).toBeGreaterThanOrEqual(500);
    const rawDir = join(work.path, 'raw', 'k_ladder', 'rep-1');
    expect(existsSync(join(rawDir, 'producer-1-step-1.txt'))).toBe(true);
    expect(
      record.perfTestArgs.some((line) => line.includes('--throughput 1000') && line.includes('--warmup-records 2000')),
    ).toBe(capacity!.steps[1]!.measuredSeconds > 0);
  });
});
