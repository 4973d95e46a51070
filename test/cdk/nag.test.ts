import { App, Stack } from 'aws-cdk-lib';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { KafkaCluster, LoadGenerator, RabbitMqCluster, RabbitMqRelease } from '../../cdk';

function unacknowledgedFindings(app: App): string[] {
  return new AwsSolutionsChecks()
    .validateScope(app)
    .violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
    );
}

describe('cdk-nag AwsSolutions', () => {
  test('a cluster with its own VPC and a load generator have no unacknowledged finding', () => {
    const app = new App();
    const stack = new Stack(app, 'Bench');
    const cluster = new RabbitMqCluster(stack, 'Cluster');
    new LoadGenerator(stack, 'LoadGenerator', {
      vpc: cluster.vpc,
      resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'results'),
      cluster,
    });
    expect(unacknowledgedFindings(app)).toEqual([]);
  });

  test('a TLS, internet-facing, pinned 3.13 cluster in a VPC with flow logs has no unacknowledged finding', () => {
    const app = new App();
    const stack = new Stack(app, 'Tls');
    const vpc = new ec2.Vpc(stack, 'Vpc', { flowLogs: { all: {} } });
    new RabbitMqCluster(stack, 'Cluster', {
      vpc,
      release: RabbitMqRelease.V3_13,
      topology: { type: 'mirrored', mirrorTo: 2 },
      pinCapacity: true,
      internetFacing: true,
      allowedPeers: [ec2.Peer.ipv4('203.0.113.0/24')],
      tlsCertificate: acm.Certificate.fromCertificateArn(
        stack,
        'Cert',
        'arn:aws:acm:eu-west-1:111111111111:certificate/abc',
      ),
    });
    expect(unacknowledgedFindings(app)).toEqual([]);
  });

  test('a Kafka cluster reachable from a load generator has no unacknowledged finding', () => {
    const app = new App();
    const stack = new Stack(app, 'KafkaBench');
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
    const kafka = new KafkaCluster(stack, 'Kafka', { vpc, brokers: 3 });
    const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', {
      vpc,
      resultsBucket: s3.Bucket.fromBucketName(stack, 'Results', 'results'),
    });
    kafka.allowClientsFrom(loadGenerator.securityGroup);
    expect(unacknowledgedFindings(app)).toEqual([]);
  });

  test('the check can fail: an unacknowledged wildcard grant is reported', () => {
    const app = new App();
    const stack = new Stack(app, 'Negative');
    const cluster = new RabbitMqCluster(stack, 'Cluster');
    cluster.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3:*'], resources: ['*'] }));
    expect(unacknowledgedFindings(app)).toEqual([
      expect.stringMatching(/^AwsSolutions-IAM5\[Action::s3:\*\] at Negative\/Cluster\/NodeRole/),
    ]);
  });
});
