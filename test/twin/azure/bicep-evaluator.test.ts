import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { azureBrokerParameters } from '../../../core/cloud/azure-cloud-init';
import { DEPLOYMENT_NAME, deploymentParameterValues } from '../../../lambdas/shared/azure-cluster';
import type { AzureClusterConfig } from '../../../lambdas/shared/azure-cluster';
import {
  BicepDeploymentError,
  UnsupportedBicepError,
  evaluateDeployment,
  runtimePlaceholder,
  type DeploymentContext,
  type EvaluatedDeployment,
  type EvaluatedResource,
  type RuntimeLookup,
} from './bicep-evaluator';

const CONTEXT: DeploymentContext = {
  subscriptionId: '3f2c5a10-0000-4000-8000-000000000001',
  tenantId: '3f2c5a10-0000-4000-8000-000000000002',
  resourceGroup: 'rmqbench-run42-c1',
  location: 'westeurope',
  deploymentName: DEPLOYMENT_NAME,
};
const GROUP_ID = `/subscriptions/${CONTEXT.subscriptionId}/resourceGroups/${CONTEXT.resourceGroup}`;
const BROKER = azureBrokerParameters({
  topology: { type: 'mirrored', mirrorTo: 'all' },
  rabbitmqVersion: '3.13.7',
  nodeCount: 3,
});
const SECRETS = { rabbitmqAdminPassword: 'correct-horse-battery', erlangCookie: 'ERLANGCOOKIE0123456789' };
const TLS = {
  tlsCertificatePem: '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n',
  tlsPrivateKeyPem: '-----BEGIN PRIVATE KEY-----\nMIIEfake\n-----END PRIVATE KEY-----\n',
};
/** The controller's shared template parameters (its service principal secret's `parameters`). */
const SHARED = {
  adminSshPublicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheTwin rmqbench',
  allowedSourceAddressPrefixes: ['203.0.113.0/28'],
  ...SECRETS,
};
const EGRESS = ['198.51.100.7', '198.51.100.8'];
/** A cloud-init template's {{NAME}} placeholder (the templates' comments mention `{{...}}`). */
const PLACEHOLDER = /\{\{[A-Z0-9_]+\}\}/;
const IDENTITY = 'Microsoft.ManagedIdentity/userAssignedIdentities';

/**
 * What launch-cluster sends for a 3-node RabbitMQ plan cluster (deploymentParameterValues with the plan's broker
 * texts and the run's tags); with controller egress addresses also its certificate, and publicLoadBalancer true.
 */
function rabbitmqLaunch(egress: readonly string[] = []): Record<string, unknown> {
  const config: AzureClusterConfig = {
    location: CONTEXT.location,
    template: {},
    parameters: egress.length > 0 ? { ...SHARED, ...TLS } : SHARED,
    expiryHours: 4,
    launchTimeoutMinutes: 30,
    controllerEgressAddresses: egress,
  };
  return deploymentParameterValues(config, 3, { 'rmqbench-run-id': 'run42' }, undefined, {
    rabbitmqVersion: '3.13.7',
    ...BROKER,
  });
}

/** What the Kafka launch sends: no broker texts, no RabbitMQ secrets, no certificate. */
function kafkaLaunch(): Record<string, unknown> {
  return {
    adminSshPublicKey: SHARED.adminSshPublicKey,
    allowedSourceAddressPrefixes: ['203.0.113.0/28'],
    broker: 'kafka',
  };
}

const deploy = (parameters: Record<string, unknown>, runtime?: RuntimeLookup) =>
  evaluateDeployment(parameters, CONTEXT, runtime ? { runtime } : {});

async function refusal(parameters: Record<string, unknown>): Promise<BicepDeploymentError> {
  const error = await deploy(parameters).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(BicepDeploymentError);
  expect((error as BicepDeploymentError).code).toBe('InvalidTemplate');
  return error as BicepDeploymentError;
}

function all(deployment: EvaluatedDeployment, type: string): EvaluatedResource[] {
  return deployment.resources.filter((resource) => resource.type === type && !resource.existing);
}

function only(deployment: EvaluatedDeployment, type: string, symbolicName?: string): EvaluatedResource {
  const found = all(deployment, type).filter(
    (resource) => symbolicName === undefined || resource.symbolicName === symbolicName,
  );
  expect(found.map((resource) => resource.name)).toHaveLength(1);
  return found[0] as EvaluatedResource;
}

/** The user-assigned identity a module creates: 'cluster' (the nodes') or 'loadGenerator'. */
function identityOf(deployment: EvaluatedDeployment, module: string): EvaluatedResource {
  const found = all(deployment, IDENTITY).filter((resource) => resource.modulePath[0] === module);
  expect(found).toHaveLength(1);
  return found[0] as EvaluatedResource;
}

function dig(value: unknown, ...path: (string | number)[]): unknown {
  return path.reduce<unknown>(
    (current, key) => (current as Record<string | number, unknown> | undefined)?.[key],
    value,
  );
}

const decode = (base64: unknown): string => Buffer.from(base64 as string, 'base64').toString('utf8');

/** The files a VM's customData (#cloud-config) writes, decoded. */
function cloudConfigFiles(customData: unknown): { text: string; files: Record<string, string> } {
  const text = decode(customData);
  const config = parseYaml(text) as { write_files: { path: string; encoding?: string; content: string }[] };
  const files = Object.fromEntries(
    config.write_files.map((file) => [file.path, file.encoding === 'b64' ? decode(file.content) : file.content]),
  );
  return { text, files };
}

const scaleSetCustomData = (deployment: EvaluatedDeployment) =>
  dig(
    only(deployment, 'Microsoft.Compute/virtualMachineScaleSets').body,
    'properties',
    'virtualMachineProfile',
    'osProfile',
    'customData',
  );

const securityRule = (deployment: EvaluatedDeployment, name: string) =>
  (
    dig(only(deployment, 'Microsoft.Network/networkSecurityGroups').body, 'properties', 'securityRules') as {
      name: string;
      properties: Record<string, unknown>;
    }[]
  ).find((rule) => rule.name === name)?.properties;

