import { splitWorkload, type LoadGeneratorShare } from '../../core/loadgen/workload-split';
import { validatePlan, type Scenario } from '../../core/plan/plan';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { positiveEnvNumber } from '../shared/env';

/**
 * Several load generators for one repetition in the cloud (issue 27): the workload is split as on the local target
 * (core/loadgen/workload-split.ts), each generator runs its share and uploads under a folder of its own, and all start
 * PerfTest at one moment the start function sets.
 */

/** Seconds between the start function and the shared start: SendCommand to N instances, the secret, the user. */
export const SHARED_START_DELAY_SECONDS = 20;

/**
 * The delay the start function uses: SHARED_START_DELAY_SECONDS, or a positive number of seconds in the function's
 * RMQBENCH_SHARED_START_DELAY_SECONDS (the cloud twin sets a shorter one: its commands reach its simulated instances
 * at once, so the default's margin only made each repetition wait).
 */
export function sharedStartDelaySeconds(environment: NodeJS.ProcessEnv = process.env): number {
  return positiveEnvNumber('RMQBENCH_SHARED_START_DELAY_SECONDS', SHARED_START_DELAY_SECONDS, environment);
}

/** The file each generator uploads beside its output: when its PerfTest started, epoch milliseconds. */
export const STARTED_AT_FILE = 'started-at.txt';

/** The folder of generator `index` (0-based) under the repetition's raw prefix. */
export const generatorFolder = (index: number) => `generator-${index}`;

/** One generator's part of a repetition, as the run script takes it. */
export interface GeneratorRun {
  readonly index: number;
  readonly share: LoadGeneratorShare;
  /** The shared start, epoch milliseconds. */
  readonly startAtMs: number;
}

function scenarioOf(plan: unknown, item: ScheduledRepetition): Scenario {
  const scenario = validatePlan(plan, 'the execution input').scenarios.find(
    (candidate) => candidate.id === item.scenarioId,
  );
  if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in the execution's plan`);
  return scenario;
}

/** The generators of a repetition with the plan cluster's loadGenerators > 1; undefined with one (as before). */
export function repetitionGenerators(
  plan: unknown,
  item: ScheduledRepetition,
  startAtMs: number,
): { runs: GeneratorRun[]; split: string } | undefined {
  const scenario = scenarioOf(plan, item);
  if (scenario.cluster.loadGenerators <= 1) return undefined;
  const split = splitWorkload(scenario.workload, scenario.cluster.loadGenerators);
  return {
    runs: split.generators.map((share, index) => ({ index, share, startAtMs })),
    split: split.description,
  };
}

/**
 * Lines that wait until the shared start (GNU date's %N gives the milliseconds; GNU sleep takes a fraction), then
 * note when PerfTest starts. A generator that arrives late starts at once: its lateness is in the start skew.
 */
export function sharedStartLines(startAtMs: number): string[] {
  if (!Number.isSafeInteger(startAtMs) || startAtMs <= 0)
    throw new Error(`the shared start must be epoch milliseconds, got ${startAtMs}`);
  return [
    `WAIT_MS=$(( ${startAtMs} - $(date +%s%3N) ))`,
    `if [ "$WAIT_MS" -gt 0 ]; then sleep "$(( WAIT_MS / 1000 )).$(printf '%03d' $(( WAIT_MS % 1000 )))"; fi`,
    `date +%s%3N > ${STARTED_AT_FILE}`,
  ];
}
