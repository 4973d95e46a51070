import { App, CfnOutput, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { LoadGenerator, RabbitMqCluster, RabbitMqInstanceTiers, RabbitMqRelease, skipCheckov } from '../../cdk';

/** A 3-node cluster pinned for benchmarking, as in the thesis, and a load generator in its VPC. */
export class RmqbenchExampleStack extends Stack {
  public readonly cluster: RabbitMqCluster;
  public readonly loadGenerator: LoadGenerator;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    this.cluster = new RabbitMqCluster(this, 'Cluster', {
      nodeCount: 3,
      pinCapacity: true,
      instanceType: RabbitMqInstanceTiers.LOW,
      release: RabbitMqRelease.V4_1,
      topology: { type: 'quorum' },
      allowedPeers: [ec2.Peer.ipv4('10.0.0.0/16')],
    });

    const results = new s3.Bucket(this, 'Results', {
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(results).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'Example results bucket: written only by the load generator role, whose API calls CloudTrail records.',
    });
    skipCheckov(results, [
      {
        id: 'CKV_AWS_18',
        comment: 'Example results bucket: written only by the load generator role, whose API calls CloudTrail records.',
      },
      {
        id: 'CKV_AWS_21',
        comment:
          'Example results bucket: each result is written once under a key of its own; ' +
          'versions would only keep copies.',
      },
    ]);

    this.loadGenerator = new LoadGenerator(this, 'LoadGenerator', {
      vpc: this.cluster.vpc,
      resultsBucket: results,
      resultsPrefix: 'results/',
      cluster: this.cluster,
    });
    new CfnOutput(this, 'ResultsBucketName', { value: results.bucketName });
  }
}

/** The example app, checked by cdk-nag's AwsSolutions pack (synthesis fails on an unacknowledged finding). */
export function buildExampleApp(outdir?: string): App {
  const app = new App(outdir ? { outdir } : {});
  new RmqbenchExampleStack(app, 'RmqbenchExample');
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app;
}
