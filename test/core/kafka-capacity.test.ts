import {
  kafkaCapacityExpectations,
  kafkaCapacityResult,
  producersFailedStep,
  type KafkaStepOutput,
} from '../../core/kafka/kafka-capacity';
import { kafkaRunSettings, producerPerformanceArgs } from '../../core/kafka/kafka-perf-args';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { parsePlanText } from '../../core/plan/plan';
import { targetProblems } from '../../core/plan/target-rules';
import { ingestRepetition } from '../../core/results/ingest';
import { aggregateCapacity, renderCapacityMarkdown } from '../../core/capacity/capacity-report';

// ProducerPerformance's summary lines, in its printf format (Stats.printTotal, tools 4.3.1).
const producer = (records: number, rate: number, p50: number, p99: number, steadyRecords?: number) =>
  [
    `${records} records sent, ${rate}.000000 records/sec (0.19 MB/sec), 3.00 ms avg latency, 40.00 ms max latency, ` +
      `${p50 + 1} ms 50th, 30 ms 95th, ${p99 + 20} ms 99th, 45 ms 99.9th.`,
    ...(steadyRecords === undefined
      ? []
      : [
          `${steadyRecords} steady state records sent, ${rate}.000000 records/sec (0.19 MB/sec), ` +
            `2.00 ms avg latency, 20.00 ms max latency, ${p50} ms 50th, 9 ms 95th, ${p99} ms 99th, 25 ms 99.9th.`,
        ]),
  ].join('\n');

/** A consumer's rows every second from `startMs`, its total growing by each second's rate. */
function consumer(startMs: number, rates: readonly number[]): string {
  let total = 0;
  const rows = rates.map((rate, index) => {
    total += rate;
    const at = new Date(startMs + (index + 1) * 1000).toISOString();
    const stamp = `${at.slice(0, 10)} ${at.slice(11, 19)}:${at.slice(20, 23)}`;
    return `${stamp}, 0, 0.1, 0.1, ${total}, ${rate}.0, 0, 1000, 0.1, ${rate}.0`;
  });
  return ['time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec', ...rows].join('\n');
}

const capacity = { p99LatencyMs: 50, minRate: 1000, maxRate: 4000, stepFactor: 2, stepSeconds: 10, warmUpSeconds: 2 };
const expected = kafkaCapacityExpectations(capacity, 1);
const t0 = Date.UTC(2026, 10, 26, 5, 0, 0);

