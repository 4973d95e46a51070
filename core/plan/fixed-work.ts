import type { Workload } from './plan-schema';

/**
 * A workload with a fixed amount of work (`messageCount` or `totalBytes`) instead of a duration: seed 004 sends
 * 7 GB per test and measures how long that takes. Both brokers read the total from here.
 */
export type FixedWorkFields = Pick<Workload, 'messageCount' | 'totalBytes' | 'messageSizeBytes' | 'producers'>;

/**
 * Messages to send in total: `messageCount`, or `totalBytes` ÷ `messageSizeBytes` rounded up to a multiple of the
 * producers; undefined for a timed workload.
 */
export function fixedMessageCount(workload: FixedWorkFields): number | undefined {
  if (workload.messageCount !== undefined) return workload.messageCount;
  if (workload.totalBytes === undefined || workload.messageSizeBytes === 0) return undefined;
  const producers = Math.max(1, workload.producers);
  return Math.ceil(Math.ceil(workload.totalBytes / workload.messageSizeBytes) / producers) * producers;
}

/**
 * PerfTest's message limits for a RabbitMQ workload with fixed work: each producer sends `perProducer`
 * (`--pmessages`) and each consumer, one per queue, stops after `perConsumer` (`--cmessages`): every message once per
 * queue it is routed to (all queues with a fanout exchange; with direct/topic the producers are spread evenly, so
 * each queue gets its share). Plan validation (core/plan/plan.ts) guarantees the divisions are exact.
 */
export function perfTestMessageLimits(
  workload: FixedWorkFields & Pick<Workload, 'consumers' | 'queues' | 'exchange'>,
): { total: number; perProducer: number; perConsumer?: number } | undefined {
  const total = fixedMessageCount(workload);
  if (total === undefined || workload.producers === 0) return undefined;
  const perQueue = workload.exchange.type === 'fanout' ? total : total / workload.queues;
  return {
    total,
    perProducer: total / workload.producers,
    ...(workload.consumers > 0 ? { perConsumer: perQueue } : {}),
  };
}
