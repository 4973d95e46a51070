import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { RunStateLookup } from '../../core/cloud/cleanup';
import { deleteStack, expiredStacks } from '../shared/aws-cluster';
import type { AzureClients } from '../shared/azure-cluster';
import { deleteGroups } from '../failure-handler/logic';

/**
 * The CloudWatch metric the sweeper reports stacks whose deletion had failed under (namespace rmqbench, dimension
 * Controller).
 */
export const DELETE_FAILED_METRIC = 'DeleteFailedStacks';

/** A stack an earlier deletion left DELETE_FAILED, whose deletion this sweep retried. */
export interface RetriedStack {
  readonly name: string;
  readonly reason: string;
}

/**
 * Deletes this controller's stacks (and, with Azure, resource groups) whose expiry tag has passed, unless their run is
 * still RUNNING in the results table (`runStateOf`) while its execution may still be running (core/cloud/cleanup.ts). A
 * stack
 * left DELETE_FAILED (a resource CloudFormation could not delete) is deleted again, without
 * RetainResources: retaining would orphan billed resources that no safety net looks for any more
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DeleteStack.html: RetainResources only for
 * DELETE_FAILED stacks). Those stacks are reported in the result, in a log line and as the DeleteFailedStacks metric
 * (CloudWatch embedded metric format, emitted on every sweep so that an alarm sees 0 too).
 */
export async function sweepExpiredStacks(
  cfn: CloudFormationClient,
  roleArn: string,
  prefix: string,
  now = new Date(),
  azure?: AzureClients,
  log: (line: string) => void = console.log,
  runStateOf?: RunStateLookup,
) {
  const stacks = await expiredStacks(cfn, prefix, now, runStateOf);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack.name);
  const retried: RetriedStack[] = stacks
    .filter((stack) => stack.status === 'DELETE_FAILED')
    .map((stack) => ({ name: stack.name, reason: stack.statusReason ?? 'no reason given' }));
  log(deleteFailedReport(prefix, retried, now));
  const groups = azure
    ? await deleteGroups(
        azure,
        await (await import('../shared/azure-cluster')).expiredResourceGroups(azure, prefix, now),
      )
    : undefined;
  return {
    deleted: stacks.map((stack) => stack.name),
    deleteFailedRetried: retried,
    ...(groups ? { deletedResourceGroups: groups } : {}),
  };
}

/**
 * One JSON log line in CloudWatch's embedded metric format: Lambda sends it to CloudWatch Logs, which extracts the
 * metric
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
 */
export function deleteFailedReport(prefix: string, retried: readonly RetriedStack[], now: Date): string {
  return JSON.stringify({
    _aws: {
      Timestamp: now.getTime(),
      CloudWatchMetrics: [
        {
          Namespace: 'rmqbench',
          Dimensions: [['Controller']],
          Metrics: [{ Name: DELETE_FAILED_METRIC, Unit: 'Count' }],
        },
      ],
    },
    Controller: prefix,
    [DELETE_FAILED_METRIC]: retried.length,
    message:
      retried.length === 0
        ? 'no stack was left DELETE_FAILED'
        : `retried the deletion of ${retried.length} stack(s) left DELETE_FAILED: ` +
          `${retried.map((stack) => `${stack.name} (${stack.reason})`).join('; ')}`,
    deleteFailedStacks: retried,
  });
}
