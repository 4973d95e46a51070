import { randomBytes } from 'node:crypto';
import { AWS_CLI_SETTINGS } from '../../core/cloud/aws-cli-environment';
import { KAFKA_TOOL_COMMAND } from '../../core/perftest/load-generator-paths';
import { CONSUMER_JOINED_TEXT } from '../../core/kafka/kafka-broker-log4j';
import { brokerFaultVerifier, kafkaVerifierStartLines } from '../shared/broker-verifier-lines';
import {
  consumerIdleTimeoutMs,
  consumerPerformanceArgs,
  createTopicArgs,
  kafkaPerfExpectations,
  kafkaRunSettings,
  producerPerformanceArgs,
  type KafkaRunSettings,
} from '../../core/kafka/kafka-perf-args';
import type { KafkaPerfExpectations } from '../../core/kafka/kafka-perf-output';
import {
  kafkaStepSettings,
  type KafkaCapacityExpectations,
  type KafkaCapacityStep,
  type KafkaStepOutput,
} from '../../core/kafka/kafka-capacity';
import { validatePlan, type Scenario } from '../../core/plan/plan';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import {
  checkedBootstrapServers,
  KAFKA_TOOL_CLASSES,
  KAFKA_TOOLS_READY_WAIT_SECONDS,
  quote,
  toolsReadyLines,
} from '../shared/kafka-load-generator';
import { rawPrefix } from './logic';

/**
 * The Kafka repetition and smoke test as AWS-RunShellScript scripts on the load generator, where the boot installed the
 * pinned Kafka tools (cdk/user-data/load-generator.ts kafkaToolsBootCommands, `kafka-tool <main class>`). The same
 * steps as the local target's runKafkaLoad (local/kafka-load.ts): a fresh topic with the workload's partitions and
 * replication factor, the consumers (one ConsumerPerformance each, one group) started first and waited for until each
 * has logged its partition assignment, then the producers (one ProducerPerformance each), every tool's console output
 * kept in its own file, the topic deleted, the files uploaded. The cluster's listener is PLAINTEXT without
 * authentication inside the controller VPC (the brokers admit the load generator's security group only), so the
 * script carries no credential at all.
 */

/**
 * Seconds the consumers get to join their group before the producers start (local/kafka-load.ts
 * CONSUMER_JOIN_TIMEOUT_MS).
 */
export const KAFKA_CONSUMER_JOIN_SECONDS = 60;
/** Seconds producers may run past `durationSeconds` before they are stopped (the local target's graceSeconds). */
export const KAFKA_PRODUCER_GRACE_SECONDS = 60;

/**
 * The raw files of one Kafka repetition, uploaded beside each other (check-repetition reads them back by these names).
 */
export function kafkaRawFiles(
  producers: number,
  consumers: number,
  ladderSteps?: number,
): { producers: string[]; consumers: string[]; steps?: string[][]; stepTimes?: string } {
  const numbered = (prefix: string, count: number, suffix = '') =>
    Array.from({ length: count }, (_, index) => `${prefix}-${index + 1}${suffix}.txt`);
  if (ladderSteps !== undefined)
    return {
      producers: [],
      consumers: numbered('consumer', consumers),
      // A capacity ladder: each step's producer runs, and the steps' times (core/kafka/kafka-capacity.ts).
      steps: Array.from({ length: ladderSteps }, (_, step) => numbered('producer', producers, `-step-${step + 1}`)),
      stepTimes: KAFKA_STEP_TIMES_FILE,
    };
  return { producers: numbered('producer', producers), consumers: numbered('consumer', consumers) };
}

/** A capacity ladder's steps as run: one line per step, `<step> <start epoch ms> <end epoch ms>`. */
export const KAFKA_STEP_TIMES_FILE = 'steps.txt';

/** The step outputs of a ladder from its files (check-repetition reads them from S3). */
export async function kafkaLadderOutput(
  files: { steps?: string[][]; stepTimes?: string },
  read: (file: string) => Promise<string>,
): Promise<KafkaStepOutput[]> {
  if (!files.steps || !files.stepTimes) return [];
  const lines = (await read(files.stepTimes)).split('\n').map((line) => /^(\d+) (\d+) (\d+)$/.exec(line.trim()));
  const steps: KafkaStepOutput[] = [];
  for (const match of lines) {
    if (!match) continue;
    const producers = files.steps[Number(match[1]) - 1];
    if (!producers) continue;
    steps.push({
      producers: await Promise.all(producers.map(read)),
      startedAtMs: Number(match[2]),
      endedAtMs: Number(match[3]),
    });
  }
  return steps;
}

