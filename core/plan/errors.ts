/** One problem found in a plan: where, what was there, and what is allowed. */
export interface PlanIssue {
  /** Field path such as `clusters[0].topology.type`. */
  readonly path: string;
  /** What is wrong and what would be right. */
  readonly message: string;
  /** The offending value, when there is one. */
  readonly value?: unknown;
}

export function formatPlanIssue(issue: PlanIssue): string {
  const shown = issue.value === undefined ? '' : ` (got ${JSON.stringify(issue.value)})`;
  return `${issue.path || '<plan>'}: ${issue.message}${shown}`;
}

/** The plan file is not a valid benchmark plan. Carries every problem found, not just the first. */
export class PlanValidationError extends Error {
  constructor(
    readonly source: string,
    readonly issues: readonly PlanIssue[],
  ) {
    super(`invalid plan ${source}: ${issues.map(formatPlanIssue).join('; ')}`);
    this.name = 'PlanValidationError';
  }
}

/** PerfTest's output is missing something a result needs; the repetition is recorded as failed, never as zero. */
export class PerfTestOutputError extends Error {
  constructor(
    message: string,
    readonly missing: readonly string[],
  ) {
    super(message);
    this.name = 'PerfTestOutputError';
  }
}
