import { createPipelineRequest } from '@azure/core-rest-pipeline';
import {
  azureMetricsLateness,
  azureMetricsQuery,
  hostMetricsFromAzureMonitor,
  type AzureMetricsResponse,
} from '../../core/metrics/azure-monitor-metrics';
import { azureVmMemoryBytes } from '../../core/cost/azure-vm-sizes';
import { loadGeneratorHostNode, type RepetitionMetrics } from '../../core/metrics/host-metrics';
import { vmNameFromResourceId, type AzureClients } from '../shared/azure-cluster';

/**
 * The deployment outputs of bicep/main.bicep that the metrics read needs: the resource ids whose metrics are read
 * (kafkaBrokerResourceIds only when the scale set's id is empty: a Kafka deployment) and the VM sizes, whose memory
 * turns "Available Memory Bytes" into used memory (clusterVmSize for the scale set's VMs and the Kafka brokers alike).
 */
export const AZURE_METRICS_OUTPUTS = [
  'scaleSetResourceId',
  'loadGeneratorResourceId',
  'loadGeneratorResourceIds',
  'kafkaBrokerResourceIds',
  'natsServerResourceIds',
  'clusterVmSize',
  'loadGeneratorVmSize',
] as const;

/** Outputs whose absence (a deployment from before them) leaves a part unread rather than failing the read. */
const OPTIONAL_OUTPUTS: readonly string[] = [
  'loadGeneratorResourceIds',
  'kafkaBrokerResourceIds',
  'natsServerResourceIds',
  'clusterVmSize',
  'loadGeneratorVmSize',
];

/**
 * Host metrics that were read, and what could not be (a part the deployment does not name): IngestRepetition records it
 * in metricsError.
 */
export interface PartialRepetitionMetrics extends RepetitionMetrics {
  readonly incomplete?: string;
}

/**
 * The Kafka broker VMs' resource ids from the `kafkaBrokerResourceIds` output. ARM returns an array output as a JSON
 * array in `properties.outputs.<name>.value` (DeploymentPropertiesExtended.outputs, azure-rest-api-specs
 * specification/resources/resource-manager/Microsoft.Resources/stable/2024-03-01/resources.json; an output loop's value
 * is
 * the array itself, learn.microsoft.com/azure/azure-resource-manager/bicep/loop-outputs), and checkDeployment
 * (lambdas/shared/azure-cluster.ts) keeps every non-string output value as its JSON text.
 */
export function kafkaBrokerResourceIds(output: string): string[] {
  return vmResourceIds(output, 'kafkaBrokerResourceIds');
}

/** The VM resource ids of an array output (kafkaBrokerResourceIds, natsServerResourceIds), checked. */
export function vmResourceIds(output: string, name: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(output);
  } catch {
    throw new Error(
      `the deployment output ${name} must be a JSON array of VM resource ids, got "${output.slice(0, 100)}"`,
    );
  }
  if (!Array.isArray(parsed) || !parsed.every((id): id is string => typeof id === 'string'))
    throw new Error(
      `the deployment output ${name} must be a JSON array of VM resource ids, got ${output.slice(0, 100)}`,
    );
  // Each one names its VM (vmNameFromResourceId throws naming an id that is not a VM's).
  for (const id of parsed) vmNameFromResourceId(id);
  return parsed;
}

/**
 * The host metrics of one Azure repetition: Azure Monitor's platform metrics over the repetition's window of the
 * cluster (a RabbitMQ deployment's scale set, split per VM; or each Kafka broker VM, one request per VM, keyed by the
 * VM's
 * name as the scale set's VMs are by theirs) and of the load generator VM, through the metrics REST API
 * (GET {resourceUri}/providers/Microsoft.Insights/metrics, azure-rest-api-specs
 * specification/monitor/resource-manager/Microsoft.Insights/stable/2023-10-01/metrics_API.json, example GetMetric.json)
 * with the controller's ARM credential: the resource manager client's pipeline adds its bearer token. Reading metrics
 * needs Microsoft.Insights/metrics/read on the resources (in Reader, Monitoring Reader and Contributor). Throws with
 * ARM's error when a request fails. memoryBytes is the VM size's memory (clusterVmSize / loadGeneratorVmSize outputs)
 * minus "Available Memory Bytes". A deployment from before the kafkaBrokerResourceIds or VM-size outputs still gets
 * what
 * can be read, with `incomplete` naming what was not and the missing output; so does a read made before Azure Monitor
 * had
 * the repetition's last whole minute (azureMetricsLateness).
 */
