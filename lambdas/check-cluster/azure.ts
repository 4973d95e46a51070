import { certificateFingerprint256 } from '../../core/cloud/self-signed-certificate';
import { type AzureClients, checkDeployment } from '../shared/azure-cluster';
import { azureLoadGeneratorResourceIds } from '../shared/azure-load-generators';
import { pinnedHttpsGet } from '../shared/pinned-tls';

/** What CheckClusterReady on Azure knows of the launch: its deadline, and the certificate LaunchCluster made. */
export interface AzureLaunch {
  readonly clusterId: string;
  readonly readyBy: string;
  readonly tlsCertificateFingerprint256?: string;
  /** Several load generators (issue 27): how many LaunchCluster deployed. @default 1 */
  readonly loadGenerators?: number;
}

/** The admin credentials the management API is asked with (the template parameters the controller deployed with). */
export interface ManagementCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * GET of a management API path over a connection pinned to the certificate; injectable for tests of the evaluation
 * alone.
 */
export type PinnedGet = (
  url: string,
  certificatePem: string,
  username: string,
  password: string,
  timeoutMs: number,
) => Promise<{ status: number; body: string }>;

/**
 * Whether `/api/nodes` (https://www.rabbitmq.com/docs/http-api-reference, GET /api/nodes: one entry per cluster
 * member, with `running`) shows one cluster of `expectedNodes` running nodes, and what it showed. The load
 * balancer hands the request to any node: a node that formed a cluster of its own lists only itself, so the count
 * is what tells one cluster of all nodes from several smaller ones.
 */
export function clusterFormed(body: string, expectedNodes: number): { formed: boolean; saw: string } {
  let nodes: unknown;
  try {
    nodes = JSON.parse(body);
  } catch {
    return { formed: false, saw: `/api/nodes answered something that is not JSON: ${body.slice(0, 120)}` };
  }
  if (!Array.isArray(nodes))
    return { formed: false, saw: `/api/nodes answered ${body.slice(0, 120)} instead of a list of nodes` };
  const listed = nodes.map((node) => ({
    name: String((node as { name?: unknown }).name),
    running: (node as { running?: unknown }).running === true,
  }));
  const running = listed
    .filter((node) => node.running)
    .map((node) => node.name)
    .sort();
  const stopped = listed
    .filter((node) => !node.running)
    .map((node) => node.name)
    .sort();
  const saw =
    `${running.length} of ${expectedNodes} expected node(s) running in the cluster that answered ` +
    `(${running.join(', ') || 'none'})${stopped.length > 0 ? `, not running: ${stopped.join(', ')}` : ''}`;
  return { formed: listed.length === expectedNodes && running.length === expectedNodes, saw };
}

/**
 * CheckClusterReady on Azure. ARM's Succeeded only says the VMs were provisioned: cloud-init installs and joins
 * RabbitMQ afterwards. So once the deployment succeeded, the cluster itself is asked, through the load balancer
 * (`managementHttpsUrl`, pinned to the deployment's certificate, which must be the one LaunchCluster made), whether
 * all `expectedNodes` run in one cluster. Not yet: `ready: false` with what it saw (the workflow waits and asks
 * again). Past `readyBy`: an error naming what it saw last, which leads to teardown.
 */
export async function checkAzureCluster(
  clients: AzureClients,
  launch: AzureLaunch,
  expectedNodes: number,
  /** A function when reading them may fail: a Kafka cluster (no management API) never calls it. */
  credentials: ManagementCredentials | (() => ManagementCredentials),
  now = new Date(),
  get: PinnedGet = pinnedHttpsGet,
  timeoutMs = 10_000,
): Promise<{ ready: boolean; status: string; outputs?: Record<string, string> }> {
  const deployment = await checkDeployment(clients, launch, now);
  if (!deployment.ready) return deployment;
  const outputs = deployment.outputs ?? {};
  // Several load generators: the deployment must list every VM, by index, in loadGeneratorResourceIds (StartRepetition
  // starts one Run Command on each); fewer is final, the deployment has succeeded.
  if ((launch.loadGenerators ?? 1) > 1)
    azureLoadGeneratorResourceIds(outputs, launch.clusterId, launch.loadGenerators ?? 1);
  // A Kafka cluster (bicep/main.bicep with broker: 'kafka') has no management API: its brokers are asked from the load
  // generator.
  if (outputs.kafkaBootstrapServers) {
    const { checkAzureKafkaReadiness } = await import('./azure-load-generator');
    return checkAzureKafkaReadiness(clients, launch, outputs, expectedNodes, now);
  }
  // A NATS cluster (broker: 'nats') likewise: its servers are asked from the load generator, on the client port.
  if (outputs.natsServerUrls) {
    const { checkAzureLoadGeneratorReadiness, NATS_READINESS } = await import('./azure-load-generator');
    return checkAzureLoadGeneratorReadiness(clients, launch, outputs, expectedNodes, NATS_READINESS, now);
  }
  const { username, password } = typeof credentials === 'function' ? credentials() : credentials;
  const { managementHttpsUrl, tlsCertificatePem } = outputs;
  if (!managementHttpsUrl || !tlsCertificatePem) {
    throw new Error(
      `deployment of ${launch.clusterId} has no managementHttpsUrl or tlsCertificatePem output: ` +
        `the cluster template must be deployed with publicLoadBalancer and a TLS certificate (LaunchCluster does)`,
    );
  }
  const presented = certificateFingerprint256(tlsCertificatePem);
  if (launch.tlsCertificateFingerprint256 !== undefined && presented !== launch.tlsCertificateFingerprint256) {
    throw new Error(
      `deployment of ${launch.clusterId} outputs certificate ${presented}, ` +
        `not the one LaunchCluster made for it (${launch.tlsCertificateFingerprint256})`,
    );
  }
  const url = `${managementHttpsUrl.replace(/\/+$/, '')}/api/nodes`;
  let saw: string;
  let formed = false;
  try {
    const response = await get(url, tlsCertificatePem, username, password, timeoutMs);
    if (response.status === 200) ({ formed, saw } = clusterFormed(response.body, expectedNodes));
    else saw = `GET ${url} answered ${response.status}: ${response.body.slice(0, 120)}`;
  } catch (error) {
    saw = `GET ${url} failed: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (formed) return { ready: true, status: `Succeeded; ${saw}`, outputs };
  if (now.getTime() > Date.parse(launch.readyBy)) {
    throw new Error(
      `cluster ${launch.clusterId} did not form by ${launch.readyBy} (the deployment succeeded); last seen: ${saw}`,
    );
  }
  return { ready: false, status: `deployment succeeded, cluster forming: ${saw}` };
}
