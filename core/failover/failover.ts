import type { FailoverResult } from '../results/result-model';
import { median } from '../results/statistics';

/**
 * What a fault cost the verifier's consumer, from its received messages per second.
 * Pure, so that it is tested on recorded samples and serves every target alike.
 */
export interface RecoveryMeasure {
  /**
   * Median received msg/s over the whole seconds before the fault (the first second, a warm-up, left out when there are
   * others).
   */
  readonly preFaultMedian: number;
  /**
   * Seconds from the fault until the first whole second whose receive rate is back to at least 90 % of the pre-fault
   * median, after it had dropped below; 0 when it did not drop within DROP_ONSET_SECONDS of the fault (a dip later
   * than that is run-to-run noise, not the fault). Absent when it never came back before the run ended.
   */
  readonly recoverySeconds?: number;
  /** Whole seconds, from the second of the fault on, in which nothing was received. */
  readonly unavailableSeconds: number;
}

/** The share of the pre-fault median that counts as recovered. */
export const RECOVERED_SHARE = 0.9;

/**
 * Whole seconds after the fault's own second within which a drop counts as the fault's (deliveries stop at once when a
 * queue's leader dies).
 */
export const DROP_ONSET_SECONDS = 5;

/**
 * @param receivedPerSecond messages received in whole second i of the verifier's run (index 0 covers [0 s, 1 s); no
 * partial last second).
 * @param faultAtSeconds when the fault was applied, seconds since the same start (fractional).
 */
export function measureRecovery(receivedPerSecond: readonly number[], faultAtSeconds: number): RecoveryMeasure {
  if (!Number.isFinite(faultAtSeconds) || faultAtSeconds < 0)
    throw new Error(`faultAtSeconds must be a non-negative number (got ${faultAtSeconds})`);
  const faultSecond = Math.floor(faultAtSeconds);
  if (faultSecond >= receivedPerSecond.length) {
    throw new Error(
      `the fault at ${faultAtSeconds} s is after the last recorded second (${receivedPerSecond.length} samples)`,
    );
  }
  const before = receivedPerSecond.slice(0, faultSecond);
  if (before.length === 0)
    throw new Error(
      `no whole second was recorded before the fault at ${faultAtSeconds} s, ` +
        `so there is no pre-fault rate to recover to`,
    );
  const preFaultMedian = median(before.length > 1 ? before.slice(1) : before);
  const threshold = RECOVERED_SHARE * preFaultMedian;
  const after = receivedPerSecond.slice(faultSecond);
  const unavailableSeconds = after.filter((received) => received === 0).length;
  const dropped = after.findIndex((received) => received < threshold);
  if (dropped < 0 || dropped > DROP_ONSET_SECONDS) return { preFaultMedian, recoverySeconds: 0, unavailableSeconds };
  const back = after.findIndex((received, index) => index > dropped && received >= threshold);
  if (back < 0) return { preFaultMedian, unavailableSeconds };
  // The recovered second starts at faultSecond + back; the fault happened faultAtSeconds - faultSecond into its own
  // second.
  return { preFaultMedian, recoverySeconds: roundMs(faultSecond + back - faultAtSeconds), unavailableSeconds };
}

const roundMs = (seconds: number) => Math.round(seconds * 1000) / 1000;

/**
 * The queue the lost-message verifier publishes to and consumes from, on every target (BENCHMARK_QUEUE_PATTERN covers
 * it:
 * policies, cleanup, the benchmark user's permissions). A fault aimed at `leader` or `follower` is placed by this
 * queue's leader.
 */
export const VERIFIER_QUEUE = 'rmqbench-verifier';

/**
 * What the lost-message verifier hands over after a repetition (local/lost-message-verifier.ts), before the recovery is
 * measured.
 */
export interface VerifierCounts {
  readonly published: number;
  readonly confirmed: number;
  readonly consumed: number;
  readonly lostMessages: number;
  readonly duplicatedMessages: number;
  /**
   * NATS: confirmed, never consumed, but still in the stream when the verifier read it all once more at the end: not
   * lost, only never delivered to the consumer. Absent for RabbitMQ (a queue cannot be read twice).
   */
  readonly undeliveredMessages?: number;
  /** Undefined when no fault was marked. */
  readonly unconfirmedAtFault?: number;
  /** Seconds after the verifier started. */
  readonly faultAtSeconds?: number;
  readonly healAtSeconds?: number;
  readonly reconnects: number;
  /** Deliveries per second from the start until the run ended (the drain is not in it). */
  readonly receivedPerSecond: readonly number[];
}

/** The fault as the target applied it. */
export interface FaultOutcome {
  readonly action: FailoverResult['fault']['action'];
  readonly node: FailoverResult['fault']['node'];
  /** Undefined when the fault was never applied (the workflow failed before). */
  readonly nodeName?: string;
}

/**
 * The stored verifier result; throws with the reason when the counts cannot be measured (no fault applied, too early).
 */
export function failoverResult(counts: VerifierCounts, fault: FaultOutcome): FailoverResult {
  if (counts.faultAtSeconds === undefined || counts.unconfirmedAtFault === undefined || fault.nodeName === undefined) {
    throw new Error(`the ${fault.action} fault was never applied, so the verifier's counts measure no failover`);
  }
  const recovery = measureRecovery(counts.receivedPerSecond, counts.faultAtSeconds);
  return {
    fault: {
      action: fault.action,
      node: fault.node,
      nodeName: fault.nodeName,
      appliedAtSeconds: counts.faultAtSeconds,
      ...(counts.healAtSeconds === undefined ? {} : { healedAtSeconds: counts.healAtSeconds }),
    },
    published: counts.published,
    confirmed: counts.confirmed,
    consumed: counts.consumed,
    lostMessages: counts.lostMessages,
    duplicatedMessages: counts.duplicatedMessages,
    ...(counts.undeliveredMessages === undefined ? {} : { undeliveredMessages: counts.undeliveredMessages }),
    unconfirmedAtFault: counts.unconfirmedAtFault,
    ...(recovery.recoverySeconds === undefined ? {} : { recoverySeconds: recovery.recoverySeconds }),
    unavailableSeconds: recovery.unavailableSeconds,
    reconnects: counts.reconnects,
    receivedPerSecond: counts.receivedPerSecond,
  };
}
