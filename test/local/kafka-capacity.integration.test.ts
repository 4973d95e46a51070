jest.setTimeout(600_000);

import { existsSync, readFileSync } from 'node:fs';
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
  # Issue 26: durationSeconds alone, as a RabbitMQ workload takes it (same broker, so no second cluster start).
  - { name: timed, producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: 10 }
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

  test('durationSeconds: 10 alone runs flat out for 10 s, is stopped there, and has receive rates', async () => {
    const timed = plan.scenarios.find((scenario) => scenario.workload.name === 'timed')!;
    const startedAtMs = Date.now();
    const raw = await target.runRepetition(handle, 'kafka-capacity-run', timed, 1);
    const wallSeconds = (Date.now() - startedAtMs) / 1000;
    const timedRecord = ingestRepetition(raw);
    expect([timedRecord.status, timedRecord.error]).toEqual(['SUCCEEDED', undefined]);
    // The tools ran 10 s: no fewer (the producers were not stopped early) and not the 60 s grace or idle timeout
    // longer. The rest is the topic command, the consumer joining its group and the clean-up (~10 s here).
    expect(wallSeconds).toBeGreaterThanOrEqual(10);
    expect(wallSeconds).toBeLessThan(10 + 30);
    // The samples are the tools' 1 s reports inside the 10 s: at most 10, and the JVMs' start takes a few.
    const { result } = timedRecord;
    expect(result!.samples.length).toBeGreaterThanOrEqual(10 - 5);
    expect(result!.samples.length).toBeLessThanOrEqual(10);
    expect(result!.summary.sendRateAvg).toBeGreaterThan(0);
    expect(result!.summary.receiveRateAvg).toBeGreaterThan(0);
    expect(result!.receiveRate.n).toBe(result!.samples.length);
    expect(result!.receiveRate.mean).toBeGreaterThan(0);
    // An unreachable record count, flat out.
    expect(timedRecord.perfTestArgs.join(' ')).toMatch(/--num-records 1000000000 .*--throughput -1 /);
    const rawDir = join(work.path, 'raw', 'k_timed', 'rep-1');
    expect(readFileSync(join(rawDir, 'producer-1.txt'), 'utf8')).not.toMatch(/99\.9th/);
  });
});
