import { workloadQueueArguments } from '../broker/broker-config';
import { perfTestMessageLimits } from '../plan/fixed-work';
import type { QueueTopology, Workload } from '../plan/plan-schema';
import { variableRateArgs } from '../capacity/capacity-plan';

/** The version of com.rabbitmq:perf-test every target runs. */
export const PERFTEST_VERSION = '2.22.1';

/** Queue names used by benchmarks: `perf-test-1` … `perf-test-N` (they match BENCHMARK_QUEUE_PATTERN). */
export const QUEUE_PREFIX = 'perf-test';

export function benchmarkQueueNames(queues: number): string[] {
  return Array.from({ length: queues }, (_, index) => `${QUEUE_PREFIX}-${index + 1}`);
}

/** The exchange of a non-direct workload: `rmqbench-fanout`, `rmqbench-topic`. */
export const benchmarkExchangeName = (type: 'fanout' | 'topic') => `rmqbench-${type}`;

export interface PerfTestInvocation {
  readonly workload: Workload;
  readonly topology: QueueTopology;
  /**
   * Queue arguments from the broker configuration (core/broker/broker-config.ts), so queues match the cluster's
   * topology; the workload's own (queue mode, length limit) are added.
   */
  readonly queueArguments: Readonly<Record<string, string | number>>;
  /** AMQP URIs; several are spread over connections. May carry credentials: use `redactPerfTestArgs` before logging. */
  readonly uris: readonly string[];
  /** Where PerfTest writes its per-second CSV. */
  readonly csvPath: string;
  /** True when the target declared the queues beforehand (leader/follower placement). */
  readonly predeclared?: boolean;
  /**
   * One load generator's part of the workload (core/loadgen/workload-split.ts): its producers, consumers and block of
   * queues; per-producer rates and message limits stay the workload's. Absent: the whole workload.
   */
  readonly share?: {
    readonly producers: number;
    readonly consumers: number;
    readonly queues: { readonly from: number; readonly to: number };
  };
}

/** PerfTest's queue selection: `perf-test-<from>` alone, or the block from…to of the `perf-test-%d` sequence. */
export function queueSelectionArgs(from: number, to: number): string[] {
  if (from === to) return ['--queue', `${QUEUE_PREFIX}-${from}`];
  return [
    '--queue-pattern',
    `${QUEUE_PREFIX}-%d`,
    '--queue-pattern-from',
    String(from),
    '--queue-pattern-to',
    String(to),
  ];
}

/** Workload → PerfTest command-line arguments, honouring PerfTest's quirks. */
export function buildPerfTestArgs(invocation: PerfTestInvocation): string[] {
  const { workload, topology } = invocation;
  if (invocation.uris.length === 0) throw new Error('PerfTest needs at least one AMQP URI');
  const args: string[] = [];
  if (invocation.uris.length === 1) args.push('--uri', invocation.uris[0]!);
  else args.push('--uris', invocation.uris.join(','));

  // Producer and consumer counts are totals: with a queue sequence PerfTest spreads them over the queues round-robin
  // (rabbitmq-perf-test v2.22.1 src/docs/asciidoc/usage-advanced.adoc "Working With Many Queues"; MulticastSet creates
  // exactly --producers producer connections).
  const share = invocation.share ?? { ...workload, queues: { from: 1, to: workload.queues } };
  args.push('--producers', String(share.producers), '--consumers', String(share.consumers));
  args.push(...queueSelectionArgs(share.queues.from, share.queues.to));
  // PerfTest declares the exchange with this type and binds every queue to it with the queue's name as routing key
  // (v2.22.1 MulticastParams: exchangeDeclare, queueBind, also with --predeclared); a fanout exchange ignores the key.
  // The name matches the benchmark user's permissions (rmqbench.*).
  if (workload.exchange.type !== 'direct')
    args.push('--exchange', benchmarkExchangeName(workload.exchange.type), '--type', workload.exchange.type);
  if (invocation.predeclared) args.push('--predeclared');

  args.push('--size', String(workload.messageSizeBytes));
  // A fixed amount of work: PerfTest stops once every producer and consumer reached its message limit
  // (Producer/Consumer "reached message limit"); --time stays as the limit a slow run fails against.
  const limits = perfTestMessageLimits(workload);
  if (limits) {
    args.push('--pmessages', String(limits.perProducer));
    if (limits.perConsumer !== undefined) args.push('--cmessages', String(limits.perConsumer));
  }
  args.push('--time', String(workload.durationSeconds));
  // No connection closing at the end: PerfTest's run ends with a shutdown sequence of up to --shutdown-timeout
  // seconds (default 5) while its metrics keep sampling, and prints its summary only after it (v2.22.1
  // MulticastSet.run: waitForCompletion, then executeShutdownSequence; PerfTest.main: set.run, then statsSummary).
  // A consumer behind its producer (unbounded prefetch) drains for seconds there: the run outlasts --time and its
  // averages count seconds with nothing sent. With 0, "no closing timeout, we don't do anything" and PerfTest exits
  // explicitly "without waiting alive threads (e.g. when using --shutdown-timeout 0)" (same files); the broker sees
  // the connections close with the JVM.
  args.push('--shutdown-timeout', '0');
  args.push('--interval', '1');
  args.push('--output-file', invocation.csvPath);

  const replicated = topology.type === 'quorum' || topology.type === 'stream';
  // Quorum queues and streams are durable and refuse auto-delete; PerfTest only declares durable queues with -f
  // persistent.
  if (workload.persistent || replicated) args.push('--flag', 'persistent');
  if (replicated) args.push('--auto-delete', 'false');
  const queueArgs = Object.entries({ ...invocation.queueArguments, ...workloadQueueArguments(workload) }).filter(
    ([key, value]) => !(key === 'x-queue-type' && value === 'classic'),
  );
  if (queueArgs.length > 0) args.push('--queue-args', queueArgs.map(([key, value]) => `${key}=${value}`).join(','));

  if (workload.confirmWindow !== undefined) args.push('--confirm', String(workload.confirmWindow));
  if (workload.autoAck) args.push('--autoack');
  if (workload.prefetch !== undefined) args.push('--qos', String(workload.prefetch));
  if (workload.multiAckEvery !== undefined) args.push('--multi-ack-every', String(workload.multiAckEvery));
  if (workload.publishRateLimit !== undefined) args.push('--rate', String(workload.publishRateLimit));
  // Capacity mode: the ladder's rates per producer, each for stepSeconds (core/capacity/capacity-plan.ts).
  if (workload.capacity !== undefined) args.push(...variableRateArgs(workload.capacity, workload.producers));
  if (workload.consumerRateLimit !== undefined) args.push('--consumer-rate', String(workload.consumerRateLimit));
  return args;
}

/** Replaces the password in every amqp(s):// URI, so arguments can be logged and stored. */
export function redactPerfTestArgs(args: readonly string[]): string[] {
  return args.map((arg) => arg.replace(/(amqps?:\/\/[^:/@\s,]+:)[^@\s,]+@/g, '$1***@'));
}
