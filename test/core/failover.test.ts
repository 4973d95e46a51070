import { measureRecovery } from '../../core/failover';

// Received msg/s in the shape of a verifier run with the leader of a quorum queue killed at 10.4 s (hand-written):
// a warm-up second, steady ~200 msg/s, three silent seconds while the followers elect a leader and the
// client reconnects, the backlog drained above the rate, then steady again.
const quorumLeaderKilled = [64, 201, 199, 200, 202, 198, 200, 201, 199, 200, 120, 0, 0, 0, 95, 410, 260, 201, 199, 200];

describe('recovery time and unavailability from received msg/s', () => {
  test('recorded failover: recovery runs from the fault to the first second back at 90 % of the pre-fault median, zero seconds count as unavailable', () => {
    const measure = measureRecovery(quorumLeaderKilled, 10.4);
    expect(measure.preFaultMedian).toBe(200);
    // Second 15 (410 msg/s) is the first at or above 180 after the drop in second 10.
    expect(measure.recoverySeconds).toBe(4.6);
    expect(measure.unavailableSeconds).toBe(3);
  });

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
