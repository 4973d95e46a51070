import { cloudFailoverResult, cloudVerifierCounts, parseVerifierOutput } from '../../core/failover/cloud-verifier';

// The Java verifier's stdout (lambdas/start-repetition/lost-message-verifier-java.ts), captured on this machine's local
// 3-node cluster (test/lambdas/lost-message-verifier-java.integration.test.ts): a classic queue whose node was
// SIGKILLed;
// second 4 of unconfirmedPerSecond set to 3 (it was 0), so that the test tells which second is read.
const STARTED_AT_MS = 1795454070338;
const classicKilled =
  '{"startedAtMs":1795454070338,"published":1750,"confirmed":1740,"consumed":680,"lostMessages":1060,' +
  '"duplicatedMessages":0,"reconnects":1,"receivedPerSecond":[30, 160, 172, 158, 160, 0, 0, 0, 0, 0, 0, 0],' +
  '"unconfirmedPerSecond":[0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]}\n';
const at = (seconds: number) => new Date(STARTED_AT_MS + seconds * 1000).toISOString();
const fault = { action: 'kill' as const, node: 'leader' as const, nodeName: 'rabbit@10.0.1.12' };

// The Kafka and NATS verifiers' stdout in their cloud mode (KafkaLostMessageVerifier.java --duration-seconds 7,
// verify.go -verify-seconds 7), captured on this machine against one local broker (a KRaft node, a JetStream
// server) SIGSTOPped from about 2.5 s to 4.5 s after the start. Those runs also marked the fault through the local
// control (file, signals); the faultAtSeconds, unconfirmedAtFault and healAtSeconds that marking adds are left out,
// as a cloud run has no one to mark it. The NATS line's keys are in Go's order (sorted).
const KAFKA_STARTED_AT_MS = 1795797401143;
const kafkaCloud =
  '{"type":"ready","topic":"v2"}\n' +
  '{"type":"counts","published":1400,"confirmed":1400,"consumed":1400,"lostMessages":0,"duplicatedMessages":0,' +
  '"undeliveredMessages":0,"reconnects":0,"startedAtMs":1795797401143,' +
  '"receivedPerSecond":[200,200,129,0,471,200,200],"unconfirmedPerSecond":[0,0,0,71,271,0,0]}\n';
const NATS_STARTED_AT_MS = 1795797297528;
const natsCloud =
  '{"stream":"v2","type":"ready"}\n' +
  '{"confirmed":1401,"consumed":1401,"duplicatedMessages":0,"lostMessages":0,"published":1401,' +
  '"receivedPerSecond":[200,200,98,0,502,200,200],"reconnects":0,"startedAtMs":1795797297528,"type":"counts",' +
  '"unconfirmedPerSecond":[0,0,0,102,302,0,0],"undeliveredMessages":0}\n';

