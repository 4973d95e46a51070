/** The Azure scale set's cloud-init, rendered from modules/cluster.bicep as ARM would, installed on simulated VMs. */
import { parse as parseYaml } from 'yaml';
import { azureBrokerParameters } from '../../core/cloud/azure-cloud-init';
import { BICEP_DIR, evaluateString, parseBicepFile, propertyValues } from '../bicep/bicep-tree';
import type { CommandResult, SimulatedHub, SimulatedVm } from './harness';

export const KEY_VAULT = 'rmqbenchsimkv';
export const IDENTITY_CLIENT_ID = '11111111-2222-3333-4444-555555555555';
export const SCALE_SET = 'rmqbench-vmss';
export const SECRETS = {
  cookie: 'rmqbench-erlang-cookie',
  password: 'rmqbench-admin-password',
  tlsCertificate: 'rmqbench-tls-certificate',
  tlsKey: 'rmqbench-tls-private-key',
};

interface CloudConfig {
  write_files: { path: string; encoding?: string; permissions?: string; content: string }[];
  runcmd: string[][];
}

/**
 * Test-only additions to node.env: faster join polling, and the TLS names cluster.bicep sets for a public load
 * balancer.
 */
export interface NodeOptions {
  readonly tls?: boolean;
  /** Replaces the install step through the script's seam with a failure (the "designated seed cannot install" case). */
  readonly installFails?: boolean;
}

export async function renderClusterCloudInit(): Promise<CloudConfig> {
  const cluster = await parseBicepFile(`${BICEP_DIR}/modules/cluster.bicep`);
  const scaleSet = cluster.resources.find(
    (resource) => resource.resourceType === 'Microsoft.Compute/virtualMachineScaleSets',
  );
  const [customData] = propertyValues(scaleSet?.body as never, 'customData');
  const broker = azureBrokerParameters({
    topology: { type: 'mirrored', mirrorTo: 'all' },
    rabbitmqVersion: '3.13.7',
    nodeCount: 3,
  });
  const text = Buffer.from(
    evaluateString(cluster, customData as never, {
      ...broker,
      namePrefix: 'rmqbench',
      keyVaultName: KEY_VAULT,
      erlangCookieSecretName: SECRETS.cookie,
      adminPasswordSecretName: SECRETS.password,
    }),
    'base64',
  ).toString('utf8');
  return parseYaml(text) as CloudConfig;
}

/** The files cloud-init writes on a node, with node.env completed for the simulation. */
export function nodeFiles(
  cloudConfig: CloudConfig,
  options: NodeOptions,
): Record<string, { content: string; mode: number }> {
  const files: Record<string, { content: string; mode: number }> = {};
  for (const entry of cloudConfig.write_files) {
    const content = entry.encoding === 'b64' ? Buffer.from(entry.content, 'base64').toString('utf8') : entry.content;
    files[entry.path] = { content, mode: parseInt(entry.permissions ?? '0644', 8) };
  }
  const env = files['/etc/rmqbench/node.env'];
  if (!env) throw new Error('customData writes no /etc/rmqbench/node.env');
  // The identity's client id is an ARM runtime value (identity.properties.clientId) the template cannot show.
  let content = env.content.replace('<identity.properties.clientId>', IDENTITY_CLIENT_ID);
  content += 'JOIN_POLL_SECONDS=2\nJOIN_TIMEOUT_SECONDS=300\n';
  // What cluster.bicep writes for a public load balancer, or empty names for an internal one (its `tlsEnabled ? ... :
  // ''`
  // is a condition the template evaluator here does not compute).
  content = content.replace(
    /^(TLS_CERTIFICATE_SECRET_NAME|TLS_PRIVATE_KEY_SECRET_NAME|AMQPS_PORT|MANAGEMENT_TLS_PORT)=.*\n/gm,
    '',
  );
  content += options.tls
    ? `TLS_CERTIFICATE_SECRET_NAME=${SECRETS.tlsCertificate}\n` +
      `TLS_PRIVATE_KEY_SECRET_NAME=${SECRETS.tlsKey}\nAMQPS_PORT=5671\nMANAGEMENT_TLS_PORT=15671\n`
    : 'TLS_CERTIFICATE_SECRET_NAME=\nTLS_PRIVATE_KEY_SECRET_NAME=\nAMQPS_PORT=5671\nMANAGEMENT_TLS_PORT=15671\n';
  if (/<[^>]*>/.test(content)) throw new Error(`node.env still holds an unevaluated template expression:\n${content}`);
  files['/etc/rmqbench/node.env'] = { content, mode: env.mode };
  // The scripts' one test seam: Debian's rabbitmq-server (installed on this machine) stands in for the apt install.
  files['/etc/rmqbench/install-override.sh'] = {
    mode: 0o644,
    content: options.installFails
      ? 'install_rabbitmq() { echo "simulated: the package installation failed" >&2; return 1; }\n'
      : 'install_rabbitmq() { command -v rabbitmq-server >/dev/null && ' +
        'command -v jq >/dev/null && command -v curl >/dev/null; }\n',
  };
  return files;
}

const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/** Runs the customData's runcmd as cloud-init does (each command in order); returns the boot command's result. */
export async function runCloudInit(
  hub: SimulatedHub,
  vm: SimulatedVm,
  cloudConfig: CloudConfig,
): Promise<CommandResult> {
  let boot: CommandResult | undefined;
  for (const command of cloudConfig.runcmd) {
    const result = await hub.exec(vm, command.map(shellQuote).join(' '));
    if (command.includes('boot')) boot = result;
  }
  if (!boot) throw new Error(`runcmd has no boot command: ${JSON.stringify(cloudConfig.runcmd)}`);
  return boot;
}
