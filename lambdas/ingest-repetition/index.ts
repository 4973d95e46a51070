import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { ScheduledCluster, ScheduledRepetition, WorkflowTarget } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { requireEnv } from '../shared/env';
import { loadGeneratorInstanceIds } from '../shared/aws-stack-outputs';
import { cloudWatchHostMetrics } from './cloudwatch-metrics';
import {
  KAFKA_BROKER_ROLE,
  LOAD_GENERATOR_ROLE,
  NATS_SERVER_ROLE,
  NODE_ROLE,
} from '../../core/metrics/cloudwatch-host-metrics';
import {
  checkSettledInStore,
  ingestFromS3,
  rereadLateHostMetrics,
  type BrokerHostsSource,
  type HostMetricsSource,
} from './logic';
import { withTransientErrors } from '../shared/transient-errors';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureMetrics = () => import('./azure-metrics');
// The node listings of the fault step (EC2 DescribeInstances of the cluster stack's nodes; the scale set's VMs), loaded
// only when a repetition has broker metrics to name: a chunk of their own, outside the cold start.
const awsNodes = () => import('../shared/aws-cluster-nodes');
const azureNodes = () => import('../fault/azure');

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const s3 = new S3Client({});
const cloudwatch = new CloudWatchClient({});

interface IngestEvent {
  /**
   * "metricsOnly": the re-read of a cluster's late host metrics before its teardown (RereadHostMetrics), for
   * `cluster`'s repetitions.
   */
  readonly action?: 'metricsOnly' | 'settledCheck';
  readonly cluster?: ScheduledCluster;
  readonly runId: string;
  readonly target?: WorkflowTarget;
  readonly launch?: { readonly clusterId?: string };
  readonly readiness?: { readonly outputs?: Record<string, string> };
  readonly item?: ScheduledRepetition;
}

/**
 * Where a repetition's host metrics come from: CloudWatch for an AWS cluster stack, Azure Monitor for an Azure
 * deployment.
 */
function hostMetricsSource(event: IngestEvent): HostMetricsSource | undefined {
  const clusterId = event.launch?.clusterId;
  if (event.target === 'aws' && clusterId) {
    // The stack's load generators in generator order (its InstanceIds output), each a metrics node of its own.
    const loadGenerators = loadGeneratorInstanceIds(event.readiness?.outputs ?? {});
    return async (window) =>
      cloudWatchHostMetrics(cloudwatch, clusterId, window, loadGenerators, await agentInstances(clusterId));
  }
  if (event.target === 'azure') {
    const outputs = event.readiness?.outputs ?? {};
    return async (window) =>
      (await azureMetrics()).azureMonitorHostMetrics(
        (await (await azureTarget()).azureClientsFromEnv()).clients,
        outputs,
        window,
      );
  }
  return undefined;
}

/**
 * The cluster stack's instances with the Role their CloudWatch agent reports (from the rmqbench:component tag), so
 * that their CPU and memory are read even before ListMetrics lists them. A
 * failed listing leaves ListMetrics alone to find them.
 */
async function agentInstances(clusterId: string): Promise<{ instanceId: string; role?: string }[]> {
  const roles: Record<string, string> = {
    'load-generator': LOAD_GENERATOR_ROLE,
    'rabbitmq-node': NODE_ROLE,
    // Kafka brokers and NATS servers: their rmqbench:component tag is their Role (core/failover/cloud-broker-fault.ts).
    [KAFKA_BROKER_ROLE]: KAFKA_BROKER_ROLE,
    [NATS_SERVER_ROLE]: NATS_SERVER_ROLE,
  };
  try {
    const instances = await (
      await awsNodes()
    ).clusterStackInstances(new (await import('@aws-sdk/client-ec2')).EC2Client({}), clusterId);
    return instances.map(({ instanceId, component }) => {
      const role = component === undefined ? undefined : roles[component];
      return role === undefined ? { instanceId } : { instanceId, role };
    });
  } catch {
    return [];
  }
}

/**
 * Where a repetition's broker nodes and their hosts are listed: the cluster stack's instances on aws, the scale set's
 * VMs on azure.
 */
function brokerHostsSource(event: IngestEvent): BrokerHostsSource | undefined {
  const clusterId = event.launch?.clusterId;
  if (!clusterId) return undefined;
  if (event.target === 'aws')
    return async () =>
      (await awsNodes()).clusterNodes(new (await import('@aws-sdk/client-ec2')).EC2Client({}), clusterId);
  if (event.target === 'azure')
    return async () =>
      (await azureNodes()).azureClusterNodes((await (await azureTarget()).azureClientsFromEnv()).clients, clusterId);
  return undefined;
}

export const handler = withTransientErrors(async (event: IngestEvent) => {
  // CheckSettled (adaptive repetitions): before the repetition starts, skip it if its scenario has settled.
  if (event.action === 'settledCheck') {
    if (!event.item) throw new Error('CheckSettled needs the repetition (item) to decide on');
    return checkSettledInStore(store, event.runId, event.item);
  }
  if (event.action === 'metricsOnly') {
    const hostMetrics = hostMetricsSource(event);
    if (!hostMetrics || !event.cluster)
      throw new Error(
        `metricsOnly needs a cloud target's cluster ` +
          `(target ${event.target ?? 'missing'}, cluster ${event.cluster ? 'given' : 'missing'})`,
      );
    return rereadLateHostMetrics(
      s3,
      bucket,
      store,
      event.runId,
      event.cluster.repetitions,
      hostMetrics,
      brokerHostsSource(event),
    );
  }
  if (!event.item) throw new Error('IngestRepetition needs the repetition (item) to ingest');
  return ingestFromS3(s3, bucket, store, event.runId, event.item, hostMetricsSource(event), brokerHostsSource(event));
});
