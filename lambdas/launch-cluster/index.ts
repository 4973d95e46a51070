import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { azurePlanClusterParameters } from '../../core/cloud/azure-cloud-init';
import { AZURE_METRICS_SETTLE_SECONDS } from '../../core/metrics/azure-monitor-metrics';
import { clusterExpiryHours } from '../../core/cloud/workflow-shape';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { AwsClusterConfig, launchStack, planClusterOf } from '../shared/aws-launch';
import { requireEnv } from '../shared/env';
import { withTransientErrors } from '../shared/transient-errors';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureLaunch = () => import('./azure');

/**
 * CLUSTER_TEMPLATE_URL_<version with _ for .>, one per RabbitMqRelease the controller ships (e.g.
 * CLUSTER_TEMPLATE_URL_4_1_4).
 */
const TEMPLATE_URL_PREFIX = 'CLUSTER_TEMPLATE_URL_';
/** KAFKA_CLUSTER_TEMPLATE_URL_<broker count>, one per count the controller ships a Kafka template for. */
const KAFKA_TEMPLATE_URL_PREFIX = 'KAFKA_CLUSTER_TEMPLATE_URL_';
/** NATS_CLUSTER_TEMPLATE_URL_<node count>, one per count the controller ships a NATS template for. */
const NATS_TEMPLATE_URL_PREFIX = 'NATS_CLUSTER_TEMPLATE_URL_';
/** The templates whose environment variables start with `prefix`, by what follows it. */
const templateUrlsByCount = (prefix: string) =>
  Object.fromEntries(
    Object.entries(process.env)
      .filter(([name, value]) => name.startsWith(prefix) && value)
      .map(([name, value]) => [name.slice(prefix.length), value!]),
  );

const config: AwsClusterConfig = {
  templateUrls: Object.fromEntries(
    Object.entries(process.env)
      .filter(([name, value]) => name.startsWith(TEMPLATE_URL_PREFIX) && value)
      .map(([name, value]) => [name.slice(TEMPLATE_URL_PREFIX.length).replace(/_/g, '.'), value!]),
  ),
  kafkaTemplateUrls: templateUrlsByCount(KAFKA_TEMPLATE_URL_PREFIX),
  natsTemplateUrls: templateUrlsByCount(NATS_TEMPLATE_URL_PREFIX),
  defaultRabbitmqVersion: requireEnv('CLUSTER_DEFAULT_RABBITMQ_VERSION'),
  cloudFormationRoleArn: requireEnv('CLOUDFORMATION_ROLE_ARN'),
  resultsBucketName: requireEnv('RAW_OUTPUT_BUCKET'),
  expiryHours: Number(requireEnv('EXPIRY_HOURS')),
  launchTimeoutMinutes: Number(requireEnv('LAUNCH_TIMEOUT_MINUTES')),
  network: {
    vpcId: requireEnv('CLUSTER_VPC_ID'),
    privateSubnetIds: requireEnv('CLUSTER_SUBNET_IDS').split(','),
    availabilityZones: requireEnv('CLUSTER_AVAILABILITY_ZONES').split(','),
    clientSecurityGroupId: requireEnv('CLUSTER_CLIENT_SECURITY_GROUP_ID'),
  },
};
const cfn = new CloudFormationClient({});

export const handler = withTransientErrors(
  async (event: { runId: string; target: WorkflowTarget; plan: unknown; cluster: ScheduledCluster }) => {
    if (event.target === 'azure') {
      const target = await (await azureTarget()).azureTarget();
      // The cluster lives as long as its own repetitions need (and the workflow's wait for Azure Monitor's late
      // minutes).
      const expiryHours = clusterExpiryHours(
        target.config.expiryHours,
        event.cluster,
        target.config.launchTimeoutMinutes,
        AZURE_METRICS_SETTLE_SECONDS,
      );
      // The controller's NAT gateway addresses: a RabbitMQ cluster's public load balancer admits them (the smoke test
      // comes from there); a Kafka or NATS launch sends them only when the secret gives no source prefix.
      const controllerEgressAddresses = requireEnv(
        'CONTROLLER_EGRESS_ADDRESSES',
        'the BenchmarkController sets it when its azure prop is given',
      )
        .split(',')
        .filter(Boolean);
      const azure = { ...target, config: { ...target.config, expiryHours, controllerEgressAddresses } };
      // main.bicep with broker kafka or nats: nodes at private IPs, no certificate, no public load balancer, no
      // RabbitMQ texts.
      const spec = planClusterOf(event.plan, event.cluster);
      if (spec.broker === 'kafka')
        return (await azureLaunch()).launchAzureKafkaCluster(azure.clients, azure.config, event.runId, event.cluster);
      if (spec.broker === 'nats')
        return (await azureLaunch()).launchAzureNatsCluster(
          azure.clients,
          azure.config,
          event.runId,
          event.cluster,
          spec.syncInterval,
        );
      // The plan cluster's RabbitMQ version and broker configuration (topology, node count), generated as for the other
      // targets.
      const planClusterParameters: Record<string, unknown> = {
        ...azurePlanClusterParameters(planClusterOf(event.plan, event.cluster)),
      };
      // Refuses world-open source prefixes, and deploys with a certificate of its own (TLS on the public load
      // balancer).
      return (await azureLaunch()).launchAzureCluster(
        azure.clients,
        azure.config,
        event.runId,
        event.cluster,
        new Date(),
        planClusterParameters,
        planClusterOf(event.plan, event.cluster).loadGenerators,
      );
    }
    if (event.target !== 'aws')
      throw new Error(
        `this controller launches AWS and Azure clusters; ` +
          `target "${event.target}" runs with rmqbench run on the machine itself`,
      );
    // The scheduled cluster carries the node count and topology type; the plan has the rest (mirrorTo,
    // rabbitmqVersion).
    const expiryHours = clusterExpiryHours(config.expiryHours, event.cluster, config.launchTimeoutMinutes);
    return launchStack(
      cfn,
      { ...config, expiryHours },
      event.runId,
      event.cluster,
      planClusterOf(event.plan, event.cluster),
    );
  },
);
