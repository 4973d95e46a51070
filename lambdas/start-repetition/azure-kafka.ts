import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { AzureClients } from '../shared/azure-cluster';
import { kafkaRepetitionScript, type KafkaRepetitionScript, scenarioOf } from './kafka-script';
import { rawPrefix, runCommandName } from './logic';

/**
 * The Kafka repetition on the Azure load generator: the same script as on AWS (kafkaRepetitionScript: topic, consumers
 * joined first, producers, every tool's output kept), only the transport differs, as for PerfTest on Azure
 * (logic.ts startAzureRepetition): a managed Run Command, and uploads to pre-signed S3 PUT URLs that arrive as its
 * protected parameters (environment variables on Linux; never in the script text, the instance view or a GET of the
 * resource: learn.microsoft.com/azure/virtual-machines/linux/run-command-managed), piped to cloud-init's
 * `rmqbench-upload` on stdin so that no process argument shows them. The brokers' listener is PLAINTEXT inside the VNet
 * (bicep/modules/kafka-cluster.bicep), so the script carries no credential.
 */

/** The environment variable carrying the pre-signed upload URL of one Kafka tool's output file. */
export const kafkaUploadVariable = (file: string) => `RMQBENCH_UPLOAD_URL_${file.replace(/\W/g, '_').toUpperCase()}`;

/** The Azure Kafka repetition script: the shared one, preceded by a check that every upload URL arrived. */
export function azureKafkaRepetitionScript(options: {
  plan: unknown;
  item: ScheduledRepetition;
  bootstrapServers: string;
  suffix?: string;
}): KafkaRepetitionScript {
  const kafka = kafkaRepetitionScript({
    scenario: scenarioOf(options.plan, options.item),
    bootstrapServers: options.bootstrapServers,
    uploadCommand: (file) => `printf '%s\\n' "$${kafkaUploadVariable(file)}" | rmqbench-upload ${file} -`,
    ...(options.suffix === undefined ? {} : { suffix: options.suffix }),
  });
  const files = [...kafka.files.producers, ...kafka.files.consumers];
  const checks = files.map(
    (file) =>
      `[ -n "\${${kafkaUploadVariable(file)}:-}" ] || { echo "rmqbench: the protected parameter ` +
      `${kafkaUploadVariable(file)} (pre-signed upload URL of ${file}) is missing" >&2; exit 1; }`,
  );
  return { ...kafka, script: ['set +x', ...checks, kafka.script].join('\n') };
}

/** The outputs of bicep/main.bicep (broker kafka) a Kafka repetition on Azure needs. */
export const AZURE_KAFKA_REQUIRED_OUTPUTS = ['kafkaBootstrapServers', 'loadGeneratorResourceId'] as const;

/**
 * Starts one Kafka repetition on the run's Azure load generator; CheckRepetition polls the Run Command and reads the
 * tools' files back from runs/<runId>/raw/<repetition>/ as on AWS. The URLs stay valid until the script's own
 * deadline plus time for the upload.
 */
export async function startAzureKafkaRepetition(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  event: {
    runId: string;
    plan: unknown;
    item: ScheduledRepetition;
    launch: { clusterId: string };
    readiness: { outputs: Record<string, string> };
  },
  now = new Date(),
) {
  const outputs = event.readiness.outputs;
  const missing = AZURE_KAFKA_REQUIRED_OUTPUTS.filter((name) => !outputs[name]);
  if (missing.length > 0)
    throw new Error(
      `the deployment in resource group ${event.launch.clusterId} lacks the output(s) ${missing.join(', ')} ` +
        `(outputs: ${Object.keys(outputs).join(', ') || 'none'}); ` +
        `deploy the current bicep/main.bicep with broker kafka`,
    );
  const kafka = azureKafkaRepetitionScript({
    plan: event.plan,
    item: event.item,
    bootstrapServers: outputs.kafkaBootstrapServers as string,
  });
  const prefix = rawPrefix(event.runId, event.item);
  const files = [...kafka.files.producers, ...kafka.files.consumers];
  const expiresIn = kafka.timeoutSeconds + 300;
  const protectedParameters = await Promise.all(
    files.map(async (file) => ({
      name: kafkaUploadVariable(file),
      value: await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/${file}` }), { expiresIn }),
    })),
  );
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { startRunCommand, vmNameFromResourceId } = await import('../shared/azure-cluster');
  const started = await startRunCommand(
    clients,
    event.launch.clusterId,
    vmNameFromResourceId(outputs.loadGeneratorResourceId as string),
    {
      name: runCommandName(event.item),
      script: kafka.script,
      protectedParameters,
      timeoutInSeconds: kafka.timeoutSeconds,
    },
  );
  return {
    ...started,
    startedAt: now.toISOString(),
    perfTestArgs: kafka.args,
    doneBy: new Date(now.getTime() + (kafka.timeoutSeconds + 60) * 1000).toISOString(),
  };
}