const ruleNames = (balancer: EvaluatedResource) =>
  (dig(balancer.body, 'properties', 'loadBalancingRules') as { name: string }[]).map((rule) => rule.name);

/** The runtime values of the public-load-balancer tests: the nodes' clientId, the public IP, the LB frontend IP. */
const publicRuntime: RuntimeLookup = (resource, property) => {
  const last = property.at(-1);
  if (resource.type === IDENTITY && last === 'clientId') {
    return resource.modulePath[0] === 'cluster' ? '11111111-2222-3333-4444-555555555555' : undefined;
  }
  if (resource.type === 'Microsoft.Network/publicIPAddresses' && last === 'ipAddress') return '20.50.60.70';
  if (resource.type === 'Microsoft.Network/loadBalancers' && last === 'privateIPAddress') return '10.20.1.4';
  return undefined;
};

/** Small templates written to this run's TMPDIR. */
let dir: string | undefined;
const template = (name: string, source: string): string => {
  dir ??= mkdtempSync(join(tmpdir(), 'bicep-evaluator-'));
  const path = join(dir, name);
  writeFileSync(path, source);
  return path;
};
const evaluateFile = (file: string, parameters: Record<string, unknown> = {}, runtime?: RuntimeLookup) =>
  evaluateDeployment(parameters, CONTEXT, runtime ? { file, runtime } : { file });

describe('main.bicep for a RabbitMQ launch (internal load balancer): the scale set', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch());
  });

  test('deploys a Flexible scale set of instanceCount 3 over the three zones, with the nodes identity', () => {
    const scaleSet = only(deployment, 'Microsoft.Compute/virtualMachineScaleSets');
    const identity = identityOf(deployment, 'cluster');
    expect(scaleSet).toMatchObject({ modulePath: ['cluster'], name: 'rmqbench-vmss', apiVersion: '2024-07-01' });
    expect(scaleSet.id).toBe(`${GROUP_ID}/providers/Microsoft.Compute/virtualMachineScaleSets/rmqbench-vmss`);
    expect(scaleSet.body).toMatchObject({
      location: 'westeurope',
      zones: ['1', '2', '3'],
      sku: { name: 'Standard_D2s_v5', capacity: 3 },
      tags: { 'rmqbench-run-id': 'run42' },
      identity: { type: 'UserAssigned', userAssignedIdentities: { [identity.id]: {} } },
      properties: { orchestrationMode: 'Flexible' },
    });
    expect(Object.keys(scaleSet.body)).not.toEqual(expect.arrayContaining(['name', 'dependsOn']));
  });

  test("the scale set's customData is a #cloud-config writing the broker files and node.env, names evaluated", () => {
    const { text, files } = cloudConfigFiles(scaleSetCustomData(deployment));
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    expect(text).not.toMatch(PLACEHOLDER);
    expect(files['/etc/rmqbench/rabbitmq.conf']).toBe(BROKER.rabbitmqConf);
    expect(files['/etc/rmqbench/policy-commands.json']).toBe(BROKER.policyCommandsJson);
    const identity = identityOf(deployment, 'cluster');
    const env = files['/etc/rmqbench/node.env'] as string;
    expect(env).toBe(
      [
        `KEY_VAULT_NAME=${deployment.outputs.keyVaultName as string}`,
        'ERLANG_COOKIE_SECRET_NAME=rabbitmq-erlang-cookie',
        'ADMIN_PASSWORD_SECRET_NAME=rabbitmq-admin-password',
        'RABBITMQ_ADMIN_USERNAME=rmqbench-admin',
        'RABBITMQ_VERSION=3.13.7',
        // The identity's clientId is a runtime value: without a runtime, a GUID derived from its id and property.
        `IDENTITY_CLIENT_ID=${runtimePlaceholder(identity.id, ['properties', 'clientId'])}`,
        'SCALE_SET_NAME=rmqbench-vmss',
        'HEALTH_PORT=8081',
        'AMQP_PORT=5672',
        'MANAGEMENT_PORT=15672',
        'TLS_CERTIFICATE_SECRET_NAME=',
        'TLS_PRIVATE_KEY_SECRET_NAME=',
        'AMQPS_PORT=5671',
        'MANAGEMENT_TLS_PORT=15671',
        '',
      ].join('\n'),
    );
    expect(deployment.outputs.keyVaultName).toMatch(/^kv[a-z2-7]{13}$/);
    for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
  });
});

describe('main.bicep for a RabbitMQ launch: the NSG and the internal load balancer', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch());
  });

  test('the NSG admits the allowed prefixes to plain AMQP and management, the load generator to all ports', () => {
    expect(securityRule(deployment, 'AllowClientPortsFromAllowedSources')).toMatchObject({
      sourceAddressPrefixes: ['203.0.113.0/28'],
      destinationAddressPrefix: '10.20.1.0/24',
      destinationPortRanges: ['5672', '15672'],
      access: 'Allow',
      priority: 100,
    });
    expect(securityRule(deployment, 'AllowClientPortsFromLoadGenerator')).toMatchObject({
      sourceAddressPrefix: '10.20.2.0/24',
      // NATS's client port too (bicep/modules/network.bicep: a NATS cluster's servers take the load generator there).
      destinationPortRanges: ['5672', '5671', '15672', '15671', '4222'],
    });
    expect(securityRule(deployment, 'AllowHealthProbeFromLoadBalancer')).toMatchObject({
      destinationPortRange: '8081',
    });
    expect(securityRule(deployment, 'DenySshFromInternet')).toMatchObject({
      access: 'Deny',
      destinationPortRange: '22',
    });
  });

  test('only the internal load balancer exists; its rules and probe name its own frontend, pool and probe ids', () => {
    const balancer = only(deployment, 'Microsoft.Network/loadBalancers');
    expect(balancer.name).toBe('rmqbench-lb');
    expect(all(deployment, 'Microsoft.Network/publicIPAddresses').map((ip) => ip.name)).toEqual(['rmqbench-nat-pip']);
    expect(ruleNames(balancer)).toEqual(['tcp-5672', 'tcp-15672']);
    expect(dig(balancer.body, 'properties', 'loadBalancingRules', 0, 'properties')).toMatchObject({
      frontendIPConfiguration: { id: `${balancer.id}/frontendIPConfigurations/rabbitmq` },
      backendAddressPool: { id: `${balancer.id}/backendAddressPools/rabbitmq-nodes` },
      probe: { id: `${balancer.id}/probes/rabbitmq-serving` },
      idleTimeoutInMinutes: 30,
    });
    expect(dig(balancer.body, 'properties', 'probes', 0)).toMatchObject({
      properties: { protocol: 'Http', port: 8081, requestPath: '/healthz' },
    });
    const vnet = only(deployment, 'Microsoft.Network/virtualNetworks');
    expect(dig(balancer.body, 'properties', 'frontendIPConfigurations', 0, 'properties', 'subnet', 'id')).toBe(
      `${vnet.id}/subnets/cluster`,
    );
  });
});

