import type { MetricPoint } from '../metrics/host-metrics';
import type { LatencyPercentiles, PerSecondSample } from '../results/result-model';
import type { CapacityStep } from './capacity-plan';
import { weightedMedian } from '../results/warm-up';

/**
 * A step holds its rate when the producers achieved at least this share of it (below: they fell behind their schedule).
 */
export const ACHIEVED_RATE_SHARE = 0.98;
/**
 * A step holds when the consumers received at least this share of what was published (times the deliveries per
 * message).
 */
export const CONSUMED_SHARE = 0.98;

/** What the capacity verdict needs to know of the ladder and the workload. */
export interface CapacityExpectations {
  /** The plan's bound (capacity.p99LatencyMs). */
  readonly p99LatencyMs: number;
  readonly stepFactor: number;
  readonly warmUpSeconds: number;
  readonly steps: readonly CapacityStep[];
  /** Deliveries per published message: the queue count for a fanout exchange, else 1. */
  readonly deliveriesPerMessage: number;
}

/** Why a step did not pass. */
export type CapacityFailure = 'latency' | 'publisher-behind' | 'consumers-behind' | 'queue-growing' | 'no-samples';

/** One step of the ladder as measured. */
export interface CapacityStepResult {
  readonly targetRate: number;
  readonly fromSeconds: number;
  readonly toSeconds: number;
  /** Per-second samples inside the step after its warm-up. */
  readonly measuredSeconds: number;
  /** Mean published and received msg/s over the measured seconds. */
  readonly publishRate: number;
  readonly consumeRate: number;
  /** The step's consumer latency p99, ms, estimated from its seconds' percentiles (stepP99Micros). */
  readonly p99LatencyMs?: number;
  /** The largest of the seconds' own p99, ms: an upper bound of the step's p99, shown beside the estimate. */
  readonly worstSecondP99LatencyMs?: number;
  /**
   * The step's consumer latency median, ms: the per-second medians' median weighted by the messages each second
   * received.
   */
  readonly p50LatencyMs?: number;
  /**
   * Messages the benchmark queues gained over the measured seconds (broker samples); absent where none were sampled.
   */
  readonly queueGrowth?: number;
  readonly passed: boolean;
  /** Why it did not pass (empty when it passed), as causes and as sentences. */
  readonly failedBy: readonly CapacityFailure[];
  readonly reasons: readonly string[];
}

/** A repetition's capacity: the highest ladder rate that held, with every step as measured. */
export interface CapacityResult {
  /** The plan's bound. */
  readonly p99BoundMs: number;
  /** Kafka: the latency bounded is the producers' acknowledgement latency (absent: PerfTest's consumer latency). */
  readonly latency?: 'acknowledgement';
  readonly stepFactor: number;
  readonly warmUpSeconds: number;
  readonly steps: readonly CapacityStepResult[];
  /** The highest rate held before the first step that did not; absent when the first step did not hold. */
  readonly rateMsgPerSecond?: number;
  /** Consumer latency p50 and p99 (upper bound) at that rate, ms. */
  readonly p50LatencyMs?: number;
  readonly p99LatencyMs?: number;
  /** Every step held: the capacity is at least the ladder's top (raise maxRate to find it). */
  readonly atLeast: boolean;
  /** The first step that did not hold: the capacity is below it. */
  readonly firstFailedRate?: number;
  /** The verdict in one sentence. */
  readonly verdict: string;
}

const round = (value: number) => Math.round(value * 10) / 10;
const formatRate = (rate: number) => Math.round(rate).toLocaleString('en-US');

/** Per-second samples whose second lies inside [from, to): a sample at `time` counts the second before it. */
function samplesWithin(samples: readonly PerSecondSample[], from: number, to: number): PerSecondSample[] {
  return samples.filter((sample) => {
    const second = Math.round(sample.time);
    return second - 1 >= from && second <= to;
  });
}

/** The summed queue depth at the point nearest `t` (within 1.5 s), or undefined. */
function depthAt(points: readonly MetricPoint[], t: number): number | undefined {
  let best: MetricPoint | undefined;
  for (const point of points)
    if (Math.abs(point[0] - t) <= 1.5 && (best === undefined || Math.abs(point[0] - t) < Math.abs(best[0] - t)))
      best = point;
  return best?.[1];
}

