import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BICEP_DIR, listFiles, relativeToBicep } from './bicep-tree';

const CHECKOV = resolve(__dirname, '../../.venv-tools/bin/checkov');

interface CheckovReport {
  summary: { passed: number; failed: number; skipped: number; parsing_errors: number };
  results: { failed_checks: { check_id: string; check_name: string; file_path: string; resource: string }[] };
}

describe('checkov', () => {
  test(
    'scans every Bicep template with no failed check and ' + 'no parsing error (skips carry a reason in the file)',
    () => {
      if (!existsSync(CHECKOV)) {
        throw new Error(
          `checkov is not installed at ${CHECKOV}: run scripts/setup.sh (it installs checkov into .venv-tools)`,
        );
      }
      // checkov's Bicep parser (pycep) does not know fail()
      // (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-flow-control),
      // which main.bicep uses in variables to refuse bad parameters. checkov scans a copy in which each fail('...')
      // reads string('...'):
      // the same expression shape, with no effect on the resources it checks. Nor does it know cidrHost()
      // (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost), with which
      // modules/kafka-cluster.bicep computes the brokers' static IPs: it reads concat() there, a string function of two
      // arguments.
      const copy = mkdtempSync(join(tmpdir(), 'rmqbench-checkov-'));
      let failCalls = 0;
      let run: SpawnSyncReturns<string>;
      try {
        cpSync(BICEP_DIR, copy, { recursive: true });
        for (const path of listFiles('.bicep')) {
          const text = readFileSync(path, 'utf8');
          failCalls += (text.match(/\bfail\(/g) ?? []).length;
          writeFileSync(
            join(copy, relativeToBicep(path)),
            text.replace(/\bfail\(/g, 'string(').replace(/\bcidrHost\(/g, 'concat('),
          );
        }
        run = spawnSync(
          CHECKOV,
          [
            '--skip-download',
            '--framework',
            'bicep',
            '--directory',
            copy,
            '--output',
            'json',
            '--quiet',
            '--soft-fail',
          ],
          {
            encoding: 'utf8',
            timeout: 180_000,
          },
        );
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
      expect(failCalls).toBeGreaterThan(0);
      expect(run.error).toBeUndefined();
      const report = JSON.parse(run.stdout) as CheckovReport | CheckovReport[];
      const reports = Array.isArray(report) ? report : [report];
      const failed = reports.flatMap((entry) =>
        entry.results.failed_checks.map(
          (check) => `${check.check_id} ${check.file_path} ${check.resource}: ${check.check_name}`,
        ),
      );
      expect(failed).toEqual([]);
      expect(reports.reduce((sum, entry) => sum + entry.summary.parsing_errors, 0)).toBe(0);
      // Every module must have been scanned: an unparsed file would pass vacuously.
      expect(reports.reduce((sum, entry) => sum + entry.summary.passed, 0)).toBeGreaterThan(20);
    },
    200_000,
  );
});
