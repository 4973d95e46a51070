import type { CloudNode } from '../../core/failover/cloud-fault';
import type { FaultBroker } from '../../core/failover/cloud-broker-fault';
import { checkRunCommand, startRunCommand, type AzureClients } from '../shared/azure-cluster';
import type { FaultTarget, FaultTiming } from './aws';
import { clockOf } from './clock';
import { commandFailureExcerpt } from '../../core/cloud/command-output';

/**
 * The run's cluster on Azure for the fault step: the scale set's VMs of the run's resource group, scripts as managed
 * Run Commands on the node VM (the way StartRepetition runs PerfTest on the load generator,
 * lambdas/shared/azure-cluster.ts).
 * The scale set uses Flexible orchestration (bicep/modules/cluster.bicep), so its VMs are ordinary
 * `Microsoft.Compute/virtualMachines` that take `virtualMachines/runCommands`.
 */

/**
 * The broker's VMs, oldest first: Virtual Machines - List of the resource group
 * (https://learn.microsoft.com/rest/api/compute/virtual-machines/list) lists every VM, none being deleted counts.
 * RabbitMQ: a node is one with `virtualMachineScaleSet` set (the load generator is a VM of its own); its node name is
 * rabbit@<computerName>, the host name RabbitMQ puts in it (bicep/cloud-init/rmqbench-node-setup.sh keeps it exactly).
 * Kafka and NATS: the VMs bicep/modules/kafka-cluster.bicep and nats-cluster.bicep name `<prefix>-kafka-<n>` and
 * `<prefix>-nats-<n>`, whose node names are `kafka-<n>` (node.id=<n>) and `nats-<n>` (its server_name).
 */
export async function azureClusterNodes(
  clients: AzureClients,
  resourceGroup: string,
  timing?: FaultTiming,
  broker: FaultBroker = 'rabbitmq',
): Promise<CloudNode[]> {
  const found: { id: string; nodeName: string; created: number }[] = [];
  const nodesOf = broker === 'rabbitmq' ? nodeOf : (vm: ListedVm) => brokerNodeOf(vm, broker);
  const list = async () => {
    found.length = 0;
    for await (const vm of clients.compute.virtualMachines.list(resourceGroup)) found.push(...nodesOf(vm));
  };
  await (timing ? whileUnauthorized(list, timing, `list the VMs of resource group ${resourceGroup}`) : list());
  return found
    .sort((a, b) => a.created - b.created || a.id.localeCompare(b.id))
    .map(({ id, nodeName }) => ({ id, nodeName }));
}

type ListedVm = {
  name?: string;
  provisioningState?: string;
  timeCreated?: Date;
  osProfile?: { computerName?: string };
  virtualMachineScaleSet?: { id?: string };
};

function nodeOf(vm: ListedVm): { id: string; nodeName: string; created: number }[] {
  const computerName = vm.osProfile?.computerName;
  if (!vm.virtualMachineScaleSet?.id || !vm.name || !computerName || vm.provisioningState === 'Deleting') return [];
  return [
    {
      id: vm.name,
      nodeName: `rabbit@${computerName}`,
      created: vm.timeCreated ? new Date(vm.timeCreated).getTime() : 0,
    },
  ];
}

function brokerNodeOf(vm: ListedVm, broker: 'kafka' | 'nats'): { id: string; nodeName: string; created: number }[] {
  const index = vm.name && new RegExp(`-${broker}-(\\d{1,2})$`).exec(vm.name)?.[1];
  if (!vm.name || !index || vm.provisioningState === 'Deleting') return [];
  // Ordered by node number, not creation time (the deployment creates them at once), as on AWS: `fault.node: 0` is
  // node 1.
  return [{ id: vm.name, nodeName: `${broker}-${index}`, created: Number(index) }];
}

/** How long the fault step waits between calls that ARM refused with AuthorizationFailed. */
export const AUTHORIZATION_RETRY_MS = 15_000;

/**
 * Runs `call` again while ARM refuses it with 403 AuthorizationFailed, until the step's deadline: the fault-only
 * principal's role assignment is made by the run's own deployment (bicep/main.bicep faultPrincipalId), and "it can take
 * up to 10 minutes for changes to take effect"
 * (https://learn.microsoft.com/azure/role-based-access-control/troubleshooting,
 * "Role assignment changes are not being detected"). Any other error ends it at once.
 */
export async function whileUnauthorized<T>(call: () => Promise<T>, timing: FaultTiming, what: string): Promise<T> {
  const { now, sleep } = clockOf(timing);
  const waitMs = timing.authorizationRetryMs ?? AUTHORIZATION_RETRY_MS;
  let refusals = 0;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const { code, statusCode, message } = error as { code?: string; statusCode?: number; message?: string };
      if (code !== 'AuthorizationFailed' || statusCode !== 403) throw error;
      refusals += 1;
      if (now().getTime() + waitMs > timing.deadline.getTime()) {
        throw new Error(
          `the fault step's Azure service principal may not ${what}: ` +
            `ARM refused it ${refusals} time(s) with AuthorizationFailed until ${timing.deadline.toISOString()} ` +
            `(${message ?? 'no message'}). ` +
            'A fault-only principal needs the Virtual Machine Contributor role assignment ' +
            "that the run's deployment makes for faultPrincipalId (its object id, not its client id); " +
            'a new assignment can take up to 10 minutes to take effect.',
        );
      }
      await sleep(waitMs);
    }
  }
}

/**
 * Runs `script` on one VM as a managed Run Command and waits for it within the invocation; its stdout, or an error with
 * its stderr.
 */
export async function runOnVm(
  clients: AzureClients,
  resourceGroup: string,
  vmName: string,
  script: string,
  timing: FaultTiming,
): Promise<string> {
  const { now, sleep } = clockOf(timing);
  const timeoutInSeconds = Math.max(30, Math.floor((timing.deadline.getTime() - now().getTime()) / 1000));
  // A Run Command resource name unique per call (a VM keeps at most a few dozen; checkRunCommand deletes each once
  // done).
  const name = `rmqbench-fault-${now().getTime().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const started = await whileUnauthorized(
    () => startRunCommand(clients, resourceGroup, vmName, { name, script, protectedParameters: [], timeoutInSeconds }),
    timing,
    `run a command on VM ${vmName} of resource group ${resourceGroup}`,
  );
  for (;;) {
    const state = await checkRunCommand(clients, started);
    if (state.done) {
      if (!state.succeeded)
        throw new Error(
          `the fault Run Command ${name} on ${vmName} failed: ${commandFailureExcerpt(state.stderr) || 'no stderr'}`,
        );
      return state.stdout;
    }
    if (now().getTime() + (timing.pollMs ?? 2_000) > timing.deadline.getTime())
      throw new Error(
        `the fault Run Command ${name} on ${vmName} had not finished by ${timing.deadline.toISOString()}`,
      );
    await sleep(timing.pollMs ?? 2_000);
  }
}

/** The run's cluster on Azure: its resource group (the launch's clusterId) and the scale set's VMs in it. */
export function azureFaultTarget(clients: AzureClients, resourceGroup: string, timing: FaultTiming): FaultTarget {
  return {
    target: 'azure',
    clusterId: `resource group ${resourceGroup}`,
    nodes: (broker) => azureClusterNodes(clients, resourceGroup, timing, broker),
    run: (node, script) => runOnVm(clients, resourceGroup, node.id, script, timing),
    timing,
  };
}
