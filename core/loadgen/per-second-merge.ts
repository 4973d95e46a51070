import type { LatencyPercentiles, PerSecondSample, PerfTestResult } from '../results/result-model';

/**
 * One repetition measured by several load generators (issue 27), put back together:
 * - rates add up: each second on the earliest generator's clock gets the sum of the generators' samples for it;
 * - latency percentiles are never averaged (an average of two p99s is no p99 of anything). Each second, and the
 *   repetition, keeps the HIGHEST of the generators' median, p75, p95 and p99: the combined p-th percentile is at most
 *   the highest of the parts' (each part has at most 1−p of its messages above its own), so the figure is the worst
 *   case and a safe upper bound. `min` is the lowest of the generators' mins, which is the combined min exactly. Each
 *   generator's own percentiles are kept beside it.
 */

/** One generator's PerfTest run, with the part of the workload it ran. */
export interface GeneratorRun {
  readonly id: string;
  readonly producers: number;
  readonly consumers: number;
  readonly queues: readonly string[];
  /** When its PerfTest started, epoch milliseconds. */
  readonly startedAtMs: number;
  readonly result: Pick<PerfTestResult, 'summary' | 'samples' | 'completedInSeconds'>;
  /** Its CPU (median over the measured seconds), when measured. */
  readonly cpuPercent?: number;
}

/** A second of the merged series: the PerSecondSample fields summed, with how many generators reported it. */
export interface MergedSecond extends PerSecondSample {
  /** Generators with a sample in this second: fewer than all at the edges, where start skew leaves some out. */
  readonly generators: number;
}

/** One generator's figures, as `show --json` gives them. */
export interface GeneratorFigures {
  readonly id: string;
  readonly producers: number;
  readonly consumers: number;
  readonly queues: readonly string[];
  /** Its PerfTest summary's rates, msg/s. */
  readonly sendRate: number;
  readonly receiveRate: number;
  readonly consumerLatency?: LatencyPercentiles;
  readonly confirmLatency?: LatencyPercentiles;
  readonly cpuPercent?: number;
  /** How long after the earliest generator it started, ms. */
  readonly startOffsetMs: number;
}

export interface MergedRepetition {
  /** The sum of the generators' summary rates, msg/s: the repetition's own rates. */
  readonly sendRate: number;
  readonly receiveRate: number;
  /** The worst of the generators' summary percentiles (see the top of this file). */
  readonly consumerLatency?: LatencyPercentiles;
  readonly confirmLatency?: LatencyPercentiles;
  /** The earliest start, epoch ms: second 0 of `samples`. */
  readonly startedAtMs: number;
  /** The latest start minus the earliest, ms. */
  readonly startSkewMs: number;
  readonly samples: readonly MergedSecond[];
  /** A fixed amount of work: when the last generator was done, seconds after the earliest start. */
  readonly completedInSeconds?: number;
  readonly loadGenerators: readonly GeneratorFigures[];
  /** How rates and percentiles were combined, for the report. */
  readonly method: string;
}

export const MERGE_METHOD =
  'rates: summed per second over the generators, aligned on the earliest start (each generator shifted by its start ' +
  'offset rounded to whole seconds); latency percentiles: never averaged, the highest generator value per second ' +
  'and per repetition (an upper bound of the combined percentile), min the lowest; each generator keeps its own';

