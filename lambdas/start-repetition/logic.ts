import { createHash } from 'node:crypto';
import { AWS_CLI_ENVIRONMENT } from '../../core/cloud/aws-cli-environment';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { PERF_TEST_COMMAND } from '../../core/perftest/load-generator-paths';
import { queueArgumentsFor } from '../../core/broker/broker-config';
import { BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import { VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import { validatePlan, type Scenario } from '../../core/plan/plan';
import { buildPerfTestArgs, redactPerfTestArgs } from '../../core/perftest/perftest-args';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { AzureClients } from '../shared/azure-cluster';
import { startBrokerSamplerLines, stopBrokerSamplerLines, SAMPLER_GRACE_SECONDS } from './broker-sampler';
import { startVerifierLines, waitVerifierLines } from './verifier-lines';
import type { LoadGeneratorShare } from '../../core/loadgen/workload-split';
import { generatorFolder, sharedStartLines, STARTED_AT_FILE, type GeneratorRun } from './generators';
import { deleteLeftoverQueuesLines } from './leftover-queues';

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The files a RabbitMQ repetition leaves, uploaded under runs/<runId>/raw/<rawKey without .json>/ (check-repetition
 * reads
 * them there): PerfTest's output and CSV, and the management API sampler's lines (core/broker/broker-samples.ts).
 */
export const RAW_FILES = ['stdout.txt', 'perftest.csv', BROKER_SAMPLES_FILE] as const;
/**
 * Left only by a repetition with a fault: the lost-message verifier's output (verifier-lines.ts,
 * core/failover/cloud-verifier.ts).
 */
export const FAULT_RAW_FILES = [VERIFIER_OUTPUT_FILE] as const;
/** Left only by one of several load generators (issue 27), in its own folder: when its PerfTest started. */
export const GENERATOR_RAW_FILES = [STARTED_AT_FILE] as const;
export type RawFile =
  (typeof RAW_FILES)[number] | (typeof FAULT_RAW_FILES)[number] | (typeof GENERATOR_RAW_FILES)[number];
export const rawPrefix = (runId: string, item: ScheduledRepetition) =>
  `runs/${runId}/raw/${item.rawKey.replace(/\.json$/, '')}`;

function scenarioFor(plan: unknown, item: ScheduledRepetition): Scenario {
  const validated = validatePlan(plan, 'the execution input');
  const scenario = validated.scenarios.find((candidate) => candidate.id === item.scenarioId);
  if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in plan ${validated.name}`);
  return scenario;
}

const amqpHost = (endpoint: string) => endpoint.replace(/^amqps?:\/\//, '');

/** PerfTest arguments for one repetition against `host` (credentials as the USER:PASS placeholder). */
function perfTestArgs(
  plan: unknown,
  item: ScheduledRepetition,
  endpoint: string,
  share?: LoadGeneratorShare,
): string[] {
  const scenario = scenarioFor(plan, item);
  const host = amqpHost(endpoint);
  // The same queue arguments as the local target (core/broker/broker-config.ts): without them PerfTest declares classic
  // queues.
  const queueArguments = queueArgumentsFor(scenario.cluster.topology, scenario.cluster.nodes);
  return buildPerfTestArgs({
    workload: scenario.workload,
    topology: scenario.cluster.topology,
    queueArguments,
    uris: [`amqp://USER:PASS@${host}`],
    csvPath: 'perftest.csv',
    predeclared: false,
    ...(share ? { share } : {}),
  });
}

/**
 * The lost-message verifier beside PerfTest, for a scenario with a fault only (verifier-lines.ts): its start lines, its
 * wait lines, and whether it runs. It connects through the same endpoint as PerfTest and declares its queue with the
 * topology's arguments, as the local target declares it (local/local-target.ts).
 */
function verifierLines(
  plan: unknown,
  item: ScheduledRepetition,
  endpoint: string,
  perfTestCommand: string,
): { start: string[]; wait: string[]; runs: boolean } {
  const scenario = scenarioFor(plan, item);
  if (!scenario.workload.fault) return { start: [], wait: [], runs: false };
  const queueArguments = queueArgumentsFor(scenario.cluster.topology, scenario.cluster.nodes);
  return {
    start: startVerifierLines({
      perfTestCommand,
      amqpHost: amqpHost(endpoint),
      seconds: item.durationSeconds,
      queueArguments,
    }),
    wait: waitVerifierLines(),
    runs: true,
  };
}

