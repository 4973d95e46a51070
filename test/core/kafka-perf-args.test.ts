import {
  consumerPerformanceArgs,
  createTopicArgs,
  KAFKA_UNREACHABLE_RECORDS_PER_SECOND,
  kafkaPerfExpectations,
  kafkaRunSettings,
  producerPerformanceArgs,
} from '../../core/kafka/kafka-perf-args';
import { parsePlanText } from '../../core/plan/plan';

const workloadOf = (fields: string, nodes = 3) =>
  parsePlanText(
    `name: k\nclusters: [{ name: k, broker: kafka, nodes: ${nodes} }]\nworkloads: [{ name: w${fields} }]\n`,
    'k.yaml',
  ).scenarios[0]!.workload;

describe('Kafka tool arguments from a workload', () => {
  test('warmUpSeconds at a publishRateLimit: --warmup-records of that many seconds, before --command-property', () => {
    const settings = kafkaRunSettings(workloadOf(', publishRateLimit: 2000, durationSeconds: 8, warmUpSeconds: 3'), 1);
    expect(settings.warmupRecords).toBe(6000);
    const args = producerPerformanceArgs({
      bootstrapServers: 'b:9092',
      topic: 't',
      settings,
      messageSizeBytes: 200,
      clientId: 'c',
    });
    expect(args.slice(args.indexOf('--warmup-records'), args.indexOf('--warmup-records') + 2)).toEqual([
      '--warmup-records',
      '6000',
    ]);
    expect(args.indexOf('--warmup-records')).toBeLessThan(args.indexOf('--command-property'));
    expect(
      kafkaRunSettings(workloadOf(', publishRateLimit: 2000, durationSeconds: 8'), 1).warmupRecords,
    ).toBeUndefined();
  });

  test('warmUpSeconds with durationSeconds only (valid): no --warmup-records, the parser leaves it out', () => {
    const workload = workloadOf(', durationSeconds: 12, warmUpSeconds: 4');
    const settings = kafkaRunSettings(workload, 1);
    expect(settings.warmupRecords).toBeUndefined();
    expect(settings.stopAfterSeconds).toBe(12);
    const args = producerPerformanceArgs({
      bootstrapServers: 'b:9092',
      topic: 't',
      settings,
      messageSizeBytes: 200,
      clientId: 'c',
    });
    expect(args).not.toContain('--warmup-records');
    expect(kafkaPerfExpectations(workload, settings)).toMatchObject({ warmUpSeconds: 4, stoppedAtSeconds: 12 });
  });

  test(
    'defaults: one partition, three copies where there ' + 'are three brokers, acks=all, Kafka 4 batch and linger',
    () => {
      const settings = kafkaRunSettings(workloadOf(', messageCount: 1000'), 3);
      expect(settings).toEqual({
        partitions: 1,
        replicationFactor: 3,
        acks: 'all',
        batchSizeBytes: 16384,
        lingerMs: 5,
        compression: 'none',
        recordsPerProducer: 1000,
        throughput: -1,
      });
      expect(kafkaRunSettings(workloadOf(', messageCount: 1000', 1), 1).replicationFactor).toBe(1);
    },
  );

  test('the message count is split over the producers; totalBytes and a rate × duration count too', () => {
    expect(kafkaRunSettings(workloadOf(', producers: 4, messageCount: 1000'), 3).recordsPerProducer).toBe(250);
    expect(
      kafkaRunSettings(workloadOf(', producers: 2, messageSizeBytes: 100, totalBytes: 1000000'), 3).recordsPerProducer,
    ).toBe(5000);
    const rated = kafkaRunSettings(workloadOf(', publishRateLimit: 500, durationSeconds: 6'), 3);
    expect([rated.recordsPerProducer, rated.throughput]).toEqual([3000, 500]);
  });

  test(
    'durationSeconds only: each producer is asked for more records than the duration can carry, flat out, ' +
      'and the tools are to be stopped at the duration',
    () => {
      const workload = workloadOf(', producers: 2, consumers: 3, durationSeconds: 10');
      const settings = kafkaRunSettings(workload, 1);
      expect(settings.stopAfterSeconds).toBe(10);
      expect(settings.recordsPerProducer).toBe(KAFKA_UNREACHABLE_RECORDS_PER_SECOND * 10);
      expect(settings.throughput).toBe(-1);
      expect(kafkaPerfExpectations(workload, settings)).toEqual({
        producers: 2,
        consumers: 3,
        recordsPerProducer: 1_000_000_000,
        stoppedAtSeconds: 10,
      });
      const args = producerPerformanceArgs({
        bootstrapServers: 'b:9092',
        topic: 't',
        settings,
        messageSizeBytes: 100,
        clientId: 'c',
      });
      expect(args.slice(args.indexOf('--num-records'), args.indexOf('--num-records') + 2)).toEqual([
        '--num-records',
        '1000000000',
      ]);
      // 24 h, the longest durationSeconds, stays a whole number a Java long and a JavaScript number both hold exactly.
      expect(Number.isSafeInteger(kafkaRunSettings(workloadOf(', durationSeconds: 86400'), 1).recordsPerProducer)).toBe(
        true,
      );
      // A count, a byte total, a rate or a ladder each bound the work themselves: no stop at the duration.
      for (const fields of [
        ', messageCount: 1000',
        ', messageSizeBytes: 10, totalBytes: 10000',
        ', publishRateLimit: 100, durationSeconds: 10',
        ', capacity: { p99LatencyMs: 100, minRate: 100, maxRate: 400, stepSeconds: 10 }',
      ]) {
        expect(kafkaRunSettings(workloadOf(fields), 1).stopAfterSeconds).toBeUndefined();
      }
    },
  );

  test("minInsyncReplicas is the topic's min.insync.replicas; without it the topic keeps the brokers' default", () => {
    const settings = kafkaRunSettings(
      workloadOf(', messageCount: 2000, replicationFactor: 3, minInsyncReplicas: 2'),
      3,
    );
    expect(createTopicArgs('t', settings).slice(-2)).toEqual(['--config', 'min.insync.replicas=2']);
    expect(createTopicArgs('t', kafkaRunSettings(workloadOf(', messageCount: 2000'), 3))).not.toContain('--config');
  });

  test('the producer, consumer and topic command lines carry every setting', () => {
    const workload = workloadOf(
      ', messageCount: 2000, messageSizeBytes: 512, partitions: 6, replicationFactor: 2, ' +
        'acks: 1, batchSizeBytes: 65536, lingerMs: 20, compression: snappy',
    );
    const settings = kafkaRunSettings(workload, 3);
    expect(createTopicArgs('t', settings)).toEqual([
      '--create',
      '--topic',
      't',
      '--partitions',
      '6',
      '--replication-factor',
      '2',
    ]);
    expect(
      producerPerformanceArgs({
        bootstrapServers: 'h:1,h:2',
        topic: 't',
        settings,
        messageSizeBytes: 512,
        clientId: 'p1',
      }),
    ).toEqual([
      '--bootstrap-server',
      'h:1,h:2',
      '--topic',
      't',
      '--num-records',
      '2000',
      '--record-size',
      '512',
      '--throughput',
      '-1',
      '--reporting-interval',
      '1000',
      '--command-property',
      'acks=1',
      'batch.size=65536',
      'linger.ms=20',
      'compression.type=snappy',
      'client.id=p1',
    ]);
    expect(
      consumerPerformanceArgs({ bootstrapServers: 'h:1', topic: 't', group: 'g', totalRecords: 2000, consumers: 1 }),
    ).toEqual([
      '--bootstrap-server',
      'h:1',
      '--topic',
      't',
      '--group',
      'g',
      '--num-records',
      '2000',
      '--timeout',
      '60000',
      '--show-detailed-stats',
      '--reporting-interval',
      '1000',
    ]);
    // A group's consumers end by the idle timeout, so theirs is shorter.
    expect(
      consumerPerformanceArgs({ bootstrapServers: 'h:1', topic: 't', group: 'g', totalRecords: 2000, consumers: 3 }),
    ).toContain('20000');
  });
});