/** Judges one step: rate achieved, consumption kept up, the queue did not grow, p99 within the bound. */
export function judgeStep(
  step: CapacityStep,
  samples: readonly PerSecondSample[],
  expected: CapacityExpectations,
  queueDepth?: readonly MetricPoint[],
): CapacityStepResult {
  const from = step.fromSeconds + expected.warmUpSeconds;
  const measured = samplesWithin(samples, from, step.toSeconds);
  const base = {
    targetRate: step.targetRate,
    fromSeconds: step.fromSeconds,
    toSeconds: step.toSeconds,
    measuredSeconds: measured.length,
  };
  if (measured.length === 0) {
    const reason =
      `no per-second sample between ${from} s and ${step.toSeconds} s ` + `(PerfTest's output ended before the step)`;
    return { ...base, publishRate: 0, consumeRate: 0, passed: false, failedBy: ['no-samples'], reasons: [reason] };
  }
  const mean = (pick: (sample: PerSecondSample) => number) =>
    measured.reduce((sum, sample) => sum + pick(sample), 0) / measured.length;
  const publishRate = mean((sample) => sample.published);
  const consumeRate = mean((sample) => sample.received);
  const latencies = measured.flatMap((sample) =>
    sample.consumerLatency
      ? [{ weight: sample.received, p50: sample.consumerLatency.median, p99: sample.consumerLatency.p99 }]
      : [],
  );
  const p99LatencyMs = latencies.length > 0 ? stepP99Micros(measured) / 1000 : undefined;
  const worstSecondP99LatencyMs =
    latencies.length > 0 ? Math.max(...latencies.map((latency) => latency.p99)) / 1000 : undefined;
  const p50LatencyMs =
    latencies.length > 0
      ? weightedMedian(latencies.map((latency) => ({ weight: latency.weight, value: latency.p50 }))) / 1000
      : undefined;
  const failures: [CapacityFailure, string][] = [];
  if (publishRate < ACHIEVED_RATE_SHARE * step.targetRate) {
    failures.push([
      'publisher-behind',
      `published ${formatRate(publishRate)} msg/s, under ${ACHIEVED_RATE_SHARE * 100} % of ` +
        `${formatRate(step.targetRate)}: the producers fell behind their schedule`,
    ]);
  }
  const expectedConsume = publishRate * expected.deliveriesPerMessage;
  if (consumeRate < CONSUMED_SHARE * expectedConsume) {
    failures.push([
      'consumers-behind',
      `received ${formatRate(consumeRate)} msg/s, under ${CONSUMED_SHARE * 100} % of the ` +
        `${formatRate(expectedConsume)} msg/s delivered: the consumers fell behind`,
    ]);
  }
  const queueGrowth = growthOver(queueDepth, from, step.toSeconds);
  const allowedGrowth = Math.max((1 - CONSUMED_SHARE) * expectedConsume * measured.length, 1);
  if (queueGrowth !== undefined && queueGrowth > allowedGrowth) {
    failures.push([
      'queue-growing',
      `the queues grew by ${formatRate(queueGrowth)} messages over the step (more than ${formatRate(allowedGrowth)})`,
    ]);
  }
  if (p99LatencyMs === undefined) failures.push(['latency', 'no consumer latency was measured (nothing received)']);
  else if (p99LatencyMs > expected.p99LatencyMs)
    failures.push([
      'latency',
      `consumer latency p99 was ${round(p99LatencyMs)} ms, over the ${expected.p99LatencyMs} ms bound`,
    ]);
  return {
    ...base,
    publishRate: round(publishRate),
    consumeRate: round(consumeRate),
    ...(p99LatencyMs === undefined ? {} : { p99LatencyMs: round(p99LatencyMs) }),
    ...(p50LatencyMs === undefined ? {} : { p50LatencyMs: round(p50LatencyMs) }),
    ...(worstSecondP99LatencyMs === undefined ? {} : { worstSecondP99LatencyMs: round(worstSecondP99LatencyMs) }),
    ...(queueGrowth === undefined ? {} : { queueGrowth }),
    passed: failures.length === 0,
    failedBy: failures.map(([cause]) => cause),
    reasons: failures.map(([, reason]) => reason),
  };
}

/**
 * Share of a second's messages slower than `x` µs, from its percentiles: the distribution interpolated linearly
 * through min (all above), median, 75th, 95th and 99th, and beyond the 99th a 1/x tail (1 % · p99 / x), since
 * PerfTest reports no maximum per second.
 */
export function shareSlowerThan(latency: LatencyPercentiles, x: number): number {
  if (x >= latency.p99) return latency.p99 > 0 ? (0.01 * latency.p99) / x : 0;
  const points: [number, number][] = [
    [latency.min ?? 0, 1],
    [latency.median, 0.5],
    ...(latency.p75 === undefined ? [] : [[latency.p75, 0.25] as [number, number]]),
    [latency.p95, 0.05],
    [latency.p99, 0.01],
  ];
  if (x < points[0]![0]) return 1;
  for (let index = 0; index + 1 < points.length; index++) {
    const [low, lowShare] = points[index]!;
    const [high, highShare] = points[index + 1]!;
    if (x >= low && x < high) return lowShare + ((x - low) / (high - low)) * (highShare - lowShare);
  }
  return 0.01;
}

/**
 * A step's consumer latency p99, µs, from its seconds' percentiles: PerfTest computes each second's percentiles on a
 * fresh reservoir (v2.22.1 DefaultPerformanceMetrics.metrics() replaces the histogram every interval) and exposes no
 * histogram, so the step's distribution is the mixture of its seconds' (shareSlowerThan), each weighted by the
 * messages it received, and its p99 the latency 1 % of that mixture is slower than. It lies between the seconds'
 * smallest and largest p99: one slow second among quiet ones moves it a little, a slow step a lot.
 */
