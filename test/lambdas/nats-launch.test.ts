import {
  natsClusterStackParameters,
  natsClusterTemplateFor,
  planClusterOf,
  type AwsClusterConfig,
} from '../../lambdas/shared/aws-launch';
import { buildSchedule } from '../../state-machines/schedule';

/** LaunchCluster's choice of the NATS template and its parameters (the twin creates the stack from them). */
describe('launching a NATS plan cluster on AWS', () => {
  const config: AwsClusterConfig = {
    templateUrls: { '4.1.4': 'https://s3.amazonaws.com/t/rabbitmq.json' },
    natsTemplateUrls: { '1': 'https://s3.amazonaws.com/t/nats-1.json', '3': 'https://s3.amazonaws.com/t/nats-3.json' },
    defaultRabbitmqVersion: '4.1.4',
    cloudFormationRoleArn: 'arn:aws:iam::123456789012:role/cfn',
    resultsBucketName: 'raw',
    expiryHours: 12,
    launchTimeoutMinutes: 30,
    network: {
      vpcId: 'vpc-1',
      privateSubnetIds: ['subnet-a', 'subnet-b'],
      availabilityZones: ['us-east-1a', 'us-east-1b'],
      clientSecurityGroupId: 'sg-1',
    },
  };
  const plan = {
    name: 'nats-aws',
    clusters: [
      { name: 'default', broker: 'nats', nodes: 3, instanceType: 'c5.xlarge' },
      { name: 'always', broker: 'nats', nodes: 3, instanceType: 'c5.2xlarge', syncInterval: 'always' },
    ],
    workloads: [{ name: 'w', messageSizeBytes: 100, publishRateLimit: 100, durationSeconds: 10 }],
  };

  test("the plan cluster's broker, instance type and sync interval become the template's parameters", () => {
    const schedule = buildSchedule({ plan, target: 'aws', runId: 'run-n' }, 'exec');
    const specs = schedule.clusters.map((cluster) => planClusterOf(plan, cluster));
    expect(specs.map((spec) => [spec.broker, spec.instanceType, spec.syncInterval])).toEqual([
      ['nats', 'c5.xlarge', undefined],
      ['nats', 'c5.2xlarge', 'always'],
    ]);
    const parameters = (index: number) =>
      Object.fromEntries(
        natsClusterStackParameters(config, specs[index]!).map((entry) => [entry.ParameterKey, entry.ParameterValue]),
      );
    expect(parameters(1)).toEqual({
      ResultsBucketName: 'raw',
      VpcId: 'vpc-1',
      PrivateSubnetIds: 'subnet-a,subnet-b',
      AvailabilityZones: 'us-east-1a,us-east-1b',
      InstanceType: 'c5.2xlarge',
      SyncInterval: 'always',
    });
    // Without one the template's default (nats-server's own 2m) applies.
    expect(parameters(0)).not.toHaveProperty('SyncInterval');
    expect(natsClusterTemplateFor(config, 3)).toBe('https://s3.amazonaws.com/t/nats-3.json');
  });

  test('a server count without a template, or a controller without NATS templates, is refused by name', () => {
    expect(() => natsClusterTemplateFor(config, 5)).toThrow(
      "the AWS target has no NATS cluster template for 5 server(s): it launches 1, 3 (the plan cluster's nodes)",
    );
    expect(() => natsClusterTemplateFor({ ...config, natsTemplateUrls: {} }, 3)).toThrow(
      /launches no NATS cluster \(this controller was deployed without NATS templates\)/,
    );
  });
});
