import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { requireEnv } from '../shared/env';
import { withTransientErrors } from '../shared/transient-errors';
import { checkGroupTeardown, checkStackTeardown, deleteByFrom, startStackTeardown, type TeardownStarted } from './logic';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureCluster = () => import('../shared/azure-cluster');

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});

interface TeardownEvent {
  /** "check": CheckTeardown asks whether the deletion TeardownCluster started has finished. */
  readonly action?: 'check';
  readonly target: WorkflowTarget;
  readonly cluster: ScheduledCluster;
  readonly teardown?: TeardownStarted;
}

/**
 * TeardownCluster deletes by the deterministic name (stack or resource group), so it also cleans up after a launch that
 * failed half-way, and returns at once with the deletion's deadline; CheckTeardown (action "check") polls until the
 * cluster is gone, deleting again what was left DELETE_FAILED, and fails with TeardownIncomplete past the deadline.
 */
export const handler = withTransientErrors(async (event: TeardownEvent): Promise<TeardownStarted | { done: boolean }> => {
  const id = event.cluster.clusterId;
  if (event.action === 'check') {
    const deleteBy = event.teardown?.deleteBy ?? deleteByFrom(event.target === 'azure' ? 'azure' : 'aws', new Date());
    if (event.target !== 'azure') return checkStackTeardown(cfn, roleArn, id, deleteBy);
    return checkGroupTeardown((await (await azureTarget()).azureClientsFromEnv()).clients, id, deleteBy);
  }
  if (event.target !== 'azure') return startStackTeardown(cfn, roleArn, id);
  // Azure: waits up to 40 s of the invocation for the deletion; CheckTeardown follows it after that.
  const { deleted } = await (await azureCluster()).deleteResourceGroup((await (await azureTarget()).azureClientsFromEnv()).clients, id, 40_000);
  return { done: deleted, deleteBy: deleteByFrom('azure', new Date()) };
});
