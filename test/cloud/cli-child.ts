import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../local/ports';
import { outputEnded } from '../child-output';
import type { Moto } from './moto';

// The CLI as users run it: the built file (npm test builds first).
export const CLI = join(__dirname, '../../dist/bin/rmqbench.js');
const cli = CLI;

/** The environment of a CLI child: moto's endpoint and dummy credentials, no AWS setting of the machine's. */
export function cliEnv(moto: Moto, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('AWS_') && !key.startsWith('AZURE_')),
  );
  return { ...env, ...moto.env, RMQBENCH_HOME: mkdtempSync(join(tmpdir(), 'rmqbench-cloud-cli-')), ...extra };
}

function checkBuilt() {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
}

export function rmqbenchSync(env: NodeJS.ProcessEnv, ...args: string[]) {
  checkBuilt();
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env, timeout: 120_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A CLI child whose output is read while it runs (a followed run), killed on every path by `kill`. */
export function rmqbenchAsync(env: NodeJS.ProcessEnv, ...args: string[]) {
  checkBuilt();
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => void outputEnded(child).then(() => resolve(code ?? (signal ? 128 : null)))),
  );
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
    /** Waits until stderr matches (the run reached that point), failing with what was printed. */
    async stderrMatches(pattern: RegExp, timeoutMs = 60_000) {
      await waitFor(
        async () =>
          pattern.test(stderr)
            ? true
            : child.exitCode !== null
              ? Promise.reject(
                  new Error(`rmqbench exited ${child.exitCode} before printing ${pattern}:\n${stderr}\n${stdout}`),
                )
              : undefined,
        timeoutMs,
        () => `rmqbench did not print ${pattern} within ${timeoutMs} ms:\n${stderr}`,
        100,
      );
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
