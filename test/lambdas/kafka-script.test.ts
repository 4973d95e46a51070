import { GetCommandInvocationCommand, SendCommandCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AWS_CLI_SETTINGS } from '../../core/cloud/aws-cli-environment';
import { mockClient } from 'aws-sdk-client-mock';
import { checkedBootstrapServers, kafkaSmokeTestScript } from '../../lambdas/shared/kafka-load-generator';
import { kafkaSmokeTest } from '../../lambdas/smoke-test/load-generator-smoke';
import {
  awsKafkaRepetitionScript,
  kafkaRepetitionSeconds,
  scenarioOf,
} from '../../lambdas/start-repetition/kafka-script';
import { BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import { buildSchedule } from '../../state-machines/schedule';

// The scripts run for real in kafka-script.integration.test.ts and the SDK calls against moto in
// kafka-launch-moto.integration.test.ts; moto answers every command Success, so the failure paths of the smoke test's
// polling are driven here with a replaced client (aws-sdk-client-mock).
const ssmMock = mockClient(SSMClient);
afterEach(() => ssmMock.reset());

const plan = {
  name: 'kafka-unit',
  clusters: [{ name: 'k', broker: 'kafka', nodes: 3, instanceType: 'c5.xlarge' }],
  workloads: [
    { name: 'w', producers: 2, consumers: 2, messageSizeBytes: 100, messageCount: 1000, durationSeconds: 30 },
  ],
};
const item = buildSchedule({ plan, target: 'aws', runId: 'run-u' }, 'exec').clusters[0]!.repetitions[0]!;
const BOOTSTRAP = 'kafka-1.z.rmqbench.internal:9092,kafka-2.z.rmqbench.internal:9092,kafka-3.z.rmqbench.internal:9092';

describe('Kafka scripts for the AWS load generator', () => {
  test(
    'the bootstrap servers written into a script must be host:port pairs: ' +
      'anything a shell would interpret is refused',
    () => {
      expect(checkedBootstrapServers(BOOTSTRAP)).toBe(BOOTSTRAP);
      for (const bad of [
        '',
        'kafka-1:9092;reboot',
        'kafka-1:9092 kafka-2:9092',
        '$(id):9092',
        "kafka-1:9092'",
        'kafka-1',
      ]) {
        expect(() => checkedBootstrapServers(bad)).toThrow(
          `the cluster stack's BootstrapServers output must be host:port pairs separated by commas, got "${bad}"`,
        );
      }
      expect(() =>
        awsKafkaRepetitionScript({ plan, runId: 'run-u', item, bootstrapServers: 'x:1;reboot', bucket: 'b' }),
      ).toThrow(/BootstrapServers output must be host:port pairs/);
      expect(() => kafkaSmokeTestScript({ bootstrapServers: 'x:1|sh', brokers: 3 })).toThrow(
        /BootstrapServers output must be host:port pairs/,
      );
    },
  );

  test(
    'one consumer and one producer command per client of the workload, every file ' +
      "uploaded, and a time limit that covers the tools' wait, join, run and drain",
    () => {
      const { script, files, timeoutSeconds } = awsKafkaRepetitionScript({
        plan,
        runId: 'run-u',
        item,
        bootstrapServers: BOOTSTRAP,
        bucket: 'raw',
      });
      expect(files).toEqual({
        producers: ['producer-1.txt', 'producer-2.txt'],
        consumers: ['consumer-1.txt', 'consumer-2.txt'],
      });
      expect(script.match(/org\.apache\.kafka\.tools\.ProducerPerformance/g)).toHaveLength(2);
      expect(script.match(/org\.apache\.kafka\.tools\.ConsumerPerformance/g)).toHaveLength(2);
      // Each upload reads the instance's credentials patiently (core/cloud/aws-cli-environment.ts).
      for (const file of [...files.producers, ...files.consumers])
        expect(script).toContain(`${AWS_CLI_SETTINGS} aws s3 cp ${file} 's3://raw/runs/run-u/raw/`);
      // Two consumers of one group end by the 20 s idle timeout: 120 (tools) + 60 (topic) + 60 (join) + 30 + 60 (grace)
      // + 20 + 30 (drain) + 60.
      expect(timeoutSeconds).toBe(440);
      expect(kafkaRepetitionSeconds(scenarioOf(plan, item))).toBe(timeoutSeconds);
    },
  );

  test(
    'a workload with durationSeconds only: producers stopped by timeout at the duration (124 is their normal end), ' +
      'then the consumers stopped, not waited for to drain',
    () => {
      const durationPlan = {
        ...plan,
        workloads: [{ name: 'w', producers: 2, consumers: 1, messageSizeBytes: 100, durationSeconds: 12 }],
      };
      const durationItem = buildSchedule({ plan: durationPlan, target: 'aws', runId: 'run-d' }, 'exec').clusters[0]!
        .repetitions[0]!;
      const { script, args } = awsKafkaRepetitionScript({
        plan: durationPlan,
        runId: 'run-d',
        item: durationItem,
        bootstrapServers: BOOTSTRAP,
        bucket: 'raw',
      });
      expect(
        script.match(/timeout --kill-after=10 12 \S+ org\.apache\.kafka\.tools\.ProducerPerformance/g),
      ).toHaveLength(2);
      expect(args.find((line) => line.startsWith('ProducerPerformance'))).toMatch(
        /--num-records 1200000000 .*--throughput -1 /,
      );
      expect(script).toContain('if [ "$STATUS" -ne 124 ] && [ "$STATUS" -ne 137 ]; then ERROR="Kafka producers exited');
      expect(script).toContain('for pid in "${CONSUMER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done;');
      expect(script).not.toContain('did not finish draining');
      // The fixed-work script of the same shape waits for its consumers instead.
      expect(
        awsKafkaRepetitionScript({ plan, runId: 'run-u', item, bootstrapServers: BOOTSTRAP, bucket: 'raw' }).script,
      ).toContain('did not finish draining');
    },
  );

  test(
    'a Kafka repetition has no management API sampler (Kafka ' +
      'has no management API) and uploads no broker-metrics.jsonl',
    () => {
      const { script } = awsKafkaRepetitionScript({
        plan,
        runId: 'run-u',
        item,
        bootstrapServers: BOOTSTRAP,
        bucket: 'raw',
      });
      expect(script).not.toContain('sample_broker');
      expect(script).not.toContain(BROKER_SAMPLES_FILE);
    },
  );

  test(
    "the smoke test fails with the script's stderr when the " +
      'command fails, and names the deadline when it never ends',
    async () => {
      const ssm = new SSMClient({ region: 'us-east-1' });
      ssmMock.on(SendCommandCommand).resolves({ Command: { CommandId: 'cmd-1' } });
      ssmMock.on(GetCommandInvocationCommand).resolvesOnce({ Status: 'InProgress' }).resolves({
        Status: 'Failed',
        ResponseCode: 1,
        StandardErrorContent: 'smoke test: 2 of 3 partitions of rmqbench-smoke-ab have a leader:\n...',
      });
      await expect(kafkaSmokeTest(ssm, 'i-1', BOOTSTRAP, 3, { sleep: async () => undefined })).rejects.toThrow(
        'Kafka smoke test on the load generator i-1 ended Failed (exit code 1): ' +
          'smoke test: 2 of 3 partitions of rmqbench-smoke-ab have a leader:',
      );
      expect(ssmMock.commandCalls(SendCommandCommand)[0]!.args[0].input).toMatchObject({
        InstanceIds: ['i-1'],
        DocumentName: 'AWS-RunShellScript',
      });

      ssmMock.reset();
      ssmMock.on(SendCommandCommand).resolves({ Command: { CommandId: 'cmd-2' } });
      ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'InProgress' });
      let clock = Date.parse('2030-01-01T00:00:00Z');
      await expect(
        kafkaSmokeTest(ssm, 'i-1', BOOTSTRAP, 3, {
          now: () => new Date(clock),
          sleep: async (ms) => void (clock += ms * 20),
        }),
      ).rejects.toThrow('Kafka smoke test on the load generator i-1 did not finish within 270 s (InProgress)');
      await expect(kafkaSmokeTest(ssm, '', BOOTSTRAP, 3)).rejects.toThrow(
        'the cluster stack has no load generator InstanceId output',
      );
    },
  );
});
