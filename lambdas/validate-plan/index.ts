import { buildSchedule, WorkflowInput } from '../../state-machines/schedule';
import { withTransientErrors } from '../shared/transient-errors';

/**
 * ValidatePlan: an invalid plan throws PlanValidationError, whose message lists every problem; the execution fails with
 * it.
 */
export const handler = withTransientErrors(async (event: { input: WorkflowInput; executionName: string }) =>
  // Where this controller launches clusters: a plan that names another region is refused (buildSchedule).
  buildSchedule(event.input, event.executionName, {
    ...(process.env.AWS_REGION ? { aws: process.env.AWS_REGION } : {}),
    ...(process.env.AZURE_LOCATION ? { azure: process.env.AZURE_LOCATION } : {}),
  }),
);
