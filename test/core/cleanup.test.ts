import { decideCleanup, type CleanupCandidate } from '../../core/cloud/cleanup';

const NOW = new Date('2026-11-23T12:00:00Z');
const stack = (overrides: Partial<CleanupCandidate> = {}): CleanupCandidate => ({
  kind: 'stack',
  name: 'rmqbench-r1-c1',
  runId: 'r1',
  expiresAt: '2026-11-23T20:00:00Z',
  createdAt: '2026-11-23T09:00:00Z',
  state: 'CREATE_COMPLETE',
  beingDeleted: false,
  ...overrides,
});

describe('the clean-up rule shared by the sweeper and rmqbench cleanup', () => {
  test(
    'an expired cluster is deleted unless its run is RUNNING; ' +
      "a finished run's cluster is deleted before its expiry",
    () => {
      for (const runState of [undefined, 'not-recorded', 'SUCCEEDED'] as const) {
        expect(decideCleanup(stack({ expiresAt: '2026-11-23T11:00:00Z' }), runState, NOW)).toMatchObject({
          delete: true,
          reason: 'expired at 2026-11-23T11:00:00Z',
        });
      }
      for (const runState of ['SUCCEEDED', 'FAILED', 'PARTIAL'] as const) {
        expect(decideCleanup(stack(), runState, NOW)).toMatchObject({
          delete: true,
          reason: `its run r1 finished ${runState}`,
          ageHours: 3,
        });
      }
    },
  );

  test(
    'issue 22 item 4: an expired cluster of a RUNNING run is kept ' +
      'until its execution must have ended (expiry + 24 h), then deleted',
    () => {
      const expired = stack({ expiresAt: '2026-11-23T11:00:00Z' });
      expect(decideCleanup(expired, 'RUNNING', NOW)).toMatchObject({
        delete: false,
        reason:
          'expired at 2026-11-23T11:00:00Z, but its run r1 is RUNNING: ' +
          'kept until 2026-11-24T11:00:00.000Z, when its execution must have ended',
      });
      expect(decideCleanup(expired, 'RUNNING', new Date('2026-11-24T11:00:01Z'))).toMatchObject({
        delete: true,
        reason: 'expired at 2026-11-23T11:00:00Z',
      });
    },
  );

  test(
    'kept: a running or unrecorded run before its expiry, ' +
      'the sweeper (run not read) before expiry, a deletion under way, no expiry tag',
    () => {
      expect(decideCleanup(stack(), 'RUNNING', NOW)).toMatchObject({
        delete: false,
        reason: 'its run r1 is RUNNING; expires at 2026-11-23T20:00:00Z',
      });
      expect(decideCleanup(stack(), 'not-recorded', NOW)).toMatchObject({
        delete: false,
        reason: expect.stringContaining('is not in the results table; kept until it expires'),
      });
      expect(decideCleanup(stack(), undefined, NOW)).toMatchObject({
        delete: false,
        reason: 'expires at 2026-11-23T20:00:00Z',
      });
      expect(
        decideCleanup(
          stack({ expiresAt: '2026-11-23T11:00:00Z', beingDeleted: true, state: 'DELETE_IN_PROGRESS' }),
          'SUCCEEDED',
          NOW,
        ),
      ).toMatchObject({ delete: false, reason: 'already being deleted (DELETE_IN_PROGRESS)' });
      expect(decideCleanup(stack({ expiresAt: undefined }), 'SUCCEEDED', NOW)).toMatchObject({
        delete: false,
        reason: expect.stringContaining('no valid rmqbench:expires-at tag'),
      });
      expect(decideCleanup(stack({ expiresAt: 'tomorrow' }), 'SUCCEEDED', NOW).delete).toBe(false);
    },
  );
});
