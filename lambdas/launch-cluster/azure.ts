import { selfSignedCertificate } from '../../core/cloud/self-signed-certificate';
import { assertNoWorldOpenSourcePrefixes } from '../../core/cloud/source-prefixes';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { type AzureClients, type AzureClusterConfig, launchResourceGroup } from '../shared/azure-cluster';

/**
 * How long the certificate outlives the cluster's expiry tag: the hourly sweeper may delete the group up to this late.
 */
const CERTIFICATE_GRACE_MS = 24 * 3_600_000;

/**
 * The configuration one Azure launch deploys with: the shared one, refused if its source prefixes open the
 * cluster to the world (core/cloud/source-prefixes.ts; main.bicep refuses them too), plus a certificate and key made
 * for this deployment alone. The key only ever travels as the @secure() `tlsPrivateKeyPem` parameter (ARM
 * does not return secure parameters); the certificate is public and comes back as the `tlsCertificatePem`
 * output, which the smoke test pins after checking it against `tlsCertificateFingerprint256`.
 */
export function azureLaunchConfig(
  config: AzureClusterConfig,
  clusterId: string,
  now = new Date(),
): { config: AzureClusterConfig; tlsCertificateFingerprint256: string } {
  assertRabbitmqSecrets(config.parameters);
  const given = config.parameters.allowedSourceAddressPrefixes ?? [];
  if (!Array.isArray(given) || !given.every((prefix): prefix is string => typeof prefix === 'string')) {
    throw new Error(
      'template parameter allowedSourceAddressPrefixes must be an array of address prefixes (e.g. ["203.0.113.7/32"])',
    );
  }
  const egress = config.controllerEgressAddresses ?? [];
  const notIpv4 = egress.filter((address) => !/^(\d{1,3}\.){3}\d{1,3}$/.test(address));
  if (notIpv4.length > 0)
    throw new Error(
      `CONTROLLER_EGRESS_ADDRESSES must be IPv4 addresses without a prefix length (each becomes <ip>/32); ` +
        `refused: ${notIpv4.join(', ')}`,
    );
  assertNoWorldOpenSourcePrefixes([...given, ...egress.map((address) => `${address}/32`)]);
  const expiresAt = now.getTime() + config.expiryHours * 3_600_000;
  const certificate = selfSignedCertificate({
    commonName: `rmqbench ${clusterId}`.slice(0, 64),
    notAfter: new Date(expiresAt + CERTIFICATE_GRACE_MS),
    now,
  });
  return {
    config: {
      ...config,
      parameters: {
        ...config.parameters,
        tlsCertificatePem: certificate.certificatePem,
        tlsPrivateKeyPem: certificate.privateKeyPem,
      },
    },
    tlsCertificateFingerprint256: certificate.fingerprint256,
  };
}

/**
 * main.bicep's RabbitMQ-only secure parameters, with the shortest value it accepts for a rabbitmq deployment (its
 * rabbitmqSecretsChecked refuses shorter ones by name): what a RabbitMQ launch needs and a Kafka launch never sends.
 */
export const RABBITMQ_SECRET_PARAMETERS = { rabbitmqAdminPassword: 12, erlangCookie: 20 } as const;

/**
 * Refuses a RabbitMQ launch whose shared parameters lack a RabbitMQ secret (or hold one main.bicep would refuse),
 * before
 * anything is created, naming the parameter and where it comes from, never its value.
 */
export function assertRabbitmqSecrets(parameters: Readonly<Record<string, unknown>>): void {
  const problems = Object.entries(RABBITMQ_SECRET_PARAMETERS).flatMap(([name, minimum]) => {
    const value = parameters[name];
    if (value === undefined || value === '') return [`${name} is missing`];
    if (typeof value !== 'string') return [`${name} must be a string`];
    return value.length < minimum
      ? [`${name} must be at least ${minimum} characters (main.bicep refuses shorter ones)`]
      : [];
  });
  if (problems.length > 0) {
    throw new Error(
      `a RabbitMQ cluster on Azure needs its secrets as template parameters: ${problems.join('; ')}. ` +
        `Put them in the \`parameters\` of the Azure service principal secret (AZURE_CREDENTIALS_SECRET_ARN); ` +
        `a Kafka cluster needs neither.`,
    );
  }
}

/**
 * Launches an Azure cluster with its own certificate (see `azureLaunchConfig`). The result goes into the
 * workflow state: it carries the certificate's fingerprint, never the key. An error from ARM is re-thrown as
 * a plain message (the SDK's error object holds the request, whose body has the key). With the plan cluster's
 * `loadGenerators` above 1 (issue 27) main.bicep's `loadGeneratorCount` deploys that many load generator VMs, and the
 * result carries the count for CheckClusterReady; with 1 the parameter is left to main.bicep's default, 1, as before.
 */
export async function launchAzureCluster(
  clients: AzureClients,
  config: AzureClusterConfig,
  runId: string,
  cluster: ScheduledCluster,
  now = new Date(),
  planClusterParameters: Record<string, unknown> = {},
  loadGenerators = 1,
) {
  const launch = azureLaunchConfig(config, cluster.clusterId, now);
  const several = loadGenerators > 1 ? { loadGeneratorCount: loadGenerators } : {};
  try {
    const result = await launchResourceGroup(clients, launch.config, runId, cluster, now, {
      ...planClusterParameters,
      ...several,
    });
    return {
      ...result,
      tlsCertificateFingerprint256: launch.tlsCertificateFingerprint256,
      ...(loadGenerators > 1 ? { loadGenerators } : {}),
    };
  } catch (error) {
    throw launchError(cluster.clusterId, error, launch.config.parameters);
  }
}

