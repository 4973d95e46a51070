import { join } from 'node:path';
import {
  BicepDeploymentError,
  evaluateDeployment,
  runtimePlaceholder,
  type DeploymentContext,
  type EvaluatedDeployment,
  type EvaluatedResource,
} from '../twin/azure/bicep-evaluator';
import { BICEP_DIR } from './bicep-tree';

/**
 * Several load generators on Azure (issue 27): main.bicep evaluated with loadGeneratorCount 3 deploys three VMs and
 * NICs with distinct names and one shared identity, and outputs every VM's id; with the default 1 the names are the
 * single generator's, unchanged. Evaluated by the repository's Bicep evaluator (no Bicep compiler is installed).
 */
const CONTEXT: DeploymentContext = {
  subscriptionId: '3f2c5a10-0000-4000-8000-000000000001',
  tenantId: '3f2c5a10-0000-4000-8000-000000000002',
  resourceGroup: 'rmqbench-run42-c1',
  location: 'westeurope',
  deploymentName: 'rmqbench-cluster',
};
/** The Kafka launch needs no RabbitMQ secrets: the load generator module is the same for both brokers. */
const KAFKA = {
  adminSshPublicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheTwin rmqbench',
  allowedSourceAddressPrefixes: ['203.0.113.0/28'],
  broker: 'kafka',
};

const ofLoadGenerator = (deployment: EvaluatedDeployment, type: string): EvaluatedResource[] =>
  deployment.resources.filter(
    (resource) => resource.type === type && resource.modulePath[0] === 'loadGenerator' && !resource.existing,
  );

describe('main.bicep with loadGeneratorCount 3', () => {
  let deployment: EvaluatedDeployment;
  let single: EvaluatedDeployment;
  beforeAll(async () => {
    [deployment, single] = await Promise.all([
      evaluateDeployment({ ...KAFKA, loadGeneratorCount: 3 }, CONTEXT),
      evaluateDeployment(KAFKA, CONTEXT),
    ]);
  });

  test('three VMs and three NICs, distinct names (the first unsuffixed), each VM on its own NIC, one identity', () => {
    const vms = ofLoadGenerator(deployment, 'Microsoft.Compute/virtualMachines');
    const nics = ofLoadGenerator(deployment, 'Microsoft.Network/networkInterfaces');
    const identities = ofLoadGenerator(deployment, 'Microsoft.ManagedIdentity/userAssignedIdentities');
    expect(vms.map((vm) => vm.name)).toEqual(['rmqbench-loadgen', 'rmqbench-loadgen-2', 'rmqbench-loadgen-3']);
    expect(nics.map((nic) => nic.name)).toEqual([
      'rmqbench-loadgen-nic',
      'rmqbench-loadgen-2-nic',
      'rmqbench-loadgen-3-nic',
    ]);
    expect(identities).toHaveLength(1);
    vms.forEach((vm, index) => {
      expect(vm.body).toMatchObject({
        zones: ['1'],
        identity: { userAssignedIdentities: { [identities[0]!.id]: {} } },
        properties: {
          osProfile: { computerName: vm.name },
          networkProfile: { networkInterfaces: [{ id: nics[index]!.id }] },
        },
      });
    });
    // The same boot (customData) on every generator.
    const customData = vms.map(
      (vm) => (vm.body.properties as { osProfile: { customData: string } }).osProfile.customData,
    );
    expect(customData[0]).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(new Set(customData).size).toBe(1);
  });

  test('outputs: the first VM as before, and every VM id in order', () => {
    const vms = ofLoadGenerator(deployment, 'Microsoft.Compute/virtualMachines');
    expect(deployment.outputs.loadGeneratorResourceId).toBe(vms[0]!.id);
    expect(deployment.outputs.loadGeneratorResourceIds).toEqual(vms.map((vm) => vm.id));
  });

  test('by default one generator under the single generator names; 0 and 11 are refused', async () => {
    const vms = ofLoadGenerator(single, 'Microsoft.Compute/virtualMachines');
    expect(vms.map((vm) => vm.name)).toEqual(['rmqbench-loadgen']);
    expect(ofLoadGenerator(single, 'Microsoft.Network/networkInterfaces').map((nic) => nic.name)).toEqual([
      'rmqbench-loadgen-nic',
    ]);
    expect(single.outputs.loadGeneratorResourceIds).toEqual([vms[0]!.id]);
    for (const loadGeneratorCount of [0, 11]) {
      await expect(evaluateDeployment({ ...KAFKA, loadGeneratorCount }, CONTEXT)).rejects.toThrow(BicepDeploymentError);
    }
  });

  test("the module's outputs list every name and private IP, in order (the IPs are known once deployed)", async () => {
    const module = await evaluateDeployment(
      {
        namePrefix: 'bench',
        subnetResourceId: `/subscriptions/${CONTEXT.subscriptionId}/resourceGroups/g/providers/x/subnets/loadgen`,
        adminSshPublicKey: KAFKA.adminSshPublicKey,
        keyVaultName: 'kvbench',
        loadGeneratorCount: 3,
      },
      CONTEXT,
      { file: join(BICEP_DIR, 'modules', 'loadgen.bicep') },
    );
    const nics = module.resources.filter((resource) => resource.type === 'Microsoft.Network/networkInterfaces');
    expect(module.outputs).toMatchObject({
      name: 'bench-loadgen',
      loadGeneratorVmNames: ['bench-loadgen', 'bench-loadgen-2', 'bench-loadgen-3'],
      loadGeneratorPrivateIpAddresses: nics.map((nic) =>
        runtimePlaceholder(nic.id, ['properties', 'ipConfigurations', '0', 'properties', 'privateIPAddress']),
      ),
    });
    expect(new Set(module.outputs.loadGeneratorPrivateIpAddresses as string[]).size).toBe(3);
  });
});
