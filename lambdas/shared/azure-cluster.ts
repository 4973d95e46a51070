import { ComputeManagementClient } from '@azure/arm-compute';
import { ResourceManagementClient } from '@azure/arm-resources';
import type { TokenCredential } from '@azure/core-auth';
import { ClientSecretCredential } from '@azure/identity';
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { azureVmSize } from '../../core/cost/instance-type-names';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { sweepable, type CleanupCandidate, type RunStateLookup } from '../../core/cloud/cleanup';
import { EXPIRES_AT_TAG, RUN_ID_TAG } from './env';

/** The deployment of the cluster template inside a run's resource group (one per group). */
export const DEPLOYMENT_NAME = 'rmqbench-cluster';
/**
 * Microsoft.Resources/deployments API version (arm-resources 7 has no deployments client: the generic resources client
 * addresses it).
 */
export const DEPLOYMENTS_API_VERSION = '2024-03-01';

export interface AzureClients {
  readonly resources: ResourceManagementClient;
  readonly compute: ComputeManagementClient;
  /**
   * The ARM endpoint the clients send to, for requests no client covers (Azure Monitor metrics). @default
   * https://management.azure.com
   */
  readonly endpoint?: string;
}

/**
 * Where the ARM clients send their requests: `endpoint` replaces https://management.azure.com (sovereign clouds, a
 * local ARM emulator), `tlsOptions.ca` trusts its certificate.
 */
export interface AzureClientOptions {
  readonly endpoint?: string;
  readonly tlsOptions?: { readonly ca?: string };
}

/** The ARM clients of one subscription. */
export function azureClients(
  credential: TokenCredential,
  subscriptionId: string,
  clientOptions: AzureClientOptions = {},
): AzureClients {
  const options = {
    ...(clientOptions.endpoint ? { endpoint: clientOptions.endpoint } : {}),
    ...(clientOptions.tlsOptions ? { tlsOptions: { ...clientOptions.tlsOptions } } : {}),
  };
  return {
    resources: new ResourceManagementClient(credential, subscriptionId, options),
    compute: new ComputeManagementClient(credential, subscriptionId, options),
    endpoint: clientOptions.endpoint ?? 'https://management.azure.com',
  };
}

/**
 * Makes the token credential of a service principal from its secret's fields (a test gives one that needs no Entra ID).
 */
export type CredentialFactory = (tenantId: string, clientId: string, clientSecret: string) => TokenCredential;

/**
 * The service principal kept in Secrets Manager as JSON: `{ tenantId, clientId, clientSecret, subscriptionId }`,
 * optionally with `parameters`: the template's secret parameter values (rabbitmqAdminPassword, erlangCookie, ...).
 */

export async function azureCredentialFromSecret(
  secrets: SecretsManagerClient,
  secretId: string,
  credentialFor: CredentialFactory = (tenantId, clientId, clientSecret) =>
    new ClientSecretCredential(tenantId, clientId, clientSecret),
): Promise<{ credential: TokenCredential; subscriptionId: string; parameters: Record<string, unknown> }> {
  const response = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(response.SecretString ?? '') as Record<string, unknown>;
  } catch {
    throw new Error(`secret ${secretId} must be JSON with tenantId, clientId, clientSecret and subscriptionId`);
  }
  const missing = ['tenantId', 'clientId', 'clientSecret', 'subscriptionId'].filter(
    (key) => typeof value[key] !== 'string' || value[key] === '',
  );
  if (missing.length > 0)
    throw new Error(
      `secret ${secretId} lacks ${missing.join(', ')} ` +
        `(expected JSON with tenantId, clientId, clientSecret and subscriptionId)`,
    );
  const field = (key: string) => value[key] as string;
  const parameters =
    typeof value.parameters === 'object' && value.parameters !== null
      ? (value.parameters as Record<string, unknown>)
      : {};
  return {
    credential: credentialFor(field('tenantId'), field('clientId'), field('clientSecret')),
    subscriptionId: field('subscriptionId'),
    parameters,
  };
}

export interface AzureClusterConfig {
  /** Azure region of the resource groups, e.g. `westeurope`. */
  readonly location: string;
  /** The compiled ARM JSON of bicep/main.bicep (or any template taking `instanceCount` and `tags`). */
  readonly template: Record<string, unknown>;
  /** Parameter values every cluster shares (admin key, broker configuration, ...), as plain values. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly expiryHours: number;
  readonly launchTimeoutMinutes: number;
  /**
   * Public IPv4 addresses of the controller (its NAT gateway): when given, the cluster gets a public load balancer
   * (`publicLoadBalancer: true`) whose NSG admits these as `<ip>/32` besides the `allowedSourceAddressPrefixes` given.
   */
  readonly controllerEgressAddresses?: readonly string[];
}

