import { EC2Client } from '@aws-sdk/client-ec2';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { requireEnv } from '../shared/env';
import { applyFault, awsFaultTarget, healFault, type AwsFaultEvent, type FaultTarget } from './aws';
import { clusterScopedSsm } from './cluster-scoped-ssm';
import { withTransientErrors } from '../shared/transient-errors';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureFault = () => import('./azure');
const azureFaultClientsModule = () => import('./azure-fault-clients');

const ec2 = new EC2Client({});
/** The role whose sessions may run commands on one cluster's nodes only (cdk/BenchmarkController.ts FaultNodeRole). */
const faultNodeRoleArn = requireEnv('FAULT_NODE_ROLE_ARN');

/**
 * InjectFault / HealFault on a cloud target: AWS through SSM Run Command on the node's instance (lambdas/fault/aws.ts),
 * Azure through a managed Run Command on the node VM (lambdas/fault/azure.ts). Commands still running 10 s before the
 * invocation ends fail the state with what was pending, and the workflow's Catch tears the cluster down.
 */
export const handler = withTransientErrors(
  async (event: AwsFaultEvent & { target?: WorkflowTarget }, context?: { getRemainingTimeInMillis(): number }) => {
    const timing = { deadline: new Date(Date.now() + (context?.getRemainingTimeInMillis() ?? 60_000) - 10_000) };
    let target: FaultTarget;
    if (event.target === 'azure') {
      // The fault-only service principal when the construct was given one (azure.faultCredentialsSecret), else the
      // controller's.
      const { clients: azure } = await (
        await azureFaultClientsModule()
      ).azureFaultClients({ secrets: new SecretsManagerClient({}), env: process.env });
      target = (await azureFault()).azureFaultTarget(azure, event.launch.clusterId, timing);
    } else if (event.target === 'aws') {
      const clusterId = event.launch.clusterId;
      target = awsFaultTarget(
        { ec2, ssm: clusterScopedSsm(faultNodeRoleArn, clusterId) },
        clusterId,
        timing,
        event.started,
      );
    } else {
      throw new Error(
        `the ${event.action} fault step runs on the cloud targets aws and azure, ` +
          `not on ${event.target ?? 'an unnamed target'}`,
      );
    }
    return event.action === 'heal' ? healFault(target, event) : applyFault(target, event);
  },
);
