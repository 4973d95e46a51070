import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LOAD_GENERATOR_INDEX_TAG, LoadGenerator, skipCheckov } from '../../cdk';
import { cfnLint } from './cfn-lint';
import { bashSyntaxErrors, userDataTexts } from './template-helpers';

/**
 * A LoadGenerator with `count: 3` (issue 27): three instances told apart by a tag and their env file, sharing one
 * role and security group, and the template still clean for cdk-nag, cfn-lint and checkov. Synthesized once.
 */
const CHECKOV = resolve(__dirname, '../../.venv-tools/bin/checkov');

type Resource = { Properties: Record<string, unknown> };

function synth(count: number) {
  const app = new App();
  // Environment-agnostic, as cfn-lint.test.ts's stacks are (an env would carry CDK's placeholder zones).
  const stack = new Stack(app, 'LoadGenerators');
  const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
  skipCheckov(vpc.node.findChild('all').node.findChild('LogGroup'), [
    { id: 'CKV_AWS_158', comment: "The test's own VPC, not part of the construct." },
  ]);
  const resultsBucket = s3.Bucket.fromBucketName(stack, 'Results', 'rmqbench-results');
  const loadGenerator = new LoadGenerator(stack, 'LoadGenerator', { vpc, resultsBucket, count });
  return { app, stack, loadGenerator, template: Template.fromStack(stack) };
}

describe('LoadGenerator with count 3', () => {
  const { app, stack, loadGenerator, template } = synth(3);
  const instances = Object.values(template.findResources('AWS::EC2::Instance')) as Resource[];
  const indexTag = (instance: Resource) =>
    (instance.Properties.Tags as { Key: string; Value: string }[] | undefined)?.find(
      (tag) => tag.Key === LOAD_GENERATOR_INDEX_TAG,
    )?.Value;

  test('three instances tagged with indexes 0, 1, 2, in the one subnet, sharing one role and security group', () => {
    expect(instances.map(indexTag).sort()).toEqual(['0', '1', '2']);
    expect(new Set(instances.map((instance) => JSON.stringify(instance.Properties.SubnetId))).size).toBe(1);
    expect(new Set(instances.map((instance) => JSON.stringify(instance.Properties.SecurityGroupIds))).size).toBe(1);
    // The VPC's flow log has a role of its own.
    const roles = Object.keys(template.findResources('AWS::IAM::Role'));
    expect(roles.filter((id) => id.startsWith('LoadGenerator'))).toEqual([expect.stringMatching(/^LoadGeneratorRole/)]);
    template.resourceCountIs('AWS::EC2::SecurityGroup', 1);
    template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
  });

  test('public fields: every instance and its id by index, the first as `instance`, and an output of all ids', () => {
    expect(loadGenerator.count).toBe(3);
    expect(loadGenerator.instances).toHaveLength(3);
    expect(loadGenerator.instance).toBe(loadGenerator.instances[0]);
    const ids = loadGenerator.instanceIds.map((id) => stack.resolve(id) as { Ref: string });
    expect(new Set(ids.map((id) => id.Ref)).size).toBe(3);
    // The index tag of each field's instance is its position in the list.
    expect(ids.map((id) => indexTag(template.toJSON().Resources[id.Ref] as Resource))).toEqual(['0', '1', '2']);
    template.hasOutput('*', { Value: { 'Fn::Join': [',', ids] } });
  });

  test('each user data writes its own index and the count to the env file (run by bash), within 16 KB', () => {
    const texts = userDataTexts(template, 'AWS::EC2::Instance');
    expect(texts).toHaveLength(3);
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-lg-env-'));
    try {
      const indexes = texts.map((text) => {
        expect(bashSyntaxErrors(text)).toBe('');
        // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html: "User data is limited
        // to 16 KB, in raw form, before it is base64-encoded"; each token counted at a worst-case 256 characters.
        expect(Buffer.byteLength(text.replace(/<\{[^>]*\}>/g, 'x'.repeat(256)), 'utf8')).toBeLessThan(16 * 1024);
        const envFile = join(dir, 'load-generator.env');
        const lines = text
          .split('\n')
          .filter((line) => line.includes('/etc/rmqbench/load-generator.env') && line.startsWith('printf'))
          .map((line) => line.replace(/<\{[^\n]*?\}>/g, 'bucket').replace('/etc/rmqbench/load-generator.env', envFile));
        expect(lines).toHaveLength(2);
        const run = spawnSync('bash', ['-c', lines.join('\n')], { encoding: 'utf8' });
        expect(run.status).toBe(0);
        const env = Object.fromEntries(
          readFileSync(envFile, 'utf8')
            .trim()
            .split('\n')
            .map((line) => line.split('=')),
        ) as Record<string, string>;
        expect(env).toMatchObject({ RESULTS_PREFIX: 'results/', LOAD_GENERATOR_COUNT: '3' });
        return env.LOAD_GENERATOR_INDEX;
      });
      expect(indexes.sort()).toEqual(['0', '1', '2']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('count must be an integer from 1 to 10; 1 adds no index tag and no output of all ids', () => {
    for (const count of [0, 11, 1.5]) {
      expect(() => synth(count)).toThrow(`count must be an integer from 1 to 10, got ${count}`);
    }
    const one = synth(1).template;
    one.resourceCountIs('AWS::EC2::Instance', 1);
    expect(JSON.stringify(one.toJSON())).not.toContain(LOAD_GENERATOR_INDEX_TAG);
    expect(Object.keys(one.findOutputs('*'))).toEqual([expect.stringMatching(/^LoadGeneratorInstanceId/)]);
  });

  test('cdk-nag AwsSolutions: no unacknowledged finding', () => {
    const findings = new AwsSolutionsChecks()
      .validateScope(app)
      .violations.flatMap((violation) =>
        violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
      );
    expect(findings).toEqual([]);
  });

  test('cfn-lint and checkov find nothing in the template; checkov skips carry their reason', () => {
    if (!existsSync(CHECKOV)) throw new Error(`checkov is not installed at ${CHECKOV}: run scripts/setup.sh`);
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-lg-count-'));
    try {
      const file = join(dir, 'load-generators.template.json');
      writeFileSync(file, JSON.stringify(template.toJSON()));
      expect(cfnLint([file])).toBe('');
      const run = spawnSync(
        CHECKOV,
        ['--skip-download', '--framework', 'cloudformation', '--file', file, '--output', 'json', '--soft-fail'],
        { encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 },
      );
      const report = JSON.parse(run.stdout) as {
        summary: { passed: number; parsing_errors: number };
        results: {
          failed_checks: { check_id: string; resource: string }[];
          skipped_checks?: { check_id: string; resource: string; check_result: { suppress_comment?: string } }[];
        };
      };
      expect(report.results.failed_checks.map((check) => `${check.check_id} ${check.resource}`)).toEqual([]);
      expect(report.summary.parsing_errors).toBe(0);
      expect(report.summary.passed).toBeGreaterThan(20);
      const skipped = report.results.skipped_checks ?? [];
      // The user-data false positive is skipped on each of the three instances, each with its reason.
      expect(skipped.filter((check) => check.check_id === 'CKV_AWS_46')).toHaveLength(3);
      expect(skipped.filter((check) => !check.check_result.suppress_comment?.length)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
