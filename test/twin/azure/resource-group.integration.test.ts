/**
 * The Azure twin's resource group: bicep/main.bicep, evaluated with the parameters the controller's launch builds
 * (azureLaunchConfig, deploymentParameterValues, azurePlanClusterParameters), made into simulated VMs that run the
 * template's own customData. What it shows that the separate boot tests cannot: the joins inside the resource group.
 * The nodes read their secrets with the identity the scale set carries, through the role assignment and the vault
 * firewall the template declares; the load generator's PerfTest (installed by its own customData) reaches the cluster
 * through the internal load balancer with the password its identity reads; the public load balancer admits the
 * controller's egress address and no other, by the subnet's NSG rules.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { azurePlanClusterParameters } from '../../../core/cloud/azure-cloud-init';
import { ingestRepetition } from '../../../core/results/ingest';
import { azureLaunchConfig } from '../../../lambdas/launch-cluster/azure';
import { deploymentParameterValues } from '../../../lambdas/shared/azure-cluster';
import { azurePerfTestScript, RAW_FILES, uploadUrlParameters } from '../../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../../state-machines/schedule';
import type { SimulatedVm } from '../../simulated-vm/harness';
import { loadBalancerLog } from './load-balancer';
import { SimulatedResourceGroup, twinAddressPlan } from './resource-group';

jest.setTimeout(1_200_000);

const SUBNET = 51;
const CONTROLLER = `10.91.${SUBNET}.230`;
const STRANGER = `10.91.${SUBNET}.231`;
const UPLOAD_HOST = 'rmqbenchtwinuploads.blob.core.windows.net';
const ADMIN_PASSWORD = 'twin-admin-password-0123';

const plan = {
  name: 'azure-twin-group',
  clusters: [{ name: 'q', nodes: 3, instanceType: 'Standard_D2s_v5', topology: { type: 'quorum' } }],
  workloads: [{ name: 'w', producers: 1, consumers: 1, messageSizeBytes: 100, durationSeconds: 5 }],
};

describe('a deployment of main.bicep in the Azure twin', () => {
  const group = new SimulatedResourceGroup({
    subnet: SUBNET,
    subscriptionId: '00000000-0000-0000-0000-000000000051',
    tenantId: '00000000-0000-0000-0000-0000000000aa',
    name: 'rmqbench-twin-group',
    location: 'westeurope',
    uploadHosts: [UPLOAD_HOST],
    log: (line) => process.stderr.write(`${line}\n`),
  });
  let outputs: Record<string, unknown>;
  let controller: SimulatedVm;
  let stranger: SimulatedVm;

  beforeAll(async () => {
    const { config } = azureLaunchConfig(
      {
        location: 'westeurope',
        template: {},
        parameters: {
          adminSshPublicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHR3aW4gdGVzdCBrZXkgb25seQ twin',
          rabbitmqAdminPassword: ADMIN_PASSWORD,
          erlangCookie: 'TWINERLANGCOOKIE0123456789',
          allowedSourceAddressPrefixes: [],
          ...twinAddressPlan(SUBNET),
        },
        expiryHours: 4,
        launchTimeoutMinutes: 30,
        controllerEgressAddresses: [CONTROLLER],
      },
      'rmqbench-twin-group',
    );
    const parameters = deploymentParameterValues(config, 3, { 'rmqbench:run-id': 'twin' }, 'Standard_D2s_v5', {
      ...azurePlanClusterParameters({ nodes: 3, topology: { type: 'quorum' } }),
    });
    const deployment = await group.deploy(parameters, 'rmqbench-cluster');
    outputs = deployment.outputs;
    const boots = await Promise.all(group.vms.map(async (vm) => ({ vm: vm.vm.name, result: await vm.boot! })));
    const failed = boots.filter((boot) => boot.result.status !== 0);
    if (failed.length > 0)
      throw new Error(
        failed.map((boot) => `${boot.vm}: ${boot.result.stderr.slice(-1500)}`).join('\n') +
          `\ndropped: ${group.dropped().join('; ')}\nrequests: ${group.hub.requestLog().slice(-20).join('\n')}`,
      );
    await group.backendsHealthy();
    // Two hosts on the internet side of the public load balancer: the controller's egress address and another.
    controller = group.hub.createVm('controller-egress', 'controller', {}, { hostNumber: 230 });
    stranger = group.hub.createVm('stranger', 'stranger', {}, { hostNumber: 231 });
  });
  afterAll(() => group.delete());

  /**
   * StartRepetition's Run Command for the plan's repetition, as the deployment's outputs give it, and the protected
   * parameters that hand it upload URLs under `folder`.
   */
  const runCommandFor = (folder: string) => {
    const item = buildSchedule({ plan, target: 'azure', runId: 'run-twin' }, 'exec').clusters[0]!.repetitions[0]!;
    const { script } = azurePerfTestScript({
      plan,
      item,
      endpoint: String(outputs['amqpEndpoint']),
      managementUrl: String(outputs['managementUrl']),
      username: 'rmqbench-admin',
      password: {
        keyVaultName: String(outputs['keyVaultName']),
        secretName: String(outputs['adminPasswordSecretName']),
        identityClientId: String(outputs['loadGeneratorIdentityClientId']),
      },
    });
    const urls = Object.fromEntries(RAW_FILES.map((file) => [file, `https://${UPLOAD_HOST}/${folder}/${file}?sig=T`]));
    const parameters = Object.fromEntries(uploadUrlParameters(urls).map(({ name, value }) => [name, value]));
    return { item, script, parameters };
  };

  test('three scale-set VMs form one cluster with the secrets their identity reads from the vault', async () => {
    const nodes = group.vms.filter((vm) => vm.scaleSet);
    expect(nodes).toHaveLength(3);
    const status = await group.hub.clusterStatus(nodes[0]!.vm);
    expect(status.running_nodes).toHaveLength(3);
    // Every secret read went through RBAC: no request was denied.
    expect(group.hub.requestLog().filter((line) => line.includes('denied'))).toEqual([]);
    expect(group.dropped()).toEqual([]);
  });

  test("the load generator's PerfTest, installed by its customData, runs through the internal balancer", async () => {
    const loadGenerator = group.vms.find((vm) => !vm.scaleSet)!;
    const { item, script, parameters } = runCommandFor('raw');
    const run = await group.runCommand(loadGenerator.vm.name, script, parameters, 300_000);
    expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr.slice(-2000) }).toEqual({
      status: 0,
      stderr: '',
    });
    const uploaded = (file: string) => readFileSync(join(group.hub.dir, 'uploads', 'raw', file), 'utf8');
    const record = ingestRepetition({
      runId: 'run-twin',
      scenarioId: item.scenarioId,
      repetition: 1,
      startedAt: '2026-11-26T00:00:00.000Z',
      finishedAt: '2026-11-26T00:00:10.000Z',
      perfTestArgs: [],
      expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
      stdout: uploaded('stdout.txt'),
      csv: uploaded('perftest.csv'),
    });
    expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
    expect(record.result!.summary.receiveRateAvg).toBeGreaterThan(0);
    const internal = loadBalancerLog(group.hub, 'rmqbench-lb');
    expect(internal.some((line) => line.startsWith(`${loadGenerator.vm.ip} -> 5672 -> `))).toBe(true);
  });

  test("the public load balancer admits the controller's address on 5671, refuses another by the NSG", async () => {
    const publicAddress = /amqps:\/\/([\d.]+):/.exec(String(outputs['amqpsEndpoint']))![1]!;
    const probe = (vm: SimulatedVm) =>
      group.hub.exec(vm, `timeout 5 openssl s_client -connect ${publicAddress}:5671 </dev/null 2>&1 | head -20`);
    const admitted = await probe(controller);
    expect(admitted.stdout).toContain('BEGIN CERTIFICATE');
    await probe(stranger);
    const log = loadBalancerLog(group.hub, 'rmqbench-lb-public');
    expect(log).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${CONTROLLER} -> 5671 -> `)),
        expect.stringMatching(new RegExp(`^${STRANGER} -> 5671 -> .* denied by NSG rule DenyClientPortsFromElsewhere`)),
      ]),
    );
  });

  test('a role assignment not in effect yet: Key Vault refuses by RBAC, the script retries and goes on', async () => {
    const loadGenerator = group.vms.find((vm) => !vm.scaleSet)!;
    const clientId = String(outputs['loadGeneratorIdentityClientId']);
    let removed: unknown[] = [];
    group.hub.updateState((state) => {
      const identities = state['identities'] as { clientId: string; principalId: string }[];
      const principalId = identities.find((identity) => identity.clientId === clientId)!.principalId;
      const assignments = state['roleAssignments'] as { principalId: string }[];
      removed = assignments.filter((assignment) => assignment.principalId === principalId);
      state['roleAssignments'] = assignments.filter((assignment) => assignment.principalId !== principalId);
    });
    expect(removed.length).toBeGreaterThan(0);
    const { script, parameters } = runCommandFor('late');
    const running = group.runCommand(loadGenerator.vm.name, script, parameters, 300_000);
    const refused = () =>
      group.hub.requestLog().some((line) => line.includes('denied') && line.includes('getSecret/action'));
    for (let waited = 0; waited < 60 && !refused(); waited++) await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(refused()).toBe(true);
    // The assignment takes effect (as one does minutes after its creation in Azure).
    group.hub.updateState((state) => {
      state['roleAssignments'] = [...(state['roleAssignments'] as unknown[]), ...removed];
    });
    const run = await running;
    expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr.slice(-2000) }).toEqual({
      status: 0,
      stderr: '',
    });
    expect(readFileSync(join(group.hub.dir, 'uploads', 'late', 'stdout.txt'), 'utf8')).toContain('sending rate');
  });
});
