import { capacityLadder, type CapacitySpec } from '../capacity/capacity-plan';
import {
  ACHIEVED_RATE_SHARE,
  capacityFromSteps,
  CONSUMED_SHARE,
  type CapacityFailure,
  type CapacityResult,
  type CapacityStepResult,
} from '../capacity/capacity-verdict';
import type { LatencyPercentiles, PerSecondSample, PerfTestResult } from '../results/result-model';
import { describe } from '../results/statistics';
import { consumerRows, producerLines, type ConsumerRow } from './kafka-perf-output';

/**
 * Capacity at a latency target on Kafka (issue 25). ProducerPerformance keeps one `--throughput` for its whole run, so
 * the ladder is one producer run per step, one after the other, while the consumers read throughout: each step's
 * producers send `perProducerRate × stepSeconds` records at `--throughput perProducerRate` with the step's warm-up as
 * `--warmup-records` (KIP-1052), so that the step's figures are its producers' "steady state" summaries. A step holds
 * when the producers achieved ≥ 98 % of its rate, the consumers received ≥ 98 % of what was published over the step
 * (their per-second rows between the step's start plus its warm-up and its end), and the step's latency p99 is within
 * the bound. That latency is Kafka's **acknowledgement** latency (send() to the broker's ack, per `acks`), the only
 * latency these tools measure: not the end-to-end latency PerfTest reports for RabbitMQ, and the report says so.
 * The runner stops after the first step that did not hold (a higher step would carry its backlog and is not trusted).
 */

/** One step as the runner executes it. */
export interface KafkaCapacityStep {
  readonly targetRate: number;
  readonly perProducerRate: number;
  /** Records each producer sends in the step (perProducerRate × stepSeconds). */
  readonly recordsPerProducer: number;
  /** Of those, the warm-up left out of the step's figures (perProducerRate × warmUpSeconds). */
  readonly warmupRecords: number;
}

/** What the verdict needs: the bound, the ladder as run, the warm-up and the step length. */
export interface KafkaCapacityExpectations {
  readonly p99LatencyMs: number;
  readonly stepFactor: number;
  readonly stepSeconds: number;
  readonly warmUpSeconds: number;
  readonly steps: readonly KafkaCapacityStep[];
}

