import { parse as parseYaml } from 'yaml';
import { BICEP_DIR, evaluateString, parseBicepFile, propertyValues } from '../bicep/bicep-tree';
import type { CommandResult, SimulatedHub, SimulatedVm } from './harness';

/** A cluster module's cloud-config (customData) as the boot tests read it. */
export interface CloudConfig {
  readonly write_files: { path: string; encoding?: string; permissions?: string; content: string }[];
  readonly runcmd: string[][];
}

const MINIMAL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The customData of the module's VM, evaluated from the Bicep as ARM would with `variables` given (the loop index
 * `i` and what ARM computes, such as the static IPs); throws when an expression stayed unevaluated (shown as
 * `<source text>` in an .env file) or a `{{NAME}}` placeholder unfilled.
 */
export async function moduleCustomData(module: string, variables: Record<string, string>): Promise<CloudConfig> {
  const parsed = await parseBicepFile(`${BICEP_DIR}/modules/${module}`);
  const vm = parsed.resources.find((resource) => resource.resourceType === 'Microsoft.Compute/virtualMachines');
  const [customData] = propertyValues(vm?.body as never, 'customData');
  const text = evaluateString(parsed, customData as never, variables);
  const config = parseYaml(Buffer.from(text, 'base64').toString('utf8')) as CloudConfig;
  for (const entry of config.write_files) {
    const content = Buffer.from(entry.content, 'base64').toString('utf8');
    if (entry.path.endsWith('.env') && /<[^>]*>/.test(content))
      throw new Error(`${entry.path} holds an unevaluated expression:\n${content}`);
    if (/\{\{[A-Z]/.test(entry.content)) throw new Error(`${entry.path} is an unfilled placeholder: ${entry.content}`);
  }
  return config;
}

/** The files cloud-init writes (write_files, b64 decoded), by path, for `hub.createVm`. */
export function cloudConfigFiles(config: CloudConfig): Record<string, { content: string; mode: number }> {
  return Object.fromEntries(
    config.write_files.map((entry) => [
      entry.path,
      {
        content: entry.encoding === 'b64' ? Buffer.from(entry.content, 'base64').toString('utf8') : entry.content,
        mode: parseInt(entry.permissions ?? '0644', 8),
      },
    ]),
  );
}

/** cloud-init's runcmd on every VM at once, in order, as root with a minimal environment: each VM's last result. */
export function runCommands(
  hub: SimulatedHub,
  vms: readonly SimulatedVm[],
  configs: readonly CloudConfig[],
): Promise<CommandResult[]> {
  return Promise.all(
    vms.map(async (vm, index) => {
      let last: CommandResult = { status: -1, stdout: '', stderr: 'runcmd is empty' };
      for (const command of configs[index]!.runcmd) {
        last = await hub.exec(vm, command.map(shellQuote).join(' '), { env: { PATH: MINIMAL_PATH, HOME: '/root' } });
        if (last.status !== 0) break;
      }
      return last;
    }),
  );
}
