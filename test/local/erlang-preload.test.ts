import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { preloadEnvironment, preloadExpression } from '../../local/erlang-preload';

const RABBITMQ_LIB = '/usr/lib/rabbitmq/lib';

/** Runs a throwaway Erlang VM as rabbitmq-server would (ERL_LIBS: the plugins folder), the preload in ERL_AFLAGS. */
function runErlang(rootApplications: readonly string[]): string {
  const server = readdirSync(RABBITMQ_LIB).find((name) => name.startsWith('rabbitmq_server-'))!;
  return execFileSync(
    'erl',
    ['-noshell', '-eval', 'io:format("ERL_AFLAGS after: ~p~n", [os:getenv("ERL_AFLAGS")]), halt().'],
    {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ERL_LIBS: join(RABBITMQ_LIB, server, 'plugins'),
        ...preloadEnvironment(rootApplications),
      },
      timeout: 60_000,
    },
  );
}

describe('the module preload a local RabbitMQ node runs before it boots', () => {
  test('takes only application names that are plain Erlang atoms', () => {
    expect(() => preloadExpression(['rabbit', 'rabbitmq-management'])).toThrow(
      'cannot preload application "rabbitmq-management": not a plain Erlang atom',
    );
    expect(() => preloadExpression(['rabbit\'), os:cmd("x"'])).toThrow(/not a plain Erlang atom/);
    expect(preloadExpression(['rabbit', 'rabbitmq_management'])).not.toContain("'");
  });

  test(
    "through erl's ERL_AFLAGS, loads RabbitMQ's and its plugin's applications before the VM's own -eval, and unsets " +
      'ERL_AFLAGS so that VMs started later do not preload again',
    () => {
      const output = runErlang(['rabbit', 'rabbitmq_management']);
      const preloaded = /rmqbench: preloaded (\d+) modules of (\d+) applications in \d+ ms: ok/.exec(output);
      expect(preloaded).not.toBeNull();
      // RabbitMQ 3.10.8 with the management plugin: 1,038 modules of 40 applications (rabbit, its plugins, OTP's).
      expect(Number(preloaded![1])).toBeGreaterThan(500);
      expect(Number(preloaded![2])).toBeGreaterThan(20);
      expect(output.indexOf('rmqbench: preloaded')).toBeLessThan(output.indexOf('ERL_AFLAGS after: false'));
    },
  );

  test('an application that is not installed loads nothing and stops nothing', () => {
    const output = runErlang(['no_such_application']);
    expect(output).toContain('rmqbench: preloaded 0 modules of 1 applications');
    expect(output).toContain('ERL_AFLAGS after: false');
  });
});
