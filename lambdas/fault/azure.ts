import type { CloudNode } from '../../core/cloud-fault';
import { checkRunCommand, startRunCommand, type AzureClients } from '../shared/azure-cluster';
import type { FaultTarget, FaultTiming } from './aws';

/**
 * The run's cluster on Azure for the fault step: the scale set's VMs of the run's resource group, scripts as managed
 * Run Commands on the node VM (the way StartRepetition runs PerfTest on the load generator, lambdas/shared/azure-cluster.ts).
 * The scale set uses Flexible orchestration (bicep/modules/cluster.bicep), so its VMs are ordinary
 * `Microsoft.Compute/virtualMachines` that take `virtualMachines/runCommands`.
 */

/**
 * The scale set's VMs, oldest first: Virtual Machines - List of the resource group
 * (https://learn.microsoft.com/rest/api/compute/virtual-machines/list) lists every VM; a node is one with
 * `virtualMachineScaleSet` set (the load generator is a VM of its own), not being deleted. Its node name is
 * rabbit@<computerName>, the host name RabbitMQ puts in it (bicep/cloud-init/rmqbench-node-setup.sh keeps it exactly).
 */
export async function azureClusterNodes(clients: AzureClients, resourceGroup: string): Promise<CloudNode[]> {
  const found: { id: string; nodeName: string; created: number }[] = [];
  for await (const vm of clients.compute.virtualMachines.list(resourceGroup)) {
    const computerName = vm.osProfile?.computerName;
    if (!vm.virtualMachineScaleSet?.id || !vm.name || !computerName || vm.provisioningState === 'Deleting') continue;
    found.push({ id: vm.name, nodeName: `rabbit@${computerName}`, created: vm.timeCreated ? new Date(vm.timeCreated).getTime() : 0 });
  }
  return found.sort((a, b) => a.created - b.created || a.id.localeCompare(b.id)).map(({ id, nodeName }) => ({ id, nodeName }));
}

/** Runs `script` on one VM as a managed Run Command and waits for it within the invocation; its stdout, or an error with its stderr. */
export async function runOnVm(clients: AzureClients, resourceGroup: string, vmName: string, script: string, timing: FaultTiming): Promise<string> {
  const now = timing.now ?? (() => new Date());
  const sleep = timing.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const timeoutInSeconds = Math.max(30, Math.floor((timing.deadline.getTime() - now().getTime()) / 1000));
  // A Run Command resource name unique per call (a VM keeps at most a few dozen; checkRunCommand deletes each once done).
  const name = `rmqbench-fault-${now().getTime().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const started = await startRunCommand(clients, resourceGroup, vmName, { name, script, protectedParameters: [], timeoutInSeconds });
  for (;;) {
    const state = await checkRunCommand(clients, started);
    if (state.done) {
      if (!state.succeeded) throw new Error(`the fault Run Command ${name} on ${vmName} failed: ${state.stderr.trim().slice(-1000) || 'no stderr'}`);
      return state.stdout;
    }
    if (now().getTime() + (timing.pollMs ?? 2_000) > timing.deadline.getTime()) throw new Error(`the fault Run Command ${name} on ${vmName} had not finished by ${timing.deadline.toISOString()}`);
    await sleep(timing.pollMs ?? 2_000);
  }
}

/** The run's cluster on Azure: its resource group (the launch's clusterId) and the scale set's VMs in it. */
export function azureFaultTarget(clients: AzureClients, resourceGroup: string, timing: FaultTiming): FaultTarget {
  return { target: 'azure', clusterId: `resource group ${resourceGroup}`, nodes: () => azureClusterNodes(clients, resourceGroup), run: (node, script) => runOnVm(clients, resourceGroup, node.id, script, timing) };
}