/**
 * The deployment's parameter values: the shared ones, the node count, the plan cluster's VM size (`clusterVmSize`, when
 * it names one) and tags, and the controller's access when it has egress addresses.
 */
export function deploymentParameterValues(
  config: AzureClusterConfig,
  instanceCount: number,
  tags: Record<string, string>,
  instanceType?: string,
  planClusterParameters: Record<string, unknown> = {},
): Record<string, unknown> {
  const values: Record<string, unknown> = {
    ...config.parameters,
    ...planClusterParameters,
    instanceCount,
    ...(instanceType === undefined ? {} : { clusterVmSize: azureVmSize(instanceType) }),
    tags,
  };
  const egress = config.controllerEgressAddresses ?? [];
  if (egress.length === 0) return values;
  const given = values.allowedSourceAddressPrefixes ?? [];
  if (!Array.isArray(given) || !given.every((prefix) => typeof prefix === 'string'))
    throw new Error('template parameter allowedSourceAddressPrefixes must be an array of address prefixes');
  return {
    ...values,
    publicLoadBalancer: true,
    allowedSourceAddressPrefixes: [...new Set([...(given as string[]), ...egress.map((address) => `${address}/32`)])],
  };
}

/**
 * Creates the run's resource group (tagged with the run id and expiry, which the safety nets look
 * for) and submits the template deployment into it; CheckClusterReady polls the deployment.
 */
/**
 * `planClusterParameters` are the plan cluster's own template parameters (core/cloud/azure-cloud-init.ts
 * azurePlanClusterParameters: its RabbitMQ version and broker configuration), which take precedence over the shared
 * ones.
 */
export async function launchResourceGroup(
  clients: AzureClients,
  config: AzureClusterConfig,
  runId: string,
  cluster: ScheduledCluster,
  now = new Date(),
  planClusterParameters: Record<string, unknown> = {},
) {
  const expiresAt = new Date(now.getTime() + config.expiryHours * 3_600_000).toISOString();
  const tags = { [RUN_ID_TAG]: runId, [EXPIRES_AT_TAG]: expiresAt };
  await clients.resources.resourceGroups.createOrUpdate(cluster.clusterId, { location: config.location, tags });
  const parameters = Object.fromEntries(
    Object.entries(
      deploymentParameterValues(config, cluster.nodes, tags, cluster.instanceType, planClusterParameters),
    ).map(([name, value]) => [name, { value }]),
  );
  // Only submitted here (the first poll sends the PUT); a Lambda does not wait the minutes a deployment takes.
  await clients.resources.resources.beginCreateOrUpdate(
    cluster.clusterId,
    'Microsoft.Resources',
    '',
    'deployments',
    DEPLOYMENT_NAME,
    DEPLOYMENTS_API_VERSION,
    {
      properties: { mode: 'Incremental', template: config.template, parameters },
    },
  );
  return {
    clusterId: cluster.clusterId,
    readyBy: new Date(now.getTime() + config.launchTimeoutMinutes * 60_000).toISOString(),
    expiresAt,
  };
}

/** An ARM error with its nested details (ErrorResponse of the deployments API). */
export interface ArmErrorDetail {
  readonly code?: string;
  readonly message?: string;
  readonly details?: readonly ArmErrorDetail[];
}

/** The characters of a failed deployment's error kept in the run's error. */
const DEPLOYMENT_ERROR_LIMIT = 2_000;

/**
 * A failed deployment's error as text, the most specific causes first: ARM's top-level error of a deployment whose
 * resource failed is the generic DeploymentFailed "At least one resource deployment operation failed. Please list
 * deployment operations for details", and the cause is in its `details`, nested per module deployment and resource
 * (https://learn.microsoft.com/azure/azure-resource-manager/troubleshooting/find-error-code, "Deployment errors"). The
 * group is deleted at teardown with its deployment operations, so the run's error must carry them. Each distinct
 * `code: message` once, deepest first, cut at DEPLOYMENT_ERROR_LIMIT characters.
 */
export function deploymentErrorText(error: ArmErrorDetail | undefined): string {
  const found: { depth: number; text: string }[] = [];
  const visit = (detail: ArmErrorDetail, depth: number) => {
    const text = [detail.code, detail.message].filter(Boolean).join(': ');
    if (text && !found.some((one) => one.text === text)) found.push({ depth, text });
    if (depth < 10) for (const inner of detail.details ?? []) visit(inner, depth + 1);
  };
  if (error) visit(error, 0);
  const joined = found
    .sort((a, b) => b.depth - a.depth)
    .map((one) => one.text)
    .join(' | ');
  if (!joined) return 'no reason given';
  return joined.length > DEPLOYMENT_ERROR_LIMIT ? `${joined.slice(0, DEPLOYMENT_ERROR_LIMIT)}…` : joined;
}

