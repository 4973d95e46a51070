/**
 * The load generator VMs of an Azure deployment, by index (issue 27): bicep/main.bicep's `loadGeneratorResourceIds`
 * output, `[for i in range(0, loadGeneratorCount): virtualMachines[i].id]` in modules/loadgen.bicep (an output loop
 * keeps the loop's order, https://learn.microsoft.com/azure/azure-resource-manager/bicep/loop-outputs#loop-index),
 * which checkDeployment hands on as a JSON string like every non-string output. Refuses a deployment that lists fewer
 * than `count`, naming what it listed.
 */
export function azureLoadGeneratorResourceIds(
  outputs: Readonly<Record<string, string>>,
  resourceGroup: string,
  count: number,
): string[] {
  let ids: unknown;
  try {
    ids = JSON.parse(outputs.loadGeneratorResourceIds ?? '');
  } catch {
    ids = undefined;
  }
  if (!Array.isArray(ids) || !ids.every((id): id is string => typeof id === 'string' && id !== ''))
    throw new Error(
      `the deployment in resource group ${resourceGroup} has no usable loadGeneratorResourceIds output (got ` +
        `${JSON.stringify(outputs.loadGeneratorResourceIds ?? null)}); deploy the current bicep/main.bicep`,
    );
  if (ids.length < count)
    throw new Error(
      `the deployment in resource group ${resourceGroup} lists ${ids.length} load generator VM(s) ` +
        `(its loadGeneratorResourceIds output) but the plan cluster has loadGenerators: ${count}; ` +
        'LaunchCluster deploys bicep/main.bicep with loadGeneratorCount set to it',
    );
  return ids;
}
