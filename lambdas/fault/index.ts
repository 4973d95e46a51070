import { EC2Client } from '@aws-sdk/client-ec2';
import { SSMClient } from '@aws-sdk/client-ssm';
import { CLOUD_FAULT_REFUSALS } from '../../core/cloud-fault';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { applyAwsFault, healAwsFault, type AwsFaultEvent } from './aws';

const clients = { ec2: new EC2Client({}), ssm: new SSMClient({}) };

/**
 * InjectFault / HealFault on a cloud target. AWS: SSM Run Command on the node (lambdas/fault/aws.ts). Azure has no
 * fault step yet, and ValidatePlan refuses fault plans there by field (core/target-rules.ts); should one get here
 * anyway (a plan stored before that rule), the state fails with the reason and the workflow's Catch tears the cluster
 * down, rather than reporting a fault that did not happen.
 */
export const handler = async (event: AwsFaultEvent & { target?: WorkflowTarget }, context?: { getRemainingTimeInMillis(): number }) => {
  if (event.target !== 'aws') throw new Error(`the ${event.action} fault step is not available on target ${event.target ?? 'unknown'}: ${CLOUD_FAULT_REFUSALS.azure}`);
  // Commands still running 10 s before the invocation ends fail the state with what was pending.
  const timing = { deadline: new Date(Date.now() + (context?.getRemainingTimeInMillis() ?? 60_000) - 10_000) };
  return event.action === 'heal' ? healAwsFault(clients, event, timing) : applyAwsFault(clients, event, timing);
};
