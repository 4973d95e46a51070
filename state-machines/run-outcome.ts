import type { RepetitionStatus, RunStatus } from '../core/results/result-model';

/** What a Catch puts under ResultPath: the error name and its cause (a JSON string from Lambda, plain text locally). */
export interface CaughtError {
  readonly Error?: string;
  readonly Cause?: unknown;
}

/** The outcome of one iteration of ForEachCluster (ClusterFailed / ClusterSucceeded). */
export interface ClusterResult {
  readonly clusterId: string;
  readonly failed: boolean;
  readonly state?: { readonly error?: CaughtError; readonly teardownError?: CaughtError };
}

/**
 * The error message a caught error stands for: Lambda's errorMessage when the cause is its JSON, the cause text
 * otherwise.
 */
export function describeCaught(caught: CaughtError | undefined): string {
  if (!caught) return 'unknown error';
  const cause = caught.Cause;
  if (typeof cause === 'string') {
    try {
      const parsed = JSON.parse(cause) as { errorMessage?: unknown };
      if (typeof parsed.errorMessage === 'string') return parsed.errorMessage;
    } catch {
      // not JSON: the cause is the message itself
    }
    if (cause.length > 0) return cause;
  }
  return caught.Error ?? 'unknown error';
}

/** The first cluster failure, as the run's error ("teardown of … failed" when only the teardown failed). */
export function firstClusterFailure(results: readonly ClusterResult[] | undefined): string | undefined {
  for (const result of results ?? []) {
    if (!result.failed) continue;
    if (result.state?.error) return describeCaught(result.state.error);
    if (result.state?.teardownError)
      return `teardown of ${result.clusterId} failed: ${describeCaught(result.state.teardownError)}`;
    return `cluster ${result.clusterId} failed`;
  }
  return undefined;
}

/**
 * The run's status: the same rule as the in-process loop (any failure or no success → FAILED, all → SUCCEEDED, else
 * PARTIAL). A repetition an adaptive scenario skipped once it had settled counts as done.
 */
export function runStatus(
  failure: string | undefined,
  repetitions: readonly { status: RepetitionStatus }[],
  total: number,
): { status: RunStatus; error?: string } {
  const succeeded = repetitions.filter((repetition) => repetition.status === 'SUCCEEDED').length;
  const skipped = repetitions.filter((repetition) => repetition.status === 'SKIPPED').length;
  const status: RunStatus =
    failure !== undefined || succeeded === 0 ? 'FAILED' : succeeded + skipped === total ? 'SUCCEEDED' : 'PARTIAL';
  const error = failure ?? (status === 'FAILED' ? 'no repetition succeeded' : undefined);
  return error === undefined ? { status } : { status, error };
}
