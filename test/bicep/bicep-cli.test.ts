import { spawnSync } from 'node:child_process';
import { listFiles, relativeToBicep } from './bicep-tree';

/**
 * `bicep build` / `bicep lint` / `bicep build-params` when the Bicep CLI is on PATH. Where it is not
 * (this machine: it cannot be installed offline) the tests are skipped with a title that says so,
 * never counted as passed.
 */
const bicepOnPath = spawnSync('bicep', ['--version'], { encoding: 'utf8' }).status === 0;
const templates = listFiles('.bicep').map((path) => [relativeToBicep(path), path]);
const parameterFiles = listFiles('.bicepparam').map((path) => [relativeToBicep(path), path]);

if (bicepOnPath) {
  describe('bicep CLI', () => {
    test.each(templates)('bicep build %s succeeds', (_name, path) => {
      const run = spawnSync('bicep', ['build', path as string, '--stdout'], { encoding: 'utf8', timeout: 120_000 });
      expect(run.stderr).not.toMatch(/Error BCP/);
      expect(run.status).toBe(0);
    });
    test.each(templates)('bicep lint %s reports no error', (_name, path) => {
      const run = spawnSync('bicep', ['lint', path as string], { encoding: 'utf8', timeout: 120_000 });
      expect(run.status).toBe(0);
    });
    test.each(parameterFiles)('bicep build-params %s succeeds', (_name, path) => {
      const run = spawnSync('bicep', ['build-params', path as string, '--stdout'], {
        encoding: 'utf8',
        timeout: 120_000,
        env: {
          ...process.env,
          RMQBENCH_ALLOWED_SOURCES: '203.0.113.10/32',
          RMQBENCH_SSH_PUBLIC_KEY: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForBuildOnly test',
          RMQBENCH_RABBITMQ_CONF: 'listeners.tcp.default = 5672\n',
          RMQBENCH_ENABLED_PLUGINS_FILE: '[rabbitmq_management].\n',
          RMQBENCH_POLICY_COMMANDS_JSON: '[]',
          RMQBENCH_ADMIN_PASSWORD: 'build-only-password-123',
          RMQBENCH_ERLANG_COOKIE: 'build-only-cookie-0123456789',
        },
      });
      expect(run.status).toBe(0);
    });
  });
} else {
  // Printed at load: jest does not run hooks of a block whose tests are all skipped.
  console.warn(
    'bicep CLI not on PATH: `bicep build`, `bicep lint` and `bicep build-params` were NOT ' +
      'run; the templates are verified only by tree-sitter, the structural tests and checkov.',
  );
  describe('bicep CLI', () => {
    test.skip(
      'bicep CLI not on PATH: bicep build / bicep lint / ' + 'bicep build-params not run (not counted as passed)',
      () => undefined,
    );
  });
}
