import { createPipelineRequest } from '@azure/core-rest-pipeline';
import { azureMetricsQuery, hostMetricsFromAzureMonitor, type AzureMetricsResponse } from '../../core/azure-monitor-metrics';
import { LOAD_GENERATOR_NODE, type RepetitionMetrics } from '../../core/host-metrics';
import type { AzureClients } from '../shared/azure-cluster';

/** The deployment outputs of bicep/main.bicep whose metrics are read. */
export const AZURE_METRICS_OUTPUTS = ['scaleSetResourceId', 'loadGeneratorResourceId'] as const;

/**
 * The host metrics of one Azure repetition: Azure Monitor's platform metrics of the cluster's scale set (per VM) and of
 * the load generator VM over the repetition's window, through the metrics REST API
 * (GET {resourceUri}/providers/Microsoft.Insights/metrics, azure-rest-api-specs
 * specification/monitor/resource-manager/Microsoft.Insights/stable/2023-10-01/metrics_API.json, example GetMetric.json)
 * with the controller's ARM credential: the resource manager client's pipeline adds its bearer token. Reading metrics
 * needs Microsoft.Insights/metrics/read on the resources (in Reader, Monitoring Reader and Contributor). Throws with
 * ARM's error when a request fails.
 */
export async function azureMonitorHostMetrics(clients: AzureClients, outputs: Readonly<Record<string, string>>, window: { startedAt: string; finishedAt: string }): Promise<RepetitionMetrics> {
  // A Kafka deployment outputs an empty scaleSetResourceId (its brokers are single VMs): its load generator is still read.
  const missing = AZURE_METRICS_OUTPUTS.filter((name) => !(name in outputs) || (name === 'loadGeneratorResourceId' && !outputs[name]));
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
  // Both requests settle before an error is thrown: none is left running after the invocation has answered.
  const [cluster, loadGenerator] = await Promise.allSettled([scaleSet ? read(scaleSet, true) : Promise.resolve({}), read(outputs.loadGeneratorResourceId!, false)]);
  if (cluster.status === 'rejected') throw cluster.reason;
  if (loadGenerator.status === 'rejected') throw loadGenerator.reason;
  return hostMetricsFromAzureMonitor([{ body: cluster.value }, { body: loadGenerator.value, node: LOAD_GENERATOR_NODE }], span.startedAt);
}
