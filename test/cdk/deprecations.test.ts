import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaCluster, LoadGenerator, RabbitMqCluster } from '../../cdk';
import { buildExampleApp } from '../../examples/aws/example-app';
import { buildControllerApp } from '../../examples/controller/controller-app';

/**
 * No construct of rmqbench uses an aws-cdk-lib API that is deprecated: with JSII_DEPRECATED=fail, aws-cdk-lib's
 * deprecation check throws a DeprecationError where it would otherwise print "[WARNING] ... is deprecated"
 * (aws-cdk-lib/.warnings.jsii.js, print()). Each synthesis below would fail on such a use, CPU step scaling included
 * (scaleOnMetric hands its actions the deprecated `cooldown` key).
 */
describe('synthesis uses no deprecated aws-cdk-lib API', () => {
  const previous = process.env.JSII_DEPRECATED;
  const dirs: string[] = [];
  beforeAll(() => {
    process.env.JSII_DEPRECATED = 'fail';
  });
  afterAll(() => {
    if (previous === undefined) delete process.env.JSII_DEPRECATED;
    else process.env.JSII_DEPRECATED = previous;
    dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  });
  const outdir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-deprecations-'));
    dirs.push(dir);
    return dir;
  };

  test('the check is armed: a deprecated prop throws', () => {
    const stack = new Stack(new App(), 'Armed');
    // ec2.Vpc's `cidr` is deprecated in favour of ipAddresses.
    expect(() => new ec2.Vpc(stack, 'Vpc', { cidr: '10.0.0.0/16' })).toThrow(/deprecated/);
  });

  test('RabbitMqCluster with CPU scaling, LoadGenerator and KafkaCluster', () => {
    const stack = new Stack(new App(), 'Constructs', { env: { region: 'eu-west-1' } });
    const cluster = new RabbitMqCluster(stack, 'Cluster', { pinCapacity: false, scaleOutCpuPercent: 80 });
    expect(cluster.autoScalingGroup.node.tryFindChild('CpuScaling')).toBeDefined();
    new LoadGenerator(stack, 'LoadGenerator', {
      vpc: cluster.vpc,
      cluster,
      resultsBucket: new s3.Bucket(stack, 'Results'),
    });
    new KafkaCluster(stack, 'Kafka', { vpc: cluster.vpc, zoneName: 'kafka.rmqbench.internal' });
    expect(() => App.of(stack)!.synth()).not.toThrow();
  });

  test('the example app and the controller app', () => {
    expect(() => buildExampleApp(outdir()).synth()).not.toThrow();
    expect(() => buildControllerApp({ outdir: outdir() }).synth()).not.toThrow();
  }, 180_000);
});
