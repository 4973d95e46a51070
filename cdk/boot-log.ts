import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { CHECKOV_REASON, skipCheckov } from './checkov';

/**
 * The boot log group of a construct's instances and their role's rights to report the boot: write to that log, and
 * SignalResource on this stack only (an instance signals its creation policy with its own credentials).
 *
 * Whether the group goes with the stack is decided at teardown, not here: a RemovalPolicy is fixed when the template is
 * synthesized, while whether the cluster failed is known only when it is torn down (and a failed boot fails, and may
 * roll back, the stack, whose log must outlive it). So the stack retains the group, the controller's TeardownCluster
 * deletes it once the stack is gone unless the cluster failed (lambdas/teardown-cluster, logs:DeleteLogGroup on
 * rmqbench-* groups), and a kept group expires after 30 days, one of CloudWatch Logs' allowed retention values
 * (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html, retentionInDays).
 */
export function bootLogWithSignal(scope: Construct, role: iam.IRole): logs.LogGroup {
  const logGroup = new logs.LogGroup(scope, 'BootLogs', {
    retention: logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  skipCheckov(logGroup, [{ id: 'CKV_AWS_158', comment: CHECKOV_REASON.logGroupKms }]);
  logGroup.grantWrite(role);
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'SignalBootResult',
      actions: ['cloudformation:SignalResource'],
      resources: [Stack.of(scope).stackId],
    }),
  );
  return logGroup;
}
