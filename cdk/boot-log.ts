import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { CHECKOV_REASON, skipCheckov } from './checkov';

/**
 * The boot log group of a construct's instances and their role's rights to report the boot: write to that log, and
 * SignalResource on this stack only (an instance signals its creation policy with its own credentials). The group is
 * kept when the stack is deleted: a failed boot fails (and rolls back) the stack, and its log must outlive it.
 */
export function bootLogWithSignal(scope: Construct, role: iam.IRole): logs.LogGroup {
  const logGroup = new logs.LogGroup(scope, 'BootLogs', { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.RETAIN });
  skipCheckov(logGroup, [{ id: 'CKV_AWS_158', comment: CHECKOV_REASON.logGroupKms }]);
  logGroup.grantWrite(role);
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'SignalBootResult', actions: ['cloudformation:SignalResource'], resources: [Stack.of(scope).stackId] }));
  return logGroup;
}
