import { azureBrokerEnvironment, azureBrokerParameters } from '../core/cloud/azure-cloud-init';
import { formatPath } from '../core/plan/plan';
import { queueTopologySchema } from '../core/plan/plan-schema';

export interface BrokerConfigOptions {
  readonly target: string;
  readonly topology: string;
  readonly nodes: string;
  readonly rabbitmqVersion: string;
  readonly mirrorTo?: string;
  readonly replicationFactor?: string;
  readonly json: boolean;
}

/** Single-quotes a value for POSIX shells, so `eval "$(rmqbench broker-config ...)"` is safe. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * `rmqbench broker-config --target azure`: the broker parameters of bicep/main.bicep, from the one
 * shared generator, as `export NAME='…'` lines for the tier .bicepparam files (or JSON).
 */
export function brokerConfigCommand(options: BrokerConfigOptions): string {
  if (options.target !== 'azure') {
    throw new Error(
      `broker-config --target ${options.target}: only "azure" needs it (the AWS construct and the local target ` +
        `call the generator themselves)`,
    );
  }
  const topologyInput: Record<string, unknown> = { type: options.topology };
  if (options.mirrorTo !== undefined)
    topologyInput.mirrorTo = options.mirrorTo === 'all' ? 'all' : Number(options.mirrorTo);
  if (options.replicationFactor !== undefined) topologyInput.replicationFactor = Number(options.replicationFactor);
  const topology = queueTopologySchema.safeParse(topologyInput);
  if (!topology.success) {
    const issue = topology.error.issues[0]!;
    throw new Error(
      `--topology/--mirror-to/--replication-factor: ${formatPath(issue.path) || 'type'}: ${issue.message}`,
    );
  }
  const nodeCount = Number(options.nodes);
  if (!Number.isInteger(nodeCount)) throw new Error(`--nodes must be a whole number, got "${options.nodes}"`);
  const parameters = azureBrokerParameters({
    topology: topology.data,
    rabbitmqVersion: options.rabbitmqVersion,
    nodeCount,
  });
  if (options.json) return `${JSON.stringify(parameters, null, 2)}\n`;
  return Object.entries(azureBrokerEnvironment(parameters))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('');
}
