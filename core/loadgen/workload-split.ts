import { formatPlanIssue, type PlanIssue } from '../plan/errors';
import { perfTestMessageLimits } from '../plan/fixed-work';
import type { Workload } from '../plan/plan-schema';
import { QUEUE_PREFIX, queueSelectionArgs } from '../perftest/perftest-args';
import { capacityLadder, type CapacityStep } from '../capacity/capacity-plan';
import { loadGeneratorId, MAX_LOAD_GENERATORS } from './load-generator-count';

/**
 * Splitting one RabbitMQ workload over N load generators (issue 27), by QUEUE:
 * - the queues `perf-test-1…Q` are cut into N contiguous blocks, the first Q mod N generators one queue more;
 * - every producer and consumer goes with the queue PerfTest would give it in a single run: PerfTest spreads a
 *   sequence's producers and consumers over its queues round-robin (producer i on queue i mod Q; rabbitmq-perf-test
 *   v2.22.1 usage-advanced.adoc "Working With Many Queues"), so queue q has ⌊P/Q⌋ producers, one more for the first
 *   P mod Q queues, and likewise for consumers. A generator runs the producers and consumers of its queues, and
 *   PerfTest's own round-robin over its block gives each queue the same count as the single run did;
 * - so a producer publishes only to its generator's queues and its messages are consumed, and their latency
 *   measured, in the same PerfTest process: no clock between machines enters a latency.
 * Per-producer and per-consumer settings (`--rate`, `--consumer-rate`, `--variable-rate`, `--pmessages`,
 * `--cmessages`, confirms, prefetch) stay as they are; a generator's share of a total is that value times its
 * producers (consumers), so the shares add up to the whole exactly.
 *
 * A fanout exchange is refused: it copies every message to every queue, so either a message reaches the other
 * generators' queues (consumed and timed on another machine) or, with an exchange per generator, the fan-out degree the
 * workload measures falls from Q to about Q/N. A topic exchange splits like a direct one: PerfTest binds each queue
 * with its own name and publishes with a queue's name as routing key, so a message only reaches that queue.
 */

/** The workload fields the split reads. */
export type SplittableWorkload = Pick<
  Workload,
  | 'name'
  | 'producers'
  | 'consumers'
  | 'queues'
  | 'exchange'
  | 'publishRateLimit'
  | 'consumerRateLimit'
  | 'messageCount'
  | 'totalBytes'
  | 'messageSizeBytes'
  | 'capacity'
>;

/** One generator's part of the workload. */
export interface LoadGeneratorShare {
  /** `lg-1`, `lg-2`, … */
  readonly id: string;
  readonly producers: number;
  readonly consumers: number;
  /** Its queues: `perf-test-<from>` … `perf-test-<to>` (1-based, inclusive), and their names. */
  readonly queues: { readonly from: number; readonly to: number; readonly names: readonly string[] };
  /** With a publishRateLimit: the limit each producer keeps (`--rate`) and this generator's total. */
  readonly publishRateLimit?: { readonly perProducer: number; readonly total: number };
  /** With a consumerRateLimit: the limit each consumer keeps (`--consumer-rate`) and this generator's total. */
  readonly consumerRateLimit?: { readonly perConsumer: number; readonly total: number };
  /**
   * With a fixed amount of work: this generator's messages (`total`) and PerfTest's limits, the same per producer
   * (`--pmessages`) and per consumer (`--cmessages`) as in a single run.
   */
  readonly messageLimits?: { readonly total: number; readonly perProducer: number; readonly perConsumer?: number };
  /**
   * In capacity mode: the ladder with this generator's share of each step's rate. `perProducerRate` (what
   * `--variable-rate` takes) is the whole workload's, so that every generator steps through the same rates.
   */
  readonly capacitySteps?: readonly CapacityStep[];
}

export interface WorkloadSplit {
  readonly loadGenerators: number;
  readonly generators: readonly LoadGeneratorShare[];
  /** One line for the report: how the workload was split. */
  readonly description: string;
}

/** A workload that cannot be split so that each producer's messages are consumed on its generator. */
export class LoadGeneratorSplitError extends Error {
  constructor(
    readonly workloadName: string,
    readonly loadGenerators: number,
    readonly issues: readonly PlanIssue[],
  ) {
    super(
      `cannot split workload "${workloadName}" over ${loadGenerators} load generators: ` +
        issues.map(formatPlanIssue).join('; '),
    );
    this.name = 'LoadGeneratorSplitError';
  }
}

/**
 * Why `workload` cannot be split over `loadGenerators` generators, each problem at its field under `at` (e.g.
 * `workloads[0]`); empty when it can. One generator takes any workload.
 */