/**
 * main.bicep's @secure() parameters: ARM does not return them, and no error message re-thrown here carries them either.
 */
const SECURE_PARAMETERS = ['tlsPrivateKeyPem', 'rabbitmqAdminPassword', 'erlangCookie'] as const;

/**
 * An ARM error as a plain message naming the resource group, every secure parameter value replaced by its name (raw and
 * JSON-escaped, in case a message quotes the request body).
 */
function launchError(clusterId: string, error: unknown, parameters: Readonly<Record<string, unknown>>): Error {
  const message = error instanceof Error ? error.message : String(error);
  const redacted = SECURE_PARAMETERS.reduce((text, name) => {
    const value = parameters[name];
    if (typeof value !== 'string' || value === '') return text;
    return [value, JSON.stringify(value).slice(1, -1)].reduce(
      (current, secret) => current.split(secret).join(`<${name}>`),
      text,
    );
  }, message);
  return new Error(`launching resource group ${clusterId} failed: ${redacted}`);
}

/**
 * Launches a Kafka or NATS plan cluster on Azure: bicep/main.bicep with `broker: 'kafka'` (modules/kafka-cluster.bicep:
 * KRaft brokers at static private IPs, PLAINTEXT inside the VNet) or `broker: 'nats'` (modules/nats-cluster.bicep:
 * JetStream servers at static private IPs, no authentication inside the VNet, with the plan cluster's sync interval),
 * neither behind a load balancer. Unlike the RabbitMQ launch it makes no certificate and no public load balancer
 * (main.bicep refuses `publicLoadBalancer` with either): the controller's egress addresses are added only when no
 * source prefix is given (privateClusterSources), since the nodes are reached only from the load generator in the
 * same VNet (through managed Run Command), and the RabbitMQ
 * broker texts and secrets are not sent (optional in main.bicep with kafka or nats, which then creates no RabbitMQ
 * secret). The source prefixes are still checked, as main.bicep's network module takes them for every broker.
 */
export async function launchAzurePrivateCluster(
  clients: AzureClients,
  config: AzureClusterConfig,
  runId: string,
  cluster: ScheduledCluster,
  planClusterParameters: { broker: 'kafka' | 'nats'; natsSyncInterval?: string },
  now = new Date(),
) {
  const given = config.parameters.allowedSourceAddressPrefixes ?? [];
  if (!Array.isArray(given) || !given.every((prefix): prefix is string => typeof prefix === 'string')) {
    throw new Error(
      'template parameter allowedSourceAddressPrefixes must be an array of address prefixes (e.g. ["203.0.113.7/32"])',
    );
  }
  assertNoWorldOpenSourcePrefixes(given);
  // Without egress addresses deploymentParameterValues leaves publicLoadBalancer to its default, false. The RabbitMQ
  // secrets the shared parameters may hold (for the RabbitMQ clusters of the same controller) are left out: main.bicep
  // creates no such secret with broker kafka or nats, and a value never sent cannot end up in the vault, the
  // deployment or an error message.
  const parameters = Object.fromEntries(
    Object.entries(config.parameters).filter(([name]) => !(name in RABBITMQ_SECRET_PARAMETERS)),
  );
  if (given.length === 0) parameters['allowedSourceAddressPrefixes'] = privateClusterSources(config);
  const privateConfig: AzureClusterConfig = { ...config, parameters, controllerEgressAddresses: [] };
  try {
    return await launchResourceGroup(clients, privateConfig, runId, cluster, now, planClusterParameters);
  } catch (error) {
    throw launchError(cluster.clusterId, error, config.parameters);
  }
}

/**
 * The source prefixes of a Kafka or NATS deployment whose shared parameters give none: main.bicep takes at least one
 * (allowedSourceAddressPrefixes, @minLength(1), for its network module's NSG rule on the client ports), and a RabbitMQ
 * launch always adds the controller's egress addresses, so a secret may rightly give none; the Azure twin's Kafka
 * run failed so ("The provided value '[]' ... Length of the value should be greater than or equal to '1'"). The
 * controller's own addresses as /32 are sent instead: that rule opens RabbitMQ's client ports only (plainClientPorts
 * without a public load balancer), where nothing listens on a broker or server VM, and these VMs have no public
 * address.
 */
function privateClusterSources(config: AzureClusterConfig): string[] {
  const egress = config.controllerEgressAddresses ?? [];
  if (egress.length === 0)
    throw new Error(
      'template parameter allowedSourceAddressPrefixes is empty and the controller has no egress address to put ' +
        'there: main.bicep takes at least one source prefix (e.g. ["203.0.113.7/32"])',
    );
  return egress.map((address) => `${address}/32`);
}

/** A Kafka plan cluster on Azure (launchAzurePrivateCluster with broker kafka). */
export function launchAzureKafkaCluster(
  clients: AzureClients,
  config: AzureClusterConfig,
  runId: string,
  cluster: ScheduledCluster,
  now = new Date(),
) {
  return launchAzurePrivateCluster(clients, config, runId, cluster, { broker: 'kafka' }, now);
}

/**
 * A NATS plan cluster on Azure (launchAzurePrivateCluster with broker nats): its `syncInterval`, when the plan sets
 * one, becomes main.bicep's natsSyncInterval (the module's default otherwise, nats-server's own 2m).
 */
export function launchAzureNatsCluster(
  clients: AzureClients,
  config: AzureClusterConfig,
  runId: string,
  cluster: ScheduledCluster,
  syncInterval: string | undefined,
  now = new Date(),
) {
  return launchAzurePrivateCluster(
    clients,
    config,
    runId,
    cluster,
    { broker: 'nats', ...(syncInterval === undefined ? {} : { natsSyncInterval: syncInterval }) },
    now,
  );
}
