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
    const counts = cloudVerifierCounts(parseVerifierOutput(classicKilled.replace('0, 0]}', '0, 7]}')), {
      ...fault,
      appliedAt: at(30),
    });
    expect(counts).toMatchObject({ faultAtSeconds: 30, unconfirmedAtFault: 7 });
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
