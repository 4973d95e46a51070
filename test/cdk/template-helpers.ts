import { execFileSync } from 'node:child_process';
import type { Template } from 'aws-cdk-lib/assertions';

type Json = unknown;

/**
 * The user data of a launch template or instance as the text the instance receives, with every
 * CloudFormation reference replaced by `<{"Ref":...}>`, so tests can read it as a script.
 */
export function userDataText(template: Template, type: 'AWS::EC2::LaunchTemplate' | 'AWS::EC2::Instance'): string {
  const resources = Object.values(template.findResources(type)) as { Properties: Record<string, Json> }[];
  const withUserData = resources
    .map((resource) => (type === 'AWS::EC2::LaunchTemplate' ? (resource.Properties.LaunchTemplateData as Record<string, Json>).UserData : resource.Properties.UserData))
    .filter((userData) => userData !== undefined);
  if (withUserData.length !== 1) throw new Error(`expected one ${type} with user data, found ${withUserData.length}`);
  return flatten((withUserData[0] as Record<string, Json>)['Fn::Base64']);
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