/** What the parser expects of one Kafka scenario's output (the same as the local target's). */
export function kafkaExpectations(scenario: Scenario): KafkaPerfExpectations {
  return kafkaPerfExpectations(scenario.workload, kafkaRunSettings(scenario.workload, scenario.cluster.nodes));
}

/**
 * Seconds a Kafka repetition's script may take at most: the tools' wait, topic, join, producers, the consumers' drain,
 * clean-up and upload.
 */
export function kafkaRepetitionSeconds(scenario: Scenario): number {
  const ladder = kafkaExpectations(scenario).capacity;
  const drain = consumerIdleTimeoutMs(ladder ? 2 : Math.max(scenario.workload.consumers, 1)) / 1000 + 30;
  return KAFKA_TOOLS_READY_WAIT_SECONDS + 60 + KAFKA_CONSUMER_JOIN_SECONDS + producersLimit(scenario) + drain + 60;
}

/** How long the producers may take: the workload's duration and a grace, or every ladder step's own limit. */
function producersLimit(scenario: Scenario): number {
  const ladder = kafkaExpectations(scenario).capacity;
  if (!ladder) return scenario.workload.durationSeconds + KAFKA_PRODUCER_GRACE_SECONDS;
  return ladder.steps.length * ladderStepLimit(ladder);
}

/** A ladder step's producers are stopped after twice the step and 30 s (local/kafka-load.ts runLadder). */
const ladderStepLimit = (ladder: KafkaCapacityExpectations) => ladder.stepSeconds * 2 + 30;

export interface KafkaRepetitionScript {
  readonly script: string;
  /** The tools' command lines as recorded with the repetition (no credentials: the cluster has none). */
  readonly args: string[];
  readonly files: ReturnType<typeof kafkaRawFiles>;
  /** Every file the script uploads (the tools' output, a ladder's step times, a fault's verifier output). */
  readonly uploads: readonly string[];
  readonly timeoutSeconds: number;
}

/**
 * Waits for the Kafka consumers, which drain what was sent: a lone one ends by its count, a group by the idle timeout;
 * one stopped by its time limit (exit 124 or 137) means the topic was not drained.
 */
const WAIT_FOR_CONSUMERS_LINE =
  'for pid in "${CONSUMER_PIDS[@]}"; do wait "$pid"; STATUS=$?; ' +
  'if [ -z "$ERROR" ] && { [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; }; then ' +
  'ERROR="Kafka consumers did not finish draining the topic and were stopped"; fi; done';

/**
 * Stops the Kafka consumers of a run bounded by durationSeconds once its producers were stopped, and waits for them.
 * Each PID is a `timeout` process, which passes a SIGTERM it receives on to the tool (coreutils src/timeout.c:
 * install_cleanup handles SIGTERM with cleanup(), which sends the signal to the monitored command).
 */
const STOP_CONSUMERS_LINE =
  'for pid in "${CONSUMER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done; ' +
  'for pid in "${CONSUMER_PIDS[@]}"; do wait "$pid"; done';

/**
 * One Kafka repetition. `uploadCommand(file)` is the shell command that uploads one file of the working directory (AWS:
 * `aws s3 cp` with the load generator's role). A tool that overruns its limit is stopped (`timeout`), which cuts its
 * output short: the parser then fails the repetition naming what is missing, and the script exits 1 with the reason
 * on stderr. Everything is uploaded whatever happened, so that the stored record shows what the tools printed.
 */
