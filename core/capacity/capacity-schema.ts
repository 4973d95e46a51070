import * as z from 'zod';

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
  /**
   * The first seconds of each step left out of its figures (the backlog of the step before drains, rates settle).
   * @default 5
   */
  warmUpSeconds: z.number().int().min(0).max(3600).default(5),
});

export type CapacitySpec = z.infer<typeof capacitySchema>;