/**
 * When the scenario's fault and its healing are due, from when PerfTest's command was sent (`startedAt`): the workflow
 * waits for these timestamps (state-machines/phases.ts buildFaultPhase), as it does for the local target's.
 * PerfTest itself starts a few seconds later on the load generator (the benchmark user is created first, then the JVM).
 */
export function faultSchedule(
  plan: unknown,
  item: ScheduledRepetition,
  startedAt: Date,
): { fault?: { at: string; healAt?: string } } {
  const fault = validatePlan(plan, 'the execution input').scenarios.find(
    (candidate) => candidate.id === item.scenarioId,
  )?.workload.fault;
  if (!fault) return {};
  const due = (seconds: number) => new Date(startedAt.getTime() + seconds * 1000).toISOString();
  return {
    fault: {
      at: due(fault.atSeconds),
      ...(fault.healAtSeconds === undefined ? {} : { healAt: due(fault.healAtSeconds) }),
    },
  };
}

/**
 * Turns the admin secret's JSON into the curl config line `user = "name:password"`, escaping backslashes and quotes as
 * curl's config syntax needs.
 */
const ADMIN_CURL_CONFIG_PY =
  String.raw`import json,sys; s=json.load(sys.stdin); e=lambda v: v.replace("\\", "\\\\").replace('"', '\\"'); ` +
  String.raw`print('user = "%s:%s"' % (e(s["username"]), e(s["password"])))`;

/** Permissions of the per-run benchmark user: PerfTest's exchange (`direct`) and the benchmark queues, nothing else. */
export const BENCHMARK_USER_PERMISSIONS = {
  configure: '^(perf-test.*|rmqbench.*|direct)$',
  write: '^(perf-test.*|rmqbench.*|direct)$',
  read: '^(perf-test.*|rmqbench.*|direct)$',
} as const;

/**
 * The benchmark user's one tag: `monitoring`, so that the broker sampler (broker-sampler.ts) can read /api/nodes
 * (is_authorized_monitor) and log in to the management API at all (a user without a management tag is refused "Not
 * management user"; https://www.rabbitmq.com/docs/management#permissions, and core/broker/broker-samples.ts
 * BROKER_SAMPLE_PATHS for each endpoint's check in the 3.13.7 and 4.1.4 sources). `monitoring` only reads: it lists
 * nodes, connections and channels of every user, and changes nothing; not `administrator`.
 */
export const BENCHMARK_USER_TAGS = 'monitoring';

/**
 * Shell lines that create this repetition's benchmark user through the management API ($MANAGEMENT_URL) with the admin
 * credentials in $ADMIN_CURL_CONFIG (a curl config line, handed to curl on stdin: printf is a builtin, so no process
 * argument shows it), and delete it when the script exits, whatever happens. The user has BENCHMARK_USER_TAGS (not an
 * administrator) and BENCHMARK_USER_PERMISSIONS on the default vhost; PerfTest connects as $BENCH_USER:$BENCH_PASS and
 * the broker sampler reads the management API as the same user.
 */
export function benchmarkUserLines(): string[] {
  return [
    'admin_api() { printf \'%s\\n\' "$ADMIN_CURL_CONFIG" | ' +
      'curl -sSf -K - -X "$1" -H \'content-type: application/json\' ' +
      '${3:+--data-binary "@$3"} "$MANAGEMENT_URL/api/$2"; }',
    'BENCH_USER="rmqbench-run-$(od -An -N6 -tx1 /dev/urandom | tr -d \' \\n\')"',
    "BENCH_PASS=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \\n')",
    'trap \'admin_api DELETE "users/$BENCH_USER" > /dev/null 2>&1 || ' +
      'echo "rmqbench: could not delete benchmark user $BENCH_USER" >&2; cd /; rm -rf "$WORK"\' EXIT',
    `(umask 077 && printf '{"password":"%s","tags":"${BENCHMARK_USER_TAGS}"}' "$BENCH_PASS" > user.json)`,
    `printf '%s' ${quote(JSON.stringify(BENCHMARK_USER_PERMISSIONS))} > permissions.json`,
    'admin_api PUT "users/$BENCH_USER" user.json',
    'admin_api PUT "permissions/%2F/$BENCH_USER" permissions.json',
    'rm -f user.json',
  ];
}

