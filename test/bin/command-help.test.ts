import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandHelp, COMMANDS, KNOWN_OPTIONS, suggestion } from '../../bin/command-help';

const cli = join(__dirname, '../../dist/bin/rmqbench.js');
function rmqbench(...args: string[]) {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
  const result = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...process.env, RMQBENCH_HOME: mkdtempSync(join(tmpdir(), 'rmqbench-help-')) },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('per-command help and suggestions', () => {
  test('every option a command documents is one the parser knows, and every option the parser knows is documented', () => {
    const documented = new Set(
      COMMANDS.flatMap((command) => command.options.map(([flag]) => flag.split(' ')[0]!.replace(/^--/, ''))),
    );
    for (const flag of documented) expect(KNOWN_OPTIONS).toContain(flag);
    for (const option of KNOWN_OPTIONS.filter((name) => name !== 'help')) expect(documented).toContain(option);
  });

  test.each(['run', 'estimate', 'report'])(
    "rmqbench %s --help prints that command's usage, options and an example, exit 0",
    (command) => {
      const { code, stdout } = rmqbench(command, '--help');
      expect(code).toBe(0);
      expect(stdout).toBe(`${commandHelp(command)}\n`);
      expect(stdout).toMatch(new RegExp(`^rmqbench ${command}: `));
      expect(stdout).toContain(`Usage:\n  rmqbench ${command} `);
      expect(stdout).toContain('\nExample:\n  rmqbench ');
      for (const [flag] of COMMANDS.find((spec) => spec.name === command)!.options) expect(stdout).toContain(flag);
    },
  );

  test('a misspelt command or option gets the closest name, in one line, exit 2', () => {
    const command = rmqbench('rnu', 'quickstart');
    expect([command.code, command.stderr.trim()]).toEqual([
      2,
      'rmqbench: unknown command "rnu"; did you mean "run"? (see rmqbench --help)',
    ]);
    const option = rmqbench('estimate', 'quickstart', '--tagret', 'aws');
    expect(option.code).toBe(2);
    expect(option.stderr.trim().split('\n')).toHaveLength(1);
    expect(option.stderr).toContain('unknown option --tagret; did you mean --target?');
    // Nothing close: no guess.
    expect(rmqbench('frobnicate').stderr.trim()).toBe('rmqbench: unknown command "frobnicate" (see rmqbench --help)');
  });

  test('suggestion: transpositions and small edits, nothing for a distant word', () => {
    expect(suggestion('rnu', ['run', 'runs', 'report'])).toBe('run');
    expect(suggestion('reprot', ['run', 'report'])).toBe('report');
    expect(suggestion('dry-rn', KNOWN_OPTIONS)).toBe('dry-run');
    expect(suggestion('xyz', ['run', 'report'])).toBeUndefined();
  });
});
