import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

const CFN_LINT = resolve(__dirname, '../../.venv-tools/bin/cfn-lint');

// cfn-lint's exit code is a bit mask: 2 = errors, 4 = warnings, 8 = informational.
const CFN_LINT_ERRORS = 2;

/**
 * Runs cfn-lint on synthesized templates: throws when cfn-lint is missing or reports an error, and returns what it
 * printed otherwise (warnings; '' when the templates are clean).
 */
export function cfnLint(templates: readonly string[]): string {
  if (!existsSync(CFN_LINT)) {
    throw new Error(
      `cfn-lint is not installed at ${CFN_LINT}: run scripts/setup.sh (it installs cfn-lint into .venv-tools)`,
    );
  }
  const lint = spawnSync(CFN_LINT, ['--format', 'parseable', ...templates], { encoding: 'utf8', timeout: 120_000 });
  if (lint.error) throw lint.error;
  const status = lint.status ?? -1;
  if (status < 0 || status & CFN_LINT_ERRORS || (status !== 0 && lint.stdout.trim() === '')) {
    throw new Error(`cfn-lint exited with ${status}:\n${lint.stdout}${lint.stderr}`);
  }
  return lint.stdout.trim();
}
