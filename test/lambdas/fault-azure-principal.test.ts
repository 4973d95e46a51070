/**
 * The Azure fault step's own service principal (issue 11: fault permissions scoped to the run's own VMs). With
 * FAULT_AZURE_CREDENTIALS_SECRET_ARN set, the fault step's ARM clients come from that secret alone (read through the
 * real Secrets Manager client from a local endpoint that authorizes like IAM), so every ARM call carries the fault
 * principal's token (the fake ARM endpoint records each request's Authorization header and here refuses any other
 * token); without it, the controller's principal as before. The run's deployment carries faultPrincipalId, for which
 * bicep/main.bicep makes the Virtual Machine Contributor assignment on the run's resource group; until that assignment
 * takes effect ARM answers AuthorizationFailed, which the step waits out until its deadline.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { TokenCredential } from '@azure/core-auth';
import { queueLeadersScript } from '../../core/failover/cloud-fault';
import { azureClusterNodes, azureFaultTarget } from '../../lambdas/fault/azure';
import { azureFaultClients } from '../../lambdas/fault/azure-fault-clients';
import { azureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { buildSchedule } from '../../state-machines/schedule';
import { startFakeAws, type FakeAws } from './fake-aws-endpoint';
import { FakeArm, type FakeArmOptions } from './fake-arm';
import { fakeArmClients, fakeClusterConfig } from './fake-arm-clients';

const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
const CONTROLLER_SECRET = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:rmqbench-azure-sp-AbCdEf`;
const FAULT_SECRET = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:rmqbench-azure-fault-sp-GhIjKl`;
const FAULT_PRINCIPAL_ID = '11111111-2222-3333-4444-555555555555';
const principal = (clientId: string) =>
  JSON.stringify({ tenantId: 'tenant-1', clientId, clientSecret: `secret-of-${clientId}`, subscriptionId: 'sub-1' });

const plan = {
  name: 'azure-fault',
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType: 'Standard_F4s_v2' }],
  workloads: [{ name: 'kill', durationSeconds: 60, fault: { action: 'kill', node: 'leader', atSeconds: 10 } }],
};
const cluster = buildSchedule({ plan, runId: 'run-1', target: 'local' }, 'exec').clusters[0]!;
/** A token per service principal, so that the fake ARM endpoint can tell whose call it is (no Entra ID here). */
const credentialFor = (_tenantId: string, clientId: string): TokenCredential => ({
  getToken: async () => ({ token: `token-of-${clientId}`, expiresOnTimestamp: Date.now() + 3_600_000 }),
});

