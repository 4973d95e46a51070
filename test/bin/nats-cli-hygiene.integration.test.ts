import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Seen, stillListed, watchProcesses } from '../local/process-watch';
import { outputEnded } from '../child-output';

jest.setTimeout(120_000);

const cli = join(__dirname, '../../dist/bin/rmqbench.js');

/** Every path under `dir`, relative to it. */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name);
    return entry.isDirectory() ? [`${path}/`, ...walk(dir, path)] : [path];
  });
}

describe('rmqbench run with a NATS cluster cleans up after itself', () => {
  const home = mkdtempSync(join(tmpdir(), 'rmqbench-nats-hygiene-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const env = { ...process.env, RMQBENCH_HOME: home };
  const plan = join(home, 'nats-tidy.yaml');
  writeFileSync(
    plan,
    'name: nats-tidy\nclusters: [{ name: n, broker: nats, nodes: 3 }]\n' +
      'workloads: [{ name: w, messageSizeBytes: 100, publishRateLimit: 1000, durationSeconds: 4 }]\n',
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
    'after a successful run and its report no nats-server or load client is listed in any state, and the run ' +
      'folder keeps configuration, logs and raw output but no JetStream store',
    async () => {
      const run = await runWatched(['run', plan, '--json']);
      expect(run.stderr).not.toMatch(/still listed after stopping/);
      expect(run.code).toBe(0);
      // The watcher saw the servers and the load client, so an empty list below means they are gone.
      expect(run.seen.filter((s) => s.comm === 'nats-server').length).toBe(3);
      expect(run.seen.filter((s) => s.comm.startsWith('rmqbench-nats')).length).toBeGreaterThanOrEqual(1);
      expect(run.left).toEqual([]);
      const { runId } = JSON.parse(run.stdout) as { runId: string };
      const files = walk(join(home, 'runs', runId));
      expect(files.filter((path) => /(^|\/)jetstream\//.test(path))).toEqual([]);
      expect(files).toEqual(
        expect.arrayContaining([
          'run.json',
          'clusters/cluster-1/nats1/nats-server.conf',
          'clusters/cluster-1/nats1/nats-server.log',
          'raw/n_w/rep-1/nats-load.jsonl',
        ]),
      );
      // The stored run reads back as a report that names the broker.
      const report = await runWatched(['report', runId]);
      expect(report.code).toBe(0);
      expect(report.stdout).toContain('Brokers: n NATS JetStream, 3 node(s).');
      expect(report.stdout).toMatch(/\| n\/w \| 1\/1 \| [\d,]+ ± /);
    },
  );

  test(
    'Ctrl-C while the load client runs stops the servers and the client: nothing is listed afterwards and the ' +
      'JetStream stores are gone',
    async () => {
      const runs = join(home, 'runs');
      const clientRunning = () =>
        existsSync(runs) &&
        readdirSync(runs).some(
          (runId) =>
            runId.startsWith('nats-tidy') &&
            existsSync(join(runs, runId, 'raw', 'n_w', 'rep-1', 'nats-load.jsonl')) &&
            !existsSync(join(runs, runId, 'ingest')),
        );
      const before = existsSync(runs) ? new Set(readdirSync(runs)) : new Set<string>();
      const run = await runWatched(['run', plan], clientRunning);
      expect(run.code).toBe(130);
      expect(run.stderr).toContain('SIGINT received, stopping every process started by this run');
      expect(run.seen.filter((s) => s.comm === 'nats-server').length).toBe(3);
      expect(run.left).toEqual([]);
      const interrupted = readdirSync(runs).filter((runId) => !before.has(runId));
      expect(interrupted).toHaveLength(1);
      expect(walk(join(runs, interrupted[0]!)).filter((path) => /(^|\/)jetstream\//.test(path))).toEqual([]);
    },
  );
});
