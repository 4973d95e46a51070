import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { validatePlan } from '../../core/plan';
import { buildPerfTestArgs, redactPerfTestArgs } from '../../core/perftest-args';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { type AzureClients, startRunCommand, vmNameFromResourceId } from '../shared/azure-cluster';

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** The files PerfTest leaves per repetition, uploaded under runs/<runId>/raw/<rawKey without .json>/ (check-repetition reads them there). */
export const RAW_FILES = ['stdout.txt', 'perftest.csv'] as const;
export const rawPrefix = (runId: string, item: ScheduledRepetition) => `runs/${runId}/raw/${item.rawKey.replace(/\.json$/, '')}`;

/** PerfTest arguments for one repetition against `host` (credentials as the USER:PASS placeholder). */
function perfTestArgs(plan: unknown, item: ScheduledRepetition, endpoint: string): string[] {
  const validated = validatePlan(plan, 'the execution input');
  const scenario = validated.scenarios.find((candidate) => candidate.id === item.scenarioId);
  if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in plan ${validated.name}`);
  const host = endpoint.replace(/^amqps?:\/\//, '');
  return buildPerfTestArgs({ workload: scenario.workload, topology: scenario.cluster.topology, queueArguments: {}, uris: [`amqp://USER:PASS@${host}`], csvPath: 'perftest.csv', predeclared: false });
}

/**
 * The AWS-RunShellScript script for one repetition: PerfTest against the load balancer with the admin
 * credentials read on the instance (never in the command or its logs), then stdout and CSV to S3.
 */
export function perfTestScript(options: { plan: unknown; runId: string; item: ScheduledRepetition; endpoint: string; secretArn: string; bucket: string }): { script: string; redactedArgs: string[] } {
  const args = perfTestArgs(options.plan, options.item, options.endpoint);
  const prefix = `s3://${options.bucket}/${rawPrefix(options.runId, options.item)}`;
  const script = [
    'set -euo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK"',
    `SECRET=$(aws secretsmanager get-secret-value --secret-id ${quote(options.secretArn)} --query SecretString --output text)`,
    'USER=$(echo "$SECRET" | python3 -c "import json,sys,urllib.parse;print(urllib.parse.quote(json.load(sys.stdin)[\'username\'],safe=\'\'))")',
    'PASS=$(echo "$SECRET" | python3 -c "import json,sys,urllib.parse;print(urllib.parse.quote(json.load(sys.stdin)[\'password\'],safe=\'\'))")',
    `java -cp '/opt/perftest/*' com.rabbitmq.perf.PerfTest ${args.map((arg) => (arg.includes('USER:PASS') ? `"${arg.replace('USER:PASS', '$USER:$PASS')}"` : quote(arg))).join(' ')} > stdout.txt 2>&1 || echo "exit $?" >> stdout.txt`,
    `aws s3 cp stdout.txt ${quote(`${prefix}/stdout.txt`)} && aws s3 cp perftest.csv ${quote(`${prefix}/perftest.csv`)}`,
  ].join('\n');
  return { script, redactedArgs: redactPerfTestArgs(args) };
}

/**
 * Pre-signed S3 PUT URLs for the raw files of one repetition: the Azure load generator has no AWS
 * credentials, so each URL carries exactly one upload to one key, valid for `expiresInSeconds`.
 */
export async function presignRawUploads(s3: S3Client, bucket: string, runId: string, item: ScheduledRepetition, expiresInSeconds: number): Promise<Record<(typeof RAW_FILES)[number], string>> {
  const prefix = rawPrefix(runId, item);
  const entries = await Promise.all(RAW_FILES.map(async (file) => [file, await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/${file}` }), { expiresIn: expiresInSeconds })] as const));
  return Object.fromEntries(entries) as Record<(typeof RAW_FILES)[number], string>;
}

/**
 * The VM Run Command script for one repetition on the Azure load generator (cloud-init installed
 * `perf-test` and `rmqbench-upload`): PerfTest against the load balancer, then stdout and CSV to the
 * pre-signed URLs with curl. Run Command scripts are not kept in the VM's instance view, but the
 * credentials are in this script: the redacted arguments are what is recorded.
 */
export function azurePerfTestScript(options: { plan: unknown; item: ScheduledRepetition; endpoint: string; username: string; password: string; uploadUrls: Record<(typeof RAW_FILES)[number], string> }): { script: string; redactedArgs: string[] } {
  const args = perfTestArgs(options.plan, options.item, options.endpoint);
  const credentials = `${encodeURIComponent(options.username)}:${encodeURIComponent(options.password)}`;
  const script = [
    'set -euo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK"',
    `perf-test ${args.map((arg) => quote(arg.replace('USER:PASS', credentials))).join(' ')} > stdout.txt 2>&1 || echo "exit $?" >> stdout.txt`,
    'touch perftest.csv',
    ...RAW_FILES.map((file) => `rmqbench-upload ${file} ${quote(options.uploadUrls[file])}`),
  ].join('\n');
  return { script, redactedArgs: redactPerfTestArgs(args) };
}

export interface AzureRepetitionEvent {
  readonly runId: string;
  readonly plan: unknown;
  readonly item: ScheduledRepetition;
  readonly launch: { readonly clusterId: string };
  readonly readiness: { readonly outputs: Record<string, string> };
}

/**
 * Starts one repetition on the Azure load generator of the run's resource group through VM Run Command;
 * the pre-signed URLs stay valid until the repetition's deadline plus time for the upload.
 */
export async function startAzureRepetition(clients: AzureClients, s3: S3Client, bucket: string, parameters: Readonly<Record<string, unknown>>, event: AzureRepetitionEvent, now = new Date(), updateIntervalInMs?: number) {
  const endpoint = event.readiness.outputs.amqpEndpoint;
  const loadGenerator = event.readiness.outputs.loadGeneratorResourceId;
  if (!endpoint || !loadGenerator) throw new Error(`the deployment in resource group ${event.launch.clusterId} has no amqpEndpoint / loadGeneratorResourceId output (outputs: ${Object.keys(event.readiness.outputs).join(', ') || 'none'})`);
  const password = parameters.rabbitmqAdminPassword;
  if (typeof password !== 'string' || password === '') throw new Error('the Azure template parameters lack rabbitmqAdminPassword (put it in the credentials secret under "parameters")');
  const username = typeof parameters.rabbitmqAdminUsername === 'string' ? parameters.rabbitmqAdminUsername : 'rmqbench-admin';
  const deadlineSeconds = event.item.durationSeconds + 180;
  const uploadUrls = await presignRawUploads(s3, bucket, event.runId, event.item, deadlineSeconds + 300);
  const { script, redactedArgs } = azurePerfTestScript({ plan: event.plan, item: event.item, endpoint, username, password, uploadUrls });
  const started = await startRunCommand(clients, event.launch.clusterId, vmNameFromResourceId(loadGenerator), script, updateIntervalInMs);
  return { ...started, startedAt: now.toISOString(), perfTestArgs: redactedArgs, doneBy: new Date(now.getTime() + deadlineSeconds * 1000).toISOString() };
}
