import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

describe('the local target cleans up after itself', () => {
  const home = mkdtempSync(join(tmpdir(), 'rmqbench-hygiene-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const env = { ...process.env, RMQBENCH_HOME: home };
  const rmqbench = (...args: string[]) => {
    if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
    return spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env });
  };

  /** Runs the CLI and, the moment it has exited (and was reaped), lists what it left in the process table. */
  function runWatched(
    ...args: string[]
  ): Promise<{ code: number | null; stdout: string; stderr: string; seen: Seen[]; left: string[] }> {
    const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const watch = watchProcesses(child.pid!, home);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve) =>
      child.once('exit', (code) => {
        const seen = watch.stop();
        const left = stillListed(seen, home);
        void outputEnded(child).then(() => resolve({ code, stdout, stderr, seen, left }));
      }),
    );
  }

  const writePlan = (name: string, connection: string) => {
    const path = join(home, `${name}.yaml`);
    writeFileSync(
      path,
      `name: ${name}
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: ${connection} }
workloads:
  - { name: w, messageSizeBytes: 150, durationSeconds: 3 }
`,
    );
    return path;
  };

  test(
    'after a successful run no broker, epmd, HAProxy, PerfTest or DynamoDB Local process is listed in any state, ' +
      'and the run folder keeps logs and raw output but no broker data',
    async () => {
      const run = await runWatched('run', writePlan('tidy', 'lb'), '--json');
      expect(run.stderr).not.toMatch(/still listed after stopping/);
      expect(run.code).toBe(0);
      // The watcher did see what the CLI started, so an empty list below means they are gone.
      for (const comm of ['beam.smp', 'epmd', 'haproxy', 'java', 'erl_child_setup'])
        expect(run.seen.map((s) => s.comm)).toContain(comm);
      expect(run.left).toEqual([]);

      const { runId } = JSON.parse(run.stdout) as { runId: string };
      const runDir = join(home, 'runs', runId);
      const files = walk(runDir);
      expect(files.filter((path) => /(^|\/)mnesia\/|\.erlang\.cookie$/.test(path))).toEqual([]);
      expect(files).toEqual(
        expect.arrayContaining([
          'run.json',
          'clusters/cluster-1/node1/log/rmqbench1@localhost.log',
          'clusters/cluster-1/node1/stdout.log',
          'clusters/cluster-1/haproxy.log',
          'raw/one-node_w/rep-1/perftest.stdout.txt',
          'raw/one-node_w/rep-1/perftest.csv',
        ]),
      );
      expect(readFileSync(join(runDir, 'clusters/cluster-1/node1/log/rmqbench1@localhost.log'), 'utf8')).toMatch(
        /Server startup complete/,
      );
    },
  );

  test('a run that fails (fault injected at SmokeTest) leaves no process in any state either', async () => {
    const run = await runWatched('run', writePlan('failing', 'direct'), '--fail-at', 'SmokeTest');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/fault injected at SmokeTest/);
    expect(run.seen.map((s) => s.comm)).toContain('beam.smp');
    expect(run.left).toEqual([]);
  });

  test(
    'prune deletes only run folders whose results the store has, says why it keeps the others, and --dry-run ' +
      'deletes nothing',
    () => {
      const runs = join(home, 'runs');
      const stored = readdirSync(runs).filter((name) => name.startsWith('tidy-'));
      expect(stored).toHaveLength(1);
      const storedDir = join(runs, stored[0]!);
      // A run the store never heard of (its store was unreachable, or another table).
      const unstored = join(runs, 'never-stored');
      mkdirSync(unstored);
      writeFileSync(
        join(unstored, 'run.json'),
        JSON.stringify({ runId: 'never-stored-20200101T000000-abcd', startedAt: '2020-01-01T00:00:00.000Z' }),
      );
      // A stored run whose folder measured one repetition more than the store holds.
      const partial = join(runs, 'partly-stored');
      cpSync(storedDir, partial, { recursive: true });
      const ingestFile = join(partial, 'ingest', readdirSync(join(partial, 'ingest'))[0]!);
      writeFileSync(ingestFile, JSON.stringify({ ...JSON.parse(readFileSync(ingestFile, 'utf8')), repetition: 9 }));

      const dry = rmqbench('prune', '--dry-run', '--json');
      expect(dry.status).toBe(0);
      const planned = JSON.parse(dry.stdout) as { deleted: { dir: string }[]; kept: { dir: string; reason: string }[] };
      expect(planned.deleted.map((d) => d.dir)).toContain(storedDir);
      expect(planned.kept).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            dir: unstored,
            reason: expect.stringMatching(/never-stored-20200101T000000-abcd is not in table rmqbench-results/),
          }),
          expect.objectContaining({
            dir: partial,
            reason: expect.stringMatching(
              /1 repetition\(s\) measured in this folder are not in table .*#9.*rmqbench ingest/,
            ),
          }),
        ]),
      );
      for (const dir of [storedDir, unstored, partial]) expect(existsSync(dir)).toBe(true);

      // --keep N keeps the N newest whatever the store has: the never-stored run (2020) is the oldest.
      const keepAll = JSON.parse(rmqbench('prune', '--keep', String(readdirSync(runs).length), '--json').stdout) as {
        deleted: unknown[];
      };
      expect(keepAll.deleted).toEqual([]);

      const pruned = rmqbench('prune');
      expect(pruned.status).toBe(0);
      expect(pruned.stdout).toMatch(new RegExp(`deleted\\s+${stored[0]}`));
      expect(pruned.stdout).toMatch(
        /kept\s+never-stored-20200101T000000-abcd: run never-stored-20200101T000000-abcd is not in table/,
      );
      expect(existsSync(storedDir)).toBe(false);
      expect(existsSync(unstored)).toBe(true);
      expect(existsSync(partial)).toBe(true);
      // What prune deleted was only the folder: the results are still in the store.
      expect(rmqbench('show', stored[0]!, '--json').status).toBe(0);
    },
  );
});
