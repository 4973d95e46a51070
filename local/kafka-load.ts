import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  parseKafkaProgressLine,
  type KafkaPerfExpectations,
  type KafkaPerfOutput,
} from '../core/kafka/kafka-perf-output';
import {
  consumerPerformanceArgs,
  createTopicArgs,
  consumerIdleTimeoutMs,
  kafkaPerfExpectations,
  kafkaRunSettings,
  type KafkaRunSettings,
  producerPerformanceArgs,
} from '../core/kafka/kafka-perf-args';
import type { Workload } from '../core/plan/plan-schema';
import {
  kafkaStepSettings,
  producersFailedStep,
  type KafkaCapacityStep,
  type KafkaStepOutput,
} from '../core/kafka/kafka-capacity';
import type { LocalKafkaCluster } from './kafka-cluster';
import { CONSUMER_JOINED, javaArgs, KAFKA_TOOL_HEAP, startKafkaProcess } from './kafka-java';
import type { ManagedProcess, ProcessRegistry } from './processes';

export interface KafkaLoadRun {
  readonly output: KafkaPerfOutput;
  readonly expectations: KafkaPerfExpectations;
  /** The tools' command lines (no credentials: the local cluster has none). */
  readonly args: readonly string[];
  /** Set when a tool overran its time or could not start. */
  readonly error?: string;
}

/** What runKafkaLoad needs: the cluster, the workload, where output goes and whom to tell. */
export interface KafkaLoadOptions {
  readonly cluster: LocalKafkaCluster;
  readonly workload: Workload;
  readonly outputDir: string;
  readonly processes: ProcessRegistry;
  /** @default 60 */
  readonly graceSeconds?: number;
  /** @default 'java' */
  readonly javaCommand?: string;
  /** Live progress from the first producer's and first consumer's 1 s reports (for the CLI's progress line). */
  readonly onProgress?: (progress: { time: number; sent: number; received: number }) => void;
  /**
   * Called with each producer's and consumer's JVM once spawned: together they are the load generator the metrics
   * sampler reads.
   */
  readonly onToolStarted?: (process: ManagedProcess) => void;
}

/**
 * One Kafka repetition on a local cluster: a fresh topic with the workload's partitions and replication factor,
 * the consumers (one ConsumerPerformance each, in one group) started and given their partitions first (as PerfTest
 * starts its consumers first; otherwise a consumer still joining its group while the producers run reads a backlog
 * in one burst), then the producers (one ProducerPerformance each), their console output collected, the topic
 * deleted. Producers of fixed work that overrun `durationSeconds + graceSeconds` are stopped: their output is then cut
 * short and the repetition fails. A workload with durationSeconds only is stopped at the duration (stopAtDuration).
 */