describe('main.bicep for a RabbitMQ launch: the vault, identities and role assignments', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch());
  });

  test('the vault holds the given secure values as child secrets (vault/secret names, ARM child ids)', () => {
    const vault = only(deployment, 'Microsoft.KeyVault/vaults');
    const vnet = only(deployment, 'Microsoft.Network/virtualNetworks');
    expect(vault.name).toBe(deployment.outputs.keyVaultName);
    expect(vault.body).toMatchObject({
      properties: {
        tenantId: CONTEXT.tenantId,
        enableRbacAuthorization: true,
        networkAcls: {
          defaultAction: 'Deny',
          virtualNetworkRules: [{ id: `${vnet.id}/subnets/cluster` }, { id: `${vnet.id}/subnets/loadgen` }],
        },
      },
    });
    // `enablePurgeProtection: enablePurgeProtection ? true : null`: ARM leaves a null property out.
    expect(dig(vault.body, 'properties')).not.toHaveProperty('enablePurgeProtection');
    const secrets = all(deployment, 'Microsoft.KeyVault/vaults/secrets');
    expect(secrets.map((secret) => [secret.name, secret.id, dig(secret.body, 'properties', 'value')])).toEqual([
      [`${vault.name}/rabbitmq-erlang-cookie`, `${vault.id}/secrets/rabbitmq-erlang-cookie`, SECRETS.erlangCookie],
      [
        `${vault.name}/rabbitmq-admin-password`,
        `${vault.id}/secrets/rabbitmq-admin-password`,
        SECRETS.rabbitmqAdminPassword,
      ],
    ]);
  });

  test('each identity gets Key Vault Secrets User scoped to the vault; the nodes also get Reader on the group', () => {
    const vault = only(deployment, 'Microsoft.KeyVault/vaults');
    const assignments = all(deployment, 'Microsoft.Authorization/roleAssignments');
    const identities = all(deployment, IDENTITY);
    expect(identities.map((identity) => [identity.modulePath, identity.name])).toEqual([
      [['cluster'], 'rmqbench-nodes-id'],
      [['loadGenerator'], 'rmqbench-loadgen-id'],
    ]);
    const roleOf = (id: string) =>
      `/subscriptions/${CONTEXT.subscriptionId}/providers/Microsoft.Authorization/roleDefinitions/${id}`;
    const principalOf = (identity: EvaluatedResource) => runtimePlaceholder(identity.id, ['properties', 'principalId']);
    const [nodes, loadgen] = identities as [EvaluatedResource, EvaluatedResource];
    expect(
      assignments.map((assignment) => [
        assignment.scope,
        dig(assignment.body, 'properties', 'principalId'),
        dig(assignment.body, 'properties', 'roleDefinitionId'),
      ]),
    ).toEqual([
      [vault.id, principalOf(nodes), roleOf('4633458b-17de-408a-b874-0445c86b69e6')],
      [undefined, principalOf(nodes), roleOf('acdd72a7-3385-48ef-bd42-f606fba81ae7')],
      [vault.id, principalOf(loadgen), roleOf('4633458b-17de-408a-b874-0445c86b69e6')],
    ]);
    const [toVault, reader] = assignments as [EvaluatedResource, EvaluatedResource];
    expect(toVault.id).toBe(`${vault.id}/providers/Microsoft.Authorization/roleAssignments/${toVault.name}`);
    expect(reader.id).toBe(`${GROUP_ID}/providers/Microsoft.Authorization/roleAssignments/${reader.name}`);
    expect(toVault.name).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The existing vault each module references is listed, marked existing, with the vault's id.
    const existing = deployment.resources.filter((resource) => resource.existing);
    expect(existing.map((resource) => [resource.modulePath[0], resource.id])).toEqual([
      ['cluster', vault.id],
      ['loadGenerator', vault.id],
    ]);
  });
});

