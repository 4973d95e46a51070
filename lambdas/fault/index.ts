/**
 * InjectFault / HealFault on a cloud target. The cloud fault step (AWS SSM on the node, Azure Run Command) is not
 * built yet, and ValidatePlan refuses fault plans on aws and azure by field (core/target-rules.ts), so a cloud
 * execution never enters these states. Should one get here anyway (a plan stored before that rule), the state
 * fails with the reason, and the workflow's Catch tears the cluster down, rather than reporting a fault that did not happen.
 */
export const handler = async (event: { target?: string; action?: string }): Promise<never> => {
  throw new Error(`the ${event.action ?? 'fault'} step is not available on target ${event.target ?? 'unknown'}: fault scenarios run on the local target only so far`);
};
