import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerfTestOutputError } from '../../core/plan/errors';
import { parseKafkaPerfOutput, parseKafkaProgressLine } from '../../core/kafka/kafka-perf-output';

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
    const result = parseKafkaPerfOutput(
      { producers: [fixture('one-producer-1')], consumers: [fixture('one-consumer-1')] },
      { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
    );
    expect(result.summary.sendRateAvg).toBe(13930);
    // Between the consumer's first row (10:37:48.569, 1 record) and its last (10:38:01.801, 199590 records).
    expect(result.summary.receiveRateAvg).toBe(Math.round(((199_590 - 1) * 1000) / 13_232));
    expect(result.summary.confirmLatency).toEqual({ median: 6_187_000, p95: 8_055_000, p99: 8_250_000 });
    expect(result.summary.consumerLatency).toBeUndefined();
    // 14 producer windows, 14 consumer rows: second n adds up the n-th report of each.
    expect(result.samples).toHaveLength(14);
    expect(result.samples[1]).toEqual({
      time: 2,
      published: 4869.1,
      returned: 0,
      confirmed: 4869.1,
      nacked: 0,
      received: 5198.4127,
    });
    expect(result.sendRate.n).toBe(14);
  });

  test(
    'two producers and two consumers of one group: rates add up, ' +
      'and the consumers ending by idle timeout is normal',
    () => {
      const result = parseKafkaPerfOutput(
        {
          producers: [fixture('two-producer-1'), fixture('two-producer-2')],
          consumers: [fixture('two-consumer-1'), fixture('two-consumer-2')],
        },
        { producers: 2, consumers: 2, recordsPerProducer: 100_000 },
      );
      expect(result.summary.sendRateAvg).toBe(Math.round(12756.729175 + 12119.743061));
      const consumer1 = ((101_342 - 1) * 1000) / (25_251 - 18_088);
      const consumer2 = ((85_340 - 1) * 1000) / (24_513 - 18_477);
      expect(result.summary.receiveRateAvg).toBe(Math.round(consumer1 + consumer2));
      // The median of the two producers' percentiles.
      expect(result.summary.confirmLatency).toEqual({ median: 1_701_000, p95: 3_065_000, p99: 3_246_000 });
      expect(result.samples[0]!.published).toBeCloseTo(197.8 + 0.8, 5);
    },
  );

  test('a producer stopped before its final line fails the repetition, naming both tools and what each lacked', () => {
    const error = failureOf(() =>
      parseKafkaPerfOutput(
        { producers: [fixture('cut-producer-1')], consumers: [fixture('cut-consumer-1')] },
        { producers: 1, consumers: 1, recordsPerProducer: 40_000 },
      ),
    );
    expect(error.missing).toEqual([
      'producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 2 per-second line(s))',
      'consumer 1: every record (it stopped waiting: "WARNING: ' +
        'Exiting before consuming the expected number of records")',
    ]);
    expect(error.message).toMatch(/^Kafka tool output is incomplete: missing producer 1: the final/);
  });

  test('output cut mid-run (the last lines lost) is refused, not read as a lower rate', () => {
    const cut = fixture('one-producer-1').split('\n').slice(0, 10).join('\n');
    const error = failureOf(() =>
      parseKafkaPerfOutput(
        { producers: [cut], consumers: [fixture('one-consumer-1')] },
        { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
      ),
    );
    expect(error.missing).toEqual([
      'producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 10 per-second line(s))',
    ]);
  });

  test('fewer acknowledged records than asked for (failed sends) is refused', () => {
    const short = fixture('one-producer-1').replace('200000 records sent, 13930', '199000 records sent, 13930');
    const error = failureOf(() =>
      parseKafkaPerfOutput(
        { producers: [short], consumers: [fixture('one-consumer-1')] },
        { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
      ),
    );
    expect(error.missing).toEqual([
      'producer 1: 200000 acknowledged records (it reports 199000; failed sends are not counted)',
    ]);
  });

  test('a consumer without its header or rows, a missing tool output and a crash are all named', () => {
    const crashed =
      'org.apache.kafka.common.errors.TimeoutException: Topic rmqbench-x not present in metadata after 60000 ms.\n';
    const error = failureOf(() =>
      parseKafkaPerfOutput(
        {
          producers: [crashed],
          consumers: ['time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec\n'],
        },
        { producers: 2, consumers: 1, recordsPerProducer: 10 },
      ),
    );
    expect(error.missing).toEqual([
      'the output of 2 producer(s) (found 1)',
      'producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 0 per-second line(s))',
      'per-second rows from any of the 1 consumer(s) (found none)',
    ]);
    expect(error.message).toContain(
      'The tool reported: org.apache.kafka.common.errors.TimeoutException: Topic rmqbench-x not present',
    );
    expect(
      failureOf(() =>
        parseKafkaPerfOutput(
          { producers: [fixture('one-producer-1')], consumers: [''] },
          { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
        ),
      ).missing,
    ).toEqual([
      'consumer 1: the "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" header',
    ]);
  });

  test('a consumer of a group that got no partition has no rows and counts 0; one row counts its own rate', () => {
    const header =
      'time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ' +
      'nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n';
    const idle =
      `${header}WARNING: Exiting before consuming the expected number of records: ` +
      `timeout (10000 ms) exceeded. You can use the --timeout option to increase the timeout.\n`;
    const oneRow = `${header}2026-11-23 10:26:13:558, 0, 0.0954, 0.0950, 1000, 996.0159, 0, 1004, 0.0950, 996.0159\n`;
    const result = parseKafkaPerfOutput(
      { producers: [fixture('two-producer-1'), fixture('two-producer-2')], consumers: [idle, oneRow] },
      { producers: 2, consumers: 2, recordsPerProducer: 100_000 },
    );
    expect(result.summary.receiveRateAvg).toBe(996);
  });

  test(
    'a consumer that got every record before its first row is ' +
      'refused as too short to measure, not read as 0 records/s',
    () => {
      const header =
        'time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ' +
        'nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n';
      const rows = [
        '2026-11-23 10:26:13:558, 0, 19.0735, 6.3579, 200000, 66666.6667, 2001, 999, 19.0926, 200200.2002',
        '2026-11-23 10:26:14:561, 0, 19.0735, 0.0000, 200000, 0.0000, 0, 1003, 0.0000, 0.0000',
      ];
      const allAtOnce = `${header}${rows.join('\n')}\n`;
      const error = failureOf(() =>
        parseKafkaPerfOutput(
          { producers: [fixture('one-producer-1')], consumers: [allAtOnce] },
          { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
        ),
      );
      expect(error.missing).toEqual([
        expect.stringMatching(
          /^consumer 1: a measurable receive rate \(all 200000 of its records arrived before its first per-second row/,
        ),
      ]);
      // The same rows with the second one moving on are a rate.
      const moving = allAtOnce.replace('19.0735, 6.3579, 200000', '9.5367, 3.1789, 100000');
      expect(
        parseKafkaPerfOutput(
          { producers: [fixture('one-producer-1')], consumers: [moving] },
          { producers: 1, consumers: 1, recordsPerProducer: 200_000 },
        ).summary.receiveRateAvg,
      ).toBe(99701);
    },
  );

  test("with a warm-up: the producers' steady-state summary and the consumers' rows after it; whole run kept", () => {
    const output = { producers: [fixture('warm-producer-1')], consumers: [fixture('warm-consumer-1')] };
    const result = parseKafkaPerfOutput(output, {
      producers: 1,
      consumers: 1,
      recordsPerProducer: 16_000,
      warmUpSeconds: 3,
    });
    // "10000 steady state records sent, 1990.445860 records/sec ..., 4 ms 50th, 7 ms 95th, 9 ms 99th".
    expect(result.summary.sendRateAvg).toBe(1990);
    expect(result.summary.confirmLatency).toEqual({ median: 4000, p95: 7000, p99: 9000 });
    // From the row 3 s after the first (04:16:55:311, 6900 records) to the last (04:16:59:325, 14930).
    expect(result.summary.receiveRateAvg).toBe(Math.round(((14_930 - 6_900) * 1000) / 4_014));
    expect(result.warmUpSeconds).toBe(3);
    expect(result.perfTestSummary).toEqual({
      sendRateAvg: 1995,
      receiveRateAvg: Math.round(((14_930 - 1) * 1000) / 7_020),
      confirmLatency: { median: 5000, p95: 98000, p99: 150000 },
    });
    // Without the steady-state line (a tool that ignored --warmup-records) the warm-up cannot be honoured.
    const plain = output.producers[0]!.replace(/^\d+ steady state records sent.*$/m, '');
    const failure = failureOf(() =>
      parseKafkaPerfOutput(
        { ...output, producers: [plain] },
        { producers: 1, consumers: 1, recordsPerProducer: 16_000, warmUpSeconds: 3 },
      ),
    );
    expect(failure.message).toContain('producer 1: the "steady state records sent" line');
  });

  // Captured from a real 8 s run with durationSeconds only (1 broker, local/kafka-load.ts stopAtDuration): both tools
  // were stopped with SIGTERM, so the producer printed its 1 s windows and no summary.
  const stoppedAt = { producers: 1, consumers: 1, recordsPerProducer: 800_000_000, stoppedAtSeconds: 8 };

  test('a run stopped at its duration: the windows inside it give the rates, and it is not "cut short"', () => {
    const producer = fixture('duration-producer-1');
    expect(producer).not.toMatch(/99\.9th/);
    const result = parseKafkaPerfOutput(
      { producers: [producer], consumers: [fixture('duration-consumer-1')] },
      stoppedAt,
    );
    // Every window's records over every window's time (records ÷ its rate).
    const windows = [
      [1, 1.0],
      [16_576, 11_102.5],
      [28_120, 27_924.5],
      [19_684, 19_644.7],
      [54_464, 54_355.3],
    ];
    const records = windows.reduce((sum, [count]) => sum + count!, 0);
    const seconds = windows.reduce((sum, [count, rate]) => sum + count! / rate!, 0);
    expect(result.summary.sendRateAvg).toBe(Math.round(records / seconds));
    // Between the consumer's first row (14:18:21.097, 1 record) and its last (14:18:26.127, 138381 records).
    expect(result.summary.receiveRateAvg).toBe(Math.round(((138_381 - 1) * 1000) / 5_030));
    // ProducerPerformance prints latency percentiles only in the summary a stopped producer never reaches.
    expect(result.summary.confirmLatency).toBeUndefined();
    expect(result.samples.map((sample) => sample.published)).toEqual([1, 11_102.5, 27_924.5, 19_644.7, 54_355.3, 0]);
    expect(result.samples.map((sample) => sample.received)).toEqual([
      0.2192, 8757.3964, 14933.0669, 34131.2127, 17178.5714, 62837.1628,
    ]);
    expect(result.receiveRate.n).toBe(6);
  });

  test('a run stopped at its duration with a warm-up: the windows after its seconds give the steady send rate', () => {
    const output = { producers: [fixture('duration-producer-1')], consumers: [fixture('duration-consumer-1')] };
    const whole = parseKafkaPerfOutput(output, stoppedAt);
    const result = parseKafkaPerfOutput(output, { ...stoppedAt, warmUpSeconds: 2 });
    // The windows end at 1 s, 2.49 s, 3.50 s, 4.50 s and 5.50 s of the producer's time (records ÷ rate each): the
    // second ends past the 2 s warm-up, so the last three are the steady ones.
    const steady = [
      [28_120, 27_924.5],
      [19_684, 19_644.7],
      [54_464, 54_355.3],
    ];
    const records = steady.reduce((sum, [count]) => sum + count!, 0);
    const seconds = steady.reduce((sum, [count, rate]) => sum + count! / rate!, 0);
    expect(result.summary.sendRateAvg).toBe(Math.round(records / seconds));
    expect(result.warmUpSeconds).toBe(2);
    // The whole run's figures are kept beside it, as with --warmup-records.
    expect(result.perfTestSummary).toEqual(whole.summary);
    expect(result.summary.receiveRateAvg).not.toBe(whole.summary.receiveRateAvg);
    // A warm-up longer than every window: the rate of all of them, rather than none.
    const long = parseKafkaPerfOutput(output, { ...stoppedAt, warmUpSeconds: 30 });
    expect(long.summary.sendRateAvg).toBe(whole.summary.sendRateAvg);
  });

  test('the same stopped output read as fixed work is refused as cut short; a stopped producer needs a window', () => {
    const output = { producers: [fixture('duration-producer-1')], consumers: [fixture('duration-consumer-1')] };
    expect(
      failureOf(() => parseKafkaPerfOutput(output, { ...stoppedAt, stoppedAtSeconds: undefined })).missing,
    ).toEqual([
      'producer 1: the final "records sent ... ms 99.9th" line (the run was cut short after 5 per-second line(s))',
    ]);
    const silent = { ...output, producers: ['[2026-11-26 14:18:17,001] ERROR could not reach the broker'] };
    const failure = failureOf(() => parseKafkaPerfOutput(silent, stoppedAt));
    expect(failure.missing).toEqual(['producer 1: any per-second "records sent" line in the 8 s it ran (found none)']);
    expect(failure.message).toMatch(/The tool reported: .*ERROR could not reach the broker/);
  });

  test('live progress reads the 1 s lines of both tools and nothing else', () => {
    const [producerLine] = fixture('one-producer-1').split('\n').slice(1, 2);
    expect(parseKafkaProgressLine(producerLine!)).toEqual({ kind: 'sent', rate: 4869.1 });
    const consumerLine = fixture('one-consumer-1')
      .split('\n')
      .find((line) => line.startsWith('2026-11-23 10:37:49:577'))!;
    expect(parseKafkaProgressLine(consumerLine)).toEqual({ kind: 'received', rate: 5198.4127 });
    expect(parseKafkaProgressLine(fixture('one-producer-1').trimEnd().split('\n').pop()!)).toBeUndefined();
    expect(
      parseKafkaProgressLine(
        '[2026-11-23 10:38:01,850] INFO [Consumer clientId=perf-consumer-client] Revoke previously assigned partitions',
      ),
    ).toBeUndefined();
  });

  test('a producer-only workload needs no consumer output and reports no receive rate', () => {
    const result = parseKafkaPerfOutput(
      { producers: [fixture('one-producer-1')], consumers: [] },
      { producers: 1, consumers: 0, recordsPerProducer: 200_000 },
    );
    expect(result.summary.receiveRateAvg).toBe(0);
    expect(result.samples.every((sample) => sample.received === 0)).toBe(true);
  });
});