export function kafkaRepetitionScript(options: {
  scenario: Scenario;
  bootstrapServers: string;
  uploadCommand: (file: string) => string;
  suffix?: string;
  /** The repetition's index in the run (ScheduledRepetition.index): names the verifier's topic of a fault. */
  index?: number;
}): KafkaRepetitionScript {
  const { scenario } = options;
  const { workload } = scenario;
  const bootstrapServers = checkedBootstrapServers(options.bootstrapServers);
  const settings = kafkaRunSettings(workload, scenario.cluster.nodes);
  const suffix = options.suffix ?? randomBytes(3).toString('hex');
  // Topic names allow [a-zA-Z0-9._-] (org.apache.kafka.common.internals.Topic), at most 249 characters.
  const topic = `rmqbench-${workload.name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 200)}-${suffix}`;
  const topicArgs = ['--bootstrap-server', bootstrapServers, ...createTopicArgs(topic, settings)];
  const ladder = kafkaPerfExpectations(workload, settings).capacity;
  const consumerArgs = consumerPerformanceArgs({
    bootstrapServers,
    topic,
    group: `rmqbench-${suffix}`,
    totalRecords: settings.recordsPerProducer * workload.producers,
    consumers: workload.consumers,
    // A ladder may stop before every record was sent: the consumers end by an idle timeout.
    ...(ladder ? { timeoutMs: consumerIdleTimeoutMs(2) } : {}),
  });
  // A ladder step's producers send its records at its rate (core/kafka/kafka-capacity.ts).
  const producerArgs = (index: number, step?: KafkaCapacityStep) =>
    producerPerformanceArgs({
      bootstrapServers,
      topic,
      settings: step ? kafkaStepSettings(settings, step) : settings,
      messageSizeBytes: workload.messageSizeBytes,
      clientId: `rmqbench-producer-${index + 1}`,
    });
  const files = kafkaRawFiles(workload.producers, workload.consumers, ladder?.steps.length);
  const producerLimit = producersLimit(scenario);
  const idleSeconds = consumerIdleTimeoutMs(ladder ? 2 : Math.max(workload.consumers, 1)) / 1000;
  const consumerLimit = KAFKA_CONSUMER_JOIN_SECONDS + producerLimit + idleSeconds + 30;
  const allFiles = [...files.producers, ...(files.steps ?? []).flat(), ...files.consumers];
  const tool = (mainClass: string, args: readonly string[]) =>
    `${KAFKA_TOOL_COMMAND} ${mainClass} ${args.map(quote).join(' ')}`;
  const verifier = kafkaFaultVerifier(scenario, options.index, bootstrapServers, settings);
  const uploads = [...allFiles, ...(files.stepTimes ? [files.stepTimes] : []), ...verifier.files];
  const script = [
    'set -uo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK" || exit 1',
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    ...toolsReadyLines(),
    "ERROR=''",
    `touch ${uploads.join(' ')}`,
    ...verifier.start,
    `if ! ${tool(KAFKA_TOOL_CLASSES.topics, topicArgs)} > topic-create.txt 2>&1; then ` +
      `ERROR="could not create topic ${topic}: $(tail -n 5 topic-create.txt | tr '\\n' ' ')"; fi`,
    ...startConsumersLines(files.consumers, consumerLimit, tool(KAFKA_TOOL_CLASSES.consumer, consumerArgs)),
    ...producersLines({ ladder, stopAfterSeconds: settings.stopAfterSeconds, files, producerLimit }, (index, step) =>
      tool(KAFKA_TOOL_CLASSES.producer, producerArgs(index, step)),
    ),
    settings.stopAfterSeconds !== undefined ? STOP_CONSUMERS_LINE : WAIT_FOR_CONSUMERS_LINE,
    ...verifier.wait,
    `${tool(KAFKA_TOOL_CLASSES.topics, ['--bootstrap-server', bootstrapServers, '--delete', '--topic', topic])} ` +
      `> topic-delete.txt 2>&1 || echo "rmqbench: could not delete topic ${topic}" >&2`,
    'UPLOAD_FAILED=0',
    ...uploads.map((file) => `${options.uploadCommand(file)} || UPLOAD_FAILED=1`),
    '[ "$UPLOAD_FAILED" = 0 ] || { echo "rmqbench: could not upload the Kafka tools\' output" >&2; exit 1; }',
    'if [ -n "$ERROR" ]; then',
    '  echo "$ERROR" >&2',
    `  for file in ${allFiles.join(' ')}; do echo "--- $file" >&2; tail -n 5 "$file" >&2; done`,
    '  exit 1',
    'fi',
  ].join('\n');
  const args = [
    `TopicCommand ${topicArgs.join(' ')}`,
    ...(ladder
      ? ladder.steps.map((step, index) => `ProducerPerformance (step ${index + 1}) ${producerArgs(0, step).join(' ')}`)
      : [`ProducerPerformance ${producerArgs(0).join(' ')}`]),
    ...(workload.consumers > 0 ? [`ConsumerPerformance ${consumerArgs.join(' ')}`] : []),
  ];
  return { script, args, files, uploads, timeoutSeconds: kafkaRepetitionSeconds(scenario) };
}