/** The cluster's management URL, checked: it is written into the script. */
function checkedManagementUrl(url: string): string {
  const managementUrl = url.replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s'"]+$/.test(managementUrl))
    throw new Error(`the cluster's management URL must be an http(s) URL, got "${url}"`);
  return managementUrl;
}

/**
 * The AWS-RunShellScript script for one repetition. The admin credentials are read on the instance from Secrets
 * Manager (never in the command, its logs or any process's arguments: they reach curl on stdin) and used only to
 * create a benchmark user for this repetition through the management API (no tags: not an administrator;
 * BENCHMARK_USER_PERMISSIONS on the default vhost), which the script deletes when it exits, whatever happens. PerfTest,
 * which takes credentials only in its `--uri` arguments, runs with that user; the load generator's /proc is mounted
 * with hidepid=2 (cdk/user-data/load-generator.ts), so other users cannot read those arguments either. The broker
 * sampler (broker-sampler.ts) reads the management API as the same user while PerfTest runs. Then stdout, CSV and the
 * sampler's lines go to S3.
 */
export function perfTestScript(options: {
  plan: unknown;
  runId: string;
  item: ScheduledRepetition;
  endpoint: string;
  managementUrl: string;
  secretArn: string;
  bucket: string;
  /**
   * One of several load generators (issue 27): its share of the workload, its own folder for stdout, CSV and
   * STARTED_AT_FILE, the shared start; the broker sampler and the verifier run on generator 0 only, which uploads
   * their files where a single generator does. @default - the one load generator, as before
   */
  generator?: GeneratorRun;
}): { script: string; redactedArgs: string[] } {
  const { generator } = options;
  const first = (generator?.index ?? 0) === 0;
  const args = perfTestArgs(options.plan, options.item, options.endpoint, generator?.share);
  const verifier = first
    ? verifierLines(options.plan, options.item, options.endpoint, PERF_TEST_COMMAND)
    : { start: [], wait: [], runs: false };
  const prefix = `s3://${options.bucket}/${rawPrefix(options.runId, options.item)}`;
  const own = generator ? `${prefix}/${generatorFolder(generator.index)}` : prefix;
  const managementUrl = checkedManagementUrl(options.managementUrl);
  const script = [
    'set -euo pipefail',
    AWS_CLI_ENVIRONMENT,
    'WORK=$(mktemp -d) && cd "$WORK"',
    // Removed however the script ends (the benchmark user's trap below replaces this one and removes it too).
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    `MANAGEMENT_URL=${quote(managementUrl)}`,
    // A curl config line `user = "name:password"` (backslashes and quotes escaped), kept in a variable: printf is a
    // shell builtin.
    // An unreadable secret stops here with the AWS CLI's own error (which names the role and the action) and one line
    // that says what it means, before PerfTest starts; the cloud twin's acceptance test removes the permission.
    `ADMIN_SECRET=$(aws secretsmanager get-secret-value --secret-id ${quote(options.secretArn)} ` +
      `--query SecretString --output text) || { echo ${quote(unreadableSecret(options.secretArn))} >&2; exit 1; }`,
    `ADMIN_CURL_CONFIG=$(printf '%s' "$ADMIN_SECRET" | python3 -c ${quote(ADMIN_CURL_CONFIG_PY)}) ` +
      '&& unset ADMIN_SECRET',
    // SSM runs the command once the agent is online, which is early in the boot: the boot may still be installing
    // Java and PerfTest (nothing else waits for it: the stack completes on the nodes' signals), see
    // PERF_TEST_READY_WAIT_SECONDS. The secret read above needs only the AMI's AWS CLI and python3.
    ...perfTestReadyLines(PERF_TEST_READY_WAIT_SECONDS, 5, PERF_TEST_COMMAND),
    ...benchmarkUserLines(),
    ...(first ? deleteLeftoverQueuesLines() : []),
    ...(generator ? sharedStartLines(generator.startAtMs) : []),
    // The boot script's wrapper (cdk/user-data/load-generator.ts): PerfTest's jars are under /opt/perf-test/lib.
    ...(first ? startBrokerSamplerLines(options.item.durationSeconds + SAMPLER_GRACE_SECONDS) : []),
    ...verifier.start,
    'PERF_TEST_STATUS=0',
    `${PERF_TEST_COMMAND} ${args
      .map((arg) =>
        arg.includes('USER:PASS') ? `"${arg.replace('USER:PASS', '$BENCH_USER:$BENCH_PASS')}"` : quote(arg),
      )
      .join(' ')} > stdout.txt 2>&1 || PERF_TEST_STATUS=$?`,
    ...(first ? stopBrokerSamplerLines() : []),
    ...verifier.wait,
    'touch perftest.csv',
    `aws s3 cp stdout.txt ${quote(`${own}/stdout.txt`)} && ` +
      `aws s3 cp perftest.csv ${quote(`${own}/perftest.csv`)}` +
      (generator ? ` && aws s3 cp ${STARTED_AT_FILE} ${quote(`${own}/${STARTED_AT_FILE}`)}` : ''),
    // Broker metrics are optional: a failed upload leaves the repetition's result, and IngestRepetition records why
    // they are missing.
    ...(first
      ? [
          `aws s3 cp ${BROKER_SAMPLES_FILE} ${quote(`${prefix}/${BROKER_SAMPLES_FILE}`)} || ` +
            `echo ${quote(`rmqbench: could not upload ${BROKER_SAMPLES_FILE}`)} >&2`,
        ]
      : []),
    // So is the verifier's output: without it the fault is recorded as applied but not counted, with the reason.
    ...(verifier.runs
      ? [
          `aws s3 cp ${VERIFIER_OUTPUT_FILE} ${quote(`${prefix}/${VERIFIER_OUTPUT_FILE}`)} || ` +
            `echo ${quote(`rmqbench: could not upload ${VERIFIER_OUTPUT_FILE}`)} >&2`,
        ]
      : []),
    ...perfTestFailureLines('BENCH_PASS'),
  ].join('\n');
  return { script, redactedArgs: redactPerfTestArgs(args) };
}