/** Merges the generators' runs of one repetition (see the top of this file). */
export function mergePerSecond(generators: readonly GeneratorRun[]): MergedRepetition {
  if (generators.length === 0) throw new Error('mergePerSecond needs at least one generator run');
  const starts = generators.map((generator) => generator.startedAtMs);
  const startedAtMs = Math.min(...starts);
  const seconds = new Map<number, PerSecondSample[]>();
  for (const generator of generators) {
    for (const [second, sample] of alignedSeconds(generator, startedAtMs)) {
      seconds.set(second, [...(seconds.get(second) ?? []), sample]);
    }
  }
  const samples = [...seconds.entries()]
    .sort(([a], [b]) => a - b)
    .map(([second, parts]): MergedSecond => mergeSecond(second, parts));
  const summaries = generators.map((generator) => generator.result.summary);
  const consumerLatency = worstOf(summaries.map((summary) => summary.consumerLatency));
  const confirmLatency = worstOf(summaries.map((summary) => summary.confirmLatency));
  const completed = generators.map((generator) =>
    generator.result.completedInSeconds === undefined
      ? undefined
      : (generator.startedAtMs - startedAtMs) / 1000 + generator.result.completedInSeconds,
  );
  return {
    sendRate: sum(summaries.map((summary) => summary.sendRateAvg)),
    receiveRate: sum(summaries.map((summary) => summary.receiveRateAvg)),
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
    startedAtMs,
    startSkewMs: Math.max(...starts) - startedAtMs,
    samples,
    ...(completed.every((value) => value !== undefined)
      ? { completedInSeconds: Math.round(Math.max(...completed) * 10) / 10 }
      : {}),
    loadGenerators: generators.map((generator) => generatorFigures(generator, startedAtMs)),
    method: MERGE_METHOD,
  };
}

/**
 * A generator's samples keyed by their second on the earliest generator's clock: PerfTest's own second (its sample
 * time rounded, as core/results/warm-up.ts counts them) plus the generator's start offset in whole seconds. A sample
 * that would land on the second its predecessor took (PerfTest's clock drifts by milliseconds a second) takes the next.
 */
function alignedSeconds(generator: GeneratorRun, startedAtMs: number): [number, PerSecondSample][] {
  const offset = Math.round((generator.startedAtMs - startedAtMs) / 1000);
  const aligned: [number, PerSecondSample][] = [];
  let previous = Number.NEGATIVE_INFINITY;
  for (const sample of generator.result.samples) {
    const second = Math.max(Math.round(sample.time) + offset, previous + 1);
    aligned.push([second, sample]);
    previous = second;
  }
  return aligned;
}

function mergeSecond(second: number, parts: readonly PerSecondSample[]): MergedSecond {
  const total = (pick: (sample: PerSecondSample) => number) => sum(parts.map(pick));
  const consumerLatency = worstOf(parts.map((part) => part.consumerLatency));
  const confirmLatency = worstOf(parts.map((part) => part.confirmLatency));
  return {
    time: second,
    published: total((part) => part.published),
    returned: total((part) => part.returned),
    confirmed: total((part) => part.confirmed),
    nacked: total((part) => part.nacked),
    received: total((part) => part.received),
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
    generators: parts.length,
  };
}

/**
 * The worst of several generators' percentiles: the highest median, p75, p95 and p99, the lowest min (p75 and min
 * only when every generator has them). Undefined when none has any.
 */
export function worstOf(all: readonly (LatencyPercentiles | undefined)[]): LatencyPercentiles | undefined {
  const present = all.filter((value): value is LatencyPercentiles => value !== undefined);
  if (present.length === 0) return undefined;
  const highest = (key: 'median' | 'p75' | 'p95' | 'p99') => Math.max(...present.map((value) => value[key]!));
  const everyHas = (key: 'min' | 'p75') => present.every((value) => value[key] !== undefined);
  return {
    ...(everyHas('min') ? { min: Math.min(...present.map((value) => value.min!)) } : {}),
    median: highest('median'),
    ...(everyHas('p75') ? { p75: highest('p75') } : {}),
    p95: highest('p95'),
    p99: highest('p99'),
  };
}

function generatorFigures(generator: GeneratorRun, startedAtMs: number): GeneratorFigures {
  const { summary } = generator.result;
  return {
    id: generator.id,
    producers: generator.producers,
    consumers: generator.consumers,
    queues: generator.queues,
    sendRate: summary.sendRateAvg,
    receiveRate: summary.receiveRateAvg,
    ...(summary.consumerLatency ? { consumerLatency: summary.consumerLatency } : {}),
    ...(summary.confirmLatency ? { confirmLatency: summary.confirmLatency } : {}),
    ...(generator.cpuPercent === undefined ? {} : { cpuPercent: generator.cpuPercent }),
    startOffsetMs: generator.startedAtMs - startedAtMs,
  };
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