/**
 * Ready once the deployment Succeeded (outputs flattened to strings); Failed / Canceled, or a passed deadline, is an
 * error that leads to teardown.
 */
export async function checkDeployment(
  clients: AzureClients,
  launch: { clusterId: string; readyBy: string },
  now = new Date(),
) {
  const deployment = await clients.resources.resources.get(
    launch.clusterId,
    'Microsoft.Resources',
    '',
    'deployments',
    DEPLOYMENT_NAME,
    DEPLOYMENTS_API_VERSION,
  );
  const properties = (deployment.properties ?? {}) as {
    provisioningState?: string;
    outputs?: Record<string, { value?: unknown }>;
    error?: ArmErrorDetail;
  };
  const status = properties.provisioningState ?? 'Unknown';
  if (status === 'Succeeded') {
    const outputs = Object.fromEntries(
      Object.entries(properties.outputs ?? {}).map(([key, output]) => [
        key,
        typeof output.value === 'string' ? output.value : JSON.stringify(output.value),
      ]),
    );
    return { ready: true, status, outputs };
  }
  if (['Failed', 'Canceled'].includes(status))
    throw new Error(
      `deployment ${DEPLOYMENT_NAME} in resource group ${launch.clusterId} is ${status}: ` +
        deploymentErrorText(properties.error),
    );
  if (now.getTime() > Date.parse(launch.readyBy))
    throw new Error(
      `resource group ${launch.clusterId} was not ready by ${launch.readyBy} (deployment still ${status})`,
    );
  return { ready: false, status };
}

/**
 * A managed Run Command to start: its resource name on the VM, the script, the values it gets as protected parameters,
 * and its timeout.
 */
export interface RunCommandRequest {
  readonly name: string;
  readonly script: string;
  /** Reach the script as environment variables on Linux; ARM never returns them (see startRunCommand). */
  readonly protectedParameters: readonly { readonly name: string; readonly value: string }[];
  readonly timeoutInSeconds: number;
}

/** Where a started managed Run Command lives: what checkRunCommand polls. */
export interface StartedRunCommand {
  readonly resourceGroup: string;
  readonly vmName: string;
  readonly runCommandName: string;
}

/**
 * Starts a script on the load generator as a *managed* Run Command (a `virtualMachines/runCommands` resource),
 * not the action Run Command (`virtualMachines/runCommand` POST): only the managed one takes `protectedParameters`,
 * "Use ProtectedParameter to pass any sensitive inputs to script such as passwords, keys etc." and, on Linux, hands
 * named parameters to the script as environment variables
 * (learn.microsoft.com/azure/virtual-machines/linux/run-command-managed).
 * `asyncExecution` lets provisioning finish once the script starts, so neither this call nor the PUT's long-running
 * operation waits for PerfTest; checkRunCommand reads the script's state from the instance view. The resource is
 * tracked, so its location is the VM's (VirtualMachineRunCommand extends TrackedResource in @azure/arm-compute).
 */
export async function startRunCommand(
  clients: AzureClients,
  resourceGroup: string,
  vmName: string,
  request: RunCommandRequest,
): Promise<StartedRunCommand> {
  const vm = await clients.compute.virtualMachines.get(resourceGroup, vmName);
  const poller = clients.compute.virtualMachineRunCommands.createOrUpdate(resourceGroup, vmName, request.name, {
    location: vm.location,
    source: { script: request.script },
    protectedParameters: request.protectedParameters.map(({ name, value }) => ({ name, value })),
    asyncExecution: true,
    timeoutInSeconds: request.timeoutInSeconds,
  });
  await poller.submitted();
  return { resourceGroup, vmName, runCommandName: request.name };
}

/**
 * Execution states of a managed Run Command that are final (KnownExecutionState in @azure/arm-compute: Unknown,
 * Pending, Running are not).
 */
const FINAL_EXECUTION_STATES = ['Succeeded', 'Failed', 'TimedOut', 'Canceled'];

/**
 * One poll of a started managed Run Command (GET with `$expand=instanceView`): not done yet, or its outcome with the
 * script's stdout / stderr (the instance view keeps their last 4 KB, which is all the error message needs; the raw
 * files travel through the uploads). `Succeeded` with a non-zero exit code is a failure too. A provisioning failure
 * (the
 * VM agent could not start the script) ends it as well. Once done, the resource is deleted without waiting: the
 * protected parameters it holds outlive their use no longer than that (the resource group's teardown removes it
 * anyway). `deleteWhenDone: false` leaves that to the caller (deleteRunCommand): several load generators' commands are
 * polled together until the last is done, so a finished one must still answer the next poll.
 */
