import { generateBrokerConfig } from '../../core/broker/broker-config';
import type { QueueTopology, Workload } from '../../core/plan/plan-schema';
import { buildPerfTestArgs, redactPerfTestArgs } from '../../core/perftest/perftest-args';
import { BENCHMARK_USER_PERMISSIONS } from '../../lambdas/start-repetition/logic';

const workload: Workload = {
  name: 'w',
  producers: 1,
  consumers: 1,
  queues: 1,
  messageSizeBytes: 150,
  durationSeconds: 20,
  persistent: false,
  autoAck: true,
  exchange: { type: 'direct' },
};

function argsFor(topology: QueueTopology, overrides: Partial<Workload> = {}, nodeCount = 3) {
  const { queueArguments } = generateBrokerConfig({
    topology,
    rabbitmqVersion: '3.13',
    peerDiscovery: { backend: 'external' },
    nodeCount,
  });
  return buildPerfTestArgs({
    workload: { ...workload, ...overrides },
    topology,
    queueArguments,
    uris: ['amqp://guest:secret@127.0.0.1:5672'],
    csvPath: '/tmp/out.csv',
  });
}

const valueAfter = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

describe('PerfTest arguments', () => {
  test('a classic workload maps each field to its flag', () => {
    const args = argsFor(
      { type: 'classic' },
      { confirmWindow: 50, prefetch: 100, publishRateLimit: 1000, consumerRateLimit: 900 },
    );
    expect(valueAfter(args, '--queue')).toBe('perf-test-1');
    expect(valueAfter(args, '--size')).toBe('150');
    expect(valueAfter(args, '--time')).toBe('20');
    expect(valueAfter(args, '--confirm')).toBe('50');
    expect(valueAfter(args, '--qos')).toBe('100');
    expect(valueAfter(args, '--rate')).toBe('1000');
    expect(valueAfter(args, '--consumer-rate')).toBe('900');
    expect(valueAfter(args, '--output-file')).toBe('/tmp/out.csv');
    // Ends at --time: no shutdown sequence sampled after it (perftest-args.ts).
    expect(valueAfter(args, '--shutdown-timeout')).toBe('0');
    expect(args).toContain('--autoack');
    expect(args).not.toContain('--flag');
    expect(args).not.toContain('--queue-args');
  });

  test('quorum queues are declared durable, without auto-delete, with their replication factor', () => {
    const args = argsFor({ type: 'quorum', replicationFactor: 2 });
    expect(valueAfter(args, '--flag')).toBe('persistent');
    expect(valueAfter(args, '--auto-delete')).toBe('false');
    expect(valueAfter(args, '--queue-args')).toBe('x-queue-type=quorum,x-quorum-initial-group-size=2');
  });

  test('streams get their queue type and manual acks with a prefetch', () => {
    const args = argsFor({ type: 'stream' }, { autoAck: false, prefetch: 200 });
    expect(valueAfter(args, '--queue-args')).toBe('x-queue-type=stream,x-initial-cluster-size=3');
    expect(args).not.toContain('--autoack');
  });

  test(
    'a queue sequence gets the total producers and consumers, ' + 'which PerfTest spreads over the queues round-robin',
    () => {
      const args = argsFor({ type: 'classic' }, { queues: 10, producers: 10, consumers: 20 });
      expect(valueAfter(args, '--producers')).toBe('10');
      expect(valueAfter(args, '--consumers')).toBe('20');
      expect(valueAfter(args, '--queue-pattern')).toBe('perf-test-%d');
      expect(valueAfter(args, '--queue-pattern-to')).toBe('10');
      expect(args).not.toContain('--exchange');
    },
  );

  test('a fanout or topic exchange is declared by PerfTest under a name the benchmark user may use', () => {
    const fanout = argsFor({ type: 'quorum' }, { queues: 5, producers: 1, consumers: 5, exchange: { type: 'fanout' } });
    expect([valueAfter(fanout, '--exchange'), valueAfter(fanout, '--type')]).toEqual(['rmqbench-fanout', 'fanout']);
    expect(valueAfter(fanout, '--producers')).toBe('1');
    const topic = argsFor({ type: 'classic' }, { exchange: { type: 'topic' } });
    expect([valueAfter(topic, '--exchange'), valueAfter(topic, '--type')]).toEqual(['rmqbench-topic', 'topic']);
    expect(new RegExp(BENCHMARK_USER_PERMISSIONS.configure).test(valueAfter(fanout, '--exchange')!)).toBe(true);
  });

  test(
    'a fixed amount of work: each producer sends its share (--pmessages), ' +
      "each queue's consumer stops after what its queue receives (--cmessages)",
    () => {
      const direct = argsFor({ type: 'quorum' }, { queues: 2, producers: 4, consumers: 2, messageCount: 1000 });
      expect([
        valueAfter(direct, '--pmessages'),
        valueAfter(direct, '--cmessages'),
        valueAfter(direct, '--time'),
      ]).toEqual(['250', '500', '20']);
      const fanout = argsFor(
        { type: 'classic' },
        { queues: 3, producers: 1, consumers: 3, messageCount: 900, exchange: { type: 'fanout' } },
      );
      expect([valueAfter(fanout, '--pmessages'), valueAfter(fanout, '--cmessages')]).toEqual(['900', '900']);
      const publishOnly = argsFor(
        { type: 'classic' },
        { producers: 2, consumers: 0, totalBytes: 1_500, messageSizeBytes: 100 },
      );
      expect(valueAfter(publishOnly, '--pmessages')).toBe('8');
      expect(publishOnly).not.toContain('--cmessages');
      expect(argsFor({ type: 'classic' })).not.toContain('--pmessages');
    },
  );

  test("the workload's queue mode and length limit join the topology's queue arguments", () => {
    const args = argsFor({ type: 'quorum' }, { maxLength: 1000, overflow: 'reject-publish' });
    expect(valueAfter(args, '--queue-args')).toBe(
      'x-queue-type=quorum,x-quorum-initial-group-size=3,x-max-length=1000,x-overflow=reject-publish',
    );
    expect(valueAfter(argsFor({ type: 'classic' }, { queueMode: 'lazy' }), '--queue-args')).toBe('x-queue-mode=lazy');
  });

  test('persistent classic messages and multi-ack', () => {
    const args = argsFor(
      { type: 'mirrored', mirrorTo: 'all' },
      { persistent: true, autoAck: false, multiAckEvery: 10 },
    );
    expect(valueAfter(args, '--flag')).toBe('persistent');
    expect(valueAfter(args, '--multi-ack-every')).toBe('10');
    expect(args).not.toContain('--auto-delete');
  });

  test('passwords in URIs are redacted for logs and storage', () => {
    const args = redactPerfTestArgs(argsFor({ type: 'classic' }));
    expect(args.join(' ')).not.toContain('secret');
    expect(valueAfter(args, '--uri')).toBe('amqp://guest:***@127.0.0.1:5672');
  });
});
