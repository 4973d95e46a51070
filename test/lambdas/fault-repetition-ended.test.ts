import { GetCommandInvocationCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { applyFault, awsCommandEnded, type AwsFaultEvent, type FaultTarget } from '../../lambdas/fault/aws';
import { buildSchedule } from '../../state-machines/schedule';

/**
 * A fault whose leader cannot be found because the repetition's PerfTest never started (its command failed first: an
 * unreadable secret, a broker that refused it) names that failure, not the missing verifier queue it caused.
 */
describe('InjectFault after the repetition has already failed', () => {
  const plan = {
    name: 'f',
    clusters: [{ name: 'c', nodes: 3, instanceType: 'm5.large', topology: { type: 'quorum' } }],
    workloads: [{ name: 'w', durationSeconds: 30, fault: { action: 'kill', node: 'leader', atSeconds: 10 } }],
  };
  const unfaulted = { ...plan, workloads: [{ name: 'w', durationSeconds: 30 }] };
  const item = buildSchedule({ plan: unfaulted, target: 'local' }, 'run1').clusters[0]!.repetitions[0]!;
  const started = { startedAt: '2026-11-26T10:00:00.000Z', commandId: 'cmd-perftest', instanceId: 'i-loadgen' };
  const event: AwsFaultEvent = { action: 'inject', runId: 'run1', plan, item, launch: { clusterId: 's' }, started };
  const node = { id: 'i-node1', nodeName: 'rabbit@10.0.0.1' };
  const target = (ended: string | undefined): FaultTarget & { scripts: string[] } => {
    const scripts: string[] = [];
    return {
      target: 'aws',
      clusterId: 'stack s',
      scripts,
      nodes: async () => [node],
      // The node answers that no queue exists: PerfTest and the verifier never declared theirs.
      run: async (_node, script) => (scripts.push(script), JSON.stringify({ queues: [], local: {} })),
      repetitionEnded: async () => ended,
    };
  };

  test("the error names the repetition's failed command, and no node is faulted", async () => {
    const failed = target('command cmd-perftest on i-loadgen ended Failed (exit code 1): not authorized');
    await expect(applyFault(failed, event)).rejects.toThrow(
      "no fault was injected: the repetition's PerfTest command had already ended: " +
        'command cmd-perftest on i-loadgen ended Failed (exit code 1): not authorized',
    );
    expect(failed.scripts).toHaveLength(1);
  });

  test('while the command still runs, the missing queue is the error', async () => {
    await expect(applyFault(target(undefined), event)).rejects.toThrow(/queue rmqbench-verifier does not exist/);
  });

  describe("the AWS command's state (real SDK v3 SSM client, answers mocked)", () => {
    const ssm = mockClient(SSMClient);
    afterEach(() => ssm.reset());
    const client = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });

    test('Failed: status, exit code and the end of its stderr', async () => {
      ssm
        .on(GetCommandInvocationCommand, { CommandId: 'cmd-perftest', InstanceId: 'i-loadgen' })
        .resolves({ Status: 'Failed', ResponseCode: 255, StandardErrorContent: `${'x'.repeat(2000)}\nAccessDenied\n` });
      const ended = await awsCommandEnded(client, started);
      expect(ended).toMatch(/^command cmd-perftest on i-loadgen ended Failed \(exit code 255\): x+\nAccessDenied$/);
      expect(ended!.length).toBeLessThan(1100);
    });

    test('in progress or succeeded: undefined; no command id: no call', async () => {
      ssm.on(GetCommandInvocationCommand).resolvesOnce({ Status: 'InProgress' }).resolvesOnce({ Status: 'Success' });
      expect(await awsCommandEnded(client, started)).toBeUndefined();
      expect(await awsCommandEnded(client, started)).toBeUndefined();
      expect(await awsCommandEnded(client, { startedAt: started.startedAt })).toBeUndefined();
      expect(ssm.commandCalls(GetCommandInvocationCommand)).toHaveLength(2);
    });
  });
});
