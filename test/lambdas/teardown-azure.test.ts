import {
  checkGroupTeardown,
  startGroupTeardown,
  TEARDOWN_DEADLINE_MINUTES,
} from '../../lambdas/teardown-cluster/logic';
import { withFakeArm } from './fake-arm-clients';

/**
 * Issue 22, item 7 on azure, with the real @azure/arm-resources client against the fake ARM endpoint: TeardownCluster
 * starts the resource group's deletion, a deletion ARM blocks part-way (ResourceGroupDeletionBlocked, the group's state
 * rolled back) is started again by CheckTeardown, the check is done once the group is gone, and past the deadline the
 * error names the group and why its deletion failed.
 */
const NOW = new Date('2026-11-25T10:00:00Z');
const GROUP = 'rmqbench-az-c1';
const put = (arm: { groups: Map<string, { location: string; tags: Record<string, string> }> }) =>
  arm.groups.set(GROUP, { location: 'westeurope', tags: { 'rmqbench:run-id': 'az' } });
const deletes = (arm: { requests: { method: string; path: string }[] }) =>
  arm.requests.filter((request) => request.method === 'DELETE' && request.path.endsWith(`/${GROUP}`)).length;

describe('TeardownCluster and CheckTeardown on azure', () => {
  test('a blocked deletion is started again, and the check is done once the group is gone', async () => {
    await withFakeArm({ operationPolls: 0, failGroupDeletions: 1 }, async (clients, arm) => {
      put(arm);
      const started = await startGroupTeardown(clients, GROUP, 10_000, NOW);
      expect(started).toMatchObject({
        done: false,
        deleteBy: new Date(NOW.getTime() + TEARDOWN_DEADLINE_MINUTES.azure * 60_000).toISOString(),
      });
      expect(started.lastError).toMatch(
        /Deletion of resource group 'rmqbench-az-c1' failed as resources with identifiers/,
      );
      // The group is back to Succeeded: deleted again, not waited for.
      await expect(checkGroupTeardown(clients, GROUP, started.deleteBy, NOW, started.lastError)).resolves.toEqual({
        done: false,
      });
      expect(deletes(arm)).toBe(2);
      // While ARM deletes it (Deleting), no third deletion. (The client follows the second deletion by itself: the
      // group is put back in the Deleting state to look at the check alone.)
      put(arm);
      arm.deletingGroups.add(GROUP);
      await expect(checkGroupTeardown(clients, GROUP, started.deleteBy, NOW)).resolves.toEqual({ done: false });
      expect(deletes(arm)).toBe(2);
      arm.groups.delete(GROUP);
      await expect(checkGroupTeardown(clients, GROUP, started.deleteBy, NOW)).resolves.toEqual({ done: true });
    });
  });

  test(
    'past the deadline the check fails with TeardownIncomplete ' + 'naming the group and why its deletion failed',
    async () => {
      await withFakeArm({ operationPolls: 0, failGroupDeletions: 5 }, async (clients, arm) => {
        put(arm);
        const started = await startGroupTeardown(clients, GROUP, 10_000, NOW);
        const late = new Date(Date.parse(started.deleteBy) + 1000);
        await expect(
          checkGroupTeardown(clients, GROUP, started.deleteBy, late, started.lastError),
        ).rejects.toMatchObject({
          name: 'TeardownIncomplete',
          message: expect.stringMatching(
            new RegExp(
              String.raw`^resource group rmqbench-az-c1 was not deleted by .* \(provisioning state Succeeded\); its ` +
                String.raw`deletion failed: Deletion of resource group 'rmqbench-az-c1' failed`,
            ),
          ),
        });
      });
    },
  );
});
