// The ladder of a capacity workload (core/capacity/capacity-schema.ts), kept apart from its schema so that the
// functions that parse PerfTest output (ingest) do not bundle zod.
import type { CapacitySpec } from './capacity-schema';

export type { CapacitySpec } from './capacity-schema';

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
    throw new Error(
      `the ladder from ${capacity.minRate} to ${capacity.maxRate} msg/s by × ${capacity.stepFactor} ` +
        `has ${perProducer.length} steps, more than ${MAX_CAPACITY_STEPS}`,
    );
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
  return capacityLadder(capacity, producers).flatMap((step) => [
    '--variable-rate',
    `${step.perProducerRate}:${capacity.stepSeconds}`,
  ]);
}