export async function runKafkaLoad(options: KafkaLoadOptions): Promise<KafkaLoadRun> {
  const { cluster, workload } = options;
  mkdirSync(options.outputDir, { recursive: true });
  const settings = kafkaRunSettings(workload, cluster.nodes.length);
  const suffix = randomBytes(3).toString('hex');
  // Topic names allow [a-zA-Z0-9._-] (kafka.common.Topic / org.apache.kafka.common.internals.Topic).
  const topic = `rmqbench-${workload.name}-${suffix}`;
  const deleteTopic = () =>
    cluster.topicCommand(['--delete', '--topic', topic], `topic-delete-${suffix}.log`).catch(() => undefined);
  const expectations: KafkaPerfExpectations = kafkaPerfExpectations(workload, settings);
  const topicArgs = createTopicArgs(topic, settings);
  await cluster.topicCommand(topicArgs, `topic-create-${suffix}.log`);

  const start = kafkaToolStarter(options);
  const consumerArgs = consumerPerformanceArgs({
    bootstrapServers: cluster.bootstrapServers,
    topic,
    group: `rmqbench-${suffix}`,
    totalRecords: settings.recordsPerProducer * workload.producers,
    consumers: workload.consumers,
    // A ladder stops at its first failed step, before every record was sent: the consumers end by an idle timeout.
    ...(expectations.capacity ? { timeoutMs: consumerIdleTimeoutMs(2) } : {}),
  });
  const progress = new KafkaProgressRelay(workload.consumers, options.onProgress);
  const consumers = Array.from({ length: workload.consumers }, (_, index) =>
    start(`consumer-${index + 1}`, 'org.apache.kafka.tools.ConsumerPerformance', consumerArgs, (line) =>
      progress.onConsumerLine(line, index === 0),
    ),
  );
  const joinError = await consumersJoined(progress.allJoined, consumers);
  if (joinError) {
    await Promise.all(consumers.map((consumer) => consumer.stop(1000)));
    await deleteTopic();
    const output = collectedOutput(options.outputDir, 0, consumers.length);
    return { output, expectations, args: [], error: joinError };
  }
  const run: KafkaRun = {
    options,
    topic,
    settings,
    start,
    progress,
    consumers,
    deleteTopic,
    expectations,
    topicArgs,
    consumerArgs,
  };
  return expectations.capacity ? runLadder(run) : runFlatOut(run);
}

/** What a repetition's producers need once the topic exists and the consumers have joined. */
interface KafkaRun {
  readonly options: KafkaLoadOptions;
  readonly topic: string;
  readonly settings: KafkaRunSettings;
  readonly start: ReturnType<typeof kafkaToolStarter>;
  readonly progress: KafkaProgressRelay;
  readonly consumers: readonly ManagedProcess[];
  readonly deleteTopic: () => Promise<unknown>;
  readonly expectations: KafkaPerfExpectations;
  readonly topicArgs: readonly string[];
  readonly consumerArgs: readonly string[];
}

/** One producer's ProducerPerformance arguments: the repetition's settings, or a ladder step's. */
function producerArgsOf(run: KafkaRun, index: number, step?: KafkaCapacityStep): string[] {
  return producerPerformanceArgs({
    bootstrapServers: run.options.cluster.bootstrapServers,
    topic: run.topic,
    settings: step ? kafkaStepSettings(run.settings, step) : run.settings,
    messageSizeBytes: run.options.workload.messageSizeBytes,
    clientId: `rmqbench-producer-${index + 1}`,
  });
}

/** Starts the named producers with their arguments; the first one's lines feed the progress relay. */
function startProducers(run: KafkaRun, names: readonly string[], args: (index: number) => string[]) {
  return names.map((name, index) =>
    run.start(
      name,
      'org.apache.kafka.tools.ProducerPerformance',
      args(index),
      index === 0 ? (line) => run.progress.onProducerLine(line) : undefined,
    ),
  );
}

/** The producers of a run flat out or at a fixed rate, then the consumers draining; the topic deleted. */
async function runFlatOut(run: KafkaRun): Promise<KafkaLoadRun> {
  const { options, consumers, deleteTopic, expectations, topicArgs, consumerArgs } = run;
  const { workload } = options;
  const producerArgs = (index: number) => producerArgsOf(run, index);
  const names = Array.from({ length: workload.producers }, (_, index) => `producer-${index + 1}`);
  const producers = startProducers(run, names, producerArgs);

  const error =
    run.settings.stopAfterSeconds === undefined
      ? await awaitFixedWork(run, producers)
      : await stopAtDuration(run, producers, run.settings.stopAfterSeconds);
  await deleteTopic();
  const args = [
    `TopicCommand ${topicArgs.join(' ')}`,
    `ProducerPerformance ${producerArgs(0).join(' ')}`,
    ...(workload.consumers > 0 ? [`ConsumerPerformance ${consumerArgs.join(' ')}`] : []),
  ];
  return {
    output: collectedOutput(options.outputDir, producers.length, consumers.length),
    expectations,
    args,
    ...(error ? { error } : {}),
  };
}