/** One step's run: each producer's output and when the step started and ended (epoch ms). */
export interface KafkaStepOutput {
  readonly producers: readonly string[];
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

/** A step's producer settings: its records at its rate, its warm-up as `--warmup-records` (none when 0). */
export function kafkaStepSettings<Settings extends object>(settings: Settings, step: KafkaCapacityStep) {
  const { warmupRecords: _whole, ...rest } = settings as Settings & { warmupRecords?: number };
  return {
    ...rest,
    recordsPerProducer: step.recordsPerProducer,
    throughput: step.perProducerRate,
    ...(step.warmupRecords > 0 ? { warmupRecords: step.warmupRecords } : {}),
  };
}

export function kafkaCapacityExpectations(capacity: CapacitySpec, producers: number): KafkaCapacityExpectations {
  return {
    p99LatencyMs: capacity.p99LatencyMs,
    stepFactor: capacity.stepFactor,
    stepSeconds: capacity.stepSeconds,
    warmUpSeconds: capacity.warmUpSeconds,
    steps: capacityLadder(capacity, producers).map((step) => ({
      targetRate: step.targetRate,
      perProducerRate: step.perProducerRate,
      recordsPerProducer: step.perProducerRate * capacity.stepSeconds,
      warmupRecords: step.perProducerRate * capacity.warmUpSeconds,
    })),
  };
}

/**
 * Whether a step's producers alone already show it did not hold (publisher behind, or p99 over the bound): the runner
 * stops the ladder there. The consumers are judged at ingest.
 */
export function producersFailedStep(
  producers: readonly string[],
  step: KafkaCapacityStep,
  expected: Pick<KafkaCapacityExpectations, 'p99LatencyMs'>,
): boolean {
  const parsed = producers.map(producerLines);
  if (parsed.some((one) => !(one.steady ?? one.total))) return true;
  const rate = parsed.reduce((sum, one) => sum + (one.steady ?? one.total)!.rate, 0);
  const p99 = Math.max(...parsed.map((one) => (one.steady ?? one.total)!.latency.p99)) / 1000;
  return rate < ACHIEVED_RATE_SHARE * step.targetRate || p99 > expected.p99LatencyMs;
}

/** Judges every step (those not run: not held) and puts the repetition's result together. */
export function kafkaCapacityResult(
  steps: readonly KafkaStepOutput[],
  consumers: readonly string[],
  expected: KafkaCapacityExpectations,
): { capacity: CapacityResult; result: PerfTestResult } {
  const rows = consumers.map(consumerRows);
  const judged = expected.steps.map((step, index) => {
    const output = steps[index];
    return output
      ? judgeKafkaStep(step, output, rows, expected, index)
      : notRun(step, index, expected.stepSeconds, 'not run: an earlier step did not hold');
  });
  const capacity = { ...capacityFromSteps(judged, expected), latency: 'acknowledgement' as const };
  return { capacity, result: kafkaCapacityRun(steps, rows) };
}

function judgeKafkaStep(
  step: KafkaCapacityStep,
  output: KafkaStepOutput,
  rows: readonly (readonly ConsumerRow[])[],
  expected: KafkaCapacityExpectations,
  index: number,
): CapacityStepResult {
  const parsed = output.producers.map(producerLines);
  const cut = parsed.findIndex((one) => !(one.steady ?? one.total));
  if (cut >= 0)
    return notRun(step, index, expected.stepSeconds, `producer ${cut + 1} was stopped before its summary line`);
  const figures = parsed.map((one) => (one.steady ?? one.total)!);
  const publishRate = figures.reduce((sum, one) => sum + one.rate, 0);
  const from = output.startedAtMs + expected.warmUpSeconds * 1000;
  const consumeRate = rows.reduce((sum, consumer) => sum + rateWithin(consumer, from, output.endedAtMs), 0);
  // Percentiles are never averaged: the step's is the slowest producer's.
  const p99LatencyMs = Math.max(...figures.map((one) => one.latency.p99)) / 1000;
  const p50LatencyMs = Math.max(...figures.map((one) => one.latency.median)) / 1000;
  const failures: [CapacityFailure, string][] = [];
  if (publishRate < ACHIEVED_RATE_SHARE * step.targetRate)
    failures.push([
      'publisher-behind',
      `published ${Math.round(publishRate)} msg/s, under ${ACHIEVED_RATE_SHARE * 100} % of ${step.targetRate}: ` +
        'the producers fell behind',
    ]);
  if (consumeRate < CONSUMED_SHARE * publishRate)
    failures.push([
      'consumers-behind',
      `received ${Math.round(consumeRate)} msg/s, under ${CONSUMED_SHARE * 100} % of the ` +
        `${Math.round(publishRate)} msg/s published: the consumers fell behind`,
    ]);
  if (p99LatencyMs > expected.p99LatencyMs)
    failures.push([
      'latency',
      `acknowledgement latency p99 was ${p99LatencyMs} ms, over the ${expected.p99LatencyMs} ms bound`,
    ]);
  return {
    ...stepWindow(step, index, expected.stepSeconds),
    measuredSeconds: Math.max(0, Math.round((output.endedAtMs - from) / 1000)),
    publishRate: Math.round(publishRate * 10) / 10,
    consumeRate: Math.round(consumeRate * 10) / 10,
    p99LatencyMs,
    p50LatencyMs,
    passed: failures.length === 0,
    failedBy: failures.map(([cause]) => cause),
    reasons: failures.map(([, reason]) => reason),
  };
}

const stepWindow = (step: KafkaCapacityStep, index: number, stepSeconds: number) => ({
  targetRate: step.targetRate,
  fromSeconds: index * stepSeconds,
  toSeconds: (index + 1) * stepSeconds,
});

function notRun(step: KafkaCapacityStep, index: number, stepSeconds: number, reason: string): CapacityStepResult {
  return {
    ...stepWindow(step, index, stepSeconds),
    measuredSeconds: 0,
    publishRate: 0,
    consumeRate: 0,
    passed: false,
    failedBy: ['no-samples'],
    reasons: [reason],
  };
}

/** A consumer's records per second between two instants, from its rows inside them (0 with fewer than two). */
function rateWithin(rows: readonly ConsumerRow[], fromMs: number, toMs: number): number {
  const inside = rows.filter((row) => row.atMs >= fromMs && row.atMs <= toMs);
  if (inside.length < 2) return 0;
  const first = inside[0]!;
  const last = inside.at(-1)!;
  return ((last.total - first.total) * 1000) / (last.atMs - first.atMs);
}

/**
 * The repetition's result over the whole ladder as run: per-second samples on the first step's clock (each step's
 * producer windows from its start, the consumers' rows by their time), the summary over every step (the worst step's
 * acknowledgement percentiles, never averaged).
 */
function kafkaCapacityRun(
  steps: readonly KafkaStepOutput[],
  rows: readonly (readonly ConsumerRow[])[],
): PerfTestResult {
  const startMs = steps[0]?.startedAtMs ?? 0;
  const seconds = new Map<number, { published: number; received: number }>();
  const at = (second: number) => seconds.get(second) ?? { published: 0, received: 0 };
  for (const step of steps) {
    const offset = Math.round((step.startedAtMs - startMs) / 1000);
    for (const producer of step.producers.map(producerLines))
      producer.windows.forEach((rate, index) => {
        const second = offset + index + 1;
        seconds.set(second, { ...at(second), published: at(second).published + rate });
      });
  }
  for (const consumer of rows)
    for (const row of consumer) {
      const second = Math.max(1, Math.round((row.atMs - startMs) / 1000));
      seconds.set(second, { ...at(second), received: at(second).received + row.rate });
    }
  const samples: PerSecondSample[] = [...seconds.entries()]
    .sort(([a], [b]) => a - b)
    .map(([time, { published, received }]) => ({
      time,
      published,
      returned: 0,
      confirmed: published,
      nacked: 0,
      received,
    }));
  const totals = steps
    .flatMap((step) => step.producers.map(producerLines))
    .flatMap((one) => (one.total ? [one.total] : []));
  const elapsed = steps.length > 0 ? (steps.at(-1)!.endedAtMs - startMs) / 1000 : 0;
  const sent = totals.reduce((sum, total) => sum + total.records, 0);
  const received = rows.reduce((sum, consumer) => sum + (consumer.at(-1)?.total ?? 0), 0);
  const confirmLatency = worst(totals.map((total) => total.latency));
  const rates = samples.length > 0 ? samples : [{ published: 0, received: 0 }];
  return {
    summary: {
      sendRateAvg: elapsed > 0 ? Math.round(sent / elapsed) : 0,
      receiveRateAvg: elapsed > 0 ? Math.round(received / elapsed) : 0,
      ...(confirmLatency ? { confirmLatency } : {}),
    },
    samples,
    sendRate: describe(rates.map((sample) => sample.published)),
    receiveRate: describe(rates.map((sample) => sample.received)),
  };
}

function worst(all: readonly LatencyPercentiles[]): LatencyPercentiles | undefined {
  if (all.length === 0) return undefined;
  return {
    median: Math.max(...all.map((one) => one.median)),
    p95: Math.max(...all.map((one) => one.p95)),
    p99: Math.max(...all.map((one) => one.p99)),
  };
}
