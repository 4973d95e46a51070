import { CloudFormationClient, ListStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { deleteGroups } from '../../lambdas/failure-handler/logic';
import { AzureClients, expiredResourceGroups, resourceGroupsOfRun } from '../../lambdas/shared/azure-cluster';
import { sweepExpiredStacks } from '../../lambdas/sweeper/logic';
import type { FakeArm } from './fake-arm';
import { startFakeArm } from './fake-arm-clients';

const NOW = new Date('2025-01-01T12:00:00Z');
// CloudFormation has no local engine here: its client is replaced; ARM is the fake endpoint over HTTPS.
const cfnMock = mockClient(CloudFormationClient);

let arm: FakeArm;
let clients: AzureClients;
beforeEach(async () => {
  ({ arm, clients } = await startFakeArm({ operationPolls: 1 }));
  const group = (runId: string, expiresAt: string) => ({
    location: 'westeurope',
    tags: { 'rmqbench:run-id': runId, 'rmqbench:expires-at': expiresAt },
  });
  arm.groups.set('rmqbench-run-1-c1', group('run-1', '2025-01-01T11:00:00.000Z'));
  arm.groups.set('rmqbench-run-1-c2', group('run-1', '2025-01-01T13:00:00.000Z'));
  arm.groups.set('rmqbench-run-2-c1', group('run-2', '2025-01-01T13:00:00.000Z'));
  arm.groups.set('other-team-rg', group('run-1', '2025-01-01T11:00:00.000Z'));
  arm.groups.set('untagged-rg', { location: 'westeurope', tags: {} });
});
afterEach(async () => {
  cfnMock.reset();
  await arm.stop();
});

describe('Azure safety nets against a fake ARM endpoint', () => {
  test(
    "the failure handler finds a run's resource groups by the " + 'run-id tag filter ARM applies, and deletes them',
    async () => {
      const groups = await resourceGroupsOfRun(clients, 'run-1');
      expect(groups.sort()).toEqual(['other-team-rg', 'rmqbench-run-1-c1', 'rmqbench-run-1-c2']);
      const list = arm.requests.find((request) => request.method === 'GET' && /\/resourcegroups$/i.test(request.path))!;
      expect(list.path).toBe('/subscriptions/sub-1/resourcegroups');
      await expect(deleteGroups(clients, ['rmqbench-run-1-c1', 'rmqbench-run-1-c2'], 10_000, 10)).resolves.toEqual([
        'rmqbench-run-1-c1',
        'rmqbench-run-1-c2',
      ]);
      expect([...arm.groups.keys()].sort()).toEqual(['other-team-rg', 'rmqbench-run-2-c1', 'untagged-rg']);
    },
  );

  test(
    'the sweeper deletes only rmqbench- resource groups ' + 'whose expiry tag has passed, next to the expired stacks',
    async () => {
      await expect(expiredResourceGroups(clients, 'rmqbench-', NOW)).resolves.toEqual(['rmqbench-run-1-c1']);
      cfnMock.on(ListStacksCommand).resolves({ StackSummaries: [] });
      await expect(
        sweepExpiredStacks(new CloudFormationClient({}), 'arn:role', 'rmqbench-', NOW, clients, () => undefined),
      ).resolves.toEqual({ deleted: [], deleteFailedRetried: [], deletedResourceGroups: ['rmqbench-run-1-c1'] });
      expect(arm.groups.has('rmqbench-run-1-c1')).toBe(false);
      expect(arm.groups.has('rmqbench-run-1-c2')).toBe(true);
      expect(arm.requests.filter((request) => request.method === 'DELETE').map((request) => request.path)).toEqual([
        '/subscriptions/sub-1/resourcegroups/rmqbench-run-1-c1',
      ]);
    },
  );

  test('without Azure the sweeper reports stacks only and calls no ARM endpoint', async () => {
    cfnMock.on(ListStacksCommand).resolves({ StackSummaries: [] });
    await expect(
      sweepExpiredStacks(new CloudFormationClient({}), 'arn:role', 'rmqbench-', NOW, undefined, () => undefined),
    ).resolves.toEqual({ deleted: [], deleteFailedRetried: [] });
    expect(arm.requests).toEqual([]);
  });
});
