import { describe } from './statistics';
import type { RepetitionRecord } from './result-model';

/**
 * Adaptive repetitions (a plan's `repetitions: { min, max, ciPercent }`): a scenario stops repeating once the 95 %
 * confidence interval of its receive rate (Student t over the repetitions' average receive rates, as the report
 * computes it) has a half-width within `ciPercent` of the mean, after at least `min` and at most `max` repetitions.
 * Pure: the workflow's CheckSettled step and the reports call it with the rates stored so far.
 */
export interface AdaptiveRepetitions {
  /** Repetitions always run (at least 2: a confidence interval needs two values). */
  readonly min: number;
  /** Repetitions at most; what the estimate counts. */
  readonly max: number;
  /** The CI half-width, as a percentage of the mean, at which a scenario counts as settled. */
  readonly ciPercent: number;
}

/** Whether a scenario may stop, from the receive rates of its successful repetitions so far. */
export interface SettledDecision {
  readonly settled: boolean;
  /** Successful repetitions the decision rests on. */
  readonly repetitions: number;
  /** The 95 % CI half-width as a percentage of the mean; absent with fewer than two rates or a mean of 0. */
  readonly ciHalfWidthPercent?: number;
  /** One line: `settled: CI half-width 3.1 % ≤ 5 % after 2 repetitions`, or why not. */
  readonly reason: string;
}

const percentText = (value: number) => `${value.toFixed(1)} %`;
const repetitionsText = (count: number) => `${count} repetition${count === 1 ? '' : 's'}`;

/** The 95 % CI half-width of `rates` as a percentage of their mean; undefined with fewer than 2 or a mean ≤ 0. */
export function ciHalfWidthPercent(rates: readonly number[]): number | undefined {
  if (rates.length < 2) return undefined;
  const stats = describe(rates);
  return stats.mean > 0 ? (100 * stats.ci95) / stats.mean : undefined;
}

/**
 * The stopping rule: settled once at least `min` repetitions succeeded and the 95 % CI half-width of their receive
 * rates is at most `ciPercent` of their mean. Failed repetitions give no rate and do not count towards `min`.
 */
export function settledDecision(rule: AdaptiveRepetitions, receiveRates: readonly number[]): SettledDecision {
  const count = receiveRates.length;
  if (count < rule.min)
    return {
      settled: false,
      repetitions: count,
      reason: `not settled: ${repetitionsText(count)} succeeded, at least ${rule.min} needed`,
    };
  const width = ciHalfWidthPercent(receiveRates);
  if (width === undefined)
    return { settled: false, repetitions: count, reason: 'not settled: the mean receive rate is 0' };
  const settled = width <= rule.ciPercent;
  return {
    settled,
    repetitions: count,
    ciHalfWidthPercent: width,
    reason:
      `${settled ? 'settled' : 'not settled'}: CI half-width ${percentText(width)} ${settled ? '≤' : '>'} ` +
      `${rule.ciPercent} % after ${repetitionsText(count)}`,
  };
}

/** How an adaptive scenario ended: settled early, ran to `max`, or the run ended before either. */
export type AdaptiveStop = 'settled' | 'max reached' | 'incomplete';

/** What a report says of an adaptive scenario: how many repetitions it needed and why it stopped. */
export interface AdaptiveOutcome extends AdaptiveRepetitions {
  readonly scenarioId: string;
  /** Repetitions that ran (succeeded or failed). */
  readonly ran: number;
  /** Repetitions skipped because the scenario had settled. */
  readonly skipped: number;
  readonly stoppedBecause: AdaptiveStop;
  /** One line, e.g. `settled: CI half-width 3.1 % ≤ 5 % after 2 repetitions` or `max reached: CI half-width …`. */
  readonly reason: string;
}

/** The parts of a stored repetition the outcome reads. */
export interface AdaptiveRepetitionView {
  readonly scenarioId: string;
  readonly repetition: number;
  readonly status: string;
  readonly skipReason?: string;
  readonly result?: { readonly summary: { readonly receiveRateAvg: number } };
}

/** A scenario's adaptive outcome from its stored repetitions (skipped ones carry the reason they were skipped for). */
export function adaptiveOutcome(
  rule: AdaptiveRepetitions,
  scenarioId: string,
  repetitions: readonly AdaptiveRepetitionView[],
): AdaptiveOutcome {
  const mine = repetitions.filter((rep) => rep.scenarioId === scenarioId).sort((a, b) => a.repetition - b.repetition);
  const skipped = mine.filter((rep) => rep.status === 'SKIPPED');
  const ran = mine.length - skipped.length;
  const base = { scenarioId, ...rule, ran, skipped: skipped.length };
  if (skipped.length > 0) return { ...base, stoppedBecause: 'settled', reason: skipped[0]!.skipReason ?? 'settled' };
  const rates = mine
    .filter((rep) => rep.status === 'SUCCEEDED' && rep.result)
    .map((rep) => rep.result!.summary.receiveRateAvg);
  if (ran >= rule.max) {
    const width = ciHalfWidthPercent(rates);
    const detail =
      width === undefined
        ? `${repetitionsText(rates.length)} succeeded`
        : `CI half-width ${percentText(width)} ${width <= rule.ciPercent ? '≤' : '>'} ${rule.ciPercent} %`;
    return { ...base, stoppedBecause: 'max reached', reason: `max reached: ${detail} after ${repetitionsText(ran)}` };
  }
  return {
    ...base,
    stoppedBecause: 'incomplete',
    reason: `incomplete: ${ran} of at most ${rule.max} repetitions ran (the run ended before the scenario settled)`,
  };
}

/** What CheckSettled returns: skip this repetition (and the record that says so) or run it. */
export type SettledCheckOutcome =
  | { readonly skip: false; readonly reason: string }
  | { readonly skip: true; readonly reason: string; readonly record: RepetitionRecord };

/**
 * CheckSettled, before repetition `repetition` of an adaptive scenario starts: from the scenario's repetitions stored
 * before it, skip it when the scenario has settled (or an earlier one was already skipped for that), else run it.
 */
export function settledCheck(
  rule: AdaptiveRepetitions,
  item: { readonly runId: string; readonly scenarioId: string; readonly repetition: number },
  stored: readonly AdaptiveRepetitionView[],
  now: string,
): SettledCheckOutcome {
  const earlier = stored
    .filter((rep) => rep.scenarioId === item.scenarioId && rep.repetition < item.repetition)
    .sort((a, b) => a.repetition - b.repetition);
  const skippedBefore = earlier.find((rep) => rep.status === 'SKIPPED');
  const decision = skippedBefore
    ? { settled: true, reason: skippedBefore.skipReason ?? 'settled' }
    : settledDecision(
        rule,
        earlier
          .filter((rep) => rep.status === 'SUCCEEDED' && rep.result)
          .map((rep) => rep.result!.summary.receiveRateAvg),
      );
  if (!decision.settled) return { skip: false, reason: decision.reason };
  return {
    skip: true,
    reason: decision.reason,
    record: {
      runId: item.runId,
      scenarioId: item.scenarioId,
      repetition: item.repetition,
      status: 'SKIPPED',
      startedAt: now,
      finishedAt: now,
      perfTestArgs: [],
      skipReason: decision.reason,
    },
  };
}
