import { LOAD_GENERATOR_BOUND_PERCENT } from '../metrics/host-metrics';
import { MAX_LOAD_GENERATORS } from './load-generator-count';

/**
 * The "load-generator bound" verdict of a repetition with several generators (issue 27): which generators passed
 * LOAD_GENERATOR_BOUND_PERCENT (CPU median over the measured seconds, as for one generator), and how many generators
 * would bring the busiest down to TARGET_LOAD_GENERATOR_CPU_PERCENT.
 *
 * The suggestion assumes what the split makes true: the workload is cut into even shares, and a generator's CPU is
 * proportional to the messages of its share (PerfTest's work is per message). With N instead of n generators each
 * share is n/N of the one measured, so the busiest generator would run at maxCpu × n/N; the smallest such N at or
 * below the target is ⌈n × maxCpu / target⌉, at most MAX_LOAD_GENERATORS. A bound generator hid how much more the
 * broker could take, so the next run may find a higher rate and be bound again: the target leaves room for it.
 */

/**
 * 70 %: 20 points below the bound, so that the busiest generator can take about 29 % more messages (90/70) than were
 * measured, plus the JVM's garbage-collection bursts, before the next run is bound again.
 */
export const TARGET_LOAD_GENERATOR_CPU_PERCENT = 70;

/** What the verdict needs of one generator. */
export interface GeneratorLoad {
  readonly id: string;
  /** Median CPU over the measured seconds, percent of all its CPUs. */
  readonly cpuPercent: number;
  /** Its summary send rate, msg/s. */
  readonly sendRate: number;
}

export interface LoadGeneratorsVerdict {
  readonly bound: boolean;
  /** The generators above the bound, busiest first. */
  readonly boundGenerators: readonly { readonly id: string; readonly cpuPercent: number }[];
  readonly maxCpuPercent: number;
  /** When bound: the generator count that would bring the busiest to the target (at most the maximum). */
  readonly suggestedLoadGenerators?: number;
  /** When bound: the busiest generator's expected CPU with the suggested count. */
  readonly expectedMaxCpuPercent?: number;
  /** When bound: the report line. */
  readonly line?: string;
}

/**
 * The verdict over the generators whose CPU was measured (`perGenerator`) of the `loadGenerators` that ran.
 * Undefined when none was measured.
 */
export function loadGeneratorsVerdict(
  perGenerator: readonly GeneratorLoad[],
  loadGenerators: number,
): LoadGeneratorsVerdict | undefined {
  if (!Number.isInteger(loadGenerators) || loadGenerators < 1)
    throw new RangeError(`loadGenerators must be a whole number of at least 1, got ${loadGenerators}`);
  if (perGenerator.length > loadGenerators)
    throw new RangeError(`${perGenerator.length} generators measured, but only ${loadGenerators} ran`);
  if (perGenerator.length === 0) return undefined;
  const maxCpuPercent = Math.max(...perGenerator.map((generator) => generator.cpuPercent));
  const boundGenerators = perGenerator
    .filter((generator) => generator.cpuPercent > LOAD_GENERATOR_BOUND_PERCENT)
    .sort((a, b) => b.cpuPercent - a.cpuPercent)
    .map(({ id, cpuPercent }) => ({ id, cpuPercent }));
  if (boundGenerators.length === 0) return { bound: false, boundGenerators, maxCpuPercent };

  const needed = Math.ceil((loadGenerators * maxCpuPercent) / TARGET_LOAD_GENERATOR_CPU_PERCENT);
  const suggestedLoadGenerators = Math.min(MAX_LOAD_GENERATORS, needed);
  const expectedMaxCpuPercent = (maxCpuPercent * loadGenerators) / suggestedLoadGenerators;
  const totalSendRate = perGenerator.reduce((total, generator) => total + generator.sendRate, 0);
  const named = boundGenerators.map((generator) => `${generator.id} at ${generator.cpuPercent.toFixed(1)} %`);
  const cause =
    `load-generator bound (CPU median above ${LOAD_GENERATOR_BOUND_PERCENT} % on ${named.join(', ')} of ` +
    `${loadGenerators} load generator${loadGenerators === 1 ? '' : 's'}): the broker's maximum was not measured`;
  const rates =
    `${Math.round(totalSendRate).toLocaleString('en-US')} msg/s measured, about ` +
    `${Math.round(totalSendRate / suggestedLoadGenerators).toLocaleString('en-US')} each`;
  const advice =
    suggestedLoadGenerators === loadGenerators
      ? `already at the maximum of ${MAX_LOAD_GENERATORS} load generators`
      : needed > MAX_LOAD_GENERATORS
        ? `even loadGenerators: ${MAX_LOAD_GENERATORS} (the maximum) would leave the busiest at about ` +
          `${Math.round(expectedMaxCpuPercent)} % CPU (${rates})`
        : `loadGenerators: ${suggestedLoadGenerators} would bring the busiest to about ` +
          `${Math.round(expectedMaxCpuPercent)} % CPU (${rates})`;
  return {
    bound: true,
    boundGenerators,
    maxCpuPercent,
    suggestedLoadGenerators,
    expectedMaxCpuPercent,
    line: `${cause}; ${advice}`,
  };
}