export async function azureMonitorHostMetrics(
  clients: AzureClients,
  outputs: Readonly<Record<string, string>>,
  window: { startedAt: string; finishedAt: string },
): Promise<PartialRepetitionMetrics> {
  const missing = AZURE_METRICS_OUTPUTS.filter(
    (name) =>
      !OPTIONAL_OUTPUTS.includes(name) &&
      (!(name in outputs) || (name === 'loadGeneratorResourceId' && !outputs[name])),
  );
  if (missing.length > 0)
    throw new Error(`the deployment lacks the output(s) ${missing.join(', ')}: deploy the current bicep/main.bicep`);
  const span = { startedAt: new Date(window.startedAt), finishedAt: new Date(window.finishedAt) };
  const read = async (resourceId: string, splitByVmName: boolean): Promise<AzureMetricsResponse> => {
    const url =
      `${(clients.endpoint ?? 'https://management.azure.com').replace(/\/+$/, '')}${resourceId}` +
      `/providers/Microsoft.Insights/metrics?${azureMetricsQuery(span, splitByVmName)}`;
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
  const brokers = clusterNodeIds(outputs);
  const problems: string[] = [];
  const clusterMemory = memoryOf(outputs, 'clusterVmSize', problems);
  const loadGeneratorMemory = memoryOf(outputs, 'loadGeneratorVmSize', problems);
  const loadGenerators = outputs.loadGeneratorResourceIds
    ? vmResourceIds(outputs.loadGeneratorResourceIds, 'loadGeneratorResourceIds')
    : [outputs.loadGeneratorResourceId!];
  const requests: { resourceId: string; splitByVmName: boolean; node?: string; memoryTotalBytes?: number }[] = [
    ...(scaleSet ? [{ resourceId: scaleSet, splitByVmName: true, memoryTotalBytes: clusterMemory }] : []),
    ...(brokers ?? []).map((resourceId) => ({
      resourceId,
      splitByVmName: false,
      node: vmNameFromResourceId(resourceId),
      memoryTotalBytes: clusterMemory,
    })),
    // Every load generator VM (loadGeneratorResourceIds, in generator order), each under its own node when there are
    // several (loadGeneratorHostNode); a deployment from before that output has the one loadGeneratorResourceId.
    ...loadGenerators.map((resourceId) => ({
      resourceId,
      splitByVmName: false,
      node: loadGeneratorHostNode(resourceId, loadGenerators),
      memoryTotalBytes: loadGeneratorMemory,
    })),
  ];
  // Every request settles before an error is thrown: none is left running after the invocation has answered.
  const settled = await Promise.allSettled(requests.map((request) => read(request.resourceId, request.splitByVmName)));
  const failed = settled.find((one): one is PromiseRejectedResult => one.status === 'rejected');
  if (failed) throw failed.reason;
  const bodies = settled.map((one, index) => {
    const { node, memoryTotalBytes } = requests[index]!;
    return {
      body: (one as PromiseFulfilledResult<AzureMetricsResponse>).value,
      ...(node ? { node } : {}),
      ...(memoryTotalBytes === undefined ? {} : { memoryTotalBytes }),
    };
  });
  const metrics = hostMetricsFromAzureMonitor(bodies, span.startedAt);
  // Read too soon after the repetition, its last minutes are not in Azure Monitor yet: kept as read, and said.
  const late = azureMetricsLateness(bodies, span);
  if (late) problems.push(late);
  if (brokers === undefined)
    problems.unshift(
      "the brokers' host metrics were not read: the deployment lacks the outputs kafkaBrokerResourceIds and " +
        'natsServerResourceIds (deployed before them): deploy the current bicep/main.bicep',
    );
  return problems.length > 0 ? { ...metrics, incomplete: problems.join('; ') } : metrics;
}

/**
 * The single cluster VMs' resource ids: none for a RabbitMQ deployment (its scale set is read, split per VM); a Kafka
 * or NATS deployment (an empty scale-set id) names them in kafkaBrokerResourceIds or natsServerResourceIds (the other
 * one empty); undefined when it has neither output (deployed before them).
 */
function clusterNodeIds(outputs: Readonly<Record<string, string>>): string[] | undefined {
  if (outputs.scaleSetResourceId) return [];
  const { kafkaBrokerResourceIds: kafka, natsServerResourceIds: nats } = outputs;
  if (kafka === undefined && nats === undefined) return undefined;
  return [
    ...(kafka ? vmResourceIds(kafka, 'kafkaBrokerResourceIds') : []),
    ...(nats ? vmResourceIds(nats, 'natsServerResourceIds') : []),
  ];
}

/**
 * The memory of the VM size a deployment output names, in bytes; undefined (memoryBytes then not derived for those VMs)
 * with the reason added to `problems` when the output is missing (a deployment from before it) or names a size
 * core/cost/azure-vm-sizes.ts has no memory for.
 */
function memoryOf(
  outputs: Readonly<Record<string, string>>,
  output: 'clusterVmSize' | 'loadGeneratorVmSize',
  problems: string[],
): number | undefined {
  const whose = output === 'clusterVmSize' ? "the cluster's VMs" : "the load generator's";
  const size = outputs[output];
  if (!size) {
    problems.push(
      `memoryBytes of ${whose} not derived: the deployment lacks the output ${output} (deployed before it): ` +
        `deploy the current bicep/main.bicep`,
    );
    return undefined;
  }
  const bytes = azureVmMemoryBytes(size);
  if (bytes === undefined)
    problems.push(
      `memoryBytes of ${whose} not derived: the VM size ${size} (output ${output}) ` +
        `has no memory in core/cost/azure-vm-sizes.ts`,
    );
  return bytes;
}
