import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Template } from 'aws-cdk-lib/assertions';
import { KafkaCluster } from '../../cdk';
import { buildExampleApp } from '../../examples/aws/example-app';
import { cfnLint } from './cfn-lint';

describe('cfn-lint', () => {
  let outdir: string;
  beforeAll(() => {
    outdir = mkdtempSync(join(tmpdir(), 'rmqbench-cfn-lint-'));
  });
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  test('the example app synthesizes templates with no cfn-lint error', () => {
    buildExampleApp(join(outdir, 'example')).synth();
    const templates = readdirSync(join(outdir, 'example'))
      .filter((file) => file.endsWith('.template.json'))
      .map((file) => join(outdir, 'example', file));
    expect(templates.length).toBeGreaterThan(0);
    // Warnings are not errors, but none are expected either: show them if they appear.
    expect(cfnLint(templates)).toBe('');
  }, 180_000);

  test('a 3-broker KafkaCluster template has no cfn-lint error or warning', () => {
    // Environment-agnostic, as the example app is: a stack with an env would carry CDK's placeholder zones
    // (dummy1a...).
    const stack = new Stack(new App(), 'KafkaLint');
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
    new KafkaCluster(stack, 'Kafka', { vpc, allowedPeers: [ec2.Peer.ipv4('10.0.0.0/16')] });
    const file = join(outdir, 'kafka.template.json');
    writeFileSync(file, JSON.stringify(Template.fromStack(stack).toJSON()));
    expect(cfnLint([file])).toBe('');
  }, 180_000);
});
