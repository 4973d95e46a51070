import { execFile, ExecFileOptions } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeBootEnvironment, NodeBootEvalOptions, nodeBootExpression } from '../../local/node-boot-eval';
import { freePorts } from '../../local/ports';

const RABBITMQ_LIB = '/usr/lib/rabbitmq/lib';

/** A throwaway Erlang VM as rabbitmq-server would start it (ERL_LIBS: the plugins folder), the expression in
 * ERL_AFLAGS; its own -eval prints ERL_AFLAGS as it finds it and stops. */
function erlangCommand(options: NodeBootEvalOptions): [string, string[], ExecFileOptions] {
  const server = readdirSync(RABBITMQ_LIB).find((name) => name.startsWith('rabbitmq_server-'))!;
  return [
    'erl',
    [
      '-noshell',
      '-eval',
      'io:format("ERL_AFLAGS after: ~p~n", [os:getenv("ERL_AFLAGS")]), ' +
        'io:format("rabbit_misc loaded from: ~s~n", [code:which(rabbit_misc)]), halt().',
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ERL_LIBS: join(RABBITMQ_LIB, server, 'plugins'),
        ...nodeBootEnvironment(options),
      },
      timeout: 60_000,
    },
  ];
}

/** Runs the VM without blocking this process: the gate test serves the port the VM waits for. */
function runErlang(options: NodeBootEvalOptions): Promise<string> {
  const [command, args, execOptions] = erlangCommand(options);
  return new Promise((resolve, reject) =>
    execFile(command, args, { ...execOptions, encoding: 'utf8' }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    ),
  );
}

// Each test starts a real Erlang VM, which erlangCommand gives 60 s.
jest.setTimeout(60_000);

describe('what a local RabbitMQ node evaluates before it boots', () => {
  test('takes only application names that are plain Erlang atoms', () => {
    expect(() => nodeBootExpression({ preloadApplications: ['rabbit', 'rabbitmq-management'] })).toThrow(
      'cannot preload application "rabbitmq-management": not a plain Erlang atom',
    );
    expect(() => nodeBootExpression({ preloadApplications: ['rabbit\'), os:cmd("x"'] })).toThrow(
      /not a plain Erlang atom/,
    );
    expect(() => nodeBootExpression({ waitForPort: 70_000 })).toThrow('cannot wait for port 70000');
    const both = nodeBootExpression({ preloadApplications: ['rabbit', 'rabbitmq_management'], waitForPort: 5672 });
    expect(both).not.toContain("'");
    expect(nodeBootExpression({})).toBeUndefined();
    expect(nodeBootEnvironment({ preloadApplications: [] })).toEqual({});
  });

  test(
    "through erl's ERL_AFLAGS, loads RabbitMQ's and its plugin's applications before the VM's own -eval, and unsets " +
      'ERL_AFLAGS so that VMs started later do not preload again',
    async () => {
      const output = await runErlang({ preloadApplications: ['rabbit', 'rabbitmq_management'] });
      const preloaded = /rmqbench: preloaded (\d+) modules of (\d+) applications in \d+ ms: ok/.exec(output);
      expect(preloaded).not.toBeNull();
      // RabbitMQ 3.10.8 with the management plugin: 1,038 modules of 40 applications (rabbit, its plugins, OTP's).
      expect(Number(preloaded![1])).toBeGreaterThan(500);
      expect(Number(preloaded![2])).toBeGreaterThan(20);
      expect(output.indexOf('rmqbench: preloaded')).toBeLessThan(output.indexOf('ERL_AFLAGS after: false'));
      // Read from its application's own ebin, and recorded as loaded from that file.
      expect(output).toMatch(
        /rabbit_misc loaded from: \/usr\/lib\/rabbitmq\/lib\/.*\/rabbit_common-[\d.]+\/ebin\/rabbit_misc\.beam\n/,
      );
    },
  );

  test('an application that is not installed loads nothing and stops nothing', async () => {
    const output = await runErlang({ preloadApplications: ['no_such_application'] });
    expect(output).toContain('rmqbench: preloaded 0 modules of 1 applications');
    expect(output).toContain('ERL_AFLAGS after: false');
  });

  test('the seed gate waits until the port answers, then lets the VM go on; it gives up at its timeout', async () => {
    const server = createServer((socket) => socket.destroy());
    const started = Date.now();
    // The port opens 1.5 s after the VM starts: the VM's own -eval must print only after that.
    const [port] = (await freePorts(1)) as [number];
    const opening = setTimeout(() => server.listen(port, '127.0.0.1'), 1500);
    try {
      const output = await runErlang({ waitForPort: port });
      expect(output).toMatch(
        new RegExp(`rmqbench: waited \\d+ ms for the seed node \\(127\\.0\\.0\\.1:${port}\\): ok`),
      );
      expect(output.indexOf('rmqbench: waited')).toBeLessThan(output.indexOf('ERL_AFLAGS after: false'));
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    } finally {
      clearTimeout(opening);
      server.close();
    }
    const closed = await runErlang({ waitForPort: port, waitTimeoutMs: 300 });
    expect(closed).toMatch(/rmqbench: waited \d+ ms for the seed node .*: timeout/);
    expect(closed).toContain('ERL_AFLAGS after: false');
  });

  test(
    'the preload takes turns: a joining node preloads once the file the seed writes after its own preload exists; ' +
      'the seed writes it even when there was nothing to load',
    async () => {
      // A folder name with a space, a quote and a non-ASCII letter: passed as bytes, it needs no quoting.
      const dir = mkdtempSync(join(tmpdir(), "rmqbench boot 'é'-"));
      const announced = join(dir, 'preloaded');
      try {
        const started = Date.now();
        const creating = setTimeout(() => writeFileSync(announced, ''), 1500);
        const joiner = await runErlang({ waitForFile: announced, preloadApplications: ['no_such_application'] });
        clearTimeout(creating);
        expect(joiner).toMatch(/rmqbench: waited \d+ ms for the seed node to preload: ok/);
        expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
        expect(joiner.indexOf('rmqbench: waited')).toBeLessThan(joiner.indexOf('rmqbench: preloaded'));
        rmSync(announced);
        const seed = await runErlang({ announcePreloadFile: announced, preloadApplications: ['no_such_application'] });
        expect(seed).toContain('rmqbench: announced the preload: ok');
        expect(seed.indexOf('rmqbench: preloaded')).toBeLessThan(seed.indexOf('rmqbench: announced'));
        expect(existsSync(announced)).toBe(true);
        const gaveUp = await runErlang({ waitForFile: join(dir, 'never'), waitTimeoutMs: 300 });
        expect(gaveUp).toMatch(/rmqbench: waited \d+ ms for the seed node to preload: timeout/);
        expect(gaveUp).toContain('ERL_AFLAGS after: false');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
