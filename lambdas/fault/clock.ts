import type { FaultTiming } from './aws';

/**
 * The fault step's clock and sleep: the timing's own (tests), else the wall clock and a timer. A module of its own so
 * that azure.ts uses it without loading aws.ts, whose plan validation IngestRepetition's Azure node listing must not
 * bundle.
 */
export function clockOf(timing: FaultTiming): { now: () => Date; sleep: (ms: number) => Promise<void> } {
  return {
    now: timing.now ?? (() => new Date()),
    sleep: timing.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))),
  };
}