describe('main.bicep for a RabbitMQ launch: the load generator and the outputs', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch());
  });

  test("the load generator VM boots PerfTest's #cloud-config in zone 1 behind its own NIC and identity", () => {
    const vm = only(deployment, 'Microsoft.Compute/virtualMachines');
    const nic = only(deployment, 'Microsoft.Network/networkInterfaces');
    const loadgenIdentity = identityOf(deployment, 'loadGenerator');
    expect(vm).toMatchObject({ name: 'rmqbench-loadgen', modulePath: ['loadGenerator'] });
    expect(vm.body).toMatchObject({
      zones: ['1'],
      identity: { userAssignedIdentities: { [loadgenIdentity.id]: {} } },
      properties: {
        hardwareProfile: { vmSize: 'Standard_F16s_v2' },
        networkProfile: { networkInterfaces: [{ id: nic.id }] },
      },
    });
    const { text, files } = cloudConfigFiles(dig(vm.body, 'properties', 'osProfile', 'customData'));
    expect(text.startsWith('#cloud-config')).toBe(true);
    expect(text).not.toMatch(PLACEHOLDER);
    expect(Object.keys(files).length).toBeGreaterThan(0);
    expect(deployment.outputs.loadGeneratorResourceId).toBe(vm.id);
    expect(deployment.outputs.loadGeneratorIdentityClientId).toBe(
      runtimePlaceholder(loadgenIdentity.id, ['properties', 'clientId']),
    );
  });

  test('outputs: ids and names evaluated; endpoints through the dynamic frontend IP are runtime placeholders', () => {
    const balancer = only(deployment, 'Microsoft.Network/loadBalancers');
    const frontendIp = `<runtime:${balancer.id}.properties.frontendIPConfigurations.0.properties.privateIPAddress>`;
    expect(deployment.outputs).toEqual({
      amqpEndpoint: `amqp://${frontendIp}:5672`,
      managementUrl: `http://${frontendIp}:15672`,
      amqpsEndpoint: '',
      managementHttpsUrl: '',
      tlsCertificatePem: '',
      tlsCertificateSecretName: '',
      tlsPrivateKeySecretName: '',
      scaleSetResourceId: only(deployment, 'Microsoft.Compute/virtualMachineScaleSets').id,
      loadGeneratorResourceId: only(deployment, 'Microsoft.Compute/virtualMachines').id,
      loadGeneratorResourceIds: [only(deployment, 'Microsoft.Compute/virtualMachines').id],
      kafkaBrokerResourceIds: [],
      clusterVmSize: 'Standard_D2s_v5',
      loadGeneratorVmSize: 'Standard_F16s_v2',
      loadBalancerResourceId: balancer.id,
      keyVaultName: expect.stringMatching(/^kv/),
      adminPasswordSecretName: 'rabbitmq-admin-password',
      loadGeneratorIdentityClientId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      kafkaBootstrapServers: '',
      // A RabbitMQ launch deploys no NATS servers (bicep/modules/nats-cluster.bicep is for broker 'nats').
      natsServerResourceIds: [],
      natsServerUrls: '',
    });
  });

  test('guid() and uniqueString() are deterministic: the same group gives the same names, another others', async () => {
    expect(await deploy(rabbitmqLaunch())).toEqual(deployment);
    const other = await evaluateDeployment(rabbitmqLaunch(), { ...CONTEXT, resourceGroup: 'rmqbench-run43-c1' });
    expect(other.outputs.keyVaultName).not.toBe(deployment.outputs.keyVaultName);
    const assignmentNames = (of: EvaluatedDeployment) =>
      all(of, 'Microsoft.Authorization/roleAssignments').map((assignment) => assignment.name);
    expect(assignmentNames(other)).not.toEqual(assignmentNames(deployment));
  });
});

describe('main.bicep with a public load balancer (controller egress addresses, a certificate): the network', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch(EGRESS), publicRuntime);
  });

  test('the NSG admits the given prefixes and each controller address as /32 on the TLS ports only', () => {
    expect(securityRule(deployment, 'AllowClientPortsFromAllowedSources')).toMatchObject({
      sourceAddressPrefixes: ['203.0.113.0/28', '198.51.100.7/32', '198.51.100.8/32'],
      destinationPortRanges: ['5671', '15671'],
    });
  });

  test('the public load balancer forwards only 5671 and 15671 from a zonal static IP, internal all four', () => {
    const ip = only(deployment, 'Microsoft.Network/publicIPAddresses', 'publicIp');
    expect(ip).toMatchObject({ name: 'rmqbench-lb-pip', modulePath: ['cluster'] });
    expect(ip.body).toMatchObject({ zones: ['1', '2', '3'], properties: { publicIPAllocationMethod: 'Static' } });
    const external = only(deployment, 'Microsoft.Network/loadBalancers', 'publicLoadBalancerResource');
    const internal = only(deployment, 'Microsoft.Network/loadBalancers', 'loadBalancer');
    expect(dig(external.body, 'properties', 'frontendIPConfigurations', 0, 'properties', 'publicIPAddress', 'id')).toBe(
      ip.id,
    );
    expect(ruleNames(external)).toEqual(['tcp-5671', 'tcp-15671']);
    expect(ruleNames(internal)).toEqual(['tcp-5672', 'tcp-15672', 'tcp-5671', 'tcp-15671']);
    const ipConfiguration = dig(
      only(deployment, 'Microsoft.Compute/virtualMachineScaleSets').body,
      ...['properties', 'virtualMachineProfile', 'networkProfile', 'networkInterfaceConfigurations', 0, 'properties'],
      ...['ipConfigurations', 0, 'properties'],
    );
    expect(dig(ipConfiguration, 'loadBalancerBackendAddressPools')).toEqual([
      { id: `${internal.id}/backendAddressPools/rabbitmq-nodes` },
      { id: `${external.id}/backendAddressPools/rabbitmq-nodes` },
    ]);
  });
});

describe('main.bicep with a public load balancer: the TLS secrets', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch(EGRESS), publicRuntime);
  });

  test('the TLS certificate and key become vault secrets, and node.env names them', () => {
    const secrets = all(deployment, 'Microsoft.KeyVault/vaults/secrets');
    expect(secrets.map((secret) => [secret.symbolicName, dig(secret.body, 'properties', 'value')])).toEqual([
      ['erlangCookieSecret', SECRETS.erlangCookie],
      ['adminPasswordSecret', SECRETS.rabbitmqAdminPassword],
      ['tlsCertificateSecret', TLS.tlsCertificatePem],
      ['tlsPrivateKeySecret', TLS.tlsPrivateKeyPem],
    ]);
    const env = cloudConfigFiles(scaleSetCustomData(deployment)).files['/etc/rmqbench/node.env'];
    expect(env).toContain('\nTLS_CERTIFICATE_SECRET_NAME=rabbitmq-tls-certificate\n');
    expect(env).toContain('\nTLS_PRIVATE_KEY_SECRET_NAME=rabbitmq-tls-private-key\n');
    // The runtime's clientId for the nodes' identity, not a placeholder.
    expect(env).toContain('\nIDENTITY_CLIENT_ID=11111111-2222-3333-4444-555555555555\n');
    expect(cloudConfigFiles(scaleSetCustomData(deployment)).text).not.toContain('MIIEfake');
  });
});

