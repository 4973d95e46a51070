import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePlanText } from '../../core/plan/plan';
import { PerfTestOutputError } from '../../core/plan/errors';
import { natsLoadArgs, natsLoadExpectations, natsRunSettings } from '../../core/nats/nats-load-args';
import { parseNatsLoadOutput, parseNatsProgressLine } from '../../core/nats/nats-load-output';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/nats', name), 'utf8');

/** The error parseNatsLoadOutput throws. */
function failure(run: () => unknown): PerfTestOutputError {
  try {
    run();
  } catch (error) {
    if (error instanceof PerfTestOutputError) return error;
    throw error;
  }
  throw new Error('expected a PerfTestOutputError');
}

describe('the NATS load client output', () => {
  test('a rated run: per-second samples with both latencies, the summary from the summary line', () => {
    const result = parseNatsLoadOutput(fixture('rate-r3-pull.jsonl'), { producers: 1, consumers: 1 });
    // Four whole seconds; the last 1 ms interval is too short for a rate of its own.
    expect(result.samples.map((sample) => sample.time)).toEqual([1, 2, 3, 4]);
    expect(result.samples[0]).toMatchObject({
      published: 1999,
      confirmed: 1999,
      received: 1997,
      consumerLatency: { min: 413, median: 1220, p75: 2424, p95: 35712, p99: 61568 },
      confirmLatency: { min: 185, median: 646, p75: 998, p95: 2920, p99: 7408 },
    });
    expect(result.summary.sendRateAvg).toBeGreaterThan(1900);
    expect(result.summary.sendRateAvg).toBeLessThan(2100);
    expect(result.summary.receiveRateAvg).toBeGreaterThan(1900);
    expect(result.summary.consumerLatency).toEqual({ min: 379, median: 1316, p75: 2744, p95: 27072, p99: 50816 });
    expect(result.summary.confirmLatency).toEqual({ min: 164, median: 858, p75: 1468, p95: 7920, p99: 39552 });
    expect(result.receiveRate.mean).toBeCloseTo(1999.25, 0);
    expect(result.completedInSeconds).toBeUndefined();
  });

  test('fixed work: every message acknowledged and consumed, the time it took, a short last interval kept', () => {
    const result = parseNatsLoadOutput(fixture('count-r3-push-two.jsonl'), {
      producers: 2,
      consumers: 2,
      messagesPerProducer: 20_000,
    });
    // The second, 0.228 s interval is kept: its rate is its 5377 messages ÷ 0.228 s.
    expect(result.samples).toHaveLength(2);
    expect(result.samples[1]!.confirmed).toBe(Math.round(5377 / 0.228));
    expect(result.samples[1]!.time).toBeGreaterThan(1);
    expect(result.samples[1]!.time).toBeLessThan(2);
    expect(result.completedInSeconds).toBeGreaterThan(1);
    expect(result.summary.sendRateAvg).toBeGreaterThan(10_000);
    expect(result.summary.consumerLatency!.p99).toBeGreaterThanOrEqual(result.summary.consumerLatency!.median);
    // More than was sent is not "every message": the count must be exact.
    expect(
      failure(() =>
        parseNatsLoadOutput(fixture('count-r3-push-two.jsonl'), {
          producers: 2,
          consumers: 2,
          messagesPerProducer: 30_000,
        }),
      ).message,
    ).toBe(
      'NATS load client output is incomplete: missing 60000 acknowledged messages (the stream acknowledged 40000).',
    );
  });

  test('output cut short (the client stopped before its summary) is an error naming what is missing', () => {
    const error = failure(() => parseNatsLoadOutput(fixture('cut-short.jsonl'), { producers: 1, consumers: 1 }));
    expect(error.message).toBe(
      'NATS load client output is incomplete: missing the "summary" line: the output is cut short after 2 ' +
        'interval line(s) (the client was stopped or crashed before it finished).',
    );
    expect(error.missing).toHaveLength(1);
    // Cut in the middle of a line: the half line is skipped, the rest is judged the same way.
    const text = fixture('rate-r3-pull.jsonl');
    const cut = text.slice(0, text.indexOf('\n', text.indexOf('\n') + 1) + 60);
    expect(failure(() => parseNatsLoadOutput(cut, { producers: 1, consumers: 1 })).message).toMatch(
      /missing the "summary" line: the output is cut short after 1 interval line\(s\)/,
    );
    // A crash's message on stderr (written into the same file locally) is named.
    expect(
      failure(() =>
        parseNatsLoadOutput(`${fixture('cut-short.jsonl')}panic: runtime error: index out of range\n`, {
          producers: 1,
          consumers: 1,
        }),
      ).message,
    ).toMatch(/before it finished\)\. The client reported: panic: runtime error: index out of range\.$/);
    expect(failure(() => parseNatsLoadOutput('', { producers: 1, consumers: 1 })).missing).toEqual([
      'the "start" line (the client never got going)',
      expect.stringMatching(/^the "summary" line/),
    ]);
  });

  test("the client's own error (nats-server refused the consumer) is the repetition's error", () => {
    expect(
      failure(() => parseNatsLoadOutput(fixture('refused-workqueue.jsonl'), { producers: 1, consumers: 1 })).message,
    ).toMatch(
      new RegExp(
        '^the NATS load client failed: create pull consumer \\(ack none\\) on stream s-refused-wq: ' +
          '.*requires explicit ack policy on workqueue stream$',
      ),
    );
  });

  test('consumers that stopped short of what was acknowledged fail the run, unless the stream may discard', () => {
    const lines = fixture('rate-r3-pull.jsonl')
      .trimEnd()
      .split('\n')
      .map((line) =>
        line.includes('"type":"summary"')
          ? line.replace('"drained":true', '"drained":false').replace('"received":7999', '"received":7000')
          : line,
      )
      .join('\n');
    expect(failure(() => parseNatsLoadOutput(lines, { producers: 1, consumers: 1 })).message).toMatch(
      /missing every acknowledged message consumed \(the consumers received 7000 of 7999 and then nothing more/,
    );
    expect(parseNatsLoadOutput(lines, { producers: 1, consumers: 1, mayDiscard: true }).summary.receiveRateAvg).toEqual(
      expect.any(Number),
    );
  });

  test('under a fault, refused publishes and a short drain are what the fault cost, not a failed run', () => {
    // As a killed stream leader left it on the Azure twin: 3 of a fixed 5000 refused, one acknowledged never consumed.
    const lines = fixture('rate-r3-pull.jsonl')
      .trimEnd()
      .split('\n')
      .map((line) =>
        line.includes('"type":"summary"')
          ? line
              .replace('"drained":true', '"drained":false')
              .replace('"received":7999', '"received":7000')
              .replace('"nacked":0', '"nacked":3')
          : line,
      )
      .join('\n');
    const fixed = { producers: 1, consumers: 1, messagesPerProducer: 8002 };
    expect(failure(() => parseNatsLoadOutput(lines, fixed)).message).toMatch(
      /missing 8002 acknowledged messages \(the stream acknowledged 7999; 3 refused/,
    );
    const result = parseNatsLoadOutput(lines, { ...fixed, underFault: true });
    expect(result.summary.receiveRateAvg).toBeGreaterThan(0);
    // Nothing acknowledged at all is still a failure, fault or not.
    const none = lines.replace(/"confirmed":7999/, '"confirmed":0');
    expect(failure(() => parseNatsLoadOutput(none, { ...fixed, underFault: true })).message).toMatch(
      /missing acknowledged messages \(the stream acknowledged none; 3 refused/,
    );
  });

  test('a warm-up leaves its seconds out of the summary, which then comes from the per-second samples', () => {
    const result = parseNatsLoadOutput(fixture('rate-r3-pull.jsonl'), { producers: 1, consumers: 1, warmUpSeconds: 2 });
    expect(result.warmUpSeconds).toBe(2);
    expect(result.perfTestSummary!.consumerLatency!.p99).toBe(50816);
    // Seconds 3 and 4 only: p99s 56448 (1999 received) and 41088 (1998): the weighted median is the heavier one.
    expect(result.summary.consumerLatency!.p99).toBe(56448);
    expect(
      failure(() =>
        parseNatsLoadOutput(fixture('rate-r3-pull.jsonl'), { producers: 1, consumers: 1, warmUpSeconds: 9 }),
      ).message,
    ).toMatch(/missing per-second samples after the 9 s warm-up/);
  });

  test('an interval line is live progress in msg/s; other lines are not', () => {
    const [, second] = fixture('rate-r3-pull.jsonl').split('\n');
    expect(parseNatsProgressLine(second!)).toEqual({ time: 1, sent: 1999, received: 1997 });
    expect(parseNatsProgressLine('{"type":"start"}')).toBeUndefined();
    expect(parseNatsProgressLine('panic: runtime error')).toBeUndefined();
  });
});

describe('the NATS load client arguments', () => {
  const workload = (fields: string, nodes = 3) =>
    parsePlanText(
      `name: n\nclusters: [{ name: n, broker: nats, nodes: ${nodes} }]\nworkloads: [{ name: w${fields} }]\n`,
      'n.yaml',
    ).scenarios[0]!.workload;

  test(
    'defaults: R3 on three nodes (R1 on fewer), file storage, limits, pull, explicit acks, ' +
      'flat out for the duration',
    () => {
      const three = workload(', durationSeconds: 30, messageSizeBytes: 100');
      const settings = natsRunSettings(three, 3);
      expect(settings).toEqual({
        replicas: 3,
        storage: 'file',
        retention: 'limits',
        consumerMode: 'pull',
        ackPolicy: 'explicit',
        ratePerProducer: 0,
      });
      expect(natsRunSettings(workload('', 1), 1).replicas).toBe(1);
      expect(
        natsLoadArgs({ servers: ['nats://a:1', 'nats://b:2'], stream: 's', subject: 's.x', workload: three, settings }),
      ).toEqual([
        '-servers',
        'nats://a:1,nats://b:2',
        '-stream',
        's',
        '-subject',
        's.x',
        '-producers',
        '1',
        '-consumers',
        '1',
        '-size',
        '100',
        '-rate',
        '0',
        '-duration',
        '30',
        '-drain',
        '10',
        '-consumer-mode',
        'pull',
        '-ack',
        'explicit',
        '-storage',
        'file',
        '-replicas',
        '3',
        '-retention',
        'limits',
        '-window',
        '500',
      ]);
      expect(natsLoadExpectations(three, settings)).toEqual({ producers: 1, consumers: 1 });
    },
  );

  test("every JetStream field reaches the client; fixed work is each producer's share", () => {
    const fields = workload(
      ', producers: 2, consumers: 3, totalBytes: 1000, messageSizeBytes: 10, publishRateLimit: 50, replicas: 1, ' +
        'storage: memory, retention: interest, maxBytes: 4096, maxMsgs: 40, consumerMode: push, ackPolicy: all',
    );
    const settings = natsRunSettings(fields, 3);
    expect(settings).toMatchObject({ messagesPerProducer: 50, ratePerProducer: 50, maxBytes: 4096, maxMsgs: 40 });
    const args = natsLoadArgs({ servers: ['nats://a:1'], stream: 's', subject: 's.x', workload: fields, settings });
    expect(args.join(' ')).toBe(
      '-servers nats://a:1 -stream s -subject s.x -producers 2 -consumers 3 -size 10 -rate 50 -messages 50 -drain 10 ' +
        '-consumer-mode push -ack all -storage memory -replicas 1 -retention interest -max-bytes 4096 -max-msgs 40 ' +
        '-window 500',
    );
    expect(natsLoadExpectations(fields, settings)).toEqual({
      producers: 2,
      consumers: 3,
      messagesPerProducer: 50,
      mayDiscard: true,
    });
  });
});
