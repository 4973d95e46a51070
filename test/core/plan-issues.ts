import { PlanValidationError, type PlanIssue } from '../../core/plan/errors';
import { parsePlanText } from '../../core/plan/plan';

/** The issues a plan text is refused with; throws when it is accepted (the test expected a refusal). */
export function issuesOf(text: string, source = 'test.yaml'): readonly PlanIssue[] {
  try {
    parsePlanText(text, source);
  } catch (error) {
    if (error instanceof PlanValidationError) return error.issues;
    throw error;
  }
  throw new Error('expected the plan to be rejected');
}