describe('main.bicep with a public load balancer: outputs and optional assignments', () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(rabbitmqLaunch(EGRESS), publicRuntime);
  });

  test("outputs take the runtime's addresses: AMQP inside the VNet, AMQPS through the public IP", () => {
    expect(deployment.outputs).toMatchObject({
      amqpEndpoint: 'amqp://10.20.1.4:5672',
      managementUrl: 'http://10.20.1.4:15672',
      amqpsEndpoint: 'amqps://20.50.60.70:5671',
      managementHttpsUrl: 'https://20.50.60.70:15671',
      tlsCertificatePem: TLS.tlsCertificatePem,
      tlsCertificateSecretName: 'rabbitmq-tls-certificate',
      tlsPrivateKeySecretName: 'rabbitmq-tls-private-key',
    });
    // Not answered by the runtime: the load generator identity's clientId falls back to its placeholder GUID.
    const loadgenIdentity = identityOf(deployment, 'loadGenerator');
    expect(deployment.outputs.loadGeneratorIdentityClientId).toBe(
      runtimePlaceholder(loadgenIdentity.id, ['properties', 'clientId']),
    );
  });

  test('faultPrincipalId adds Virtual Machine Contributor for that principal on the resource group', async () => {
    const principal = '0d1e2f30-aaaa-4bbb-8ccc-000000000099';
    const withFault = await deploy({ ...rabbitmqLaunch(EGRESS), faultPrincipalId: principal });
    const assignment = only(withFault, 'Microsoft.Authorization/roleAssignments', 'faultRunCommandAssignment');
    expect(assignment.modulePath).toEqual([]);
    expect(assignment.body).toMatchObject({
      properties: {
        principalId: principal,
        roleDefinitionId:
          `/subscriptions/${CONTEXT.subscriptionId}/providers/Microsoft.Authorization/roleDefinitions/` +
          '9980e02c-c2be-4d73-94e8-173b1dc7cf3c',
      },
    });
    expect(deployment.resources.map((resource) => resource.symbolicName)).not.toContain('faultRunCommandAssignment');
  });
});

describe("main.bicep with broker 'kafka'", () => {
  let deployment: EvaluatedDeployment;
  beforeAll(async () => {
    deployment = await deploy(kafkaLaunch());
  });

  test('deploys one VM per broker at static private IPs from cidrHost (host 0 = first usable), one per zone', () => {
    const nics = all(deployment, 'Microsoft.Network/networkInterfaces').filter(
      (nic) => nic.modulePath[0] === 'kafkaCluster',
    );
    const brokers = all(deployment, 'Microsoft.Compute/virtualMachines').filter(
      (vm) => vm.modulePath[0] === 'kafkaCluster',
    );
    expect(
      nics.map((nic) => dig(nic.body, 'properties', 'ipConfigurations', 0, 'properties', 'privateIPAddress')),
    ).toEqual(['10.20.1.100', '10.20.1.101', '10.20.1.102']);
    expect(brokers.map((vm) => [vm.symbolicName, vm.name, vm.body.zones])).toEqual([
      ['brokers', 'rmqbench-kafka-1', ['1']],
      ['brokers', 'rmqbench-kafka-2', ['2']],
      ['brokers', 'rmqbench-kafka-3', ['3']],
    ]);
    expect(brokers.map((vm) => dig(vm.body, 'properties', 'networkProfile', 'networkInterfaces', 0, 'id'))).toEqual(
      nics.map((nic) => nic.id),
    );
    const second = cloudConfigFiles(dig(brokers[1]?.body, 'properties', 'osProfile', 'customData'));
    expect(second.text).not.toMatch(PLACEHOLDER);
    const env = Object.values(second.files).find((content) => content.startsWith('NODE_ID='));
    expect(env).toContain('NODE_ID=2\nBROKER_HOSTS=10.20.1.100,10.20.1.101,10.20.1.102\nCLIENT_PORT=9092\n');
    expect(env).toContain(`\nCLUSTER_SEED=${GROUP_ID}/rmqbench-kafka\n`);
  });

  test('in a cluster subnet under a /25 the brokers start at .4, the first address Azure lets a NIC take', async () => {
    const small = await deploy({
      ...kafkaLaunch(),
      vnetAddressPrefix: '10.91.52.0/25',
      clusterSubnetPrefix: '10.91.52.0/26',
      loadGeneratorSubnetPrefix: '10.91.52.64/26',
    });
    expect(small.outputs['kafkaBootstrapServers']).toBe('10.91.52.4:9092,10.91.52.5:9092,10.91.52.6:9092');
    const nats = await deploy({ ...kafkaLaunch(), broker: 'nats', clusterSubnetPrefix: '10.20.1.0/25' });
    // A /25 still holds host 99 (.100), as the default /24 does.
    expect(nats.outputs['natsServerUrls']).toBe(
      'nats://10.20.1.100:4222,nats://10.20.1.101:4222,nats://10.20.1.102:4222',
    );
  });

  test('a /29 cluster subnet holds three brokers: five are refused by name', async () => {
    const error = await refusal({ ...kafkaLaunch(), clusterSubnetPrefix: '10.20.1.0/29', instanceCount: 5 });
    expect(error.message).toContain(
      "The template variable 'brokerFirstHostNumber' is not valid: clusterSubnetPrefix 10.20.1.0/29 has room for 3 " +
        'kafka static addresses',
    );
    const three = await deploy({ ...kafkaLaunch(), clusterSubnetPrefix: '10.20.1.0/29' });
    expect(three.outputs['kafkaBootstrapServers']).toBe('10.20.1.4:9092,10.20.1.5:9092,10.20.1.6:9092');
  });

  test('no scale set, no load balancer, no RabbitMQ secret; outputs name the brokers', () => {
    expect(all(deployment, 'Microsoft.Compute/virtualMachineScaleSets')).toEqual([]);
    expect(all(deployment, 'Microsoft.Network/loadBalancers')).toEqual([]);
    expect(all(deployment, 'Microsoft.KeyVault/vaults/secrets')).toEqual([]);
    expect(deployment.resources.some((resource) => resource.modulePath[0] === 'cluster')).toBe(false);
    const brokers = all(deployment, 'Microsoft.Compute/virtualMachines').filter((vm) => vm.symbolicName === 'brokers');
    expect(deployment.outputs).toMatchObject({
      amqpEndpoint: '',
      scaleSetResourceId: '',
      loadBalancerResourceId: '',
      adminPasswordSecretName: '',
      kafkaBrokerResourceIds: brokers.map((vm) => vm.id),
      kafkaBootstrapServers: '10.20.1.100:9092,10.20.1.101:9092,10.20.1.102:9092',
    });
  });

  test("publicLoadBalancer true is refused with the template's fail() message", async () => {
    const error = await refusal({ ...kafkaLaunch(), ...TLS, publicLoadBalancer: true });
    expect(error.message).toContain(
      "The template variable 'publicLoadBalancerChecked' is not valid: publicLoadBalancer is true, but broker is kafka",
    );
  });
});