describe('the Azure fault step runs as the fault-only service principal when one is configured', () => {
  let aws: FakeAws;
  let arm: FakeArm;
  let secrets: SecretsManagerClient;
  const startArm = async (options: FakeArmOptions) => {
    arm = new FakeArm({ operationPolls: 1, runCommandPolls: 1, ...options });
    await arm.start();
    // The launch as the controller would make it (its own token), then the run's two node VMs and the load generator.
    await launchResourceGroup(fakeArmClients(arm), fakeClusterConfig(), 'run-1', cluster, new Date());
    arm.vms.set(cluster.clusterId, [
      { name: 'rmqbench-loadgen', computerName: 'rmqbench-loadgen', timeCreated: '2025-01-01T00:00:00Z' },
      { name: 'nodes_a1', computerName: 'RMQBENCHN000001', timeCreated: '2025-01-01T00:01:01Z', scaleSet: 'nodes' },
      { name: 'nodes_b2', computerName: 'RMQBENCHN000002', timeCreated: '2025-01-01T00:01:02Z', scaleSet: 'nodes' },
    ]);
    arm.requests.length = 0;
  };
  const connect = (credential: TokenCredential, subscriptionId: string) =>
    azureClients(credential, subscriptionId, { endpoint: arm.endpoint, tlsOptions: { ca: arm.ca } });

  beforeEach(async () => {
    aws = await startFakeAws({
      statements: [
        { Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: [CONTROLLER_SECRET, FAULT_SECRET] },
      ],
      secrets: { [CONTROLLER_SECRET]: principal('controller-client'), [FAULT_SECRET]: principal('fault-client') },
      region: REGION,
      account: ACCOUNT,
    });
    secrets = new SecretsManagerClient({
      endpoint: aws.endpoint,
      region: REGION,
      credentials: { accessKeyId: 'fake', secretAccessKey: 'fake' },
    });
  });
  afterEach(async () => {
    secrets.destroy();
    await aws.stop();
    await arm?.stop();
  });

  test(
    'with FAULT_AZURE_CREDENTIALS_SECRET_ARN it reads that secret only, ' +
      "and every ARM call of the step carries the fault principal's token",
    async () => {
      // ARM refuses every token but the fault principal's: the step succeeds only if it never uses the controller's.
      await startArm({
        refuseAuthorization: (_method, path, authorization) =>
          path.includes('/providers/Microsoft.Compute/') && authorization !== 'Bearer token-of-fault-client',
        runCommandOutcome: () => ({ executionState: 'Succeeded', exitCode: 0, output: 'rmqbench: done', error: '' }),
      });
      const { clients, principal: runsAs } = await azureFaultClients({
        secrets,
        env: { AZURE_CREDENTIALS_SECRET_ARN: CONTROLLER_SECRET, FAULT_AZURE_CREDENTIALS_SECRET_ARN: FAULT_SECRET },
        connect,
        credentialFor,
      });
      expect(runsAs).toBe('fault');
      expect(aws.calls).toEqual([{ action: 'secretsmanager:GetSecretValue', resource: FAULT_SECRET, allowed: true }]);
      const target = azureFaultTarget(clients, cluster.clusterId, {
        deadline: new Date(Date.now() + 30_000),
        pollMs: 10,
      });
      expect(await target.nodes('rabbitmq')).toEqual([
        { id: 'nodes_a1', nodeName: 'rabbit@RMQBENCHN000001' },
        { id: 'nodes_b2', nodeName: 'rabbit@RMQBENCHN000002' },
      ]);
      expect(await target.run({ id: 'nodes_b2', nodeName: 'rabbit@RMQBENCHN000002' }, queueLeadersScript())).toBe(
        'rmqbench: done',
      );
      expect(arm.requests.length).toBeGreaterThan(3);
      expect(new Set(arm.requests.map((request) => request.authorization))).toEqual(
        new Set(['Bearer token-of-fault-client']),
      );
    },
  );

  test("without it, the controller's principal as before (its secret, its token)", async () => {
    await startArm({});
    const { clients, principal: runsAs } = await azureFaultClients({
      secrets,
      env: { AZURE_CREDENTIALS_SECRET_ARN: CONTROLLER_SECRET },
      connect,
      credentialFor,
    });
    expect(runsAs).toBe('controller');
    expect(aws.calls.map((call) => call.resource)).toEqual([CONTROLLER_SECRET]);
    await azureClusterNodes(clients, cluster.clusterId);
    expect(new Set(arm.requests.map((request) => request.authorization))).toEqual(
      new Set(['Bearer token-of-controller-client']),
    );
  });

  test('with neither variable, the error names both', async () => {
    await expect(azureFaultClients({ secrets, env: {}, connect, credentialFor })).rejects.toThrow(
      /needs AZURE_CREDENTIALS_SECRET_ARN \(or FAULT_AZURE_CREDENTIALS_SECRET_ARN\)/,
    );
  });

  test(
    'AuthorizationFailed while the role assignment takes effect: ' +
      'listing and the Run Command are tried again until ARM allows them',
    async () => {
      let refusals = 4;
      await startArm({
        refuseAuthorization: (_method, path) => path.includes('/virtualMachines') && refusals-- > 0,
        runCommandOutcome: () => ({ executionState: 'Succeeded', exitCode: 0, output: 'rmqbench: done', error: '' }),
      });
      const { clients } = await azureFaultClients({
        secrets,
        env: { AZURE_CREDENTIALS_SECRET_ARN: CONTROLLER_SECRET, FAULT_AZURE_CREDENTIALS_SECRET_ARN: FAULT_SECRET },
        connect,
        credentialFor,
      });
      const timing = { deadline: new Date(Date.now() + 30_000), pollMs: 10, authorizationRetryMs: 10 };
      const target = azureFaultTarget(clients, cluster.clusterId, timing);
      expect((await target.nodes('rabbitmq')).map((node) => node.id)).toEqual(['nodes_a1', 'nodes_b2']);
      expect(await target.run({ id: 'nodes_a1', nodeName: 'rabbit@RMQBENCHN000001' }, queueLeadersScript())).toBe(
        'rmqbench: done',
      );
      expect(refusals).toBeLessThan(0);
      // Each refused call was made again: 4 refusals, then the list, the VM read and the Run Command PUT got through.
      expect(arm.requests.filter((request) => request.path.includes('/virtualMachines')).length).toBeGreaterThanOrEqual(
        4 + 3,
      );
    },
  );

  test(
    "still refused at the step's deadline: a clear error naming the resource group, " +
      'the refusals and faultPrincipalId; other errors are not retried',
    async () => {
      await startArm({
        refuseAuthorization: (_method, path) =>
          path
            .toLowerCase()
            .includes(`/resourcegroups/${cluster.clusterId}/providers/microsoft.compute/virtualmachines`),
      });
      const { clients } = await azureFaultClients({
        secrets,
        env: { AZURE_CREDENTIALS_SECRET_ARN: CONTROLLER_SECRET, FAULT_AZURE_CREDENTIALS_SECRET_ARN: FAULT_SECRET },
        connect,
        credentialFor,
      });
      const target = azureFaultTarget(clients, cluster.clusterId, {
        deadline: new Date(Date.now() + 300),
        pollMs: 10,
        authorizationRetryMs: 50,
      });
      await expect(target.nodes('rabbitmq')).rejects.toThrow(
        new RegExp(
          `the fault step's Azure service principal may not list the VMs of resource ` +
            `group ${cluster.clusterId}: ARM refused it \\d+ time\\(s\\) with AuthorizationFailed ` +
            `.*faultPrincipalId \\(its object id, not its client id\\); a new assignment can take up to 10 minutes`,
        ),
      );
      // A resource group that does not exist is a 404, not a refusal: it fails at once, after one call.
      const before = arm.requests.length;
      await expect(
        azureFaultTarget(clients, 'rmqbench-no-such-group', {
          deadline: new Date(Date.now() + 30_000),
          pollMs: 10,
          authorizationRetryMs: 10,
        }).nodes('rabbitmq'),
      ).rejects.toThrow(/404/);
      expect(arm.requests.length - before).toBe(1);
    },
  );

  test(
    "the launch passes faultPrincipalId to the run's " +
      'deployment (AZURE_PARAMETERS_JSON as the construct writes it)',
    async () => {
      await startArm({});
      const shared = JSON.parse(
        JSON.stringify({ rabbitmqAdminUsername: 'admin', faultPrincipalId: FAULT_PRINCIPAL_ID }),
      ) as Record<string, unknown>;
      await launchResourceGroup(
        fakeArmClients(arm),
        { ...fakeClusterConfig(), parameters: shared },
        'run-2',
        { ...cluster, clusterId: 'rmqbench-run-2-c1' },
        new Date(),
      );
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      expect(
        (put.body as { properties: { parameters: Record<string, { value: unknown }> } }).properties.parameters
          .faultPrincipalId,
      ).toEqual({ value: FAULT_PRINCIPAL_ID });
    },
  );
});