describe('Kafka capacity: one producer run per step', () => {
  test('the ladder as runs: records and warm-up records per step from its rate', () => {
    expect(expected.steps).toEqual([
      { targetRate: 1000, perProducerRate: 1000, recordsPerProducer: 10_000, warmupRecords: 2000 },
      { targetRate: 2000, perProducerRate: 2000, recordsPerProducer: 20_000, warmupRecords: 4000 },
      { targetRate: 4000, perProducerRate: 4000, recordsPerProducer: 40_000, warmupRecords: 8000 },
    ]);
  });

  test('steps judged on the steady rate, the consumers in the step and the ack p99; capacity the last held', () => {
    const steps: KafkaStepOutput[] = [
      { producers: [producer(10_000, 1000, 3, 12, 8000)], startedAtMs: t0, endedAtMs: t0 + 10_000 },
      { producers: [producer(20_000, 2000, 4, 31, 16_000)], startedAtMs: t0 + 10_000, endedAtMs: t0 + 20_000 },
      // Over the bound: p99 80 ms.
      { producers: [producer(40_000, 3990, 9, 80, 32_000)], startedAtMs: t0 + 20_000, endedAtMs: t0 + 30_000 },
    ];
    const rates = [...Array(10).fill(1000), ...Array(10).fill(2000), ...Array(10).fill(3990)] as number[];
    const { capacity: result, result: run } = kafkaCapacityResult(steps, [consumer(t0, rates)], expected);
    expect(result.steps.map((step) => [step.targetRate, step.passed, step.p99LatencyMs])).toEqual([
      [1000, true, 12],
      [2000, true, 31],
      [4000, false, 80],
    ]);
    expect(result.steps[2]!.reasons).toEqual(['acknowledgement latency p99 was 80 ms, over the 50 ms bound']);
    expect([result.rateMsgPerSecond, result.p99LatencyMs, result.firstFailedRate]).toEqual([2000, 31, 4000]);
    expect(result.steps[1]!.consumeRate).toBeCloseTo(2000, 0);
    // The run's samples: the producers' windows and the consumers' rows on the first step's clock.
    expect(run.samples.at(-1)!.time).toBe(30);
    expect(run.summary.confirmLatency!.p99).toBe(100_000);
  });

  test('publisher behind, consumers behind and a step never run are named', () => {
    const steps: KafkaStepOutput[] = [
      { producers: [producer(10_000, 1000, 3, 12, 8000)], startedAtMs: t0, endedAtMs: t0 + 10_000 },
      { producers: [producer(20_000, 1500, 4, 20, 16_000)], startedAtMs: t0 + 10_000, endedAtMs: t0 + 23_000 },
    ];
    const rates = [...Array(10).fill(1000), ...Array(13).fill(700)] as number[];
    const { capacity: result } = kafkaCapacityResult(steps, [consumer(t0, rates)], expected);
    expect(result.steps.map((step) => step.failedBy)).toEqual([
      [],
      ['publisher-behind', 'consumers-behind'],
      ['no-samples'],
    ]);
    expect(result.steps[2]!.reasons).toEqual(['not run: an earlier step did not hold']);
    expect(result.verdict).toMatch(/^1,000 msg\/s held p99 ≤ 50 ms; 2,000 msg\/s did not \(published 1500 msg\/s/);
  });

  test('the runner stops on what the producers show: behind their rate, over the bound, or cut short', () => {
    const step = expected.steps[1]!;
    expect(producersFailedStep([producer(20_000, 2000, 4, 31, 16_000)], step, capacity)).toBe(false);
    expect(producersFailedStep([producer(20_000, 1900, 4, 31, 16_000)], step, capacity)).toBe(true);
    expect(producersFailedStep([producer(20_000, 2000, 4, 60, 16_000)], step, capacity)).toBe(true);
    expect(producersFailedStep(['1000 records sent, 1000.0 records/sec'], step, capacity)).toBe(true);
  });

  test('ingest stores the verdict of a Kafka ladder; the run arguments carry each step rate and warm-up', () => {
    const plan = parsePlanText(
      'name: kc\nclusters: [{ name: k, broker: kafka, nodes: 1 }]\nworkloads:\n  - name: w\n' +
        '    producers: 1\n    consumers: 1\n' +
        '    capacity: { p99LatencyMs: 50, minRate: 1000, maxRate: 4000, stepFactor: 2, stepSeconds: 10, ' +
        'warmUpSeconds: 2 }\n',
      'kc.yaml',
    );
    const workload = plan.scenarios[0]!.workload;
    const settings = kafkaRunSettings(workload, 1);
    // Every step's records: the consumers' total.
    expect(settings.recordsPerProducer).toBe(70_000);
    const args = producerPerformanceArgs({
      bootstrapServers: 'b:9092',
      topic: 't',
      settings: { ...settings, recordsPerProducer: 20_000, throughput: 2000, warmupRecords: 4000 },
      messageSizeBytes: 100,
      clientId: 'c',
    });
    expect(args.join(' ')).toContain('--num-records 20000 --record-size 100 --throughput 2000');
    expect(args.join(' ')).toContain('--warmup-records 4000');
    const record = ingestRepetition({
      runId: 'r',
      scenarioId: 'k/w',
      repetition: 1,
      startedAt: new Date(t0).toISOString(),
      finishedAt: new Date(t0 + 30_000).toISOString(),
      perfTestArgs: [],
      expectations: { durationSeconds: 30, producers: 1, consumers: 1, confirms: false },
      stdout: '',
      csv: '',
      kafka: {
        output: {
          producers: [],
          consumers: [consumer(t0, Array(10).fill(1000) as number[])],
          steps: [{ producers: [producer(10_000, 1000, 3, 12, 8000)], startedAtMs: t0, endedAtMs: t0 + 10_000 }],
        },
        expectations: { producers: 1, consumers: 1, recordsPerProducer: 70_000, capacity: expected },
      },
    });
    expect(record.status).toBe('SUCCEEDED');
    expect(record.capacity!.rateMsgPerSecond).toBe(1000);
    expect(record.capacity!.latency).toBe('acknowledgement');
    // The report says which latency was bounded.
    const section = renderCapacityMarkdown([
      { scenarioId: 'k/w', capacity: aggregateCapacity([{ repetition: 1, capacity: record.capacity! }])! },
    ]).join('\n');
    expect(section).toContain("the producers' acknowledgement latency p99 (send to broker ack");
    expect(record.capacity!.steps[1]!.reasons).toEqual(['not run: an earlier step did not hold']);
    // Every target runs it: the local runner and the clouds' Kafka script (lambdas/start-repetition/kafka-script.ts).
    expect(targetProblems(plan, 'local', defaultPriceCatalog)).toEqual([]);
    const onAws = { ...plan, clusters: plan.clusters.map((cluster) => ({ ...cluster, instanceType: 'm5.xlarge' })) };
    expect(targetProblems(onAws, 'aws', defaultPriceCatalog)).toEqual([]);
  });
});
