import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerfTestOutputError } from '../../core/errors';
import { parseKafkaPerfOutput } from '../../core/kafka-perf-output';

const fixture = (name: string) => readFileSync(join(__dirname, '..', 'fixtures', 'kafka', `${name}.txt`), 'utf8');

function failureOf(run: () => unknown): PerfTestOutputError {
  try {
    run();
  } catch (error) {
    if (error instanceof PerfTestOutputError) return error;
    throw error;
  }
  throw new Error('expected the output to be refused');
}

describe('Kafka ProducerPerformance / ConsumerPerformance output', () => {
  test('one producer and one consumer: rates, acknowledgement latency in µs and per-second samples', () => {
    const result = parseKafkaPerfOutput({ producers: [fixture('one-producer-1')], consumers: [fixture('one-consumer-1')] }, { producers: 1, consumers: 1, recordsPerProducer: 200_000 });
    expect(result.summary.sendRateAvg).toBeCloseTo(7829.933837, 5);
    // Between the consumer's first row (10:25:43.707, 1 record) and its last (10:25:58.867, 186858 records).
    expect(result.summary.receiveRateAvg).toBeCloseTo(((186_858 - 1) * 1000) / 15_160, 3);
    expect(result.summary.confirmLatency).toEqual({ median: 15_025_000, p95: 17_236_000, p99: 17_450_000 });
    expect(result.summary.consumerLatency).toBeUndefined();
    // 21 producer windows, 16 consumer rows: second n adds up the n-th report of each.
    expect(result.samples).toHaveLength(21);
    expect(result.samples[1]).toEqual({ time: 2, published: 1551.9, returned: 0, confirmed: 1551.9, nacked: 0, received: 21284.8723 });
    expect(result.samples[20]!.received).toBe(0);
    expect(result.sendRate.n).toBe(21);
  });

  test('two producers and two consumers of one group: rates add up, and the consumers ending by idle timeout is normal', () => {
    const result = parseKafkaPerfOutput(
      { producers: [fixture('two-producer-1'), fixture('two-producer-2')], consumers: [fixture('two-consumer-1'), fixture('two-consumer-2')] },
      { producers: 2, consumers: 2, recordsPerProducer: 100_000 },
    );
    expect(result.summary.sendRateAvg).toBeCloseTo(10587.612493 + 11019.283747, 5);
    const consumer1 = ((94_775 - 1) * 1000) / (17_672 - 13_558);
    const consumer2 = ((85_688 - 1) * 1000) / (16_855 - 13_799);
    expect(result.summary.receiveRateAvg).toBeCloseTo(consumer1 + consumer2, 3);
    // The median of the two producers' percentiles.
    expect(result.summary.confirmLatency).toEqual({ median: 2_506_000, p95: 4_017_000, p99: 4_300_500 });
    expect(result.samples[0]!.published).toBeCloseTo(145.2 + 0.5, 5);
  });

  test('a producer stopped before its final line fails the repetition, naming both tools and what each lacked', () => {
    const error = failureOf(() => parseKafkaPerfOutput({ producers: [fixture('cut-producer-1')], consumers: [fixture('cut-consumer-1')] }, { producers: 1, consumers: 1, recordsPerProducer: 40_000 }));
    expect(error.missing).toEqual([
      'producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 1 per-second line(s))',
      'consumer 1: every record (it stopped waiting: "WARNING: Exiting before consuming the expected number of records")',
    ]);
    expect(error.message).toMatch(/^Kafka tool output is incomplete: missing producer 1: the final/);
  });

  test('output cut mid-run (the last lines lost) is refused, not read as a lower rate', () => {
    const cut = fixture('one-producer-1').split('\n').slice(0, 10).join('\n');
    const error = failureOf(() => parseKafkaPerfOutput({ producers: [cut], consumers: [fixture('one-consumer-1')] }, { producers: 1, consumers: 1, recordsPerProducer: 200_000 }));
    expect(error.missing).toEqual(['producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 10 per-second line(s))']);
  });

  test('fewer acknowledged records than asked for (failed sends) is refused', () => {
    const short = fixture('one-producer-1').replace('200000 records sent, 7829', '199000 records sent, 7829');
    const error = failureOf(() => parseKafkaPerfOutput({ producers: [short], consumers: [fixture('one-consumer-1')] }, { producers: 1, consumers: 1, recordsPerProducer: 200_000 }));
    expect(error.missing).toEqual(['producer 1: 200000 acknowledged records (it reports 199000; failed sends are not counted)']);
  });

  test('a consumer without its header or rows, a missing tool output and a crash are all named', () => {
    const crashed = 'org.apache.kafka.common.errors.TimeoutException: Topic rmqbench-x not present in metadata after 60000 ms.\n';
    const error = failureOf(() => parseKafkaPerfOutput({ producers: [crashed], consumers: ['time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec\n'] }, { producers: 2, consumers: 1, recordsPerProducer: 10 }));
    expect(error.missing).toEqual([
      'the output of 2 producer(s) (found 1)',
      'producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 0 per-second line(s))',
      'consumer 1: at least two per-second rows (found 0)',
    ]);
    expect(error.message).toContain('The tool reported: org.apache.kafka.common.errors.TimeoutException: Topic rmqbench-x not present');
    expect(failureOf(() => parseKafkaPerfOutput({ producers: [fixture('one-producer-1')], consumers: [''] }, { producers: 1, consumers: 1, recordsPerProducer: 200_000 })).missing).toEqual([
      'consumer 1: the "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" header',
    ]);
  });

  test('a producer-only workload needs no consumer output and reports no receive rate', () => {
    const result = parseKafkaPerfOutput({ producers: [fixture('one-producer-1')], consumers: [] }, { producers: 1, consumers: 0, recordsPerProducer: 200_000 });
    expect(result.summary.receiveRateAvg).toBe(0);
    expect(result.samples.every((sample) => sample.received === 0)).toBe(true);
  });
});