describe("main.bicep's fail() checks stop the deployment with their message", () => {
  test.each([
    ['a world-open prefix', { allowedSourceAddressPrefixes: ['203.0.113.0/28', '0.0.0.0/0'] }, 'refused: 0.0.0.0/0.'],
    ['the Internet service tag', { allowedSourceAddressPrefixes: [' Internet'] }, 'refused:  Internet.'],
    [
      'AzureCloud of a region',
      { allowedSourceAddressPrefixes: ['AzureCloud.westeurope'] },
      'refused: AzureCloud.westeurope.',
    ],
    [
      'a prefix shorter than /8',
      { allowedSourceAddressPrefixes: ['10.0.0.0/7', '::/0'] },
      'refused: 10.0.0.0/7, ::/0.',
    ],
  ])('allowedSourceAddressPrefixes with %s', async (_, change, refused) => {
    const error = await refusal({ ...rabbitmqLaunch(), ...change });
    expect(error.message).toContain(
      "The template variable 'checkedSourcePrefixes' is not valid: allowedSourceAddressPrefixes must not open the " +
        `cluster to the world; ${refused}`,
    );
  });

  test('a /8 prefix and a /32 address are accepted', async () => {
    const deployment = await deploy({
      ...rabbitmqLaunch(),
      allowedSourceAddressPrefixes: ['10.0.0.0/8', '203.0.113.9'],
    });
    expect(securityRule(deployment, 'AllowClientPortsFromAllowedSources')?.sourceAddressPrefixes).toEqual([
      '10.0.0.0/8',
      '203.0.113.9',
    ]);
  });

  test.each([
    [
      'publicLoadBalancer without TLS',
      { publicLoadBalancer: true },
      'publicLoadBalancer is true, so tlsCertificatePem',
    ],
    ['a certificate without its key', { tlsCertificatePem: TLS.tlsCertificatePem }, 'go together: give both'],
    ['a key without its certificate', { tlsPrivateKeyPem: TLS.tlsPrivateKeyPem }, 'go together: give both'],
    ['a short admin password', { rabbitmqAdminPassword: 'pw-0123' }, 'rabbitmqAdminPassword is required: at least 12'],
    ['a short Erlang cookie', { erlangCookie: 'cookie-0123' }, 'erlangCookie is required: at least 20 characters'],
    ['no rabbitmqConf', { rabbitmqConf: '' }, 'broker is rabbitmq, so rabbitmqConf is required'],
    ['no enabledPluginsFile', { enabledPluginsFile: '' }, 'broker is rabbitmq, so enabledPluginsFile is required'],
    ['no policyCommandsJson', { policyCommandsJson: '' }, 'broker is rabbitmq, so policyCommandsJson is required'],
    [
      'accelerated networking off with a Dsv5 size',
      { acceleratedNetworking: false },
      'acceleratedNetworking is false, but Standard_D2s_v5 is a Dsv5 or Esv5 size',
    ],
  ])('%s', async (_, change, message) => {
    const error = await refusal({ ...rabbitmqLaunch(), ...change });
    expect(error.message).toContain(message);
    for (const value of Object.values(change))
      if (typeof value === 'string' && value !== '') expect(error.message).not.toContain(value);
  });

  test('accelerated networking off is accepted with Fsv2 sizes', async () => {
    const deployment = await deploy({
      ...rabbitmqLaunch(),
      acceleratedNetworking: false,
      clusterVmSize: 'Standard_F4s_v2',
      loadGeneratorVmSize: 'Standard_F8s_v2',
    });
    expect(dig(scaleSetCustomData(deployment), 'length')).toBeGreaterThan(0);
    expect(
      dig(only(deployment, 'Microsoft.Network/networkInterfaces').body, 'properties', 'enableAcceleratedNetworking'),
    ).toBe(false);
  });
});

describe('parameters are validated as ARM validates them, naming the parameter', () => {
  test.each([
    [
      'a required parameter missing',
      { adminSshPublicKey: undefined },
      "The value for the template parameter 'adminSshPublicKey' is not provided.",
    ],
    [
      'a value not @allowed',
      { clusterVmSize: 'Standard_B1s' },
      "The provided value 'Standard_B1s' for the template parameter 'clusterVmSize' is not valid. " +
        'The parameter value ' +
        "is not part of the allowed value(s): 'Standard_D2s_v5,Standard_D4s_v5,",
    ],
    [
      'an int above @maxValue',
      { instanceCount: 8 },
      "'instanceCount' is not valid. The value should be less than or equal to '7'.",
    ],
    [
      'an int below @minValue',
      { instanceCount: 0 },
      "'instanceCount' is not valid. The value should be greater than or equal to '1'.",
    ],
    [
      'a string under @minLength',
      { namePrefix: 'ab' },
      "'namePrefix' is not valid. Length of the value should be greater than or equal to '3'.",
    ],
    [
      'a string over @maxLength',
      { namePrefix: 'rmqbenchtoolong' },
      "Length of the value should be less than or equal to '12'.",
    ],
    [
      'an empty array under @minLength',
      { allowedSourceAddressPrefixes: [] },
      "parameter 'allowedSourceAddressPrefixes' is not valid.",
    ],
    [
      'a string for an int',
      { instanceCount: '3' },
      "Expected a value of type 'Int', but received a value of type 'String'.",
    ],
    [
      'an object for an array',
      { availabilityZones: { zone: '1' } },
      "'availabilityZones' is not valid. Expected a value of type 'Array'",
    ],
    [
      'a string for a bool',
      { publicLoadBalancer: 'true' },
      "Expected a value of type 'Bool', but received a value of type 'String'.",
    ],
    [
      'an unknown parameter',
      { foo: 'bar' },
      "The template parameters 'foo' in the parameters file are not valid; they are not present in the original " +
        'template',
    ],
  ])('%s', async (_, change, message) => {
    const error = await refusal({ ...rabbitmqLaunch(), ...change });
    expect(error.message).toContain(message);
  });

  test("a @secure() parameter's value is not repeated in its error", async () => {
    const error = await refusal({ ...rabbitmqLaunch(), rabbitmqAdminPassword: 123456789012345 });
    expect(error.message).toContain(
      "The provided value for the template parameter 'rabbitmqAdminPassword' is not valid.",
    );
    expect(error.message).not.toContain('123456789012345');
  });
});

