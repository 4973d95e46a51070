import { createPipelineRequest } from '@azure/core-rest-pipeline';
import { azureMetricsQuery, hostMetricsFromAzureMonitor, type AzureMetricsResponse } from '../../core/azure-monitor-metrics';
import { LOAD_GENERATOR_NODE, type RepetitionMetrics } from '../../core/host-metrics';
import { vmNameFromResourceId, type AzureClients } from '../shared/azure-cluster';

/** The deployment outputs of bicep/main.bicep whose metrics are read (kafkaBrokerResourceIds only when the scale set's id is empty: a Kafka deployment). */
export const AZURE_METRICS_OUTPUTS = ['scaleSetResourceId', 'loadGeneratorResourceId', 'kafkaBrokerResourceIds'] as const;

/** Host metrics that were read, and what could not be (a part the deployment does not name): IngestRepetition records it in metricsError. */
export interface PartialRepetitionMetrics extends RepetitionMetrics {
  readonly incomplete?: string;
}

/**
 * The Kafka broker VMs' resource ids from the `kafkaBrokerResourceIds` output. ARM returns an array output as a JSON
 * array in `properties.outputs.<name>.value` (DeploymentPropertiesExtended.outputs, azure-rest-api-specs
 * specification/resources/resource-manager/Microsoft.Resources/stable/2024-03-01/resources.json; an output loop's value is
 * the array itself, learn.microsoft.com/azure/azure-resource-manager/bicep/loop-outputs), and checkDeployment
 * (lambdas/shared/azure-cluster.ts) keeps every non-string output value as its JSON text.
 */
export function kafkaBrokerResourceIds(output: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(output);
  } catch {
    throw new Error(`the deployment output kafkaBrokerResourceIds must be a JSON array of VM resource ids, got "${output.slice(0, 100)}"`);
  }
  if (!Array.isArray(parsed) || !parsed.every((id): id is string => typeof id === 'string')) throw new Error(`the deployment output kafkaBrokerResourceIds must be a JSON array of VM resource ids, got ${output.slice(0, 100)}`);
  // Each one names its VM (vmNameFromResourceId throws naming an id that is not a VM's).
  for (const id of parsed) vmNameFromResourceId(id);
  return parsed;
}

/**
 * The host metrics of one Azure repetition: Azure Monitor's platform metrics over the repetition's window of the
 * cluster (a RabbitMQ deployment's scale set, split per VM; or each Kafka broker VM, one request per VM, keyed by the VM's
 * name as the scale set's VMs are by theirs) and of the load generator VM, through the metrics REST API
 * (GET {resourceUri}/providers/Microsoft.Insights/metrics, azure-rest-api-specs
 * specification/monitor/resource-manager/Microsoft.Insights/stable/2023-10-01/metrics_API.json, example GetMetric.json)
 * with the controller's ARM credential: the resource manager client's pipeline adds its bearer token. Reading metrics
 * needs Microsoft.Insights/metrics/read on the resources (in Reader, Monitoring Reader and Contributor). Throws with
 * ARM's error when a request fails. A Kafka deployment from before the kafkaBrokerResourceIds output still gets its load
 * generator's series, with `incomplete` naming the missing output.
 */
export async function azureMonitorHostMetrics(clients: AzureClients, outputs: Readonly<Record<string, string>>, window: { startedAt: string; finishedAt: string }): Promise<PartialRepetitionMetrics> {
  const missing = AZURE_METRICS_OUTPUTS.filter((name) => name !== 'kafkaBrokerResourceIds' && (!(name in outputs) || (name === 'loadGeneratorResourceId' && !outputs[name])));
  if (missing.length > 0) throw new Error(`the deployment lacks the output(s) ${missing.join(', ')}: deploy the current bicep/main.bicep`);
  const span = { startedAt: new Date(window.startedAt), finishedAt: new Date(window.finishedAt) };
  const read = async (resourceId: string, splitByVmName: boolean): Promise<AzureMetricsResponse> => {
    const url = `${(clients.endpoint ?? 'https://management.azure.com').replace(/\/+$/, '')}${resourceId}/providers/Microsoft.Insights/metrics?${azureMetricsQuery(span, splitByVmName)}`;
    const response = await clients.resources.sendRequest(createPipelineRequest({ url, method: 'GET' }));
    const text = response.bodyAsText ?? '';
    if (response.status !== 200) {
      let message = text.slice(0, 300);
      try {
        const error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
        if (error) message = `${error.code ?? 'error'}: ${error.message ?? ''}`;
      } catch {
        // not JSON: the text itself
      }
      throw new Error(`Azure Monitor answered ${response.status} for the metrics of ${resourceId}: ${message}`);
    }
    return JSON.parse(text) as AzureMetricsResponse;
  };
  const scaleSet = outputs.scaleSetResourceId;
  // An empty scale-set id is a Kafka deployment: its brokers are single VMs, named by kafkaBrokerResourceIds.
  const brokers = scaleSet ? [] : outputs.kafkaBrokerResourceIds === undefined ? undefined : kafkaBrokerResourceIds(outputs.kafkaBrokerResourceIds);
  const requests: { resourceId: string; splitByVmName: boolean; node?: string }[] = [
    ...(scaleSet ? [{ resourceId: scaleSet, splitByVmName: true }] : []),
    ...(brokers ?? []).map((resourceId) => ({ resourceId, splitByVmName: false, node: vmNameFromResourceId(resourceId) })),
    { resourceId: outputs.loadGeneratorResourceId!, splitByVmName: false, node: LOAD_GENERATOR_NODE },
  ];
  // Every request settles before an error is thrown: none is left running after the invocation has answered.
  const settled = await Promise.allSettled(requests.map((request) => read(request.resourceId, request.splitByVmName)));
  const failed = settled.find((one): one is PromiseRejectedResult => one.status === 'rejected');
  if (failed) throw failed.reason;
  const bodies = settled.map((one, index) => ({ body: (one as PromiseFulfilledResult<AzureMetricsResponse>).value, ...(requests[index]!.node ? { node: requests[index]!.node } : {}) }));
  const metrics = hostMetricsFromAzureMonitor(bodies, span.startedAt);
  if (brokers === undefined) return { ...metrics, incomplete: "the Kafka brokers' host metrics were not read: the deployment lacks the output kafkaBrokerResourceIds (deployed before it): deploy the current bicep/main.bicep" };
  return metrics;
}
