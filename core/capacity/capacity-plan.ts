import { z } from 'zod';

/**
 * Capacity mode of a workload: instead of publishing flat out, the producers step through a ladder of publish rates
 * and the repetition reports the highest rate that held the latency bound (core/capacity/capacity-verdict.ts).
 *
 * The search is a geometric ladder run in ONE PerfTest execution: `minRate`, `minRate × stepFactor`, … up to
 * `maxRate` (its last step), each held for `stepSeconds` through PerfTest's own rate control (`--variable-rate
 * RATE:DURATION`, repeated; v2.22.1 PerfTest.java "variable publishing rate with [RATE]:[DURATION] syntax").
 * One execution per repetition keeps the workflow's schedule fixed (every target runs the same definition, whose
 * repetitions have known durations), costs no restart between steps, and bounds the search in steps and time before
 * it starts: the estimate and the execution history count it exactly. The price is resolution: the answer is within
 * one `stepFactor` of the true capacity, which the report states.
 */
export const capacitySchema = z.strictObject({
  /** The latency target: consumer latency p99 over a step, milliseconds. */
  p99LatencyMs: z.number().positive().max(60_000),
  /** The first step's publish rate, msg/s over all producers. @default 100 */
  minRate: z.number().int().min(1).max(10_000_000).default(100),
  /** The highest step's publish rate, msg/s over all producers (the ladder ends at it). @default 100000 */
  maxRate: z.number().int().min(1).max(10_000_000).default(100_000),
  /** Each step's rate over the previous one's (the search's resolution). @default 1.5 */
  stepFactor: z.number().min(1.05).max(10).default(1.5),
  /** How long each step publishes at its rate, seconds. @default 20 */
  stepSeconds: z.number().int().min(5).max(3600).default(20),
  /** The first seconds of each step left out of its figures (the backlog of the step before drains, rates settle). @default 5 */
  warmUpSeconds: z.number().int().min(0).max(3600).default(5),
});

export type CapacitySpec = z.infer<typeof capacitySchema>;

/** The search's bound in steps: 40 steps of the shortest length is under 4 minutes, of the default under 14. */
export const MAX_CAPACITY_STEPS = 40;

/** Seconds of a step that must stay measured after its warm-up. */
export const MIN_MEASURED_STEP_SECONDS = 3;

/** One step of the ladder as PerfTest runs it. */
export interface CapacityStep {
  /** The step's publish rate over all producers, msg/s (perProducerRate × producers). */
  readonly targetRate: number;
  /** What each producer is limited to (`--variable-rate` is per producer, as `--rate` is). */
  readonly perProducerRate: number;
  /** Seconds since PerfTest started: the step is [fromSeconds, toSeconds). */
  readonly fromSeconds: number;
  readonly toSeconds: number;
}

/**
 * The ladder's steps for `producers` producers: geometric from minRate, each rate rounded to a whole per-producer
 * rate, equal rates merged, ending with maxRate. Throws when the ladder would pass MAX_CAPACITY_STEPS.
 */
export function capacityLadder(capacity: CapacitySpec, producers: number): CapacityStep[] {
  if (producers < 1) throw new Error('a capacity ladder needs at least one producer');
  const perProducer: number[] = [];
  const add = (total: number) => {
    const rate = Math.max(1, Math.round(total / producers));
    if (perProducer.at(-1) !== rate) perProducer.push(rate);
  };
  for (let total = capacity.minRate; total < capacity.maxRate; total *= capacity.stepFactor) add(total);
  add(capacity.maxRate);
  if (perProducer.length > MAX_CAPACITY_STEPS) {
    throw new Error(`the ladder from ${capacity.minRate} to ${capacity.maxRate} msg/s by × ${capacity.stepFactor} has ${perProducer.length} steps, more than ${MAX_CAPACITY_STEPS}`);
  }
  return perProducer.map((rate, index) => ({
    targetRate: rate * producers,
    perProducerRate: rate,
    fromSeconds: index * capacity.stepSeconds,
    toSeconds: (index + 1) * capacity.stepSeconds,
  }));
}

/** The number of steps the ladder has (for validation messages and the estimate), or undefined when it is too long. */
export function capacityStepCount(capacity: CapacitySpec, producers: number): number | undefined {
  try {
    return capacityLadder(capacity, Math.max(1, producers)).length;
  } catch {
    return undefined;
  }
}

/** The repetition's duration in capacity mode: every step of the ladder. */
export function capacityDurationSeconds(capacity: CapacitySpec, producers: number): number {
  return capacityLadder(capacity, Math.max(1, producers)).length * capacity.stepSeconds;
}

/** PerfTest's arguments for the ladder: one `--variable-rate RATE:DURATION` per step, in order. */
export function variableRateArgs(capacity: CapacitySpec, producers: number): string[] {
  return capacityLadder(capacity, producers).flatMap((step) => ['--variable-rate', `${step.perProducerRate}:${capacity.stepSeconds}`]);
}