describe("main.bicep's user-defined parameter types are checked as ARM checks them, before anything deploys", () => {
  test.each([
    [
      'an availability zone as a number, not a string',
      { availabilityZones: [1, 2, 3] },
      "The provided value '[1,2,3]' for the template parameter 'availabilityZones' is not valid. The value at '[0]' " +
        "is not part of the allowed value(s): '1,2,3'.",
    ],
    [
      'an availability zone a region does not have',
      { availabilityZones: ['1', '4'] },
      "The value at '[1]' is not part",
    ],
    [
      'a single address prefix instead of an array',
      { allowedSourceAddressPrefixes: '203.0.113.0/28' },
      "'allowedSourceAddressPrefixes' is not valid. Expected a value of type 'Array', but received a value of type " +
        "'String'.",
    ],
    [
      'an address prefix that is not a string',
      { allowedSourceAddressPrefixes: ['203.0.113.0/28', 7] },
      "Expected a value of type 'String' at '[1]', but received a value of type 'Int'.",
    ],
    [
      'a tag value that is not a string',
      { tags: { 'rmqbench:run-id': 42 } },
      "'tags' is not valid. Expected a value of type 'String' at '['rmqbench:run-id']', but received a value of type " +
        "'Int'.",
    ],
    [
      'tags as an array',
      { tags: ['run42'] },
      "Expected a value of type 'Object', but received a value of type 'Array'",
    ],
  ])('%s is refused', async (_, change, message) => {
    const error = await refusal({ ...rabbitmqLaunch(), ...change });
    expect(error.message).toContain(message);
  });

  test('what the launches send fits the types: zones as strings, the run tags, the prefixes', async () => {
    const launch: Record<string, unknown> = { ...rabbitmqLaunch(EGRESS), availabilityZones: ['1', '3'] };
    expect(launch.tags).toEqual({ 'rmqbench-run-id': 'run42' });
    const deployment = await deploy(launch);
    const scaleSet = deployment.resources.find((r) => r.type === 'Microsoft.Compute/virtualMachineScaleSets');
    expect(scaleSet?.body.zones).toEqual(['1', '3']);
    expect(scaleSet?.body.tags).toEqual({ 'rmqbench-run-id': 'run42' });
    await expect(deploy(kafkaLaunch())).resolves.toBeDefined();
  });

  test("a module's typed parameter is checked too (the secrets module's allowedSubnetResourceIds)", async () => {
    const deployment = await deploy(rabbitmqLaunch());
    const vault = deployment.resources.find((r) => r.type === 'Microsoft.KeyVault/vaults');
    const rules = (vault?.body.properties as { networkAcls: { virtualNetworkRules: { id: string }[] } }).networkAcls;
    expect(rules.virtualNetworkRules.map((rule) => typeof rule.id)).toEqual(['string', 'string']);
  });
});

describe('the evaluator on small templates: user-defined types', () => {
  const typed = (): string =>
    template(
      'typed.bicep',
      [
        "import { sizeType } from 'shared-types.bicep'",
        'param server serverType',
        'param labels labelsType = {}',
        'param sizes sizeType[] = [1]',
        'param note string?',
        'output name string = server.name',
        'output port int = server.?port ?? 5672',
        "output note string = note ?? 'none'",
        '',
        "@description('A server.')",
        'type serverType = {',
        "  @description('Required. Its name.')",
        '  name: string',
        "  @description('Optional. Its port.')",
        '  port: int?',
        "  @description('Optional. Its role.')",
        "  role: ('primary' | 'replica')?",
        '}',
        '',
        '@sealed()',
        'type labelsType = {',
        '  team: string?',
        '}',
      ].join('\n'),
    );
  beforeAll(() => {
    template('shared-types.bicep', "@export()\n@description('A size.')\ntype sizeType = 1 | 2 | 4\n");
  });

  test('a value that fits: optional properties and a nullable parameter left out, an imported type', async () => {
    const deployment = await evaluateFile(typed(), { server: { name: 'a', extra: true }, sizes: [2, 4] });
    expect(deployment.outputs).toEqual({ name: 'a', port: 5672, note: 'none' });
  });

  test.each([
    [
      'a missing required property',
      { server: { port: 1 } },
      "The provided value '{\"port\":1}' for the template parameter 'server' is not valid. The value is missing the " +
        "required property 'name'.",
    ],
    ['a property of the wrong type', { server: { name: 'a', port: '1' } }, "type 'Int' at 'port', but received"],
    [
      'a property outside its literal union',
      { server: { name: 'a', role: 'leader' } },
      "The value at 'role' is not part of the allowed value(s): 'primary,replica'.",
    ],
    [
      'an unknown property of a sealed type',
      { server: { name: 'a' }, labels: { owner: 'x' } },
      "The property 'owner' is not allowed: the object type is sealed (its properties: 'team').",
    ],
    [
      "an imported union's member missing",
      { server: { name: 'a' }, sizes: [3] },
      "The value at '[0]' is not part of the allowed value(s): '1,2,4'.",
    ],
    [
      'null for a required object parameter',
      { server: null },
      "Expected a value of type 'Object', but received a value of type 'Null'.",
    ],
  ])('%s is refused', async (_, parameters, message) => {
    const error = await evaluateFile(typed(), parameters).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BicepDeploymentError);
    expect((error as Error).message).toContain(message);
  });

  test('a type imported that its file does not export is refused as unsupported', async () => {
    template('private-types.bicep', 'type hiddenType = string\n');
    const file = template('imports.bicep', "import { hiddenType } from 'private-types.bicep'\nparam p hiddenType");
    const error = await evaluateFile(file, { p: 'x' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnsupportedBicepError);
    expect((error as Error).message).toContain("imports.bicep: 'hiddenType' is not an exported type");
  });
});

