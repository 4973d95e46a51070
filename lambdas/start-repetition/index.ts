import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { ScheduledRepetition, WorkflowTarget } from '../../state-machines/schedule';
import { startPerfTest } from '../shared/aws-cluster';
import { requireEnv } from '../shared/env';
import { startAzureKafkaRepetition, startAzureNatsRepetition } from './azure-load-generator';
import { awsKafkaRepetitionScript, scenarioOf } from './kafka-script';
import { awsNatsRepetitionScript } from './nats-script';
import { faultSchedule } from './logic';
import { startAzureRabbitMqRepetition } from './azure-generators';
import { startAwsRabbitMqRepetition } from './aws-generators';
import { withTransientErrors } from '../shared/transient-errors';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const ssm = new SSMClient({});
const s3 = new S3Client({});

/** What every broker's own repetition script takes from the event. */
const common = (event: { plan: unknown; runId: string; item: ScheduledRepetition }) => ({
  plan: event.plan,
  runId: event.runId,
  item: event.item,
  bucket,
});

export const handler = withTransientErrors(
  async (
    event: {
      runId: string;
      target: WorkflowTarget;
      plan: unknown;
      item: ScheduledRepetition;
      launch: { clusterId: string; readyBy?: string };
      readiness: { outputs: Record<string, string> };
    },
    context?: { getRemainingTimeInMillis(): number },
  ) => {
    if (event.target === 'azure') {
      const azure = await (await azureTarget()).azureClientsFromEnv();
      // The AWS Kafka or NATS script through a managed Run Command (lambdas/start-repetition/azure-load-generator.ts).
      const azureBroker = scenarioOf(event.plan, event.item).cluster.broker;
      const started =
        azureBroker === 'kafka'
          ? await startAzureKafkaRepetition(azure.clients, s3, bucket, event)
          : azureBroker === 'nats'
            ? await startAzureNatsRepetition(azure.clients, s3, bucket, event)
            : await startAzureRabbitMqRepetition(azure.clients, s3, bucket, azure.parameters, event);
      return { ...started, ...faultSchedule(event.plan, event.item, new Date(started.startedAt)) };
    }
    const broker = scenarioOf(event.plan, event.item).cluster.broker;
    const output = (part: string) =>
      Object.entries(event.readiness.outputs).find(([key]) => key.includes(part))?.[1] ?? '';
    // InvalidInstanceId (SSM agent not registered yet) is retried until the launch deadline, at least a minute, within
    // this invocation's time.
    const invocationEnd = Date.now() + (context?.getRemainingTimeInMillis() ?? 60_000) - 5_000;
    const until = new Date(
      Math.min(invocationEnd, Math.max(Date.parse(event.launch.readyBy ?? '') || 0, Date.now() + 60_000)),
    );
    // Kafka's own performance tools, or rmqbench's NATS load client, on the load generator, against the servers'
    // names (the KafkaCluster stack's BootstrapServers output, the NatsCluster stack's ServerUrls).
    const own =
      broker === 'kafka'
        ? awsKafkaRepetitionScript({ ...common(event), bootstrapServers: output('BootstrapServers') })
        : broker === 'nats'
          ? awsNatsRepetitionScript({ ...common(event), serverUrls: output('ServerUrls') })
          : undefined;
    if (own) {
      const started = await startPerfTest(ssm, output('InstanceId'), own.script, own.timeoutSeconds, { until });
      const startedAt = new Date();
      return {
        ...started,
        startedAt: startedAt.toISOString(),
        perfTestArgs: own.args,
        doneBy: new Date(startedAt.getTime() + (own.timeoutSeconds + 60) * 1000).toISOString(),
        // The fault (and its lost-message verifier beside the tools, lambdas/shared/broker-verifier-lines.ts).
        ...faultSchedule(event.plan, event.item, startedAt),
      };
    }
    return startAwsRabbitMqRepetition(ssm, bucket, event, { until });
  },
);
