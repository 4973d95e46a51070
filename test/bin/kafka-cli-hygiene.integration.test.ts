import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Seen, stillListed, watchProcesses } from '../local/process-watch';
import { outputEnded } from '../child-output';

jest.setTimeout(600_000);

const cli = join(__dirname, '../../dist/bin/rmqbench.js');

/** Every path under `dir`, relative to it. */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name);
    return entry.isDirectory() ? [`${path}/`, ...walk(dir, path)] : [path];
  });
}

describe('rmqbench run with a Kafka cluster cleans up after itself', () => {
  const home = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-hygiene-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const env = { ...process.env, RMQBENCH_HOME: home };
  const plan = join(home, 'kafka-tidy.yaml');
  writeFileSync(
    plan,
    'name: kafka-tidy\nclusters: [{ name: k, broker: kafka, nodes: 1 }]\n' +
      'workloads: [{ name: w, messageSizeBytes: 100, publishRateLimit: 1000, durationSeconds: 3 }]\n',
  );

  /**
   * Runs the CLI; `interruptWhen` sends SIGINT once it returns true. Lists what the CLI left in the process table once
   * it exited.
   */
  function runWatched(
    args: string[],
    interruptWhen?: () => boolean,
  ): Promise<{ code: number | null; stdout: string; stderr: string; seen: Seen[]; left: string[] }> {
    if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
    const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const watch = watchProcesses(child.pid!, home);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const poll = interruptWhen
      ? setInterval(() => {
          if (interruptWhen()) {
            clearInterval(poll);
            child.kill('SIGINT');
          }
        }, 100)
      : undefined;
    return new Promise((resolve) =>
      child.once('exit', (code) => {
        if (poll) clearInterval(poll);
        const seen = watch.stop();
        const left = stillListed(seen, home);
        void outputEnded(child).then(() => resolve({ code, stdout, stderr, seen, left }));
      }),
    );
  }

  test(
    'after a successful run no broker, tool or DynamoDB Local process is listed in any state, and the run folder ' +
      'keeps logs and raw output but no broker data',
    async () => {
      const run = await runWatched(['run', plan, '--json']);
      expect(run.stderr).not.toMatch(/still listed after stopping/);
      expect(run.code).toBe(0);
      // The watcher saw the JVMs (broker, tools, DynamoDB Local), so an empty list below means they are gone.
      expect(run.seen.filter((s) => s.comm === 'java').length).toBeGreaterThanOrEqual(4);
      expect(run.left).toEqual([]);
      const { runId } = JSON.parse(run.stdout) as { runId: string };
      const files = walk(join(home, 'runs', runId));
      expect(files.filter((path) => /(^|\/)kafka\d+\/data\//.test(path))).toEqual([]);
      expect(files).toEqual(
        expect.arrayContaining([
          'run.json',
          'clusters/cluster-1/kafka1/stdout.log',
          'clusters/cluster-1/kafka1/server.properties',
          'raw/k_w/rep-1/producer-1.txt',
          'raw/k_w/rep-1/consumer-1.txt',
        ]),
      );
    },
  );

  test(
    'Ctrl-C while the tools run stops the broker and every tool: nothing is listed afterwards and the broker ' +
      'data is gone',
    async () => {
      const runs = join(home, 'runs');
      const toolsRunning = () =>
        existsSync(runs) &&
        readdirSync(runs).some(
          (runId) =>
            runId.startsWith('kafka-tidy') &&
            existsSync(join(runs, runId, 'raw', 'k_w', 'rep-1', 'consumer-1.txt')) &&
            !existsSync(join(runs, runId, 'ingest')),
        );
      const before = existsSync(runs) ? new Set(readdirSync(runs)) : new Set<string>();
      const run = await runWatched(['run', plan], toolsRunning);
      expect(run.code).toBe(130);
      expect(run.stderr).toContain('SIGINT received, stopping every process started by this run');
      expect(run.seen.filter((s) => s.comm === 'java').length).toBeGreaterThanOrEqual(3);
      expect(run.left).toEqual([]);
      const interrupted = readdirSync(runs).filter((runId) => !before.has(runId));
      expect(interrupted).toHaveLength(1);
      expect(walk(join(runs, interrupted[0]!)).filter((path) => /(^|\/)kafka\d+\/data\//.test(path))).toEqual([]);
    },
  );
});