/** A fault's verifier, started before anything else so that it counts from before the fault step finds its topic. */
const kafkaFaultVerifier = (
  scenario: Scenario,
  index: number | undefined,
  bootstrapServers: string,
  settings: KafkaRunSettings,
) =>
  brokerFaultVerifier(scenario, index, 'Kafka topic', (topicIndex, seconds) =>
    kafkaVerifierStartLines({ bootstrapServers, index: topicIndex, seconds, settings }),
  );

/** The producers' part of the script: a ladder's steps, a run stopped at its duration, or fixed work. */
function producersLines(
  run: {
    ladder: KafkaCapacityExpectations | undefined;
    stopAfterSeconds: number | undefined;
    files: ReturnType<typeof kafkaRawFiles>;
    producerLimit: number;
  },
  producerCommand: (index: number, step?: KafkaCapacityStep) => string,
): string[] {
  const { ladder, files } = run;
  if (ladder)
    return runLadderLines(files.steps!, ladderStepLimit(ladder), (index, step) =>
      producerCommand(index, ladder.steps[step]!),
    );
  if (run.stopAfterSeconds !== undefined)
    return runForDurationLines(files.producers, run.stopAfterSeconds, (index) => producerCommand(index));
  return runProducersLines(files.producers, run.producerLimit, (index) => producerCommand(index));
}

/**
 * Starts every consumer in the background and waits until each has joined its group (its partition assignment logged),
 * or sets ERROR.
 */
function startConsumersLines(
  consumerFiles: readonly string[],
  consumerLimit: number,
  consumerCommand: string,
): string[] {
  return [
    'CONSUMER_PIDS=()',
    'if [ -z "$ERROR" ]; then',
    ...consumerFiles.map(
      (file) => `  timeout --kill-after=10 ${consumerLimit} ${consumerCommand} > ${file} 2>&1 & CONSUMER_PIDS+=($!)`,
    ),
    // Each consumer logs its partition assignment once it has joined (the tools' log4j2 configuration keeps that line).
    `  JOIN_DEADLINE=$((SECONDS + ${KAFKA_CONSUMER_JOIN_SECONDS}))`,
    `  while [ "$(grep -lF ${quote(CONSUMER_JOINED_TEXT)} ${consumerFiles.join(' ') || '/dev/null'} ` +
      `2>/dev/null | wc -l)" -lt ${consumerFiles.length} ]; do`,
    `    if [ $SECONDS -ge $JOIN_DEADLINE ]; then ` +
      `ERROR="Kafka consumers did not join their group within ${KAFKA_CONSUMER_JOIN_SECONDS} s"; break; fi`,
    '    ALIVE=0; for pid in "${CONSUMER_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && ALIVE=1; done',
    '    if [ "$ALIVE" = 0 ]; then ERROR="Kafka consumers exited before they joined their group"; break; fi',
    '    sleep 1',
    '  done',
    'fi',
  ];
}

/** Runs every producer (when nothing failed so far) and waits for them, or stops the consumers after an error. */
function runProducersLines(
  producerFiles: readonly string[],
  producerLimit: number,
  producerCommand: (index: number) => string,
): string[] {
  return [
    ...startProducersLines(producerFiles, producerLimit, producerCommand),
    waitForProducersLine(
      '[ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]',
      `Kafka producers did not finish within ${producerLimit} s (durationSeconds + ${KAFKA_PRODUCER_GRACE_SECONDS}) ` +
        'and were stopped',
    ),
    'else',
    '  for pid in "${CONSUMER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done',
    'fi',
  ];
}

/**
 * Runs every producer of a workload bounded by durationSeconds (when nothing failed so far) and stops it after
 * `seconds` (`timeout`, SIGTERM, then SIGKILL 10 s later): exit 124 (or 137 after the SIGKILL) is how each must end, as
 * coreutils timeout reports a command it stopped; any other status means the producer ended before the duration, by
 * itself, which its unreachable record count rules out (core/kafka/kafka-perf-args.ts): an error.
 */
