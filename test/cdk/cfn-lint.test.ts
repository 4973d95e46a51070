import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildExampleApp } from '../../examples/aws/example-app';

const CFN_LINT = resolve(__dirname, '../../.venv-tools/bin/cfn-lint');

// cfn-lint's exit code is a bit mask: 2 = errors, 4 = warnings, 8 = informational.
const CFN_LINT_ERRORS = 2;

describe('cfn-lint on the example app', () => {
  let outdir: string;
  beforeAll(() => {
    outdir = mkdtempSync(join(tmpdir(), 'rmqbench-cfn-lint-'));
  });
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  test('the synthesized templates have no cfn-lint error', () => {
    if (!existsSync(CFN_LINT)) {
      throw new Error(`cfn-lint is not installed at ${CFN_LINT}: run scripts/setup.sh (it installs cfn-lint into .venv-tools)`);
    }
    buildExampleApp(outdir).synth();
    const templates = readdirSync(outdir)
      .filter((file) => file.endsWith('.template.json'))
      .map((file) => join(outdir, file));
    expect(templates.length).toBeGreaterThan(0);
    const lint = spawnSync(CFN_LINT, ['--format', 'parseable', ...templates], { encoding: 'utf8', timeout: 120_000 });
    if (lint.error) throw lint.error;
    const status = lint.status ?? -1;
    if (status < 0 || status & CFN_LINT_ERRORS || (status !== 0 && lint.stdout.trim() === '')) {
      throw new Error(`cfn-lint exited with ${status}:\n${lint.stdout}${lint.stderr}`);
    }
    // Warnings are not errors, but none are expected either: show them if they appear.
    expect(lint.stdout.trim()).toBe('');
  }, 180_000);
});