describe('the cloud verifier output on the fault step timeline', () => {
  test(
    'counts as printed; the fault and heal placed in seconds after ' +
      'the verifier started; unconfirmed from the second of the fault',
    () => {
      const failover = cloudFailoverResult(classicKilled, { ...fault, appliedAt: at(4.621), healedAt: at(9.5) });
      expect(failover).toEqual({
        fault: {
          action: 'kill',
          node: 'leader',
          nodeName: 'rabbit@10.0.1.12',
          appliedAtSeconds: 4.621,
          healedAtSeconds: 9.5,
        },
        published: 1750,
        confirmed: 1740,
        consumed: 680,
        lostMessages: 1060,
        duplicatedMessages: 0,
        unconfirmedAtFault: 3,
        unavailableSeconds: 7,
        reconnects: 1,
        receivedPerSecond: [30, 160, 172, 158, 160, 0, 0, 0, 0, 0, 0, 0],
      });
    },
  );

  test('log lines before the result line (a JVM warning) are skipped; the last JSON line is the result', () => {
    const output = `WARNING: something the JVM said\n${classicKilled}`;
    expect(parseVerifierOutput(output).lostMessages).toBe(1060);
  });

  test('a fault after the last unconfirmed sample takes the last one', () => {
    // Unconfirmed samples for the first 5 seconds only; the fault at 8 s, inside the 12 s counted.
    const shorter = classicKilled.replace('[0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]', '[0, 0, 0, 0, 7]');
    const counts = cloudVerifierCounts(parseVerifierOutput(shorter), { ...fault, appliedAt: at(8) });
    expect(counts).toMatchObject({ faultAtSeconds: 8, unconfirmedAtFault: 7 });
  });

  test('a fault after the seconds the verifier counted is refused: nothing it measured shows it', () => {
    expect(() => cloudFailoverResult(classicKilled, { ...fault, appliedAt: at(30) })).toThrow(
      'the fault was applied 30 s after the verifier started, after the 12 s it counted, so nothing it measured ' +
        'shows the fault: leave the fault step more time between atSeconds and the end of durationSeconds',
    );
  });

  test('a fault never applied: counts without fault times, and the failover result refuses with the reason', () => {
    expect(cloudVerifierCounts(parseVerifierOutput(classicKilled), fault)).not.toHaveProperty('faultAtSeconds');
    expect(() => cloudFailoverResult(classicKilled, { action: 'kill', node: 'leader' })).toThrow(
      'the kill fault was never applied',
    );
  });

  test('a fault applied before the verifier started is refused: the verifier did not see it', () => {
    expect(() => cloudFailoverResult(classicKilled, { ...fault, appliedAt: at(-2) })).toThrow(
      /applied 2 s before the verifier started/,
    );
  });

  test('a bad applied time names the field', () => {
    expect(() => cloudFailoverResult(classicKilled, { ...fault, appliedAt: 'yesterday' })).toThrow(
      `the fault step's applied time is not an ISO 8601 date: "yesterday"`,
    );
  });

  test('cut short: no result line, the error says so and quotes how the output ended', () => {
    expect(() => parseVerifierOutput('')).toThrow(
      'the verifier printed no result line (it was cut short or failed before its drain); its output was empty',
    );
    expect(() => parseVerifierOutput('rmqbench verifier: ConnectException: Connection refused\n')).toThrow(
      /its output ended with: rmqbench verifier: ConnectException: Connection refused/,
    );
  });

  test('a result line cut in the middle is not valid JSON, named as such', () => {
    expect(() => parseVerifierOutput(classicKilled.slice(0, 80))).toThrow(
      /the verifier's result line is not valid JSON/,
    );
  });

  test('a Kafka counts line after its ready line is the result; undeliveredMessages is carried to the failover', () => {
    const kafkaAt = (seconds: number) => new Date(KAFKA_STARTED_AT_MS + seconds * 1000).toISOString();
    const kafkaFault = { action: 'partition' as const, node: 'leader' as const, nodeName: 'kafka-1' };
    expect(
      cloudFailoverResult(kafkaCloud, { ...kafkaFault, appliedAt: kafkaAt(2.646), healedAt: kafkaAt(4.649) }),
    ).toEqual({
      fault: {
        action: 'partition',
        node: 'leader',
        nodeName: 'kafka-1',
        appliedAtSeconds: 2.646,
        healedAtSeconds: 4.649,
      },
      published: 1400,
      confirmed: 1400,
      consumed: 1400,
      lostMessages: 0,
      duplicatedMessages: 0,
      undeliveredMessages: 0,
      unconfirmedAtFault: 0,
      recoverySeconds: 1.354,
      unavailableSeconds: 1,
      reconnects: 0,
      receivedPerSecond: [200, 200, 129, 0, 471, 200, 200],
    });
  });

  test('a NATS counts line (keys sorted, type in the middle) is read whole, unconfirmed at the fault too', () => {
    const output = parseVerifierOutput(natsCloud.replace('"undeliveredMessages":0', '"undeliveredMessages":12'));
    expect(output).toEqual({
      startedAtMs: NATS_STARTED_AT_MS,
      published: 1401,
      confirmed: 1401,
      consumed: 1401,
      lostMessages: 0,
      duplicatedMessages: 0,
      undeliveredMessages: 12,
      reconnects: 0,
      receivedPerSecond: [200, 200, 98, 0, 502, 200, 200],
      unconfirmedPerSecond: [0, 0, 0, 102, 302, 0, 0],
    });
    const appliedAt = new Date(NATS_STARTED_AT_MS + 3200).toISOString();
    expect(cloudVerifierCounts(output, { ...fault, appliedAt })).toMatchObject({
      faultAtSeconds: 3.2,
      unconfirmedAtFault: 102,
      undeliveredMessages: 12,
    });
  });

  test('undeliveredMessages is left out where the verifier has none (RabbitMQ) or it is not a count', () => {
    expect(parseVerifierOutput(classicKilled)).not.toHaveProperty('undeliveredMessages');
    expect(
      parseVerifierOutput(natsCloud.replace('"undeliveredMessages":0', '"undeliveredMessages":-1')),
    ).not.toHaveProperty('undeliveredMessages');
  });

  test('an error line is the verifier failing, with its message', () => {
    const failed =
      '{"message":"connect to nats://10.0.1.12:4222: nats: no servers available for connection","type":"error"}\n';
    expect(() => parseVerifierOutput(failed)).toThrow(
      'the verifier failed: connect to nats://10.0.1.12:4222: nats: no servers available for connection',
    );
  });

  test('a ready line and no counts line: cut short, named as no counts line rather than a malformed result', () => {
    const readyOnly = '{"type":"ready","topic":"v2"}\nException in thread "main" java.lang.OutOfMemoryError\n';
    expect(() => parseVerifierOutput(readyOnly)).toThrow(
      new RegExp(
        'the verifier printed no counts line, its last was a "ready" line ' +
          '\\(it was cut short or failed before its drain\\)',
      ),
    );
  });

  test('a counts line cut in the middle after the ready line is not valid JSON, named as such', () => {
    expect(() => parseVerifierOutput(kafkaCloud.slice(0, 120))).toThrow(/the verifier's result line is not valid JSON/);
  });

  test.each([
    ['startedAtMs', classicKilled.replace('"startedAtMs":1795454070338,', ''), /no startedAtMs/],
    [
      'confirmed',
      classicKilled.replace('"confirmed":1740', '"confirmed":-1'),
      /no confirmed \(a non-negative integer\), got -1/,
    ],
    ['reconnects', classicKilled.replace('"reconnects":1', '"reconnects":"1"'), /no reconnects/],
    [
      'receivedPerSecond',
      classicKilled.replace('"receivedPerSecond":[30,', '"receivedPerSecond":[null,'),
      /no receivedPerSecond \(a list of non-negative integers\)/,
    ],
    [
      'unconfirmedPerSecond',
      classicKilled.replace(',"unconfirmedPerSecond":[0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]', ''),
      /no unconfirmedPerSecond/,
    ],
    [
      'confirmed > published',
      classicKilled.replace('"published":1750', '"published":17'),
      /inconsistent: confirmed 1740 > published 17/,
    ],
    [
      'lost > confirmed',
      classicKilled.replace('"lostMessages":1060', '"lostMessages":2000'),
      /inconsistent: lostMessages 2000 > confirmed 1740/,
    ],
    ['not an object', '[1,2]\n{oops', /not valid JSON/],
  ])('a malformed result (%s) is refused, naming the problem', (_field, output, error) => {
    expect(() => parseVerifierOutput(output)).toThrow(error);
  });
});
