import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';

type Json = unknown;

/**
 * The user data of a launch template or instance as the text the instance receives, with every
 * CloudFormation reference replaced by `<{"Ref":...}>`, so tests can read it as a script.
 */
export function userDataText(template: Template, type: 'AWS::EC2::LaunchTemplate' | 'AWS::EC2::Instance'): string {
  const texts = userDataTexts(template, type);
  if (texts.length !== 1) throw new Error(`expected one ${type} with user data, found ${texts.length}`);
  return texts[0] as string;
}

/** The user data of every launch template or instance of `type` that has some, in template order (userDataText). */
export function userDataTexts(template: Template, type: 'AWS::EC2::LaunchTemplate' | 'AWS::EC2::Instance'): string[] {
  const resources = Object.values(template.findResources(type)) as { Properties: Record<string, Json> }[];
  return resources
    .map((resource) =>
      type === 'AWS::EC2::LaunchTemplate'
        ? (resource.Properties.LaunchTemplateData as Record<string, Json>).UserData
        : resource.Properties.UserData,
    )
    .filter((userData) => userData !== undefined)
    .map((userData) => flatten((userData as Record<string, Json>)['Fn::Base64']));
}

function flatten(node: Json): string {
  if (typeof node === 'string') return node;
  const record = node as Record<string, Json>;
  if (Array.isArray(record['Fn::Join'])) {
    const [delimiter, parts] = record['Fn::Join'] as [string, Json[]];
    return parts.map(flatten).join(delimiter);
  }
  return `<${JSON.stringify(node)}>`;
}

/** The content a `cat > path <<'DELIMITER'` here-document in `script` writes. */
export function hereDocument(script: string, path: string, delimiter: string): string {
  const start = `cat > ${path} <<'${delimiter}'\n`;
  const from = script.indexOf(start);
  if (from < 0) throw new Error(`no here-document for ${path} in the script`);
  const bodyStart = from + start.length;
  const end = script.indexOf(`\n${delimiter}\n`, bodyStart - 1);
  if (end < 0) throw new Error(`here-document for ${path} is not terminated`);
  return script.slice(bodyStart, end + 1);
}

/** Runs `bash -n` on the script (references replaced by a harmless word); returns bash's complaint, or ''. */
export function bashSyntaxErrors(script: string): string {
  try {
    execFileSync('bash', ['-n'], { input: script.replace(/<\{[^\n]*?\}>/g, 'REF'), stdio: ['pipe', 'pipe', 'pipe'] });
    return '';
  } catch (error) {
    return String((error as { stderr?: Buffer }).stderr ?? error);
  }
}

/** The words bash makes of a command line (to check quoting round-trips). */
export function bashWords(commandLine: string): string[] {
  const out = execFileSync('bash', ['-c', `set -- ${commandLine}; printf '%s\\0' "$@"`], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
}

/**
 * The template with asset object keys (`<sha256>.zip|.json`, which change with every build of an asset)
 * replaced, for snapshots. The PerfTest checksums in user data have no extension and stay.
 */
export function withoutAssetHashes(template: Template): Json {
  return JSON.parse(JSON.stringify(template.toJSON()).replace(/[0-9a-f]{64}\.(zip|json)/g, 'ASSET-HASH.$1'));
}

/**
 * Runs the CloudWatch agent lines of a boot script (the function cloudwatch-agent.ts defines, and its call) in bash,
 * with `dnf` and the agent's control script replaced by stubs and the configuration written to a temporary file
 * instead of the agent's folder; returns the configuration as bash wrote it, parsed, and what the stubbed control
 * script was asked. `env` holds the shell variables the script set before (e.g. STACK_NAME).
 */
export function runAgentBootLines(
  script: string,
  paths: { configPath: string; ctl: string },
  env: Record<string, string> = {},
): { config: Record<string, unknown>; ctlArguments: string } {
  const start = script.indexOf('rmqbench_start_cloudwatch_agent() {\n');
  const callMatch = /^rmqbench_start_cloudwatch_agent .* \|\| echo .*$/m.exec(script.slice(Math.max(start, 0)));
  if (start < 0 || !callMatch) throw new Error('no CloudWatch agent function and call in the script');
  const lines = script.slice(start, start + callMatch.index + callMatch[0].length);
  const dir = mkdtempSync(join(tmpdir(), 'rmqbench-agent-lines-'));
  try {
    writeFileSync(join(dir, 'dnf'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    writeFileSync(join(dir, 'ctl'), `#!/bin/sh\necho "$@" > ${dir}/ctl-arguments\n`, { mode: 0o755 });
    const rewritten = lines
      .split(paths.configPath)
      .join(join(dir, 'agent.json'))
      .split(paths.ctl)
      .join(join(dir, 'ctl'));
    execFileSync('bash', ['-c', `set -euo pipefail\n${rewritten}\n`], {
      env: { ...env, PATH: `${dir}:/usr/bin:/bin` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return {
      config: JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')) as Record<string, unknown>,
      ctlArguments: readFileSync(join(dir, 'ctl-arguments'), 'utf8')
        .trim()
        .split(join(dir, 'agent.json'))
        .join(paths.configPath),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
