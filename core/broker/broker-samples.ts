import { BENCHMARK_QUEUE_PATTERN } from './broker-config';
import { UNIT_OF, type MetricPoint, type MetricSeries, type RepetitionMetrics } from '../metrics/host-metrics';

/**
 * The broker side of a cloud repetition's metrics: what the sampler beside PerfTest on the load generator
 * (lambdas/start-repetition/broker-sampler.ts) read from the RabbitMQ management API once per second, turned into the
 * `memoryAlarm` and `queueDepth` series of core/metrics/host-metrics.ts. The same definitions as the local target's
 * (local/management-metrics.ts brokerReading): memoryAlarm 1 while the node is in the cluster's alarm list with
 * resource
 * "memory"; queueDepth the messages (ready + unacknowledged) of the benchmark queues whose leader is on the node.
 * Kafka clusters have no management API: no sampler runs there. Pure: the text in, the series out.
 */

/** The raw file the sampler writes and the load generator uploads beside stdout.txt and perftest.csv. */
export const BROKER_SAMPLES_FILE = 'broker-metrics.jsonl';

/**
 * The management API paths the sampler reads, with what each needs of the user (RabbitMQ 3.13.7 and 4.1.4,
 * https://github.com/rabbitmq/rabbitmq-server deps/rabbitmq_management/src/rabbit_mgmt_wm_*.erl is_authorized/2 and
 * deps/rabbitmq_web_dispatch/src/rabbit_web_dispatch_access_control.erl;
 * https://www.rabbitmq.com/docs/management#permissions):
 * every call needs a management tag (a user without one is refused "Not management user").
 */
export const BROKER_SAMPLE_PATHS = {
  /** is_authorized_monitor: the `monitoring` (or `administrator`) tag. */
  nodes: '/api/nodes?columns=name,running',
  /**
   * is_authorized: any management tag. 200 {"status":"ok"}, or 503 {"status":"failed","alarms":[{"resource":"memory",
   * "node":...}]} (rabbit_mgmt_wm_health_check_alarms.erl, rabbit_alarm:format_as_map/1): the sampler keeps the body of
   * either. Every node's alarms, unlike /api/nodes' mem_alarm, which a node reports only after its first statistics
   * emission.
   */
  alarms: '/api/health/checks/alarms',
  /**
   * is_authorized_vhost: a user with permissions on the vhost. `node` is the queue's leader for a quorum queue
   * (rabbit_mgmt_format:format_queue_stats({leader, L}) -> {node, L}) and its process's node for a classic queue;
   * `messages` is ready + unacknowledged.
   */
  queues: '/api/queues/%2F?columns=name,node,messages',
} as const;

export type BrokerSampleAnswer = keyof typeof BROKER_SAMPLE_PATHS;

/**
 * One line of the sampler's output: the load generator's clock (epoch seconds) and the three answers (null where curl
 * got none).
 */
interface SampleLine {
  readonly t: number;
  readonly nodes: unknown;
  readonly alarms: unknown;
  readonly queues: unknown;
}

/**
 * What the sampler's output gave: the series, and the complete lines that could not be used, in two kinds: lines in
 * which a request got no answer (the management API was unreachable: a node killed or cut off by a fault is behind the
 * load balancer until its health check takes it out) and lines that are not samples (an error body, not JSON), each
 * kind with its first reason.
 */
export interface BrokerSamplesResult {
  readonly metrics: RepetitionMetrics;
  readonly samples: number;
  /** Complete lines that are not samples, for another reason than a request without an answer. */
  readonly unusable: number;
  readonly firstProblem?: string;
  /** Complete lines in which a request got no answer (null): a gap in the series at that second. */
  readonly unanswered: number;
  readonly firstUnanswered?: string;
}

/** A line in which a request got no answer. */
class NoAnswer extends Error {}

/** The sampler's output held no usable sample; the message says what it held instead. */
export class BrokerSamplesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokerSamplesError';
  }
}

