import { buildSchedule, WorkflowInput } from '../../state-machines/schedule';
import { withTransientErrors } from '../shared/transient-errors';

/**
 * ValidatePlan: an invalid plan throws PlanValidationError, whose message lists every problem; the execution fails with
 * it.
 */
export const handler = withTransientErrors(async (event: { input: WorkflowInput; executionName: string }) =>
  buildSchedule(event.input, event.executionName),
);