function runForDurationLines(
  producerFiles: readonly string[],
  seconds: number,
  producerCommand: (index: number) => string,
): string[] {
  return [
    ...startProducersLines(producerFiles, seconds, producerCommand),
    waitForProducersLine(
      '[ "$STATUS" -ne 124 ] && [ "$STATUS" -ne 137 ]',
      `Kafka producers exited before durationSeconds (${seconds} s) with status $STATUS`,
    ),
    'fi',
  ];
}

/**
 * Opens `if nothing failed so far` and starts every producer in the background, each stopped after `limit` seconds
 * (`timeout`: SIGTERM, then SIGKILL 10 s later), its pid in PRODUCER_PIDS; the caller waits and closes the `if`.
 */
function startProducersLines(
  producerFiles: readonly string[],
  limit: number,
  producerCommand: (index: number) => string,
): string[] {
  return [
    'PRODUCER_PIDS=()',
    'if [ -z "$ERROR" ]; then',
    ...producerFiles.map(
      (file, index) =>
        `  timeout --kill-after=10 ${limit} ${producerCommand(index)} > ${file} 2>&1 & PRODUCER_PIDS+=($!)`,
    ),
  ];
}

/** Waits for every producer, setting ERROR to `error` (inside double quotes) when its exit STATUS meets `test`. */
function waitForProducersLine(test: string, error: string): string {
  return `  for pid in "\${PRODUCER_PIDS[@]}"; do wait "$pid"; STATUS=$?; if ${test}; then ERROR="${error}"; fi; done`;
}

/**
 * A capacity ladder (core/kafka/kafka-capacity.ts): each step's producers at its rate, one step after the other, each
 * step's start and end (epoch ms) appended to the step-times file. Producers that overrun the step limit are stopped
 * and end the ladder there (a step that cannot keep up is a finding, not an error); ingest judges the steps.
 */
function runLadderLines(
  stepFiles: readonly (readonly string[])[],
  stepLimit: number,
  producerCommand: (index: number, step: number) => string,
): string[] {
  return [
    `: > ${KAFKA_STEP_TIMES_FILE}`,
    "LADDER_STOPPED=''",
    'if [ -z "$ERROR" ]; then',
    ...stepFiles.flatMap((files, step) => [
      '  if [ -z "$LADDER_STOPPED" ]; then',
      '    PRODUCER_PIDS=(); STEP_START=$(date +%s%3N)',
      ...files.map(
        (file, index) =>
          `    timeout --kill-after=10 ${stepLimit} ${producerCommand(index, step)} > ${file} 2>&1 ` +
          '& PRODUCER_PIDS+=($!)',
      ),
      '    for pid in "${PRODUCER_PIDS[@]}"; do wait "$pid"; STATUS=$?; ' +
        'if [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; then LADDER_STOPPED=1; fi; done',
      `    echo "${step + 1} $STEP_START $(date +%s%3N)" >> ${KAFKA_STEP_TIMES_FILE}`,
      '  fi',
    ]),
    'else',
    '  for pid in "${CONSUMER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done',
    'fi',
  ];
}

/** The plan scenario of a scheduled repetition. */
export function scenarioOf(plan: unknown, item: { scenarioId: string }): Scenario {
  const validated = validatePlan(plan, 'the execution input');
  const scenario = validated.scenarios.find((candidate) => candidate.id === item.scenarioId);
  if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in plan ${validated.name}`);
  return scenario;
}

/**
 * The AWS load generator's Kafka repetition: the tools' files go to runs/<runId>/raw/<repetition>/ with `aws s3 cp` and
 * the instance role, which may write under runs/ only (cdk/LoadGenerator.ts), as PerfTest's do.
 */
export function awsKafkaRepetitionScript(options: {
  plan: unknown;
  runId: string;
  item: ScheduledRepetition;
  bootstrapServers: string;
  bucket: string;
}): KafkaRepetitionScript {
  const prefix = `s3://${options.bucket}/${rawPrefix(options.runId, options.item)}`;
  return kafkaRepetitionScript({
    scenario: scenarioOf(options.plan, options.item),
    bootstrapServers: options.bootstrapServers,
    uploadCommand: (file) => `${AWS_CLI_SETTINGS} aws s3 cp ${file} ${quote(`${prefix}/${file}`)}`,
    index: options.item.index,
  });
}
