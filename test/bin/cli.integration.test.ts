import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stillListed, watchProcesses } from '../local/process-watch';

jest.setTimeout(600_000);

const cli = join(__dirname, '../../dist/bin/rmqbench.js');

describe('rmqbench CLI end to end on the local target', () => {
  const home = mkdtempSync(join(tmpdir(), 'rmqbench-cli-e2e-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const rmqbench = (...args: string[]) => {
    if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
    return spawnSync(process.execPath, [cli, ...args], {
      encoding: 'utf8',
      env: { ...process.env, RMQBENCH_HOME: home },
    });
  };

  test(
    'run stores results in the persisted DynamoDB Local; runs, show and report read them back in later ' +
      'invocations',
    () => {
      const plan = join(home, 'tiny.yaml');
      writeFileSync(
        plan,
        `name: tiny
repetitions: 2
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: direct }
workloads:
  - { name: w, messageSizeBytes: 150, durationSeconds: 3 }
`,
      );
      const run = rmqbench('run', plan, '--json');
      expect(run.stderr).toMatch(/\[2\/2\] one-node\/w repetition 2\/2/);
      expect(run.status).toBe(0);
      const outcome = JSON.parse(run.stdout) as { runId: string; status: string };
      expect(outcome.status).toBe('SUCCEEDED');

      const runs = rmqbench('runs', '--json');
      expect(runs.status).toBe(0);
      expect((JSON.parse(runs.stdout) as { runId: string }[]).map((r) => r.runId)).toContain(outcome.runId);

      const show = rmqbench('show', outcome.runId, '--json');
      const stored = JSON.parse(show.stdout) as {
        repetitions: {
          status: string;
          result: { summary: { receiveRateAvg: number } };
          metrics: { series: { node: string; metric: string; points: number[][] }[] };
        }[];
      };
      expect(stored.repetitions).toHaveLength(2);
      for (const rep of stored.repetitions) expect(rep.result.summary.receiveRateAvg).toBeGreaterThan(0);
      // Each repetition's metrics: every series names its node and metric.
      for (const rep of stored.repetitions) {
        const cpu = rep.metrics.series
          .filter((series) => series.metric === 'cpuPercent')
          .map((series) => series.node)
          .sort();
        expect(cpu).toEqual(['load-generator', 'rmqbench1@localhost']);
      }
      const human = rmqbench('show', outcome.runId);
      expect(human.status).toBe(0);
      expect(human.stdout).toMatch(
        /^ {4}rmqbench1@localhost: CPU max [\d.]+ %, median [\d.]+ %; RSS max [\d,]+ MB; memory alarm no$/m,
      );
      expect(human.stdout).toMatch(/^ {4}load-generator: CPU max [\d.]+ %, median [\d.]+ %; RSS max [\d,]+ MB$/m);

      const report = rmqbench('report', outcome.runId);
      expect(report.status).toBe(0);
      expect(report.stdout).toMatch(/\| one-node\/w \| 2\/2 \| [\d,]+ ± [\d,]+ \| [\d,]+ ± [\d,]+ \|/);

      const missing = rmqbench('show', 'no-such-run');
      expect(missing.status).toBe(1);
      expect(missing.stderr.trim()).toMatch(/^rmqbench: no run "no-such-run"/);

      // Nothing the CLI started is left running.
      const left = spawnSync('pgrep', ['-f', home], { encoding: 'utf8' }).stdout.trim();
      expect(left).toBe('');
    },
  );

  test('Ctrl-C during a run stops every RabbitMQ, PerfTest and DynamoDB Local process and exits 130', async () => {
    const plan = join(home, 'interrupted.yaml');
    writeFileSync(
      plan,
      `name: interrupted
clusters:
  - { name: one-node, nodes: 1, topology: { type: classic }, connection: lb }
workloads:
  - { name: w, messageSizeBytes: 150, durationSeconds: 60 }
`,
    );
    const child = spawn(process.execPath, [cli, 'run', plan], {
      env: { ...process.env, RMQBENCH_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    const watch = watchProcesses(child.pid!, home);
    let left: string[] = [];
    let seen: string[] = [];
    // What is still listed (zombies included) is read the moment the CLI has exited.
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        const watched = watch.stop();
        left = stillListed(watched, home);
        seen = watched.map((s) => s.comm);
        resolve(code);
      }),
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PerfTest never started:\n${stderr}`)), 120_000);
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (/msg\/s sent/.test(stderr)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const running = spawnSync('pgrep', ['-f', home], { encoding: 'utf8' }).stdout.trim().split('\n');
    expect(running.length).toBeGreaterThanOrEqual(4); // broker, epmd, HAProxy, PerfTest, DynamoDB Local
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/SIGINT received, stopping every process/);
    expect(spawnSync('pgrep', ['-f', home], { encoding: 'utf8' }).stdout.trim()).toBe('');
    for (const comm of ['beam.smp', 'epmd', 'haproxy', 'java']) expect(seen).toContain(comm);
    expect(left).toEqual([]);

    // The interrupted run is recorded as FAILED, not left RUNNING.
    const runId = /run (interrupted-\S+):/.exec(stderr)![1]!;
    const show = rmqbench('show', runId, '--json');
    expect(JSON.parse(show.stdout).run).toMatchObject({ status: 'FAILED', error: 'interrupted by a signal (Ctrl-C)' });
  });
});