describe('the evaluator on small templates: operators and arrays', () => {
  test('member access binds tighter than operators (tree-sitter-bicep nests them the other way round)', async () => {
    const file = template(
      'precedence.bicep',
      [
        'param flag bool = false',
        "var object = { inner: { value: 'deep' }, on: true, list: [ 1, 2 ] }",
        "output viaTernary string = flag ? 'x' : object.inner.value",
        'output negated bool = !object.on',
        'output indexed int = 10 - object.list[1]',
        'output arithmetic int = 1 + 2 * 3 - 8 / 3 % 2',
        "output logic bool = 1 + 1 == 2 && 'a' < 'b' || false",
        "output coalesced string = object.?missing ?? 'fallback'",
        // Inside an array literal the grammar reads `list[1]` as two items, `list` and `[1]`.
        'output picked array = [',
        '  object.list[1]',
        '  object.list[0] + 10',
        ']',
        'output pickedInline array = [object.list[0], object.list]',
      ].join('\n'),
    );
    expect((await evaluateFile(file)).outputs).toEqual({
      viaTernary: 'deep',
      negated: false,
      indexed: 8,
      arithmetic: 7,
      logic: true,
      coalesced: 'fallback',
      picked: [2, 11],
      pickedInline: [1, [1, 2]],
    });
  });
});

describe('the evaluator on small templates: loops and modules', () => {
  test('loops, child names, skipped conditions and module outputs; module parameters are validated too', async () => {
    template(
      'child.bicep',
      ['@maxValue(3)', 'param size int', "output greeting string = 'size ${size} in ${deployment().name}'"].join('\n'),
    );
    const file = template(
      'parent.bicep',
      [
        'param count int = 2',
        "resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = { name: 'acct', location: 'here' }",
        "resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [",
        '  for (item, i) in range(0, count): {',
        "  name: 'acct/default/c${i}'",
        '}]',
        "resource skipped 'Microsoft.Storage/storageAccounts@2023-05-01' = if (count > 5) { name: 'never' }",
        "module child 'child.bicep' = { name: 'child-deploy', params: { size: count } }",
        'output fromChild string = child.outputs.greeting',
        'output ids array = [for i in range(0, count): containers[i].id]',
      ].join('\n'),
    );
    const deployment = await evaluateFile(file);
    expect(deployment.resources.map((resource) => resource.name)).toEqual([
      'acct',
      'acct/default/c0',
      'acct/default/c1',
    ]);
    expect(deployment.outputs).toEqual({
      fromChild: 'size 2 in child-deploy',
      ids: [0, 1].map(
        (i) => `${GROUP_ID}/providers/Microsoft.Storage/storageAccounts/acct/blobServices/default/containers/c${i}`,
      ),
    });
    const error = await evaluateFile(file, { count: 4 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BicepDeploymentError);
    expect((error as Error).message).toContain(
      "The provided value '4' for the template parameter 'size' is not valid.",
    );
    expect((error as Error).message).toContain('(module child, child.bicep)');
  });
});

describe('the evaluator on small templates: runtime values and unsupported syntax', () => {
  test("a runtime property nobody answers is a placeholder naming it; a skipped resource's is an error", async () => {
    const file = template(
      'runtime.bicep',
      [
        'param withSecond bool = false',
        "resource ip 'Microsoft.Network/publicIPAddresses@2024-05-01' = { name: 'pip' }",
        "resource second 'Microsoft.Network/publicIPAddresses@2024-05-01' = if (withSecond) { name: 'pip2' }",
        'output address string = ip.properties.ipAddress',
        "output secondAddress string = withSecond ? '' : second.properties.ipAddress",
      ].join('\n'),
    );
    const error = await evaluateFile(file).catch((caught: unknown) => caught);
    expect((error as Error).message).toContain("The resource 'second' is not deployed (its condition is false)");
    const deployment = await evaluateFile(file, { withSecond: true }, () => undefined);
    const id = `${GROUP_ID}/providers/Microsoft.Network/publicIPAddresses/pip`;
    expect(deployment.outputs).toEqual({ address: `<runtime:${id}.properties.ipAddress>`, secondAddress: '' });
  });

  test.each([
    [
      'an unimplemented function',
      "output when string = dateTimeAdd('2024-01-01', 'P1D')",
      /unsupported\.bicep:1: unsupported function dateTimeAdd\(\)/,
    ],
    [
      'a user-defined function',
      "func hello() string => 'hi'",
      /unsupported\.bicep:1: unsupported user_defined_function/,
    ],
    [
      'a resource method',
      "resource v 'Microsoft.KeyVault/vaults@2023-07-01' existing = { name: 'v' }\noutput s string = v.getSecret('x')",
      /unsupported\.bicep:2: unsupported method call/,
    ],
    [
      'a wildcard import',
      "import * as shared from 'types.bicep'",
      /unsupported\.bicep:1: unsupported wildcard or aliased import/,
    ],
    [
      'a decorator on a type that this evaluator does not check',
      "@minLength(2)\ntype names = string[]\nparam p names = ['a', 'b']",
      /unsupported\.bicep:2: unsupported type decorator @minLength/,
    ],
  ])('%s is refused with the file, line and construct', async (_, source, message) => {
    const error = await evaluateFile(template('unsupported.bicep', source)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnsupportedBicepError);
    expect((error as Error).message).toMatch(message);
  });
});
