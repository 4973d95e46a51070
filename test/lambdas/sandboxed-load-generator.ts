import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { installSeamLines } from '../simulated-vm/local-tarballs';
import { synthesizeClusterTemplates } from '../../cdk/BenchmarkController';
import { loadGeneratorBootCommands } from '../../cdk/user-data/load-generator';
import { FETCH_JAR_FUNCTION } from '../../cdk/user-data/pinned-jars';
import { resolveIntrinsics, type FakeAws, type PolicyStatement } from './fake-aws-endpoint';

/**
 * A sandboxed AWS load generator for the tests that execute the controller's exact scripts with bash
 * (perftest-script and kafka-script integration tests):
 * - laid out by the real boot commands of cdk/user-data/load-generator.ts, in a mount + PID namespace whose /opt,
 *   /usr/local/bin and /etc are private (tmpfs, tmpfs, overlay), so nothing on this machine changes. Two kinds of boot
 *   line are substituted, by exact match, and nothing else: `dnf install` of Corretto (this machine's Java runs the
 *   tools) and the definition of `rmqbench_fetch_jar`, the one download from Maven Central (the same jar is copied from
 *   the local Maven cache; the boot's manifest loops run as written, and its digest checks verify the jars against the
 *   pinned sums of cdk/perf-test-artifacts.ts and cdk/kafka-artifacts.ts);
 * - with the real AWS CLI (PyPI awscli v1, scripts/setup.sh) pointed at a local endpoint (AWS_ENDPOINT_URL) that
 *   authorizes each call with the load generator role's policy taken from the synthesized cluster template.
 */
export const AWS_CLI_BIN = resolve(__dirname, '../../.venv-tools/bin');
export const REGION = 'eu-west-1';
export const ACCOUNT = '111111111111';
export const BUCKET = 'rmqbench-raw-output';

export type Template = { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };

/** Fails the suite early, naming the fix, when the AWS CLI is missing. */
export function requireAwsCli(): void {
  if (!existsSync(join(AWS_CLI_BIN, 'aws')))
    throw new Error(`the AWS CLI is not installed at ${AWS_CLI_BIN}/aws: run scripts/setup.sh`);
}

/**
 * The load generator role's inline policy statements in a synthesized cluster template (`templateFile`, as named in
 * synthesizeClusterTemplates' folder), with its intrinsics resolved; `extraRefs` resolves Refs to the template's own
 * resources.
 */
export function loadGeneratorStatements(
  templateFile: string,
  extraRefs: (template: Template) => Record<string, string> = () => ({}),
): PolicyStatement[] {
  const template = JSON.parse(readFileSync(join(synthesizeClusterTemplates(), templateFile), 'utf8')) as Template;
  const policies = Object.values(template.Resources).filter(
    (resource) =>
      resource.Type === 'AWS::IAM::Policy' && JSON.stringify(resource.Properties.Roles).includes('LoadGeneratorRole'),
  );
  expect(policies).toHaveLength(1);
  const refs = {
    'AWS::Partition': 'aws',
    'AWS::Region': REGION,
    'AWS::AccountId': ACCOUNT,
    ResultsBucketName: BUCKET,
    ...extraRefs(template),
  };
  return resolveIntrinsics(
    (policies[0]!.Properties.PolicyDocument as { Statement: unknown[] }).Statement,
    refs,
  ) as PolicyStatement[];
}

export interface SandboxOptions {
  /** Folders of the local Maven cache the boot's downloads are copied from (the first holding the file wins). */
  readonly jarDirs: readonly string[];
  /** The LoadGenerator's kafkaTools prop. @default false */
  readonly kafkaTools?: boolean;
  /**
   * The LoadGenerator's natsTools prop, with the Go tarball its boot gets instead of the pinned one from
   * dl.google.com: this machine's Go, packed by the test (goTarballOfThisMachine), handed over through the boot's one
   * seam (/etc/rmqbench/install-override.sh: rmqbench_fetch_go and GO_SHA256); the checksum check, the unpacking and
   * `go version` run as written. @default - no Go
   */
  readonly natsTools?: { readonly tarball: string; readonly sha256: string };
  /** More environment for the boot and the script (e.g. GOPROXY). @default - none */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The fewest jars the boot's manifests must list (a guard against a changed boot no longer downloading through the
   * substituted function).
   */
  readonly minDownloads: number;
  /** Shell lines run in the namespace after the boot and before the script. @default - none */
  readonly afterBoot?: readonly string[];
  /** @default 180_000 */
  readonly timeoutMs?: number;
}