export function stepP99Micros(samples: readonly PerSecondSample[]): number {
  const seconds = samples.flatMap((sample) =>
    sample.consumerLatency ? [{ weight: sample.received, latency: sample.consumerLatency }] : [],
  );
  if (seconds.length === 0) throw new Error('stepP99Micros needs seconds with a consumer latency');
  const total = seconds.reduce((sum, second) => sum + second.weight, 0);
  const weightOf = (weight: number) => (total > 0 ? weight / total : 1 / seconds.length);
  const slower = (x: number) =>
    seconds.reduce((sum, second) => sum + weightOf(second.weight) * shareSlowerThan(second.latency, x), 0);
  let low = Math.min(...seconds.map((second) => second.latency.p99));
  let high = Math.max(...seconds.map((second) => second.latency.p99));
  if (slower(low) <= 0.01) return low;
  for (let iteration = 0; iteration < 60 && high - low > 0.5; iteration++) {
    const middle = (low + high) / 2;
    if (slower(middle) > 0.01) low = middle;
    else high = middle;
  }
  return high;
}

/** Messages the queues gained between `from` and `to` by the broker's samples; undefined without samples near both. */
function growthOver(queueDepth: readonly MetricPoint[] | undefined, from: number, to: number): number | undefined {
  if (!queueDepth || queueDepth.length === 0) return undefined;
  const start = depthAt(queueDepth, from);
  const end = depthAt(queueDepth, to);
  return start === undefined || end === undefined ? undefined : end - start;
}

/**
 * The repetition's capacity: every step judged; the capacity is the rate of the last step before the first one that
 * did not pass (a higher step that passes after a failure is not trusted: the backlog of the failure went into it).
 */
export function capacityVerdict(
  samples: readonly PerSecondSample[],
  expected: CapacityExpectations,
  queueDepth?: readonly MetricPoint[],
): CapacityResult {
  return capacityFromSteps(
    expected.steps.map((step) => judgeStep(step, samples, expected, queueDepth)),
    expected,
  );
}

/**
 * The capacity of judged steps: the rate of the last step before the first that did not pass, with the verdict in one
 * sentence (shared by PerfTest's ladder and Kafka's step runs, core/kafka/kafka-capacity.ts).
 */
export function capacityFromSteps(
  steps: readonly CapacityStepResult[],
  expected: Pick<CapacityExpectations, 'p99LatencyMs' | 'stepFactor' | 'warmUpSeconds'>,
): CapacityResult {
  const firstFailed = steps.findIndex((step) => !step.passed);
  const base = {
    p99BoundMs: expected.p99LatencyMs,
    stepFactor: expected.stepFactor,
    warmUpSeconds: expected.warmUpSeconds,
    steps,
  };
  const bound = `p99 ≤ ${expected.p99LatencyMs} ms`;
  if (firstFailed === 0) {
    const first = steps[0]!;
    return {
      ...base,
      atLeast: false,
      firstFailedRate: first.targetRate,
      verdict:
        `no rate held ${bound}: the first step (${formatRate(first.targetRate)} msg/s) did not ` +
        `(${first.reasons.join('; ')}); lower capacity.minRate`,
    };
  }
  const held = steps[(firstFailed < 0 ? steps.length : firstFailed) - 1]!;
  const atRate = {
    rateMsgPerSecond: held.targetRate,
    ...(held.p50LatencyMs === undefined ? {} : { p50LatencyMs: held.p50LatencyMs }),
    ...(held.p99LatencyMs === undefined ? {} : { p99LatencyMs: held.p99LatencyMs }),
  };
  if (firstFailed < 0) {
    return {
      ...base,
      ...atRate,
      atLeast: true,
      verdict:
        `every step held ${bound}, up to ${formatRate(held.targetRate)} msg/s, the ladder's top: ` +
        `the capacity is at least that; raise capacity.maxRate to find it`,
    };
  }
  const failed = steps[firstFailed]!;
  return {
    ...base,
    ...atRate,
    atLeast: false,
    firstFailedRate: failed.targetRate,
    verdict:
      `${formatRate(held.targetRate)} msg/s held ${bound}; ` +
      `${formatRate(failed.targetRate)} msg/s did not (${failed.reasons.join('; ')})`,
  };
}

/**
 * The queue depth over time summed over the nodes' queueDepth series (the benchmark queues, each on its leader's node).
 */
export function summedQueueDepth(
  series: readonly { readonly metric: string; readonly points: readonly MetricPoint[] }[],
): MetricPoint[] {
  const byTime = new Map<number, number>();
  for (const one of series) {
    if (one.metric !== 'queueDepth') continue;
    for (const [t, value] of one.points) byTime.set(Math.round(t), (byTime.get(Math.round(t)) ?? 0) + value);
  }
  return [...byTime.entries()].sort((a, b) => a[0] - b[0]);
}
