import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Template } from 'aws-cdk-lib/assertions';
import { KafkaCluster, skipCheckov } from '../../cdk';
import { buildExampleApp } from '../../examples/aws/example-app';
import { buildControllerApp } from '../../examples/controller/controller-app';

const CHECKOV = resolve(__dirname, '../../.venv-tools/bin/checkov');

interface CheckResult {
  check_id: string;
  check_name: string;
  file_path: string;
  resource: string;
  check_result: { result: string; suppress_comment?: string };
}
interface CheckovReport {
  summary: { passed: number; failed: number; skipped: number; parsing_errors: number };
  results: { failed_checks: CheckResult[]; skipped_checks?: CheckResult[] };
}

describe('checkov on the synthesized CloudFormation', () => {
  test(
    'the example app, the controller app (with the cluster templates it deploys) and a KafkaCluster: no failed ' +
      'check, every skip carries its reason',
    () => {
      if (!existsSync(CHECKOV))
        throw new Error(
          `checkov is not installed at ${CHECKOV}: run scripts/setup.sh (it installs checkov into .venv-tools)`,
        );
      const out = mkdtempSync(join(tmpdir(), 'rmqbench-checkov-cfn-'));
      try {
        buildExampleApp(join(out, 'example')).synth();
        // The controller's cdk.out also holds the RabbitMQ cluster templates it launches per run (assets).
        buildControllerApp({ outdir: join(out, 'controller') }).synth();
        const stack = new Stack(new App(), 'KafkaCheck');
        const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 3, flowLogs: { all: {} } });
        skipCheckov(vpc.node.findChild('all').node.findChild('LogGroup'), [
          { id: 'CKV_AWS_158', comment: "The test's own VPC, not part of the construct." },
        ]);
        new KafkaCluster(stack, 'Kafka', { vpc, allowedPeers: [ec2.Peer.ipv4('10.0.0.0/16')] });
        writeFileSync(join(out, 'kafka.template.json'), JSON.stringify(Template.fromStack(stack).toJSON()));

        const run = spawnSync(
          CHECKOV,
          ['--skip-download', '--framework', 'cloudformation', '--directory', out, '--output', 'json', '--soft-fail'],
          {
            encoding: 'utf8',
            timeout: 240_000,
            maxBuffer: 256 * 1024 * 1024,
          },
        );
        expect(run.error).toBeUndefined();
        const parsed = JSON.parse(run.stdout) as CheckovReport | CheckovReport[];
        const reports = Array.isArray(parsed) ? parsed : [parsed];
        const failed = reports.flatMap((report) =>
          report.results.failed_checks.map(
            (check) => `${check.check_id} ${check.file_path} ${check.resource}: ${check.check_name}`,
          ),
        );
        expect(failed).toEqual([]);
        expect(reports.reduce((sum, report) => sum + report.summary.parsing_errors, 0)).toBe(0);
        // An unparsed template would pass vacuously: the three apps have hundreds of resources.
        expect(reports.reduce((sum, report) => sum + report.summary.passed, 0)).toBeGreaterThan(300);
        const skipped = reports.flatMap((report) => report.results.skipped_checks ?? []);
        expect(skipped.length).toBeGreaterThan(0);
        const withoutReason = skipped
          .filter((check) => (check.check_result.suppress_comment ?? 'No comment provided') === 'No comment provided')
          .map((check) => `${check.check_id} ${check.resource}`);
        expect(withoutReason).toEqual([]);
        // The user-data scan is skipped only where its pattern matches a Maven path, never wholesale.
        expect(
          skipped.filter((check) => check.check_id === 'CKV_AWS_46').map((check) => check.resource.split('.')[0]),
        ).toEqual(expect.arrayContaining(['AWS::EC2::Instance']));
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    300_000,
  );
});
