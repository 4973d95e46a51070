/**
 * What the twin's integration tests share: the example controller synthesized once per test run, the acceptance plan, a
 * copy of the assembly with one file changed, and `rmqbench run --target aws` against a twin started for it (stopped
 * after each test). Call inside a describe block: it registers the hooks.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildControllerApp } from '../../examples/controller/controller-app';
import { rmqbenchAsync } from '../cloud/cli-child';
import { startAwsTwin, type AwsTwin } from './aws-twin';
import { TWIN_PLAN_YAML } from './twin-cli';

export interface TwinRun {
  readonly twin: AwsTwin;
  readonly env: Record<string, string>;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The twin's own [twin] lines. */
  readonly log: string;
}

/**
 * What a test prints when a run on the twin did not exit 0: first the CLI's error and the report's failed repetitions
 * (each with its error), which a CI log cut in the middle still shows, then the whole stderr and the twin's log.
 */
export function twinFailure(run: Pick<TwinRun, 'code' | 'stdout' | 'stderr' | 'log'>): string {
  if (run.code === 0) return '';
  const error = run.stderr.trimEnd().split('\n').slice(-2).join('\n');
  const failed =
    /## Failed repetitions\n[\s\S]*?(?=\n## |$)/.exec(run.stdout)?.[0] ?? '(no failed repetition in the report)';
  return `${error}\n${failed}\n--- stderr\n${run.stderr}\n--- twin\n${run.log}`;
}

export interface TwinTestSetup {
  /** The synthesized example controller (cdk.out). */
  readonly cdkOut: string;
  readonly scratch: string;
  /** A copy of the assembly named `name` in which each file `select` picks is rewritten by `change` (its JSON). */
  changedAssembly<T>(
    name: string,
    select: (file: string, json: Record<string, unknown>) => boolean,
    change: (json: T) => void,
  ): string;
  /** `rmqbench run <acceptance plan, or planYaml> --target aws` against a twin of `assembly`. */
  runOnTwin(
    assembly: string,
    options?: { clusterSubnets?: number; blockedBootSeconds?: number; planYaml?: string; standardVcpuQuota?: number },
  ): Promise<TwinRun>;
}

/**
 * `rmqbench run <planFile> --target <target>` in a child, with a shell pointed at a twin (`twinEnv`) and a fresh
 * RMQBENCH_HOME under `scratch`; resolves when it exits, with its environment for the commands a test runs after it.
 */
export async function runPlanOnTwin(
  scratch: string,
  twinEnv: Record<string, string>,
  planFile: string,
  target: 'aws' | 'azure',
  pollSeconds: number,
): Promise<{ env: Record<string, string>; code: number | null; stdout: string; stderr: string }> {
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    RMQBENCH_HOME: mkdtempSync(join(scratch, 'home-')),
    ...twinEnv,
  };
  const run = rmqbenchAsync(env, 'run', planFile, '--target', target, '--poll-seconds', String(pollSeconds));
  const code = await run.exited;
  return { env, code, stdout: run.stdout, stderr: run.stderr };
}

/**
 * A twin's log sink for a test: keeps each line for the assertions and, with TWIN_TRACE=1 in the environment, also
 * prints it at once with the seconds since the twin started, to see where a twin run spends its time.
 */
export function twinLogSink(): { lines: string[]; log: (line: string) => void } {
  const lines: string[] = [];
  const started = Date.now();
  return {
    lines,
    log: (line) => {
      const stamped = `${((Date.now() - started) / 1000).toFixed(1).padStart(7)} s ${line}`;
      lines.push(stamped);
      if (process.env['TWIN_TRACE'] === '1') process.stderr.write(`${stamped}\n`);
    },
  };
}

/**
 * The example controller synthesized once per test run for every file of the AWS twin's tests (each copies it into its
 * own scratch folder first): synthesized into a folder of its own and renamed into place, so that no file copies a
 * half-written one. Outside a Jest run (no RMQBENCH_TEST_TMPDIR, test/jest-temp-dir.js), synthesized each time.
 */
function sharedControllerAssembly(): string {
  const runDir = process.env['RMQBENCH_TEST_TMPDIR'];
  const shared = join(runDir ?? mkdtempSync(join(tmpdir(), 'rmqbench-twin-')), 'controller-cdk.out');
  if (!existsSync(shared)) {
    const partial = `${shared}.${process.pid}.partial`;
    buildControllerApp({ outdir: partial }).synth();
    renameSync(partial, shared);
  }
  return shared;
}

export function twinTestSetup(): TwinTestSetup {
  const scratch = mkdtempSync(join(tmpdir(), 'rmqbench-twin-test-'));
  const cdkOut = join(scratch, 'cdk.out');
  const planFile = join(scratch, 'twin.yaml');
  const twins: AwsTwin[] = [];

  beforeAll(() => {
    cpSync(sharedControllerAssembly(), cdkOut, { recursive: true });
    writeFileSync(planFile, TWIN_PLAN_YAML);
  }, 120_000);
  afterEach(async () => {
    for (const twin of twins.splice(0)) await twin.stop();
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  return {
    cdkOut,
    scratch,
    changedAssembly: <T>(
      name: string,
      select: (file: string, json: Record<string, unknown>) => boolean,
      change: (json: T) => void,
    ) => {
      const dir = join(scratch, name);
      cpSync(cdkOut, dir, { recursive: true });
      let changed = 0;
      for (const file of readdirSync(dir)) {
        if (!file.endsWith('.json')) continue;
        const json = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
        if (!select(file, json)) continue;
        change(json as T);
        writeFileSync(join(dir, file), JSON.stringify(json));
        changed++;
      }
      if (changed === 0) throw new Error(`changedAssembly ${name}: no file of the assembly was selected`);
      return dir;
    },
    runOnTwin: async (assembly, { planYaml, ...options } = {}) => {
      const { lines: log, log: sink } = twinLogSink();
      const twin = await startAwsTwin({ cdkOut: assembly, ...options, log: sink });
      twins.push(twin);
      let plan = planFile;
      if (planYaml !== undefined) {
        plan = join(mkdtempSync(join(scratch, 'plan-')), 'plan.yaml');
        writeFileSync(plan, planYaml);
      }
      return { twin, ...(await runPlanOnTwin(scratch, twin.env, plan, 'aws', 1)), log: log.join('\n') };
    },
  };
}
