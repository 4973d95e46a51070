import { EC2Client } from '@aws-sdk/client-ec2';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { applyFault, awsFaultTarget, healFault, type AwsFaultEvent, type FaultTarget } from './aws';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureFault = () => import('./azure');

const clients = { ec2: new EC2Client({}), ssm: new SSMClient({}) };

/**
 * InjectFault / HealFault on a cloud target: AWS through SSM Run Command on the node's instance (lambdas/fault/aws.ts),
 * Azure through a managed Run Command on the node VM (lambdas/fault/azure.ts). Commands still running 10 s before the
 * invocation ends fail the state with what was pending, and the workflow's Catch tears the cluster down.
 */
export const handler = async (event: AwsFaultEvent & { target?: WorkflowTarget }, context?: { getRemainingTimeInMillis(): number }) => {
  const timing = { deadline: new Date(Date.now() + (context?.getRemainingTimeInMillis() ?? 60_000) - 10_000) };
  let target: FaultTarget;
  if (event.target === 'azure') {
    const { clients: azure } = await (await azureTarget()).azureClientsFromEnv();
    target = (await azureFault()).azureFaultTarget(azure, event.launch.clusterId, timing);
  } else if (event.target === 'aws') {
    target = awsFaultTarget(clients, event.launch.clusterId, timing);
  } else {
    throw new Error(`the ${event.action} fault step runs on the cloud targets aws and azure, not on ${event.target ?? 'an unnamed target'}`);
  }
  return event.action === 'heal' ? healFault(target, event) : applyFault(target, event);
};