export function loadGeneratorSplitIssues(
  workload: Pick<SplittableWorkload, 'producers' | 'consumers' | 'queues' | 'exchange'>,
  loadGenerators: number,
  at = '',
): PlanIssue[] {
  if (loadGenerators === 1) return [];
  const n = loadGenerators;
  const field = (name: string) => (at ? `${at}.${name}` : name);
  // A fanout workload is not split at all: its counts are not worth reporting against a split.
  if (workload.exchange.type === 'fanout') {
    return [
      {
        path: field('exchange.type'),
        message:
          `a fanout exchange copies every message to every queue: over ${n} load generators a message would also be ` +
          `consumed (and timed) on another generator, or with an exchange each the fan-out would fall from ` +
          `${workload.queues} queues to about ${Math.ceil(workload.queues / n)}; run fanout workloads on one generator`,
        value: 'fanout',
      },
    ];
  }
  const issues: PlanIssue[] = [];
  if (workload.queues < n) {
    issues.push({
      path: field('queues'),
      message:
        `${n} load generators need at least ${n} queues: each generator gets queues of its own, so that a ` +
        `producer's messages are consumed, and timed, on its generator; use queues >= ${n} or fewer loadGenerators`,
      value: workload.queues,
    });
  }
  const agents = [
    ['producers', workload.producers, 'publish to'],
    ['consumers', workload.consumers, 'consume from'],
  ] as const;
  for (const [name, count, verb] of agents) {
    if (count > 0 && count < n) {
      issues.push({
        path: field(name),
        message:
          `fewer ${name} than load generators (${n}): each generator needs ${name} that ${verb} its own queues; ` +
          `use at least ${n} ${name} or fewer loadGenerators`,
        value: count,
      });
    }
  }
  return issues;
}

/**
 * Splits a RabbitMQ workload over `loadGenerators` generators by queue (see the top of this file). Throws a
 * LoadGeneratorSplitError naming each field that prevents it (loadGeneratorSplitIssues).
 */
export function splitWorkload(workload: SplittableWorkload, loadGenerators: number): WorkloadSplit {
  if (!Number.isInteger(loadGenerators) || loadGenerators < 1 || loadGenerators > MAX_LOAD_GENERATORS) {
    throw new RangeError(
      `loadGenerators must be a whole number from 1 to ${MAX_LOAD_GENERATORS}, got ${loadGenerators}`,
    );
  }
  const issues = loadGeneratorSplitIssues(workload, loadGenerators);
  if (issues.length > 0) throw new LoadGeneratorSplitError(workload.name, loadGenerators, issues);

  const limits = perfTestMessageLimits(workload);
  const ladder =
    workload.capacity && workload.producers > 0 ? capacityLadder(workload.capacity, workload.producers) : undefined;
  const generators = queueBlocks(workload.queues, loadGenerators).map(({ from, to }, index): LoadGeneratorShare => {
    const producers = agentsOnQueues(workload.producers, workload.queues, from, to);
    const consumers = agentsOnQueues(workload.consumers, workload.queues, from, to);
    const { publishRateLimit: perProducer, consumerRateLimit: perConsumer } = workload;
    return {
      id: loadGeneratorId(index),
      producers,
      consumers,
      queues: { from, to, names: Array.from({ length: to - from + 1 }, (_, at) => `${QUEUE_PREFIX}-${from + at}`) },
      ...(perProducer === undefined ? {} : { publishRateLimit: { perProducer, total: perProducer * producers } }),
      ...(perConsumer === undefined ? {} : { consumerRateLimit: { perConsumer, total: perConsumer * consumers } }),
      ...(limits ? { messageLimits: { ...limits, total: limits.perProducer * producers } } : {}),
      ...(ladder
        ? { capacitySteps: ladder.map((step) => ({ ...step, targetRate: step.perProducerRate * producers })) }
        : {}),
    };
  });
  return { loadGenerators, generators, description: describeSplit(generators) };
}

/** PerfTest's queue arguments for one generator: its one queue, or its block of the `perf-test-%d` sequence. */
export function generatorQueueArgs(share: Pick<LoadGeneratorShare, 'queues'>): string[] {
  return queueSelectionArgs(share.queues.from, share.queues.to);
}

/** Queues 1…total in `parts` contiguous blocks (1-based, inclusive), the first total mod parts one longer. */
function queueBlocks(total: number, parts: number): { from: number; to: number }[] {
  const base = Math.floor(total / parts);
  const longer = total % parts;
  const blocks: { from: number; to: number }[] = [];
  let next = 1;
  for (let index = 0; index < parts; index++) {
    const size = base + (index < longer ? 1 : 0);
    blocks.push({ from: next, to: next + size - 1 });
    next += size;
  }
  return blocks;
}

/** How many of `agents` producers (consumers) PerfTest's round-robin puts on queues from…to of 1…queues. */
function agentsOnQueues(agents: number, queues: number, from: number, to: number): number {
  let count = 0;
  for (let queue = from; queue <= to; queue++)
    count += Math.floor(agents / queues) + (queue <= agents % queues ? 1 : 0);
  return count;
}

function describeSplit(generators: readonly LoadGeneratorShare[]): string {
  const parts = generators.map((share) => {
    const { from, to } = share.queues;
    const queues = from === to ? `${QUEUE_PREFIX}-${from}` : `${QUEUE_PREFIX}-${from}…${to}`;
    const extras = [
      share.publishRateLimit ? `${share.publishRateLimit.total.toLocaleString('en-US')} msg/s limit` : undefined,
      share.messageLimits ? `${share.messageLimits.total.toLocaleString('en-US')} messages` : undefined,
    ].filter((extra) => extra !== undefined);
    const agents = `${count(share.producers, 'producer')}, ${count(share.consumers, 'consumer')}`;
    return `${share.id} ${queues} (${[agents, ...extras].join(', ')})`;
  });
  if (generators.length === 1) return `one load generator: ${parts[0]}`;
  return (
    `split by queue over ${generators.length} load generators, each producer's messages consumed on its own ` +
    `generator: ${parts.join('; ')}`
  );
}

const count = (value: number, noun: string) => `${value} ${noun}${value === 1 ? '' : 's'}`;
