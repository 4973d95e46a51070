import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { AzureClients } from '../shared/azure-cluster';
import { kafkaRepetitionScript, type KafkaRepetitionScript, scenarioOf } from './kafka-script';
import { natsRepetitionScript, type NatsRepetitionScript } from './nats-script';
import { rawPrefix, runCommandName } from './logic';

/**
 * The Kafka and NATS repetitions on the Azure load generator: the same scripts as on AWS (kafkaRepetitionScript:
 * topic, consumers joined first, producers, every tool's output kept; natsRepetitionScript: the load client built and
 * run), only the transport differs, as for PerfTest on Azure (logic.ts startAzureRepetition): a managed Run Command,
 * and uploads to pre-signed S3 PUT URLs that arrive as its protected parameters (environment variables on Linux; never
 * in the script text, the instance view or a GET of the resource:
 * learn.microsoft.com/azure/virtual-machines/linux/run-command-managed), piped to cloud-init's `rmqbench-upload` on
 * stdin so that no process argument shows them. The brokers' listeners take clients without authentication inside the
 * VNet (bicep/modules/kafka-cluster.bicep, nats-cluster.bicep), so the scripts carry no credential.
 */

/** The environment variable carrying the pre-signed upload URL of one output file (Kafka's tools, NATS's client). */
export const uploadUrlVariable = (file: string) => `RMQBENCH_UPLOAD_URL_${file.replace(/\W/g, '_').toUpperCase()}`;

/** The upload of one file on the Azure load generator: its URL from its protected parameter, on stdin. */
const azureUploadCommand = (file: string) => `printf '%s\\n' "$${uploadUrlVariable(file)}" | rmqbench-upload ${file} -`;

/** Lines that check every upload URL arrived as a protected parameter before anything runs. */
function uploadUrlChecks(files: readonly string[]): string[] {
  return files.map(
    (file) =>
      `[ -n "\${${uploadUrlVariable(file)}:-}" ] || { echo "rmqbench: the protected parameter ` +
      `${uploadUrlVariable(file)} (pre-signed upload URL of ${file}) is missing" >&2; exit 1; }`,
  );
}

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
    uploadCommand: azureUploadCommand,
    index: options.item.index,
    ...(options.suffix === undefined ? {} : { suffix: options.suffix }),
  });
  return { ...kafka, script: ['set +x', ...uploadUrlChecks(kafka.uploads), kafka.script].join('\n') };
}

/** The Azure NATS repetition script: the shared one (nats-script.ts), preceded by the upload URLs' check. */
export function azureNatsRepetitionScript(options: {
  plan: unknown;
  item: ScheduledRepetition;
  serverUrls: string;
  suffix?: string;
}): NatsRepetitionScript {
  const nats = natsRepetitionScript({
    scenario: scenarioOf(options.plan, options.item),
    serverUrls: options.serverUrls,
    uploadCommand: azureUploadCommand,
    index: options.item.index,
    ...(options.suffix === undefined ? {} : { suffix: options.suffix }),
  });
  return { ...nats, script: ['set +x', ...uploadUrlChecks(nats.files), nats.script].join('\n') };
}

/** The outputs of bicep/main.bicep (broker kafka) a Kafka repetition on Azure needs. */
export const AZURE_KAFKA_REQUIRED_OUTPUTS = ['kafkaBootstrapServers', 'loadGeneratorResourceId'] as const;
/** The outputs of bicep/main.bicep (broker nats) a NATS repetition on Azure needs. */
export const AZURE_NATS_REQUIRED_OUTPUTS = ['natsServerUrls', 'loadGeneratorResourceId'] as const;

type AzureRepetitionEvent = {
  runId: string;
  plan: unknown;
  item: ScheduledRepetition;
  launch: { clusterId: string };
  readiness: { outputs: Record<string, string> };
};

/**
 * Starts one Kafka repetition on the run's Azure load generator; CheckRepetition polls the Run Command and reads the
 * tools' files back from runs/<runId>/raw/<repetition>/ as on AWS. The URLs stay valid until the script's own
 * deadline plus time for the upload.
 */
export async function startAzureKafkaRepetition(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  event: AzureRepetitionEvent,
  now = new Date(),
) {
  requireOutputs(event, AZURE_KAFKA_REQUIRED_OUTPUTS, 'kafka');
  const kafka = azureKafkaRepetitionScript({
    plan: event.plan,
    item: event.item,
    bootstrapServers: event.readiness.outputs.kafkaBootstrapServers as string,
  });
  return startOnLoadGenerator(clients, s3, bucket, event, { ...kafka, files: kafka.uploads }, now);
}

/** Starts one NATS repetition on the run's Azure load generator, as startAzureKafkaRepetition does Kafka's. */
export async function startAzureNatsRepetition(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  event: AzureRepetitionEvent,
  now = new Date(),
) {
  requireOutputs(event, AZURE_NATS_REQUIRED_OUTPUTS, 'nats');
  const nats = azureNatsRepetitionScript({
    plan: event.plan,
    item: event.item,
    serverUrls: event.readiness.outputs.natsServerUrls as string,
  });
  return startOnLoadGenerator(clients, s3, bucket, event, nats, now);
}

function requireOutputs(event: AzureRepetitionEvent, required: readonly string[], broker: string): void {
  const outputs = event.readiness.outputs;
  const missing = required.filter((name) => !outputs[name]);
  if (missing.length > 0)
    throw new Error(
      `the deployment in resource group ${event.launch.clusterId} lacks the output(s) ${missing.join(', ')} ` +
        `(outputs: ${Object.keys(outputs).join(', ') || 'none'}); ` +
        `deploy the current bicep/main.bicep with broker ${broker}`,
    );
}

/** Pre-signs an upload URL per file and starts the script as the repetition's managed Run Command. */
async function startOnLoadGenerator(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  event: AzureRepetitionEvent,
  tools: { script: string; args: string[]; files: readonly string[]; timeoutSeconds: number },
  now: Date,
) {
  const prefix = rawPrefix(event.runId, event.item);
  const expiresIn = tools.timeoutSeconds + 300;
  const protectedParameters = await Promise.all(
    tools.files.map(async (file) => ({
      name: uploadUrlVariable(file),
      value: await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/${file}` }), { expiresIn }),
    })),
  );
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { startRunCommand, vmNameFromResourceId } = await import('../shared/azure-cluster');
  const started = await startRunCommand(
    clients,
    event.launch.clusterId,
    vmNameFromResourceId(event.readiness.outputs.loadGeneratorResourceId as string),
    {
      name: runCommandName(event.item),
      script: tools.script,
      protectedParameters,
      timeoutInSeconds: tools.timeoutSeconds,
    },
  );
  return {
    ...started,
    startedAt: now.toISOString(),
    perfTestArgs: tools.args,
    doneBy: new Date(now.getTime() + (tools.timeoutSeconds + 60) * 1000).toISOString(),
  };
}