/**
 * Fixed work (a record count, or a rate for durationSeconds): the producers end by their count, within
 * `durationSeconds + graceSeconds`; then the consumers drain what was sent, a lone one ending by its count, a group by
 * the idle timeout. Why it failed, or undefined.
 */
async function awaitFixedWork(run: KafkaRun, producers: readonly ManagedProcess[]): Promise<string | undefined> {
  const { workload } = run.options;
  const limitSeconds = workload.durationSeconds + (run.options.graceSeconds ?? 60);
  if (await exitWithin(producers, limitSeconds * 1000))
    return `Kafka producers did not finish within ${limitSeconds} s (durationSeconds + 60) and were stopped`;
  if (await exitWithin(run.consumers, consumerIdleTimeoutMs(workload.consumers) + 30_000))
    return 'Kafka consumers did not finish draining the topic and were stopped';
  return undefined;
}

/**
 * A workload bounded by durationSeconds only: the producers (asked for more records than the duration can carry) and
 * the consumers are stopped `seconds` after the producers started, as PerfTest's `-z` ends a RabbitMQ run; what each
 * printed until then is its result (core/kafka/kafka-perf-output.ts stoppedAtSeconds). A producer that exited by itself
 * before that failed (it cannot have sent its unreachable count).
 */
async function stopAtDuration(
  run: KafkaRun,
  producers: readonly ManagedProcess[],
  seconds: number,
): Promise<string | undefined> {
  let stopping = false;
  let endedEarly = false;
  const allExited = Promise.all(
    producers.map((producer) =>
      producer.exited.then(() => {
        if (!stopping) endedEarly = true;
      }),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([allExited, new Promise((resolve) => (timer = setTimeout(resolve, seconds * 1000)))]);
  clearTimeout(timer);
  stopping = true;
  await Promise.all([...producers, ...run.consumers].map((tool) => tool.stop(10_000)));
  return endedEarly ? `Kafka producers exited before durationSeconds (${seconds} s): see their output` : undefined;
}

/**
 * A capacity ladder (core/kafka/kafka-capacity.ts): each step's producers at its rate, one step after the other,
 * until a step's producers show it did not hold (or the ladder's top). A step's producers that overrun twice its
 * length and 30 s are stopped: that step is then cut short, and the ladder ends there.
 */
async function runLadder(ladder: KafkaRun): Promise<KafkaLoadRun> {
  const { options } = ladder;
  const capacity = ladder.expectations.capacity!;
  const steps: KafkaStepOutput[] = [];
  const args = [`TopicCommand ${ladder.topicArgs.join(' ')}`, `ConsumerPerformance ${ladder.consumerArgs.join(' ')}`];
  for (const [index, step] of capacity.steps.entries()) {
    const producerArgs = (producer: number) => producerArgsOf(ladder, producer, step);
    args.push(`ProducerPerformance (step ${index + 1}) ${producerArgs(0).join(' ')}`);
    const names = Array.from(
      { length: options.workload.producers },
      (_, producer) => `producer-${producer + 1}-step-${index + 1}`,
    );
    const startedAtMs = Date.now();
    const producers = startProducers(ladder, names, producerArgs);
    const late = await exitWithin(producers, (capacity.stepSeconds * 2 + 30) * 1000);
    const outputs = names.map((name) => readOutput(options.outputDir, name));
    steps.push({ producers: outputs, startedAtMs, endedAtMs: Date.now() });
    if (late || producersFailedStep(outputs, step, capacity)) break;
  }
  // The consumers drain what was sent and end by their idle timeout.
  const consumersLate = await exitWithin(ladder.consumers, consumerIdleTimeoutMs(2) + 30_000);
  await ladder.deleteTopic();
  return {
    output: { ...collectedOutput(options.outputDir, 0, ladder.consumers.length), steps },
    expectations: ladder.expectations,
    args,
    ...(consumersLate ? { error: 'Kafka consumers did not finish draining the topic and were stopped' } : {}),
  };
}

/** Starts one Kafka tool JVM with its console output in the output folder, and tells onToolStarted. */
function kafkaToolStarter(options: KafkaLoadOptions) {
  return (name: string, mainClass: string, args: readonly string[], onLine?: (line: string) => void) => {
    const { cluster } = options;
    const tool = startKafkaProcess(
      options.processes,
      name,
      options.javaCommand ?? 'java',
      javaArgs(cluster.jarsDir, cluster.log4j.tool, KAFKA_TOOL_HEAP, mainClass, args),
      {
        logPath: join(options.outputDir, `${name}.txt`),
        ...(onLine ? { onLine } : {}),
      },
    );
    options.onToolStarted?.(tool);
    return tool;
  };
}

/**
 * What the tools' lines say while they run: when every consumer has joined its group, and the live rates (the first
 * producer's 1 s reports, with the first consumer's latest receive rate) for the CLI's progress line.
 */
class KafkaProgressRelay {
  private joined = 0;
  private received = 0;
  private seconds = 0;
  private markJoined: () => void = () => undefined;
  /** Resolves once every consumer has joined (at once without consumers). */
  readonly allJoined = new Promise<void>((resolve) => (this.markJoined = resolve));

  constructor(
    private readonly consumers: number,
    private readonly onProgress: KafkaLoadOptions['onProgress'],
  ) {
    if (consumers === 0) this.markJoined();
  }

  onConsumerLine(line: string, reportsRate: boolean): void {
    if (CONSUMER_JOINED.test(line) && ++this.joined === this.consumers) this.markJoined();
    const progress = reportsRate ? parseKafkaProgressLine(line) : undefined;
    if (progress?.kind === 'received') this.received = progress.rate;
  }

  onProducerLine(line: string): void {
    const progress = parseKafkaProgressLine(line);
    if (progress?.kind === 'sent')
      this.onProgress?.({ time: ++this.seconds, sent: progress.rate, received: this.received });
  }
}

/**
 * Undefined once every consumer joined its group; why not, when they exit first or take longer than
 * CONSUMER_JOIN_TIMEOUT_MS.
 */
function consumersJoined(joined: Promise<void>, consumers: readonly ManagedProcess[]): Promise<string | undefined> {
  return Promise.race([
    joined.then(() => undefined),
    Promise.all(consumers.map((consumer) => consumer.exited)).then(
      () => 'Kafka consumers exited before they joined their group',
    ),
    new Promise<string>((resolve) =>
      setTimeout(
        () => resolve(`Kafka consumers did not join their group within ${CONSUMER_JOIN_TIMEOUT_MS / 1000} s`),
        CONSUMER_JOIN_TIMEOUT_MS,
      ).unref(),
    ),
  ]);
}

/** Every producer's and consumer's console output, as the tools wrote it. */
function collectedOutput(outputDir: string, producers: number, consumers: number): KafkaPerfOutput {
  const read = (name: string) => readOutput(outputDir, name);
  return {
    producers: Array.from({ length: producers }, (_, index) => read(`producer-${index + 1}`)),
    consumers: Array.from({ length: consumers }, (_, index) => read(`consumer-${index + 1}`)),
  };
}

/**
 * How long the consumers get to join their group before the producers start without them being ready counts as a
 * failure.
 */
const CONSUMER_JOIN_TIMEOUT_MS = 60_000;

function readOutput(dir: string, name: string): string {
  const path = join(dir, `${name}.txt`);
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** Waits for every process to exit; past the limit stops the rest and returns true. */
async function exitWithin(children: readonly ManagedProcess[], limitMs: number): Promise<boolean> {
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    for (const child of children) void child.stop(1000);
  }, limitMs);
  await Promise.all(children.map((child) => child.exited));
  clearTimeout(timer);
  await Promise.all(children.map((child) => child.stop(0)));
  return late;
}
