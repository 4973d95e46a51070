import { PerfTestOutputError } from '../plan/errors';
import { parsePerfTestOutput, perfTestExpectations, type PerfTestExpectations } from '../perftest/perftest-output';
import type { Workload } from '../plan/plan-schema';
import type { LoadGeneratorShare } from './workload-split';
import type { PerSecondSample, PerfTestResult } from '../results/result-model';
import { describe } from '../results/statistics';
import { samplesAfterWarmUp } from '../results/warm-up';
import { mergePerSecond, type MergedRepetition } from './per-second-merge';

/**
 * One load generator's raw output of a repetition (issue 27), as a target collected it: what it ran, when its
 * PerfTest started, and PerfTest's stdout and CSV.
 */
export interface RawGeneratorOutput {
  /** `lg-1`, `lg-2`, … */
  readonly id: string;
  readonly producers: number;
  readonly consumers: number;
  readonly queues: readonly string[];
  /** When its PerfTest process started, epoch milliseconds. */
  readonly startedAtMs: number;
  /** Redacted PerfTest arguments. */
  readonly perfTestArgs: readonly string[];
  /** What its part of the workload should produce (its producers, consumers and fixed messages). */
  readonly expectations: PerfTestExpectations;
  readonly stdout: string;
  readonly csv: string;
}

/** The repetition's result put together from its generators, with each generator's figures. */
export interface GeneratorsResult {
  /** The repetition's result: rates summed, percentiles the worst generator's (core/loadgen/per-second-merge.ts). */
  readonly result: PerfTestResult;
  readonly merged: MergedRepetition;
}

/**
 * Parses every generator's output (a generator's output cut short fails the repetition, naming the generator) and
 * merges them. The rate statistics count only the seconds every generator measured, after the warm-up: the edge
 * seconds that start skew leaves to some generators would read as a dip that is not the broker's.
 */
export function generatorsResult(
  generators: readonly RawGeneratorOutput[],
  cpuPercentOf: (id: string, result: PerfTestResult) => number | undefined = () => undefined,
): GeneratorsResult {
  if (generators.length === 0) throw new Error('a repetition with load generators needs at least one');
  const runs = generators.map((generator) => {
    let result;
    try {
      result = parsePerfTestOutput(generator.stdout, generator.csv, generator.expectations);
    } catch (error) {
      if (!(error instanceof PerfTestOutputError)) throw error;
      throw new PerfTestOutputError(`load generator ${generator.id}: ${error.message}`, error.missing);
    }
    const cpuPercent = cpuPercentOf(generator.id, result);
    return { ...generator, result, ...(cpuPercent === undefined ? {} : { cpuPercent }) };
  });
  const merged = mergePerSecond(runs);
  const warmUpSeconds = generators[0]!.expectations.warmUpSeconds ?? 0;
  const samples: PerSecondSample[] = merged.samples.map(({ generators: _count, ...sample }) => sample);
  const whole = merged.samples.filter((sample) => sample.generators === generators.length);
  const measured = samplesAfterWarmUp(whole.length > 0 ? whole : merged.samples, warmUpSeconds);
  const counted = measured.length > 0 ? measured : merged.samples;
  const result: PerfTestResult = {
    summary: {
      sendRateAvg: merged.sendRate,
      receiveRateAvg: merged.receiveRate,
      ...(merged.consumerLatency ? { consumerLatency: merged.consumerLatency } : {}),
      ...(merged.confirmLatency ? { confirmLatency: merged.confirmLatency } : {}),
    },
    ...(warmUpSeconds > 0 ? { warmUpSeconds } : {}),
    samples,
    sendRate: describe(counted.map((sample) => sample.published)),
    receiveRate: describe(counted.map((sample) => sample.received)),
    ...(merged.completedInSeconds === undefined ? {} : { completedInSeconds: merged.completedInSeconds }),
  };
  return { result, merged };
}

/** What one generator's share of `workload` should produce: its producers, consumers, queues and fixed messages. */
export function generatorExpectations(workload: Workload, share: LoadGeneratorShare): PerfTestExpectations {
  return perfTestExpectations({
    ...workload,
    producers: share.producers,
    consumers: share.consumers,
    queues: share.queues.names.length,
    ...(share.messageLimits ? { messageCount: share.messageLimits.total, totalBytes: undefined } : {}),
    capacity: undefined,
  });
}