/** What the script says when the load generator's role cannot read the admin secret. */
const unreadableSecret = (secretArn: string) =>
  `rmqbench: the load generator could not read the admin secret ${secretArn} with its instance role ` +
  '(it needs secretsmanager:GetSecretValue on that secret); PerfTest did not start';

/**
 * After the upload: a PerfTest that failed fails the command with its status, and the tail of its output (the
 * credential, URL-encoded in shell variable `passwordVariable`, masked) goes to stderr, where the repetition's error
 * picks it up (SSM StandardErrorContent, Run Command stderr).
 */
function perfTestFailureLines(passwordVariable: string): string[] {
  // The credential reaches awk through its environment, never its arguments (which /proc shows to every user).
  return [
    'if [ "$PERF_TEST_STATUS" -ne 0 ]; then',
    '  printf \'PerfTest exited with status %s:\\n\' "$PERF_TEST_STATUS" >&2',
    `  tail -n 20 stdout.txt | RMQBENCH_MASK="$${passwordVariable}" ` +
      `awk 'BEGIN { secret = ENVIRON["RMQBENCH_MASK"] } secret != "" { gsub(secret, "***") } { print }' >&2`,
    '  exit "$PERF_TEST_STATUS"',
    'fi',
  ];
}

/**
 * Pre-signed S3 PUT URLs for the raw files of one repetition: the Azure load generator has no AWS
 * credentials, so each URL carries exactly one upload to one key, valid for `expiresInSeconds`.
 */
