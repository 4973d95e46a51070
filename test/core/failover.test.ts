import { failoverResult, measureRecovery } from '../../core/failover/failover';

// Received msg/s recorded by the verifier (200 msg/s) on this machine's local 3-node cluster (RabbitMQ 3.10.8),
// test/local/failover.integration.test.ts, leader of the queue SIGKILLed at 7.114 s / 7.115 s:
// a quorum queue dips for one second while a follower takes over; a classic queue on the killed node never comes back.
const quorumLeaderKilled = [170, 200, 200, 200, 200, 200, 191, 89, 200, 200, 200, 200, 190, 160, 200, 200, 160];
const classicLeaderKilled = [170, 200, 200, 180, 190, 200, 190, 30, 0, 0, 0, 0, 0, 0, 0, 0, 0];

describe('recovery time and unavailability from received msg/s', () => {
  test(
    'recorded quorum failover: recovery runs from the fault to the ' +
      'first second back at 90 % of the pre-fault median',
    () => {
      const measure = measureRecovery(quorumLeaderKilled, 7.114);
      expect(measure.preFaultMedian).toBe(200);
      // Second 7 (89 msg/s) is below 180; second 8 (200) is back: 8 - 7.114 s.
      expect(measure.recoverySeconds).toBe(0.886);
      expect(measure.unavailableSeconds).toBe(0);
    },
  );

  test('recorded classic-queue loss: no recovery, every silent second after the fault counts as unavailable', () => {
    const measure = measureRecovery(classicLeaderKilled, 7.115);
    expect(measure.recoverySeconds).toBeUndefined();
    expect(measure.unavailableSeconds).toBe(9);
  });

  test('a silent stretch in the middle: unavailable seconds counted, recovery at the first second back', () => {
    const outage = [64, 201, 199, 200, 202, 198, 200, 201, 199, 200, 120, 0, 0, 0, 95, 410, 260, 201, 199, 200];
    expect(measureRecovery(outage, 10.4)).toEqual({ preFaultMedian: 200, recoverySeconds: 4.6, unavailableSeconds: 3 });
  });

  test(
    'a dip long after the fault is noise, not the fault: ' +
      'recorded mirrored run, a 170 msg/s second 9 s after the fault',
    () => {
      // failover-quorum-vs-mirrored, mirrored #2 (leader killed at 10.14 s; the consumer was on another node).
      const mirrored = [
        170, 200, 190, 201, 190, 189, 200, 200, 200, 192, 218, 194, 197, 199, 200, 200, 200, 190, 200, 170, 200,
      ];
      expect(measureRecovery(mirrored, 10.14)).toEqual({
        preFaultMedian: 200,
        recoverySeconds: 0,
        unavailableSeconds: 0,
      });
    },
  );

  test('a fault the consumer never noticed recovers in 0 s with no unavailable second', () => {
    const steady = [50, 100, 101, 99, 100, 100, 98, 100, 102, 100];
    expect(measureRecovery(steady, 4.2)).toEqual({ preFaultMedian: 100, recoverySeconds: 0, unavailableSeconds: 0 });
  });

  test('a rate that never comes back has no recovery time, and every silent second after the fault counts', () => {
    const lost = [10, 100, 100, 100, 100, 0, 0, 0, 0, 30];
    const measure = measureRecovery(lost, 5);
    expect(measure.recoverySeconds).toBeUndefined();
    expect(measure.unavailableSeconds).toBe(4);
  });

  test('a partial dip below 90 % counts toward recovery but not toward unavailability', () => {
    const dip = [100, 100, 100, 100, 85, 80, 95, 100];
    expect(measureRecovery(dip, 4)).toEqual({ preFaultMedian: 100, recoverySeconds: 2, unavailableSeconds: 0 });
  });

  test('a fault before any whole second, or after the samples, is refused with the reason', () => {
    expect(() => measureRecovery([100, 100], 0.5)).toThrow(/no whole second was recorded before the fault/);
    expect(() => measureRecovery([100, 100], 3)).toThrow(/after the last recorded second \(2 samples\)/);
  });
});

describe('failoverResult: the stored verifier result', () => {
  const counts = {
    published: 3160,
    confirmed: 3160,
    consumed: 3160,
    lostMessages: 0,
    duplicatedMessages: 0,
    reconnects: 1,
    receivedPerSecond: quorumLeaderKilled,
  };

  test('carries the counts under their report names, the fault as applied and the measured recovery', () => {
    const result = failoverResult(
      { ...counts, unconfirmedAtFault: 3, faultAtSeconds: 7.114 },
      { action: 'kill', node: 'leader', nodeName: 'rmqbench1@localhost' },
    );
    expect(result).toMatchObject({
      fault: { action: 'kill', node: 'leader', nodeName: 'rmqbench1@localhost', appliedAtSeconds: 7.114 },
      lostMessages: 0,
      duplicatedMessages: 0,
      unconfirmedAtFault: 3,
      recoverySeconds: 0.886,
      unavailableSeconds: 0,
      reconnects: 1,
    });
  });

  test(
    'counts without an applied fault are refused with the ' + 'reason, not stored as a failover that did not happen',
    () => {
      expect(() => failoverResult(counts, { action: 'stop', node: 1 })).toThrow(/the stop fault was never applied/);
    },
  );
});
