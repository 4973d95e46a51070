import { BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import type { S3Client } from '@aws-sdk/client-s3';
import type { AzureClients, StartedRunCommand } from '../shared/azure-cluster';
import { azureLoadGeneratorResourceIds } from '../shared/azure-load-generators';
import { generatorFolder, repetitionGenerators, sharedStartDelaySeconds, type GeneratorRun } from './generators';
import {
  azurePerfTestScript,
  azureRepetitionContext,
  FAULT_RAW_FILES,
  GENERATOR_RAW_FILES,
  presignRawUploads,
  runCommandName,
  startAzureRepetition,
  uploadUrlParameters,
  type AzureRepetitionEvent,
  type RawFile,
} from './logic';

/** The started Run Command of one of several load generators (check-repetition waits for each). */
export interface AzureStartedGenerator extends StartedRunCommand {
  readonly perfTestArgs: string[];
}

/**
 * One generator's pre-signed upload URLs: its stdout, CSV and STARTED_AT_FILE under generator-<index>/ (where
 * check-repetition reads them), and for generator 0 the broker samples and the verifier's output where one load
 * generator puts them. Each URL carries one PUT to one key, so the folder is in the URL, not the script.
 */
async function generatorUploadUrls(
  s3: S3Client,
  bucket: string,
  event: AzureRepetitionEvent,
  run: GeneratorRun,
  files: readonly RawFile[],
  expiresInSeconds: number,
): Promise<Partial<Record<RawFile, string>>> {
  const own = await presignRawUploads(
    s3,
    bucket,
    event.runId,
    event.item,
    expiresInSeconds,
    ['stdout.txt', 'perftest.csv', ...GENERATOR_RAW_FILES],
    generatorFolder(run.index),
  );
  if (run.index !== 0) return own;
  const shared: RawFile[] = [BROKER_SAMPLES_FILE, ...FAULT_RAW_FILES.filter((file) => files.includes(file))];
  return { ...own, ...(await presignRawUploads(s3, bucket, event.runId, event.item, expiresInSeconds, shared)) };
}

/**
 * Starts a RabbitMQ repetition on Azure: on the one load generator as before (startAzureRepetition), or, with the plan
 * cluster's loadGenerators > 1, one managed Run Command per load generator VM (by index, azureLoadGeneratorResourceIds)
 * with its share of the workload, its own upload URLs and the shared start SHARED_START_DELAY_SECONDS ahead, as on AWS
 * (aws-generators.ts). A managed Run Command is a child resource of its VM
 * (PUT .../virtualMachines/{vmName}/runCommands/{runCommandName},
 * https://learn.microsoft.com/rest/api/compute/virtual-machine-run-commands/create-or-update), so every VM's may carry
 * the repetition's one name; they are sent at once. With several, `startedAt` is the shared start (the fault is
 * scheduled from it), `vmName`/`runCommandName`/`perfTestArgs` are generator 0's and `generators` lists every one.
 */
export async function startAzureRabbitMqRepetition(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  parameters: Readonly<Record<string, unknown>>,
  event: AzureRepetitionEvent,
  now = new Date(),
) {
  const startDelaySeconds = sharedStartDelaySeconds();
  const startAt = new Date(now.getTime() + startDelaySeconds * 1000);
  const generators = repetitionGenerators(event.plan, event.item, startAt.getTime());
  if (!generators) return startAzureRepetition(clients, s3, bucket, parameters, event, now);
  const context = azureRepetitionContext(parameters, event);
  const vmIds = azureLoadGeneratorResourceIds(event.readiness.outputs, event.launch.clusterId, generators.runs.length);
  // Each Run Command may wait for the shared start as well as run.
  const timeoutInSeconds = context.deadlineSeconds + startDelaySeconds;
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { startRunCommand, vmNameFromResourceId } = await import('../shared/azure-cluster');
  const started: AzureStartedGenerator[] = await Promise.all(
    generators.runs.map(async (run) => {
      const urls = await generatorUploadUrls(s3, bucket, event, run, context.files, timeoutInSeconds + 300);
      const { script, redactedArgs } = azurePerfTestScript({ ...context.scriptOptions, generator: run });
      const command = await startRunCommand(clients, event.launch.clusterId, vmNameFromResourceId(vmIds[run.index]!), {
        name: runCommandName(event.item),
        script,
        protectedParameters: uploadUrlParameters(urls),
        timeoutInSeconds,
      });
      return { ...command, perfTestArgs: redactedArgs };
    }),
  );
  const first = started[0]!;
  return {
    resourceGroup: first.resourceGroup,
    vmName: first.vmName,
    runCommandName: first.runCommandName,
    startedAt: startAt.toISOString(),
    perfTestArgs: first.perfTestArgs,
    doneBy: new Date(startAt.getTime() + context.deadlineSeconds * 1000).toISOString(),
    generators: started,
    loadGeneratorSplit: generators.split,
  };
}