export async function presignRawUploads(
  s3: S3Client,
  bucket: string,
  runId: string,
  item: ScheduledRepetition,
  expiresInSeconds: number,
  files: readonly RawFile[] = RAW_FILES,
  /** A folder under the repetition's prefix (one load generator's, generatorFolder). @default - the prefix itself */
  folder?: string,
): Promise<Partial<Record<RawFile, string>>> {
  const prefix = folder ? `${rawPrefix(runId, item)}/${folder}` : rawPrefix(runId, item);
  const entries = await Promise.all(
    files.map(
      async (file) =>
        [
          file,
          await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/${file}` }), {
            expiresIn: expiresInSeconds,
          }),
        ] as const,
    ),
  );
  return Object.fromEntries(entries) as Partial<Record<RawFile, string>>;
}

/** Where the load generator reads the RabbitMQ admin password at run time: names only, never the value. */
export interface AzurePasswordSource {
  /** The Key Vault the template created (deployment output `keyVaultName`). */
  readonly keyVaultName: string;
  /** The secret holding the admin password (deployment output `adminPasswordSecretName`). */
  readonly secretName: string;
  /** Client id of the load generator's user-assigned identity (deployment output `loadGeneratorIdentityClientId`). */
  readonly identityClientId: string;
}

/**
 * The environment variable that carries the pre-signed upload URL of one raw file into the Run Command script: a
 * managed Run Command's protected parameter (see uploadUrlParameters). On Linux, named parameters are "set to
 * environment config, which should be accessible within the .sh script"
 * (learn.microsoft.com/azure/virtual-machines/linux/run-command-managed, "Create or update Run Command on a VM instance
 * using Parameter and ProtectedParameter parameters").
 */
export const uploadUrlVariable = (file: RawFile) => `RMQBENCH_UPLOAD_URL_${file.replace(/\W/g, '_').toUpperCase()}`;

/**
 * The upload URLs as the managed Run Command's protectedParameters: never in the script text, the instance view or a
 * GET of the resource.
 */
export const uploadUrlParameters = (uploadUrls: Partial<Record<RawFile, string>>) =>
  [...RAW_FILES, ...FAULT_RAW_FILES, ...GENERATOR_RAW_FILES].flatMap((file) =>
    uploadUrls[file] === undefined ? [] : [{ name: uploadUrlVariable(file), value: uploadUrls[file] }],
  );

/**
 * Seconds the Azure script waits for the load generator's boot to have put `perf-test` on PATH. ARM reports the VM
 * provisioned once cloud-init's init stage has signalled Azure ("After this stage, cloud-init sends a signal to the
 * Azure
 * platform that the VM has been provisioned successfully",
 * learn.microsoft.com/azure/virtual-machines/linux/cloud-init-deep-dive,
 * MicrosoftDocs/azure-compute-docs articles/virtual-machines/linux/cloud-init-deep-dive.md); `runcmd`
 * (bicep/cloud-init/loadgen.yaml: rmqbench-loadgen-setup installs Java, jq and PerfTest's jars) runs later, in the
 * final
 * stage, and nothing on Azure waits for it before the first repetition (CheckClusterReady asks the RabbitMQ cluster
 * only), so
 * the first Run Command can start while the setup is still downloading. The same holds on AWS: the SSM agent is online
 * early in the boot and the stack completes on the nodes' signals only, so the AWS script waits the same way.
 */
export const PERF_TEST_READY_WAIT_SECONDS = 300;

/**
 * Lines that wait (polling every `pollSeconds`) for the boot to have installed PerfTest: rmqbench-loadgen-setup writes
 * the
 * `perf-test` wrapper only after Java, jq and every jar checked out, so its presence says the setup got that far. Past
 * `waitSeconds` the script fails naming the boot log, before it has read any secret.
 */
export function perfTestReadyLines(
  waitSeconds = PERF_TEST_READY_WAIT_SECONDS,
  pollSeconds = 5,
  /** The wrapper's name on PATH (Azure) or its path (AWS, PERF_TEST_COMMAND). */
  command = 'perf-test',
): string[] {
  if (!Number.isInteger(waitSeconds) || !Number.isInteger(pollSeconds) || pollSeconds < 1 || waitSeconds < pollSeconds)
    throw new Error(
      `perfTestReadyLines needs whole seconds with waitSeconds >= pollSeconds >= 1, ` +
        `got ${waitSeconds} and ${pollSeconds}`,
    );
  return [
    `for attempt in $(seq 1 ${Math.ceil(waitSeconds / pollSeconds)}); do ` +
      `command -v ${command} >/dev/null 2>&1 && break; sleep ${pollSeconds}; done`,
    `command -v ${command} >/dev/null 2>&1 || { echo "rmqbench: the load generator has not installed PerfTest ` +
      `(${command} not ${command.startsWith('/') ? 'there' : 'on PATH'} after ${waitSeconds} s): ` +
      `see its boot log, /var/log/cloud-init-output.log" >&2; exit 1; }`,
  ];
}

/**
 * The Azure run script's upload of one file: the URL reaches rmqbench-upload on stdin (printf is a builtin), so no
 * process argument shows it. Broker metrics and the verifier's output are optional: a failed upload of them leaves the
 * repetition's result (IngestRepetition records why they are missing).
 */
function azureUploadLine(file: RawFile): string {
  const required = file === 'stdout.txt' || file === 'perftest.csv' || file === STARTED_AT_FILE;
  const onFailure = required ? '' : ` || echo ${quote(`rmqbench: could not upload ${file}`)} >&2`;
  return `printf '%s\\n' "$${uploadUrlVariable(file)}" | rmqbench-upload ${file} -${onFailure}`;
}

/**
 * The Azure run script's lines that read the admin password from Key Vault with the load generator's identity and
 * keep it only in the curl config of admin_api (benchmarkUserLines).
 */
function adminPasswordLines(password: AzurePasswordSource, curlUsername: string, managementUrl: string): string[] {
  const { keyVaultName, secretName, identityClientId } = password;
  const tokenUrl =
    `http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01` +
    `&resource=${encodeURIComponent('https://vault.azure.net')}&client_id=${encodeURIComponent(identityClientId)}`;
  const secretUrl = `https://${keyVaultName}.vault.azure.net/secrets/${encodeURIComponent(secretName)}?api-version=7.4`;
  return [
    `KEY_VAULT_NAME=${quote(keyVaultName)}`,
    `ADMIN_PASSWORD_SECRET_NAME=${quote(secretName)}`,
    // Role assignments take minutes to propagate: retry 403s for up to 5 minutes. The bearer token goes to curl on
    // stdin (-K -), not in its arguments.
    "ADMIN_PASSWORD=''",
    'for attempt in $(seq 1 30); do',
    `  TOKEN=$(curl -sSf --retry 3 -H Metadata:true ${quote(tokenUrl)} | jq -r .access_token) && ` +
      `ADMIN_PASSWORD=$(printf 'header = "Authorization: Bearer %s"\\n' "$TOKEN" | ` +
      `curl -sSf --retry 3 -K - ${quote(secretUrl)} | jq -r '.value // empty') && [ -n "$ADMIN_PASSWORD" ] && break`,
    '  sleep 10',
    'done',
    'unset TOKEN',
    '[ -n "$ADMIN_PASSWORD" ] || { echo "rmqbench: could not read secret $ADMIN_PASSWORD_SECRET_NAME ' +
      'from Key Vault $KEY_VAULT_NAME with the load generator identity ' +
      '(needs Key Vault Secrets User on the vault and the load-generator subnet in its firewall)" >&2; exit 1; }',
    `MANAGEMENT_URL=${quote(managementUrl)}`,
    'ADMIN_PASSWORD=${ADMIN_PASSWORD//\\\\/\\\\\\\\}',
    'ADMIN_PASSWORD=${ADMIN_PASSWORD//\\"/\\\\\\"}',
    `ADMIN_CURL_CONFIG="user = \\"${curlUsername.replace(/[$`"\\]/g, '\\$&')}:$ADMIN_PASSWORD\\""`,
    'unset ADMIN_PASSWORD',
  ];
}

/**
 * The managed Run Command script for one repetition on the Azure load generator (cloud-init installed
 * `perf-test`, `jq` and `rmqbench-upload`). Run Command scripts show up in the VM's run-command resource
 * and agent logs, so the script carries no secret: it reads the admin password from Key Vault with
 * the VM's managed identity (IMDS token), keeps it and the AMQP URI in shell variables that are never
 * echoed, runs PerfTest against the load balancer with the broker sampler (broker-sampler.ts) beside it, then uploads
 * stdout, CSV and the sampler's lines to the pre-signed URLs, which arrive
 * as protected parameters (environment variables named by uploadUrlVariable). An unreadable secret or a missing
 * upload URL fails the Run Command with what was missing on stderr.
 */
export function azurePerfTestScript(options: {
  plan: unknown;
  item: ScheduledRepetition;
  endpoint: string;
  managementUrl: string;
  username: string;
  password: AzurePasswordSource;
  /**
   * One of several load generators (issue 27): its share, the shared start, STARTED_AT_FILE among its uploads; the
   * broker sampler and the verifier on generator 0 only. Where each upload lands is the URL's business
   * (azure-generators.ts). @default - the one load generator, as before
   */
  generator?: GeneratorRun;
}): { script: string; redactedArgs: string[] } {
  const { generator } = options;
  const first = (generator?.index ?? 0) === 0;
  const args = perfTestArgs(options.plan, options.item, options.endpoint, generator?.share);
  // The Azure script runs `perf-test` from PATH (bicep/cloud-init/rmqbench-loadgen-setup.sh installs it in
  // /usr/local/bin).
  const verifier = first
    ? verifierLines(options.plan, options.item, options.endpoint, 'perf-test')
    : { start: [], wait: [], runs: false };
  const uploaded = azureUploadedFiles(generator, verifier.runs);
  const managementUrl = checkedManagementUrl(options.managementUrl);
  // The user name is a literal: escaped for a curl config string here; the password is escaped in the script.
  const curlUsername = options.username.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  // The benchmark user's credentials stay in $AMQP_CREDENTIALS; every other part of an argument is quoted literally.
  const shellArg = (arg: string) => arg.split('USER:PASS').map(quote).join('"$AMQP_CREDENTIALS"');
  const script = [
    'set +x',
    'set -euo pipefail',
    ...uploaded.map(
      (file) =>
        `: "\${${uploadUrlVariable(file)}:?rmqbench: the protected parameter ` +
        `${uploadUrlVariable(file)} (pre-signed upload URL of ${file}) is missing}"`,
    ),
    // The boot may still be installing PerfTest (and jq, which the secret read below needs): see
    // PERF_TEST_READY_WAIT_SECONDS.
    ...perfTestReadyLines(),
    'WORK=$(mktemp -d) && cd "$WORK"',
    // Removed however the script ends, also when Key Vault refuses the secret (the benchmark user's trap replaces it).
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    ...adminPasswordLines(options.password, curlUsername, managementUrl),
    ...benchmarkUserLines(),
    'AMQP_CREDENTIALS="$BENCH_USER:$BENCH_PASS"',
    ...(first ? deleteLeftoverQueuesLines() : []),
    ...(generator ? sharedStartLines(generator.startAtMs) : []),
    ...(first ? startBrokerSamplerLines(options.item.durationSeconds + SAMPLER_GRACE_SECONDS) : []),
    ...verifier.start,
    'PERF_TEST_STATUS=0',
    `perf-test ${args.map(shellArg).join(' ')} > stdout.txt 2>&1 || PERF_TEST_STATUS=$?`,
    'unset AMQP_CREDENTIALS',
    ...(first ? stopBrokerSamplerLines() : []),
    ...verifier.wait,
    'touch perftest.csv',
    ...uploaded.map(azureUploadLine),
    ...perfTestFailureLines('BENCH_PASS'),
  ].join('\n');
  return { script, redactedArgs: redactPerfTestArgs(args) };
}

/**
 * What an Azure run script uploads: the raw files (with the verifier's output where it runs), or, for one of several
 * load generators, its stdout, CSV and STARTED_AT_FILE, and generator 0 the broker samples and verifier output too.
 */
function azureUploadedFiles(generator: GeneratorRun | undefined, verifierRuns: boolean): RawFile[] {
  const fault = verifierRuns ? FAULT_RAW_FILES : [];
  if (!generator) return [...RAW_FILES, ...fault];
  const own: RawFile[] = ['stdout.txt', 'perftest.csv', ...GENERATOR_RAW_FILES];
  return generator.index === 0 ? [...own, BROKER_SAMPLES_FILE, ...fault] : own;
}

/**
 * The managed Run Command's resource name for one repetition: letters, digits and hyphens, unique per repetition even
 * where a long scenario id is cut short (a hash of the raw key ends it).
 */
export function runCommandName(item: ScheduledRepetition): string {
  const readable = item.rawKey
    .replace(/\.json$/, '')
    .replace(/[^A-Za-z0-9-]+/g, '-')
    .slice(0, 48)
    .replace(/-+$/, '');
  return `rmqbench-${readable}-${createHash('sha256').update(item.rawKey).digest('hex').slice(0, 8)}`;
}

/** The outputs of bicep/main.bicep an Azure repetition needs. */
export const AZURE_REQUIRED_OUTPUTS = [
  'amqpEndpoint',
  'managementUrl',
  'loadGeneratorResourceId',
  'keyVaultName',
  'adminPasswordSecretName',
  'loadGeneratorIdentityClientId',
] as const;

export interface AzureRepetitionEvent {
  readonly runId: string;
  readonly plan: unknown;
  readonly item: ScheduledRepetition;
  readonly launch: { readonly clusterId: string };
  readonly readiness: { readonly outputs: Record<string, string> };
}

/**
 * What every Azure RabbitMQ repetition starts with, whatever its number of load generators: the deployment's outputs
 * checked, the run script's options but the generator, the Run Command's deadline and the files to upload.
 */
export function azureRepetitionContext(parameters: Readonly<Record<string, unknown>>, event: AzureRepetitionEvent) {
  const outputs = event.readiness.outputs;
  const missing = AZURE_REQUIRED_OUTPUTS.filter((name) => !outputs[name]);
  if (missing.length > 0)
    throw new Error(
      `the deployment in resource group ${event.launch.clusterId} lacks the output(s) ${missing.join(', ')} ` +
        `(outputs: ${Object.keys(outputs).join(', ') || 'none'}); deploy the current bicep/main.bicep`,
    );
  const output = (name: (typeof AZURE_REQUIRED_OUTPUTS)[number]) => outputs[name] as string;
  const keyVaultName = output('keyVaultName');
  if (!/^[a-zA-Z0-9-]{3,24}$/.test(keyVaultName))
    throw new Error(
      `output keyVaultName must be a Key Vault name (3-24 letters, digits and hyphens), got "${keyVaultName}"`,
    );
  const username =
    typeof parameters.rabbitmqAdminUsername === 'string' ? parameters.rabbitmqAdminUsername : 'rmqbench-admin';
  return {
    scriptOptions: {
      plan: event.plan,
      item: event.item,
      endpoint: output('amqpEndpoint'),
      managementUrl: output('managementUrl'),
      username,
      password: {
        keyVaultName,
        secretName: output('adminPasswordSecretName'),
        identityClientId: output('loadGeneratorIdentityClientId'),
      },
    },
    // The script may first wait for the boot to have installed PerfTest (perfTestReadyLines).
    deadlineSeconds: event.item.durationSeconds + 180 + PERF_TEST_READY_WAIT_SECONDS,
    // The verifier's output has an upload URL only where the verifier runs (a scenario with a fault).
    files: scenarioFor(event.plan, event.item).workload.fault ? [...RAW_FILES, ...FAULT_RAW_FILES] : [...RAW_FILES],
    loadGeneratorResourceId: output('loadGeneratorResourceId'),
  };
}

/**
 * Starts one repetition on the Azure load generator of the run's resource group through VM Run Command
 * (the admin password is read on the VM from the deployment's Key Vault, never sent); the pre-signed URLs stay valid
 * until the repetition's deadline plus time for the upload. One load generator only: azure-generators.ts starts
 * several (and calls this for one).
 */
export async function startAzureRepetition(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  parameters: Readonly<Record<string, unknown>>,
  event: AzureRepetitionEvent,
  now = new Date(),
) {
  const context = azureRepetitionContext(parameters, event);
  const { deadlineSeconds } = context;
  const uploadUrls = await presignRawUploads(s3, bucket, event.runId, event.item, deadlineSeconds + 300, context.files);
  const { script, redactedArgs } = azurePerfTestScript(context.scriptOptions);
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { startRunCommand, vmNameFromResourceId } = await import('../shared/azure-cluster');
  const started = await startRunCommand(
    clients,
    event.launch.clusterId,
    vmNameFromResourceId(context.loadGeneratorResourceId),
    {
      name: runCommandName(event.item),
      script,
      protectedParameters: uploadUrlParameters(uploadUrls),
      timeoutInSeconds: deadlineSeconds,
    },
  );
  return {
    ...started,
    startedAt: now.toISOString(),
    perfTestArgs: redactedArgs,
    doneBy: new Date(now.getTime() + deadlineSeconds * 1000).toISOString(),
  };
}
