import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

// The built module, as the CLI runs it (scripts/setup.sh builds dist/ before the tests).
const PROCESSES = join(__dirname, '../../dist/local/processes.js');

/**
 * A process like the CLI: it starts a child of its own (in its own process group, as the brokers are) through the
 * registry, stops everything on what stopOnSignals handles, and writes a line to stderr every 50 ms. Its stdout names
 * the child's pid once it runs.
 */
const SCRIPT = `
const { ProcessRegistry, stopOnSignals } = require(${JSON.stringify(PROCESSES)});
const processes = new ProcessRegistry();
stopOnSignals(() => processes.stopAll());
const child = processes.start('sleeper', 'sleep', ['300']);
process.stdout.write('child ' + child.pid + '\\n');
setInterval(() => process.stderr.write('progress\\n'), 50);
`;

function isRunning(pid: number): boolean {
  const state = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim();
  return state !== '' && !state.startsWith('Z');
}

/** The children started, killed after each test should the script have left them running. */
const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
});

/** Starts the script and resolves with it and its child's pid once the child runs. */
async function startScript() {
  const script = spawn(process.execPath, ['-e', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    script.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const childPid = await new Promise<number>((resolve, reject) => {
    let stdout = '';
    script.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /child (\d+)/.exec(stdout);
      if (match) {
        started.push(Number(match[1]));
        resolve(Number(match[1]));
      }
    });
    script.once('exit', () => reject(new Error(`the script exited before its child ran: ${stdout}`)));
  });
  return { script, exited, childPid };
}

jest.setTimeout(30_000);

describe('what the CLI started does not outlive it', () => {
  test('SIGHUP (a closed terminal) stops every process it started, and it exits with 129', async () => {
    const { script, exited, childPid } = await startScript();
    let stderr = '';
    script.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    expect(isRunning(childPid)).toBe(true);
    script.kill('SIGHUP');
    expect(await exited).toEqual({ code: 129, signal: null });
    expect(stderr).toContain('rmqbench: SIGHUP received, stopping every process started by this run');
    expect(isRunning(childPid)).toBe(false);
  });

  test('stderr whose reader is gone (EPIPE) stops every process it started, and it exits with 141', async () => {
    const { script, exited, childPid } = await startScript();
    expect(isRunning(childPid)).toBe(true);
    // The reader goes away: the script's next progress line meets a closed pipe.
    script.stderr.destroy();
    expect(await exited).toEqual({ code: 141, signal: null });
    expect(isRunning(childPid)).toBe(false);
  });
});
