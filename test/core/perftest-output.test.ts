import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerfTestOutputError } from '../../core/plan/errors';
import { parsePerfTestOutput, parseProgressLine } from '../../core/perftest/perftest-output';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
const basic = { durationSeconds: 5, producers: 1, consumers: 1, confirms: false };

describe('PerfTest output parsing (fixtures captured from real PerfTest 2.22.1 runs)', () => {
  test('takes the summary from stdout and the per-second samples from the CSV', () => {
    const result = parsePerfTestOutput(fixture('basic-150b.stdout.txt'), fixture('basic-150b.csv'), basic);
    expect(result.summary).toEqual({
      sendRateAvg: 6068,
      receiveRateAvg: 5994,
      consumerLatency: { min: 210, median: 284099, p75: 428401, p95: 520432, p99: 527718 },
    });
    expect(result.samples).toHaveLength(5);
    expect(result.samples[0]).toMatchObject({
      time: 1.001,
      published: 4165,
      received: 4068,
      consumerLatency: { median: 21901 },
    });
    expect(result.samples[0]!.confirmLatency).toBeUndefined();
    expect(result.sendRate.mean).toBeCloseTo((4165 + 6254 + 5621 + 5611 + 8677) / 5, 6);
    expect(result.receiveRate.median).toBe(4998);
  });

  test(
    'reads latency when the JVM had no UTF-8 locale and wrote "?s" ' +
      'for "µs" (captured from the AWS run script run as the SSM agent runs it)',
    () => {
      const stdout = fixture('no-utf8-locale.stdout.txt');
      expect(stdout).toMatch(/consumer latency min\/median\/75th\/95th\/99th \d+\/\d+\/\d+\/\d+\/\d+ \?s$/m);
      expect(parsePerfTestOutput(stdout, fixture('basic-150b.csv'), basic).summary.consumerLatency).toEqual({
        min: 662,
        median: 70450,
        p75: 119747,
        p95: 206774,
        p99: 273876,
      });
      expect(
        parsePerfTestOutput(stdout.replace(/\?s$/gm, 'Âµs'), fixture('basic-150b.csv'), basic).summary.consumerLatency!
          .median,
      ).toBe(70450);
    },
  );

  test('reads confirm latency when confirms were on', () => {
    const result = parsePerfTestOutput(fixture('confirms-4000b.stdout.txt'), fixture('confirms-4000b.csv'), {
      ...basic,
      durationSeconds: 4,
      confirms: true,
    });
    expect(result.summary.confirmLatency).toEqual({ min: 492, median: 5959, p75: 9218, p95: 18094, p99: 42304 });
    expect(result.samples[0]!.confirmLatency).toEqual({ min: 551, median: 6498, p75: 9598, p95: 21286, p99: 45058 });
    expect(result.samples[0]!.confirmed).toBe(4218);
  });

  test('confirms expected but absent from the output is an error', () => {
    expect(() =>
      parsePerfTestOutput(fixture('basic-150b.stdout.txt'), fixture('basic-150b.csv'), { ...basic, confirms: true }),
    ).toThrow(/confirm latency/);
  });

  test('a PerfTest killed mid-run is an error that says what is missing, never a zero result', () => {
    let error: unknown;
    try {
      parsePerfTestOutput(fixture('killed.stdout.txt'), fixture('killed.csv'), { ...basic, durationSeconds: 10 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PerfTestOutputError);
    const missing = (error as PerfTestOutputError).missing.join('\n');
    expect(missing).toMatch(/sending rate avg/);
    expect(missing).toMatch(/receiving rate avg/);
    expect(missing).toMatch(/CSV ends at 3\.0 s/);
  });

  test('a PerfTest that could not connect reports the exception', () => {
    expect(() =>
      parsePerfTestOutput(fixture('refused.stdout.txt'), fixture('refused.csv'), { ...basic, durationSeconds: 3 }),
    ).toThrow(/empty file.*Connection refused/s);
  });

  test('a CSV row cut off in the middle is reported with its row number', () => {
    const csv = fixture('basic-150b.csv').trimEnd();
    const truncated = csv.slice(0, csv.lastIndexOf(',', csv.length - 30));
    expect(() => parsePerfTestOutput(fixture('basic-150b.stdout.txt'), truncated, basic)).toThrow(
      /CSV row 6: 17 columns/,
    );
  });

  test('garbled numbers are reported with their column', () => {
    const garbled = fixture('basic-150b.csv').replace(',6254,', ',62x4,');
    expect(() => parsePerfTestOutput(fixture('basic-150b.stdout.txt'), garbled, basic)).toThrow(
      /column "published" \(found "62x4"\)/,
    );
  });

  test('multi-queue and quorum runs parse', () => {
    const twoQueues = parsePerfTestOutput(fixture('two-queues-12b.stdout.txt'), fixture('two-queues-12b.csv'), {
      ...basic,
      durationSeconds: 3,
      producers: 2,
      consumers: 2,
    });
    expect(twoQueues.summary.sendRateAvg).toBe(9241);
    const quorum = parsePerfTestOutput(fixture('quorum-150b.stdout.txt'), fixture('quorum-150b.csv'), {
      ...basic,
      durationSeconds: 3,
    });
    expect(quorum.summary.receiveRateAvg).toBe(13604);
  });

  test('progress lines give the current rates', () => {
    expect(parseProgressLine('id: test-1, time 2.001 s, sent: 6254 msg/s, received: 4998 msg/s, min/median')).toEqual({
      time: 2.001,
      sent: 6254,
      received: 4998,
    });
    expect(parseProgressLine('id: test-1, starting consumer #0')).toBeUndefined();
  });
});

describe('PerfTest output of a fixed amount of work (--pmessages/--cmessages)', () => {
  const fixed = { ...basic, durationSeconds: 60, fixedMessages: 30_000 };
  const stoppedBy = (reason: string) =>
    fixture('basic-150b.stdout.txt').replace(/test stopped \([^)]*\)/, `test stopped (${reason})`);

  test(
    'ends by the message limits before the duration limit: ' + 'accepted, with the time it took from the last sample',
    () => {
      const result = parsePerfTestOutput(
        stoppedBy('Producer reached message limit, Consumer reached message limit'),
        fixture('basic-150b.csv'),
        fixed,
      );
      expect(result.completedInSeconds).toBe(5);
      expect(result.samples).toHaveLength(5);
    },
  );

  test('cut short by the duration limit: a failure that names the work left undone', () => {
    expect(() => parsePerfTestOutput(stoppedBy('Reached time limit'), fixture('basic-150b.csv'), fixed)).toThrow(
      'the end of the fixed work: 30000 messages were not sent and consumed ' +
        'within the 60 s limit (PerfTest stopped: Reached time limit)',
    );
  });

  test(
    'done within the first second (no per-second sample): ' + 'a failure that says the work is too small to measure',
    () => {
      let error: unknown;
      try {
        parsePerfTestOutput(stoppedBy('Producer reached message limit, Consumer reached message limit'), '', fixed);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(PerfTestOutputError);
      expect((error as Error).message).toContain(
        "the fixed work (30000 messages) was done before PerfTest's first one (under 1 s), " +
          'too little to measure; use a larger messageCount or totalBytes',
      );
      expect((error as Error).message).not.toContain('empty file');
    },
  );
});

describe('warm-up (warmUpSeconds)', () => {
  test(
    'the summary and rate statistics leave the first seconds out; ' + "PerfTest's own summary is kept beside them",
    () => {
      const result = parsePerfTestOutput(fixture('basic-150b.stdout.txt'), fixture('basic-150b.csv'), {
        ...basic,
        warmUpSeconds: 2,
      });
      // Seconds 3..5 of the captured run (CSV rows at 3.001, 4.001, 5.000).
      expect(result.summary.sendRateAvg).toBe(Math.round((5621 + 5611 + 8677) / 3));
      expect(result.summary.receiveRateAvg).toBe(Math.round((4836 + 5162 + 9822) / 3));
      // Each percentile is the median of the seconds' values, each weighted by the messages it received.
      expect(result.summary.consumerLatency?.p99).toBe(449660);
      expect(result.sendRate.n).toBe(3);
      expect(result.warmUpSeconds).toBe(2);
      expect(result.perfTestSummary?.sendRateAvg).toBe(6068);
    },
  );

  test('a run cut short before the warm-up ended is incomplete, not a result', () => {
    expect(() =>
      parsePerfTestOutput(fixture('basic-150b.stdout.txt'), fixture('basic-150b.csv'), { ...basic, warmUpSeconds: 5 }),
    ).toThrow(/after the 5 s warm-up/);
  });
});
