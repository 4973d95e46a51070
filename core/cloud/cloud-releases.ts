import type { QueueTopology } from '../plan/plan-schema';
import { supportsClassicMirroring, versionMatches } from '../broker/rabbitmq-version';

/**
 * The RabbitMQ releases the cloud targets install, and what a plan cluster without `rabbitmqVersion` gets on each.
 * AWS: the BenchmarkController ships one cluster template per release (cdk/BenchmarkController.ts CONTROLLER_RELEASES,
 * kept equal to this list by a test). Azure: bicep/cloud-init/rmqbench-node-setup.sh installs the exact version from
 * Team RabbitMQ's apt repositories with the Erlang that release supports. Pure: no I/O.
 */
export const CLOUD_RABBITMQ_VERSIONS: readonly string[] = ['3.13.7', '4.1.4'];

/**
 * The release a plan cluster without `rabbitmqVersion` runs: RabbitMqCluster's default on AWS, main.bicep's
 * `rabbitmqVersion` default on Azure.
 */
export const DEFAULT_CLOUD_RABBITMQ_VERSION: Readonly<Record<'aws' | 'azure', string>> = {
  aws: '4.1.4',
  azure: '3.13.7',
};

/** The exact version a plan cluster installs on a cloud target, or an error that names what is supported. */
export function cloudRabbitmqVersion(
  target: 'aws' | 'azure',
  wanted: string | undefined,
): { version: string } | { error: string } {
  if (wanted === undefined) return { version: DEFAULT_CLOUD_RABBITMQ_VERSION[target] };
  const version = CLOUD_RABBITMQ_VERSIONS.find((candidate) => versionMatches(wanted, candidate));
  return version === undefined
    ? {
        error:
          `target ${target} installs RabbitMQ ${CLOUD_RABBITMQ_VERSIONS.join(' or ')}, not ${wanted} ` +
          `(give "major.minor" or the exact version)`,
      }
    : { version };
}

/** Why `topology` cannot run on `version` (classic mirroring was removed in 4.0), or undefined when it can. */
export function topologyVersionProblem(
  topology: QueueTopology,
  version: string,
  defaulted: boolean,
): string | undefined {
  if (topology.type !== 'mirrored' || supportsClassicMirroring(version)) return undefined;
  return (
    `classic queue mirroring was removed in RabbitMQ 4.0 and this cluster would run ` +
    `${version}${defaulted ? " (the target's default)" : ''}: set rabbitmqVersion to "3.13" or use "quorum"`
  );
}
