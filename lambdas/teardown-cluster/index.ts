import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { requireEnv } from '../shared/env';
import { withTransientErrors } from '../shared/transient-errors';
import {
  checkGroupTeardown,
  checkStackTeardown,
  deleteBootLogGroup,
  deleteByFrom,
  startGroupTeardown,
  startStackTeardown,
  type TeardownStarted,
} from './logic';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const cfn = new CloudFormationClient({});
// Loaded on the first boot log group to delete only: the Logs client stays out of the cold start.
let logs: Promise<import('@aws-sdk/client-cloudwatch-logs').CloudWatchLogsClient> | undefined;
const logsClient = () =>
  (logs ??= import('@aws-sdk/client-cloudwatch-logs').then((module) => new module.CloudWatchLogsClient({})));

interface TeardownEvent {
  /** "check": CheckTeardown asks whether the deletion TeardownCluster started has finished. */
  readonly action?: 'check';
  readonly target: WorkflowTarget;
  readonly cluster: ScheduledCluster;
  readonly teardown?: TeardownStarted;
  /** The cluster failed: its boot log group (AWS) outlives the stack, for the reason. */
  readonly keepBootLogs?: boolean;
}

/**
 * TeardownCluster deletes by the deterministic name (stack or resource group), so it also cleans up after a launch that
 * failed half-way, and returns at once with the deletion's deadline; CheckTeardown (action "check") polls until the
 * cluster is gone, deleting again what was left DELETE_FAILED, and fails with TeardownIncomplete past the deadline.
 */
export const handler = withTransientErrors(
  async (event: TeardownEvent): Promise<TeardownStarted | { done: boolean }> => {
    const id = event.cluster.clusterId;
    if (event.action === 'check') {
      const deleteBy = event.teardown?.deleteBy ?? deleteByFrom(event.target === 'azure' ? 'azure' : 'aws', new Date());
      if (event.target !== 'azure') {
        const checked = await checkStackTeardown(cfn, roleArn, id, deleteBy);
        if (checked.done && event.teardown?.bootLogGroup)
          await deleteBootLogGroup(await logsClient(), event.teardown.bootLogGroup);
        return checked;
      }
      return checkGroupTeardown(
        (await (await azureTarget()).azureClientsFromEnv()).clients,
        id,
        deleteBy,
        new Date(),
        event.teardown?.lastError,
      );
    }
    if (event.target !== 'azure') return startStackTeardown(cfn, roleArn, id, event.keepBootLogs ?? true);
    // Azure: waits up to 40 s of the invocation for the deletion; CheckTeardown follows it after that.
    return startGroupTeardown((await (await azureTarget()).azureClientsFromEnv()).clients, id, 40_000);
  },
);