/** The boot commands with the substitutions described above. */
function sandboxBootScript(options: SandboxOptions): string {
  const commands = loadGeneratorBootCommands({
    resultsBucketName: BUCKET,
    resultsPrefix: 'runs/',
    ...(options.kafkaTools ? { kafkaTools: true } : {}),
    ...(options.natsTools ? { natsTools: { arch: 'amd64' as const } } : {}),
  });
  const dirs = options.jarDirs.map((dir) => `'${dir}'`).join(' ');
  // `rmqbench_fetch_jar <Maven path> <file>`: the same file from the first local jar folder that has it.
  const copyJar =
    `rmqbench_fetch_jar() { local dir; for dir in ${dirs}; do if [ -f "$dir/$2" ]; then cp "$dir/$2" "$2"; ` +
    `return 0; fi; done; echo "$2 is in no local jar folder (${options.jarDirs.join(', ')})" >&2; return 1; }`;
  let fetchFunctions = 0;
  const substituted = commands.map((command) => {
    if (command === 'dnf install -y java-21-amazon-corretto-headless') return ': Java comes from the test machine';
    if (command !== FETCH_JAR_FUNCTION) return command;
    fetchFunctions++;
    return copyJar;
  });
  expect(fetchFunctions).toBe(1);
  const jars = substituted
    .join('\n')
    .split('\n')
    .filter((line) => /^[\w.-]+:[\w.-]+:[\w.-]+$/.test(line)).length;
  expect(jars).toBeGreaterThan(options.minDownloads);
  expect(substituted.join('\n')).not.toContain('curl -sSf --retry 5');
  return substituted.join('\n');
}

/**
 * Boots a sandbox under `work` and runs `script` in it; the namespace (and every process in it) ends with the call.
 * Asynchronous: the fake endpoint answers from this process's event loop.
 */
export async function runOnLoadGenerator(
  work: string,
  options: SandboxOptions,
  fake: FakeAws | undefined,
  script: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const sandbox = mkdtempSync(join(work, 'sandbox-'));
  writeFileSync(join(sandbox, 'boot.sh'), sandboxBootScript(options));
  writeFileSync(join(sandbox, 'run.sh'), script);
  writeFileSync(join(sandbox, 'aws-config'), `[default]\nregion = ${REGION}\ns3 =\n  addressing_style = path\n`);
  const outer = [
    'set -e',
    'mount -t tmpfs tmpfs /opt',
    'mount -t tmpfs tmpfs /usr/local/bin',
    `mkdir -p ${sandbox}/etc-upper ${sandbox}/etc-work`,
    `mount -t overlay overlay -o lowerdir=/etc,upperdir=${sandbox}/etc-upper,workdir=${sandbox}/etc-work /etc`,
    ...(options.natsTools
      ? [
          'mkdir -p /etc/rmqbench',
          `printf '%s\\n' ${installSeamLines(options.natsTools).map(shellWord).join(' ')} ` +
            '> /etc/rmqbench/install-override.sh',
        ]
      : []),
    `bash ${sandbox}/boot.sh > ${sandbox}/boot.log 2>&1 || { cat ${sandbox}/boot.log >&2; exit 97; }`,
    ...(options.afterBoot ?? []),
    `exec bash ${sandbox}/run.sh`,
  ].join('\n');
  const child = spawn(
    'unshare',
    ['--mount', '--propagation', 'private', '--pid', '--fork', '--kill-child', '--mount-proc', 'bash', '-c', outer],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: `${AWS_CLI_BIN}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`,
        HOME: sandbox,
        ...(fake ? { AWS_ENDPOINT_URL: fake.endpoint } : {}),
        AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
        AWS_CONFIG_FILE: join(sandbox, 'aws-config'),
        AWS_DEFAULT_REGION: REGION,
        ...options.env,
      },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  // unshare --kill-child: killing it ends the namespace's init, and with it every process inside.
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 180_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** One word for bash, single-quoted. */
const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
