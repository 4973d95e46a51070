import { generateBrokerConfig, policyCommandArgs } from '../broker/broker-config';
import { cloudRabbitmqVersion, topologyVersionProblem } from './cloud-releases';
import type { QueueTopology } from '../plan/plan-schema';

/**
 * The broker-configuration parameters of `bicep/main.bicep`, built from the one shared generator
 * (core/broker/broker-config.ts) so that an Azure node runs the same rabbitmq.conf, plugins and policies as
 * the AWS and local targets. The templates only carry these texts into cloud-init; they never
 * re-type any broker setting. Pure: no I/O.
 */

/** What an Azure cluster's broker configuration depends on. */
export interface AzureClusterOptions {
  readonly topology: QueueTopology;
  /** RabbitMQ version the nodes install, e.g. "3.13.7" (must match main.bicep's `rabbitmqVersion`). */
  readonly rabbitmqVersion: string;
  /** Number of scale-set instances (main.bicep's `instanceCount`), 1 to 7. */
  readonly nodeCount: number;
}

/** Values for main.bicep's broker parameters; none of them is a secret. */
export interface AzureBrokerParameters {
  /** main.bicep `rabbitmqConf`: the generated rabbitmq.conf, unchanged. */
  readonly rabbitmqConf: string;
  /** main.bicep `enabledPluginsFile`: the generated enabled_plugins file, unchanged. */
  readonly enabledPluginsFile: string;
  /**
   * main.bicep `policyCommandsJson`: a JSON array of `rabbitmqctl` argument vectors, one per policy,
   * exactly as `policyCommandArgs` builds them for the AWS user data. The node's join script runs
   * each one after the node has joined the cluster.
   */
  readonly policyCommandsJson: string;
}

/**
 * The environment variables the tier `.bicepparam` files read (`readEnvironmentVariable`), keyed by
 * main.bicep parameter name.
 */
export const AZURE_BROKER_ENVIRONMENT_VARIABLES: Readonly<Record<keyof AzureBrokerParameters, string>> = {
  rabbitmqConf: 'RMQBENCH_RABBITMQ_CONF',
  enabledPluginsFile: 'RMQBENCH_ENABLED_PLUGINS_FILE',
  policyCommandsJson: 'RMQBENCH_POLICY_COMMANDS_JSON',
};

/**
 * Builds main.bicep's broker parameters for an Azure cluster. Azure has no RabbitMQ peer-discovery
 * plugin, so the configuration uses the `external` backend: the scale set's join script clusters the
 * nodes with `rabbitmqctl join_cluster` (see bicep/README.md).
 *
 * @throws Error when the generator rejects the options (node count outside 1–7, mirrored queues on 4.x).
 */
export function azureBrokerParameters(options: AzureClusterOptions): AzureBrokerParameters {
  const config = generateBrokerConfig({
    topology: options.topology,
    rabbitmqVersion: options.rabbitmqVersion,
    peerDiscovery: { backend: 'external' },
    nodeCount: options.nodeCount,
  });
  return {
    rabbitmqConf: config.rabbitmqConf,
    enabledPluginsFile: config.enabledPluginsFile,
    policyCommandsJson: JSON.stringify(config.policies.map(policyCommandArgs)),
  };
}

/**
 * The same values as environment variables for `az deployment group create --parameters <tier>.bicepparam`
 * (e.g. for a CLI that prints `export NAME=...` lines).
 */
export function azureBrokerEnvironment(parameters: AzureBrokerParameters): Record<string, string> {
  return {
    [AZURE_BROKER_ENVIRONMENT_VARIABLES.rabbitmqConf]: parameters.rabbitmqConf,
    [AZURE_BROKER_ENVIRONMENT_VARIABLES.enabledPluginsFile]: parameters.enabledPluginsFile,
    [AZURE_BROKER_ENVIRONMENT_VARIABLES.policyCommandsJson]: parameters.policyCommandsJson,
  };
}

/**
 * main.bicep's per-cluster parameters for one plan cluster, as the controller deploys it: the exact RabbitMQ version
 * (the plan's `rabbitmqVersion`, or the Azure default) and the broker configuration generated for the plan cluster's
 * topology and node count. Without them every plan cluster would get the controller's shared parameters, whatever
 * its topology.
 *
 * @throws Error naming the supported versions, or why the topology cannot run on the version.
 */
export function azurePlanClusterParameters(spec: {
  readonly nodes: number;
  readonly topology: QueueTopology;
  readonly rabbitmqVersion?: string;
}): AzureBrokerParameters & { readonly rabbitmqVersion: string } {
  const release = cloudRabbitmqVersion('azure', spec.rabbitmqVersion);
  if ('error' in release) throw new Error(release.error);
  const problem = topologyVersionProblem(spec.topology, release.version, spec.rabbitmqVersion === undefined);
  if (problem) throw new Error(problem);
  return {
    rabbitmqVersion: release.version,
    ...azureBrokerParameters({ topology: spec.topology, rabbitmqVersion: release.version, nodeCount: spec.nodes }),
  };
}
