import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The CLI as users run it: the built file (npm test builds first).
const cli = join(__dirname, '../../dist/bin/rmqbench.js');
function rmqbench(...args: string[]) {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
  const result = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...process.env, RMQBENCH_HOME: mkdtempSync(join(tmpdir(), 'rmqbench-help-')) },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The long options a command's help lists. */
function optionsInHelp(help: string): string[] {
  return [...help.matchAll(/^ {2}(?:-\w, )?(--[\w-]+)/gm)].map((match) => match[1]!);
}

describe('per-command help and suggestions (commander)', () => {
  test.each([
    [
      'run',
      [
        ...[
          '--target',
          '--fail-at',
          '--max-cost',
          '--run-id',
          '--detach',
          '--skip-quota-check',
          '--stack',
          '--state-machine-arn',
          '--region',
        ],
        ...['--poll-seconds', '--dynamodb-endpoint', '--table', '--json'],
      ],
    ],
    ['estimate', ['--target', '--region', '--max-cost', '--cluster-concurrency', '--json']],
    [
      'report',
      [
        ...['--format', '--out', '--chart', '--thesis-ch7', '--store', '--stack', '--region', '--table', '--json'],
        '--dynamodb-endpoint',
      ],
    ],
  ])("rmqbench %s --help prints that command's usage, options and an example, exit 0", (command, expected) => {
    const { code, stdout, stderr } = rmqbench(command, '--help');
    expect([code, stderr]).toEqual([0, '']);
    expect(stdout).toMatch(new RegExp(`^Usage: rmqbench ${command} \\[options\\]`));
    expect(stdout).toMatch(/\nExamples?:\n {2}rmqbench /);
    expect(optionsInHelp(stdout).sort()).toEqual([...expected, '--help'].sort());
    for (const option of expected) expect(optionsInHelp(stdout)).toContain(option);
    // `rmqbench help <command>` is the same text.
    expect(rmqbench('help', command).stdout).toBe(stdout);
  });

  test('an option one command declares is refused by another, naming the command whose help to read', () => {
    const { code, stderr } = rmqbench('plans', '--format', 'html');
    expect([code, stderr.trim()]).toEqual([2, 'rmqbench: unknown option --format (see rmqbench plans --help)']);
    const prune = rmqbench('prune', '--store', 'aws');
    expect([prune.code, prune.stderr.trim()]).toEqual([
      2,
      'rmqbench: unknown option --store; --store is for runs, show, report, compare, baseline (see rmqbench ' +
        'prune --help)',
    ]);
  });

  test('a misspelt command or option gets the closest name, in one line, exit 2', () => {
    const command = rmqbench('rnu', 'quickstart');
    expect([command.code, command.stderr.trim()]).toEqual([
      2,
      'rmqbench: unknown command "rnu"; did you mean "run"? (see rmqbench --help)',
    ]);
    const option = rmqbench('estimate', 'quickstart', '--tagret', 'aws');
    expect([option.code, option.stderr.trim()]).toEqual([
      2,
      'rmqbench: unknown option --tagret; did you mean --target? (see rmqbench estimate --help)',
    ]);
    // Nothing close: no guess.
    expect(rmqbench('frobnicate').stderr.trim()).toBe('rmqbench: unknown command "frobnicate" (see rmqbench --help)');
  });

  test('missing and excess arguments and a bad choice are one line each, exit 2', () => {
    expect(rmqbench('show').stderr.trim()).toBe(
      'rmqbench: missing argument: rmqbench show <runId> (see rmqbench show --help)',
    );
    const excess = rmqbench('validate', 'a.yaml', 'b.yaml');
    expect([excess.code, excess.stderr.trim().split('\n')]).toEqual([
      2,
      [expect.stringContaining('too many arguments')],
    ]);
    const format = rmqbench('report', 'r-1', '--format', 'pdf');
    expect([format.code, format.stderr]).toEqual([
      2,
      expect.stringContaining('Allowed choices are markdown, html, png'),
    ]);
  });

  test('rmqbench alone prints the command list on stdout and exits 2; --help exits 0', () => {
    const bare = rmqbench();
    expect(bare.code).toBe(2);
    for (const name of ['run', 'watch', 'report', 'estimate', 'cleanup', 'doctor'])
      expect(bare.stdout).toMatch(new RegExp(`^ {2}${name} `, 'm'));
    expect(bare.stdout).toContain('Exit codes: 0 success, 1 error, 2 bad usage or invalid plan, 3 run finished');
    const help = rmqbench('--help');
    expect([help.code, help.stdout]).toEqual([0, bare.stdout]);
  });

  test('broker-config: its own options with their defaults (azure, quorum, 3 nodes), a bad value by name', () => {
    const quorum = rmqbench('broker-config', '--nodes', '5');
    expect([quorum.code, quorum.stdout]).toEqual([0, expect.stringMatching(/^export RMQBENCH_RABBITMQ_CONF='/)]);
    const mirrored = rmqbench('broker-config', '--topology', 'mirrored', '--mirror-to', '2', '--json');
    const parsed = JSON.parse(mirrored.stdout) as { policyCommandsJson: string };
    expect(parsed.policyCommandsJson).toContain('\\"ha-params\\":2');
    const bad = rmqbench('broker-config', '--nodes', 'nine');
    expect([bad.code, bad.stderr.trim()]).toEqual([2, 'rmqbench: --nodes must be a whole number, got "nine"']);
  });
});