export async function checkRunCommand(
  clients: AzureClients,
  started: StartedRunCommand,
  deleteWhenDone = true,
): Promise<{ done: false } | { done: true; succeeded: boolean; stdout: string; stderr: string }> {
  const command = await clients.compute.virtualMachineRunCommands.getByVirtualMachine(
    started.resourceGroup,
    started.vmName,
    started.runCommandName,
    { expand: 'instanceView' },
  );
  const view = command.instanceView;
  const state = view?.executionState ?? 'Unknown';
  const provisioningFailed = command.provisioningState === 'Failed';
  if (!provisioningFailed && !FINAL_EXECUTION_STATES.includes(state)) return { done: false };
  const succeeded = !provisioningFailed && state === 'Succeeded' && (view?.exitCode ?? 0) === 0;
  const stderr =
    view?.error ||
    (succeeded
      ? ''
      : `Run Command ${started.runCommandName} ended ${provisioningFailed ? 'with provisioning state Failed' : state}` +
        `${view?.exitCode === undefined ? '' : ` (exit code ${view.exitCode})`}` +
        `${view?.executionMessage ? `: ${view.executionMessage}` : ''}`);
  if (deleteWhenDone) await deleteRunCommand(clients, started);
  return { done: true, succeeded, stdout: view?.output ?? '', stderr };
}

/** Deletes a finished managed Run Command without waiting (see checkRunCommand); best effort. */
export async function deleteRunCommand(clients: AzureClients, started: StartedRunCommand): Promise<void> {
  try {
    await clients.compute.virtualMachineRunCommands
      .delete(started.resourceGroup, started.vmName, started.runCommandName)
      .submitted();
  } catch {
    // Best effort: the resource group's teardown deletes it too.
  }
}

/**
 * Deletes the resource group and everything in it, polling for up to `waitMs` (a Lambda cannot wait
 * for the whole deletion; ARM finishes it anyway). A group that does not exist counts as deleted.
 */
export async function deleteResourceGroup(
  clients: AzureClients,
  name: string,
  waitMs: number,
  updateIntervalInMs?: number,
): Promise<{ deleted: boolean }> {
  try {
    const poller = await clients.resources.resourceGroups.beginDelete(
      name,
      updateIntervalInMs === undefined ? {} : { updateIntervalInMs },
    );
    await poller.pollUntilDone({ abortSignal: AbortSignal.timeout(waitMs) });
    return { deleted: true };
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return { deleted: true };
    if ((error as { name?: string }).name === 'AbortError') return { deleted: false };
    throw error;
  }
}

/** Resource groups launched for one run (the failure rule deletes them); ARM filters by the tag. */
export async function resourceGroupsOfRun(clients: AzureClients, runId: string): Promise<string[]> {
  const names: string[] = [];
  for await (const group of clients.resources.resourceGroups.list({
    filter: `tagName eq '${RUN_ID_TAG}' and tagValue eq '${runId.replace(/'/g, "''")}'`,
  })) {
    if (group.name && group.properties?.provisioningState !== 'Deleting') names.push(group.name);
  }
  return names;
}

/** Resource groups of this controller (name prefix) whose expiry tag has passed: the hourly sweeper deletes them. */
export async function expiredResourceGroups(
  clients: AzureClients,
  prefix: string,
  now = new Date(),
  runStateOf?: RunStateLookup,
): Promise<string[]> {
  return (await sweepable(await controllerResourceGroups(clients, prefix), (group) => group, now, runStateOf)).map(
    (group) => group.name,
  );
}

/**
 * This controller's resource groups (name prefix, with an expiry tag; ARM filters by the tag) as the shared clean-up
 * rule sees them.
 */
export async function controllerResourceGroups(clients: AzureClients, prefix: string): Promise<CleanupCandidate[]> {
  const groups: CleanupCandidate[] = [];
  for await (const group of clients.resources.resourceGroups.list({ filter: `tagName eq '${EXPIRES_AT_TAG}'` })) {
    if (!group.name?.startsWith(prefix)) continue;
    const runId = group.tags?.[RUN_ID_TAG];
    const expiresAt = group.tags?.[EXPIRES_AT_TAG];
    const state = group.properties?.provisioningState;
    groups.push({
      kind: 'resource-group',
      name: group.name,
      ...(runId ? { runId } : {}),
      ...(expiresAt ? { expiresAt } : {}),
      ...(state ? { state } : {}),
      beingDeleted: state === 'Deleting',
    });
  }
  return groups;
}

/** The VM name at the end of an ARM resource id (`.../virtualMachines/<name>`). */
export function vmNameFromResourceId(resourceId: string): string {
  const name = /\/virtualMachines\/([^/]+)$/i.exec(resourceId)?.[1];
  if (!name)
    throw new Error(
      `expected a virtual machine resource id (…/providers/Microsoft.Compute/virtualMachines/<name>), ` +
        `got "${resourceId}"`,
    );
  return name;
}