/**
 * The memoryAlarm and queueDepth series per broker node (named as RabbitMQ names it, e.g. `rabbit@10.0.1.23`) from the
 * sampler's JSON lines, at seconds since `startedAt`. A last line without its newline was cut short (the load generator
 * stopped mid-write) and is ignored; a complete line in which a request got no answer is counted in `unanswered`, one
 * that is not a usable sample for another reason (an error body such as {"error":"not_authorized"}) in `unusable`, and
 * the others are kept. Throws
 * BrokerSamplesError when no line is usable, naming the first problem.
 */
export function brokerMetricsFromSamples(text: string, startedAt: Date): BrokerSamplesResult {
  const lines = text.split('\n');
  // The element after the last newline: empty for complete output, else a line cut short.
  lines.pop();
  const byNode = new Map<string, { memoryAlarm: MetricPoint[]; queueDepth: MetricPoint[] }>();
  let samples = 0;
  let unusable = 0;
  let unanswered = 0;
  let firstProblem: string | undefined;
  let firstUnanswered: string | undefined;
  let firstOfAll: string | undefined;
  const readings = lines
    .map((line, index) => {
      if (line.trim() === '') return undefined;
      try {
        return { index, reading: reduceSample(parseLine(line), startedAt) };
      } catch (error) {
        const problem = `line ${index + 1}: ${error instanceof Error ? error.message : String(error)}`;
        firstOfAll ??= problem;
        if (error instanceof NoAnswer) {
          unanswered++;
          firstUnanswered ??= problem;
        } else {
          unusable++;
          firstProblem ??= problem;
        }
        return undefined;
      }
    })
    .filter((entry) => entry !== undefined)
    .sort((a, b) => a.reading.tSeconds - b.reading.tSeconds || a.index - b.index);
  for (const { reading } of readings) {
    samples++;
    for (const [node, alarm] of reading.memoryAlarm) {
      const series = byNode.get(node) ?? { memoryAlarm: [], queueDepth: [] };
      byNode.set(node, series);
      series.memoryAlarm.push([reading.tSeconds, alarm]);
      series.queueDepth.push([reading.tSeconds, reading.queueDepth.get(node) ?? 0]);
    }
  }
  if (samples === 0) {
    const lost = unusable + unanswered;
    const held =
      lines.length === 0 ? 'no complete line' : `${lost} unusable line${lost === 1 ? '' : 's'} (first: ${firstOfAll})`;
    throw new BrokerSamplesError(`the management API sampler's ${BROKER_SAMPLES_FILE} holds ${held}`);
  }
  const series: MetricSeries[] = [...byNode.entries()].flatMap(([node, points]) => [
    { node, metric: 'memoryAlarm', unit: UNIT_OF.memoryAlarm, points: points.memoryAlarm },
    { node, metric: 'queueDepth', unit: UNIT_OF.queueDepth, points: points.queueDepth },
  ]);
  return {
    metrics: { source: 'management-api', series },
    samples,
    unusable,
    ...(firstProblem === undefined ? {} : { firstProblem }),
    unanswered,
    ...(firstUnanswered === undefined ? {} : { firstUnanswered }),
  };
}

function parseLine(line: string): SampleLine {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new Error(`not JSON (${truncate(line)})`);
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { t?: unknown }).t !== 'number')
    throw new Error(`no numeric "t" (${truncate(line)})`);
  return parsed as SampleLine;
}

interface Reading {
  readonly tSeconds: number;
  readonly memoryAlarm: Map<string, 0 | 1>;
  readonly queueDepth: Map<string, number>;
}

