import * as iam from 'aws-cdk-lib/aws-iam';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import { CLOUDWATCH_NAMESPACE } from '../core/metrics/cloudwatch-host-metrics';
import { cloudWatchAgentBootCommands, type CloudWatchAgentInput } from './user-data/cloudwatch-agent';

/**
 * Sends an instance's host metrics to CloudWatch: the agent's boot lines go first in its user data (the agent starts
 * before the long installation, so that its metrics exist well before the first repetition), and its role may put
 * metrics into the rmqbench namespace only (allowHostMetrics). A boot script that places the agent lines itself (the
 * Kafka broker's, which passes the stack name it already holds) calls allowHostMetrics alone.
 */
export function addHostMetricsAgent(userData: ec2.UserData, role: iam.IRole, input: CloudWatchAgentInput): void {
  userData.addCommands(...cloudWatchAgentBootCommands(input));
  allowHostMetrics(role);
}

/**
 * Lets `role` put metrics into the rmqbench namespace only. PutMetricData supports no resource-level permissions; the
 * condition key cloudwatch:namespace limits it to one namespace, as "Using condition keys to limit access to CloudWatch
 * namespaces" shows (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html). This
 * replaces the AWS managed CloudWatchAgentServerPolicy, whose logs and SSM parameter rights the agent does not need
 * here.
 */
export function allowHostMetrics(role: iam.IRole): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'PutHostMetricsInRmqbenchNamespace',
      actions: ['cloudwatch:PutMetricData'],
      resources: ['*'],
      conditions: { StringEquals: { 'cloudwatch:namespace': CLOUDWATCH_NAMESPACE } },
    }),
  );
}
