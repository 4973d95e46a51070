import { SendCommandCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { LOST_MESSAGE_VERIFIER_CLASS } from '../../lambdas/start-repetition/lost-message-verifier-java';
import type { Started } from '../../lambdas/check-repetition/logic';
import { startAwsRabbitMqRepetition } from '../../lambdas/start-repetition/aws-generators';
import { SHARED_START_DELAY_SECONDS, sharedStartDelaySeconds } from '../../lambdas/start-repetition/generators';
import { PERF_TEST_READY_WAIT_SECONDS, perfTestScript, rawPrefix } from '../../lambdas/start-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';

/**
 * StartRepetition on AWS for a RabbitMQ cluster (lambdas/start-repetition/aws-generators.ts) against the SSM client
 * mock the other AWS tests use: what each load generator is sent, and that one generator is sent what it was before
 * issue 27.
 */
const ssmMock = mockClient(SSMClient);
const ssm = new SSMClient({ region: 'eu-west-1' });
afterEach(() => ssmMock.reset());

const NOW = new Date('2025-01-01T00:00:00.000Z');
const SHARED_START_MS = NOW.getTime() + 20_000;
const fault = { action: 'kill', node: 'leader', atSeconds: 5, healAtSeconds: 8 };
const planWith = (loadGenerators: number) => ({
  name: 'lg',
  clusters: [{ name: 'q', nodes: 3, instanceType: 'c5.xlarge', topology: { type: 'quorum' }, loadGenerators }],
  workloads: [{ name: 'w', producers: 4, consumers: 2, queues: 2, durationSeconds: 30, fault }],
});
const eventFor = (loadGenerators: number, outputs: Record<string, string>) => {
  const plan = planWith(loadGenerators);
  const item = buildSchedule({ plan, target: 'aws', runId: 'run-lg' }, 'exec').clusters[0]!.repetitions[0]!;
  return {
    runId: 'run-lg',
    plan,
    item,
    readiness: {
      outputs: {
        ClusterAmqpEndpoint1A2B: 'amqp://nlb:5672',
        ClusterManagementUrl3C4D: 'http://nlb:15672',
        ClusterAdminSecretArn5E6F: 'arn:aws:secretsmanager:eu-west-1:1:secret:admin',
        ...outputs,
      },
    },
  };
};
const sent = () =>
  ssmMock.commandCalls(SendCommandCommand).map((call) => {
    const input = call.args[0].input;
    return { instanceIds: input.InstanceIds, script: input.Parameters!.commands![0]!, input };
  });
// The run script quotes every PerfTest argument (lambdas/start-repetition/logic.ts).
const argsAfter = (script: string, flag: string) => script.match(new RegExp(`'${flag}' '([^']*)'`))?.[1];

describe('StartRepetition on AWS with several load generators (issue 27)', () => {
  test(
    'two generators: two SendCommands, each with its own share and generator-<i>/ keys, both waiting for the ' +
      "shared start 20 s ahead; the verifier and the broker sampler only in generator 0's",
    async () => {
      ssmMock
        .on(SendCommandCommand)
        .resolvesOnce({ Command: { CommandId: 'cmd-0' } })
        .resolvesOnce({ Command: { CommandId: 'cmd-1' } });
      const event = eventFor(2, {
        LoadGeneratorInstanceIds9A8B: 'i-0aaa,i-0bbb',
        LoadGeneratorInstanceId7C6D: 'i-0aaa',
      });
      // The state CheckRepetition reads (lambdas/check-repetition/logic.ts).
      const started: Started = await startAwsRabbitMqRepetition(ssm, 'raw', event, { until: NOW }, () => NOW);

      const commands = sent();
      expect(commands.map((command) => command.instanceIds)).toEqual([['i-0aaa'], ['i-0bbb']]);
      const prefix = `s3://raw/${rawPrefix('run-lg', event.item)}`;
      for (const [index, { script, input }] of commands.entries()) {
        // Its own share: 4 producers, 2 consumers and 2 queues split in two (core/loadgen/workload-split.ts).
        expect(argsAfter(script, '--producers')).toBe('2');
        expect(argsAfter(script, '--consumers')).toBe('1');
        expect(argsAfter(script, '--queue')).toBe(`perf-test-${index + 1}`);
        expect(script).toContain(`WAIT_MS=$(( ${SHARED_START_MS} - $(date +%s%3N) ))`);
        for (const file of ['stdout.txt', 'perftest.csv', 'started-at.txt'])
          expect(script).toContain(`'${prefix}/generator-${index}/${file}'`);
        expect(script).not.toContain(`'${prefix}/generator-${1 - index}/`);
        expect(script).not.toContain(`'${prefix}/stdout.txt'`);
        // The command's own timeout covers the waits for the boot's PerfTest and the shared start as well as the run.
        expect(input.Parameters!.executionTimeout).toEqual([String(30 + 120 + PERF_TEST_READY_WAIT_SECONDS + 20)]);
      }
      const [first, second] = commands.map((command) => command.script) as [string, string];
      expect(first).toContain(LOST_MESSAGE_VERIFIER_CLASS);
      expect(second).not.toContain(LOST_MESSAGE_VERIFIER_CLASS);
      expect(first).toContain(`'${prefix}/broker-metrics.jsonl'`);
      expect(second).not.toContain('broker-metrics');

      expect(started).toMatchObject({
        commandId: 'cmd-0',
        instanceId: 'i-0aaa',
        startedAt: new Date(SHARED_START_MS).toISOString(),
        generators: [
          { commandId: 'cmd-0', instanceId: 'i-0aaa' },
          { commandId: 'cmd-1', instanceId: 'i-0bbb' },
        ],
      });
      expect(started.generators![1]!.perfTestArgs).toEqual(expect.arrayContaining(['--queue', 'perf-test-2']));
      expect(started.loadGeneratorSplit).toEqual(expect.any(String));
      expect(started.loadGeneratorSplit).not.toBe('');
    },
  );

  test('a stack listing fewer instances than the plan asks for is refused before anything is sent', async () => {
    const event = eventFor(2, { LoadGeneratorInstanceIds9A8B: 'i-0aaa' });
    await expect(startAwsRabbitMqRepetition(ssm, 'raw', event, { until: NOW }, () => NOW)).rejects.toThrow(
      /lists 1 load generator\(s\) \(its InstanceIds output\) but the plan cluster has loadGenerators: 2/,
    );
    expect(sent()).toHaveLength(0);
  });

  test(
    'one generator: exactly the command the handler sent before issue 27 (the whole workload, no shared start, ' +
      'the keys directly under the repetition) and no generators in the state',
    async () => {
      ssmMock.on(SendCommandCommand).resolves({ Command: { CommandId: 'cmd-only' } });
      const event = eventFor(1, { LoadGeneratorInstanceIds9A8B: 'i-0aaa', LoadGeneratorInstanceId7C6D: 'i-0aaa' });
      const started = await startAwsRabbitMqRepetition(ssm, 'raw', event, { until: NOW }, () => NOW);

      // The pre-issue-27 handler: perfTestScript without a generator, to output('InstanceId'), duration + 120 s.
      const before = perfTestScript({
        plan: event.plan,
        runId: 'run-lg',
        item: event.item,
        endpoint: 'amqp://nlb:5672',
        managementUrl: 'http://nlb:15672',
        secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:admin',
        bucket: 'raw',
      });
      expect(sent().map((command) => command.input)).toEqual([
        {
          InstanceIds: ['i-0aaa'],
          DocumentName: 'AWS-RunShellScript',
          Parameters: {
            commands: [before.script],
            executionTimeout: [String(30 + 120 + PERF_TEST_READY_WAIT_SECONDS)],
          },
          TimeoutSeconds: 60,
        },
      ]);
      const script = before.script;
      expect(argsAfter(script, '--producers')).toBe('4');
      expect(script).not.toContain('WAIT_MS');
      expect(script).not.toContain('generator-');
      expect(script).toContain(`'s3://raw/${rawPrefix('run-lg', event.item)}/stdout.txt'`);
      expect(started).not.toHaveProperty('generators');
      expect(started).toMatchObject({ commandId: 'cmd-only', instanceId: 'i-0aaa', startedAt: NOW.toISOString() });
    },
  );

  test('the shared start delay: 20 s, or a positive RMQBENCH_SHARED_START_DELAY_SECONDS (the twin sets 8)', () => {
    expect(sharedStartDelaySeconds({})).toBe(SHARED_START_DELAY_SECONDS);
    expect(SHARED_START_DELAY_SECONDS).toBe(20);
    expect(sharedStartDelaySeconds({ RMQBENCH_SHARED_START_DELAY_SECONDS: '8' })).toBe(8);
    expect(sharedStartDelaySeconds({ RMQBENCH_SHARED_START_DELAY_SECONDS: '0' })).toBe(20);
    expect(sharedStartDelaySeconds({ RMQBENCH_SHARED_START_DELAY_SECONDS: 'soon' })).toBe(20);
  });
});