function reduceSample(sample: SampleLine, startedAt: Date): Reading {
  const nodes = answerList<{ name?: unknown; running?: unknown }>(sample.nodes, 'nodes');
  const alarms = sample.alarms as { status?: unknown; alarms?: unknown } | null;
  if (alarms === null || alarms === undefined) throw new NoAnswer(`no answer from ${BROKER_SAMPLE_PATHS.alarms}`);
  if (alarms.status !== 'ok' && !Array.isArray(alarms.alarms))
    throw new Error(`${BROKER_SAMPLE_PATHS.alarms} answered ${truncate(JSON.stringify(alarms))}`);
  const queues = answerList<{ name?: unknown; node?: unknown; messages?: unknown }>(sample.queues, 'queues');
  const inMemoryAlarm = new Set(
    ((alarms.alarms ?? []) as { resource?: unknown; node?: unknown }[])
      .filter((alarm) => alarm.resource === 'memory')
      .map((alarm) => alarm.node),
  );
  const memoryAlarm = new Map<string, 0 | 1>();
  const queueDepth = new Map<string, number>();
  for (const node of nodes) {
    if (typeof node.name !== 'string' || node.running === false) continue;
    memoryAlarm.set(node.name, inMemoryAlarm.has(node.name) ? 1 : 0);
  }
  const benchmarkQueue = new RegExp(BENCHMARK_QUEUE_PATTERN);
  for (const queue of queues) {
    // A queue whose leader is down has no message count: it adds nothing.
    if (
      typeof queue.name !== 'string' ||
      !benchmarkQueue.test(queue.name) ||
      typeof queue.node !== 'string' ||
      typeof queue.messages !== 'number'
    )
      continue;
    queueDepth.set(queue.node, (queueDepth.get(queue.node) ?? 0) + queue.messages);
  }
  return { tSeconds: Math.round((sample.t * 1000 - startedAt.getTime()) / 10) / 100, memoryAlarm, queueDepth };
}

function answerList<T>(answer: unknown, name: BrokerSampleAnswer): T[] {
  if (answer === null || answer === undefined) throw new NoAnswer(`no answer from ${BROKER_SAMPLE_PATHS[name]}`);
  if (!Array.isArray(answer))
    throw new Error(`${BROKER_SAMPLE_PATHS[name]} answered ${truncate(JSON.stringify(answer))}`);
  return answer as T[];
}

function truncate(text: string | undefined): string {
  if (text === undefined) return 'undefined';
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * One RepetitionMetrics from the parts different sources gave for the same repetition (the cloud's host metrics and
 * the management API's broker metrics): their series side by side, the sources named together
 * (`cloudwatch+management-api`).
 */
export function combineRepetitionMetrics(parts: readonly RepetitionMetrics[]): RepetitionMetrics {
  if (parts.length === 0) throw new Error('combineRepetitionMetrics needs at least one part');
  return { source: parts.map((part) => part.source).join('+'), series: parts.flatMap((part) => part.series) };
}

/**
 * A broker node of a cloud cluster: its host's id as the host metrics name it (instance id, VM name) and its RabbitMQ
 * node name.
 */
export interface BrokerHost {
  readonly id: string;
  readonly nodeName: string;
}

/**
 * The broker series under the names the host series use, so that a node's CPU, memory, alarm and queue depth are one
 * node in `show` and the reports: each RabbitMQ node name (`rabbit@10.0.1.23`, `rabbit@rmqbench000001`) becomes its
 * host's id (the instance id, the VM name). A node no host matches (an instance replaced before the ingest) keeps
 * RabbitMQ's name and is listed in `unmatched`.
 */
export function brokerSeriesOnHosts(
  metrics: RepetitionMetrics,
  hosts: readonly BrokerHost[],
): { metrics: RepetitionMetrics; unmatched: string[] } {
  const idOf = new Map(hosts.map((host) => [host.nodeName, host.id]));
  const unmatched = [...new Set(metrics.series.map((series) => series.node).filter((node) => !idOf.has(node)))];
  return {
    metrics: {
      ...metrics,
      series: metrics.series.map((series) => ({ ...series, node: idOf.get(series.node) ?? series.node })),
    },
    unmatched,
  };
}
