/**
 * bench:overhead: the quickstart plan's wall time (the CLI as a user runs it, DynamoDB Local start
 * included) divided by the sum of its PerfTest durations. Target: <= 1.10, and a start-up (CLI start to the first
 * repetition) <= 8 s (issue 24).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePlanText } from '../core/plan/plan';

const planPath = join(__dirname, '..', '..', 'plans', 'quickstart.yaml');
const plan = parsePlanText(readFileSync(planPath, 'utf8'), planPath);
const perfTestSeconds =
  plan.scenarios.reduce((sum, scenario) => sum + scenario.workload.durationSeconds, 0) * plan.repetitions;
const home = mkdtempSync(join(tmpdir(), 'rmqbench-overhead-'));
const started = process.hrtime.bigint();
const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
// The CLI's progress lines, passed through and timed: when the store was up (the run recorded) and
// when the cluster answered, to say where the start-up went.
const marks: { run?: number; clusterReady?: number; clusterBoot?: number } = {};
async function main(): Promise<void> {
  const result = await new Promise<{ status: number | null; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [join(__dirname, '..', 'bin', 'rmqbench.js'), 'run', planPath, '--json'], {
      env: { ...process.env, RMQBENCH_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (/^run \S+: about/.test(line)) marks.run ??= elapsed();
        const ready = /^cluster ready in ([\d.]+) s/.exec(line);
        if (ready && marks.clusterReady === undefined) {
          marks.clusterReady = elapsed();
          marks.clusterBoot = Number(ready[1]);
        }
      }
    });
    child.once('exit', (status) => resolve({ status, stdout }));
  });
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  rmSync(home, { recursive: true, force: true });
  if (result.status !== 0) {
    console.error(`bench:overhead: rmqbench run exited with ${result.status}`);
    process.exit(1);
  }
  const outcome = JSON.parse(result.stdout) as {
    status: string;
    records: { startedAt: string; finishedAt: string; scenarioId: string }[];
  };
  console.log(`quickstart status: ${outcome.status}`);
  // Where the time outside PerfTest went, from the run's own timestamps.
  const startMs = Date.now() - wallSeconds * 1000;
  const times = outcome.records.map((r) => ({ start: Date.parse(r.startedAt), end: Date.parse(r.finishedAt) }));
  const durationOf = new Map(plan.scenarios.map((s) => [s.id, s.workload.durationSeconds]));
  const first = Math.min(...times.map((t) => t.start));
  const last = Math.max(...times.map((t) => t.end));
  const inRepetitions = outcome.records.reduce(
    (sum, r) => sum + (Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000 - durationOf.get(r.scenarioId)!,
    0,
  );
  const between = (last - first) / 1000 - times.reduce((sum, t) => sum + (t.end - t.start) / 1000, 0);
  console.log(
    `outside PerfTest: start-up until the first repetition ${((first - startMs) / 1000).toFixed(1)} s, ` +
      `PerfTest process beyond its duration ${inRepetitions.toFixed(1)} s, ` +
      `between repetitions ${between.toFixed(1)} s, ` +
      `after the last repetition ${((startMs + wallSeconds * 1000 - last) / 1000).toFixed(1)} s`,
  );
  if (marks.run !== undefined && marks.clusterReady !== undefined) {
    console.log(
      `start-up: store up and run recorded at ${marks.run.toFixed(1)} s, ` +
        `first cluster answering at ${marks.clusterReady.toFixed(1)} s ` +
        `(booting ${marks.clusterBoot?.toFixed(1)} s, in parallel with the store)`,
    );
  }
  console.log(
    `wall time: ${wallSeconds.toFixed(1)} s; PerfTest time: ${perfTestSeconds} s ` +
      `(${plan.scenarios.length} scenarios x ${plan.repetitions} repetitions)`,
  );
  console.log(`overhead ratio (wall / PerfTest): ${(wallSeconds / perfTestSeconds).toFixed(3)}  (target <= 1.10)`);
}

void main();
