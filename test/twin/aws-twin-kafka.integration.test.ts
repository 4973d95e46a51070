import { rmqbenchAsync } from '../cloud/cli-child';
import { twinTestSetup } from './twin-test-setup';

jest.setTimeout(900_000);

/**
 * A Kafka plan as a user writes it: three brokers, acks=all on a replicated topic, one producer and one consumer for
 * 15 s.
 */
export const TWIN_KAFKA_PLAN_YAML = `name: twin-kafka
repetitions: 1
pauseSecondsBetweenRepetitions: 0
clusters:
  - { name: kafka-three, broker: kafka, nodes: 3, instanceType: m5.xlarge }
workloads:
  - name: steady
    producers: 1
    consumers: 1
    messageSizeBytes: 100
    publishRateLimit: 500
    durationSeconds: 15
    partitions: 3
    replicationFactor: 3
    acks: all
`;

/**
 * The twin's stage 2a for Kafka (docs/verification.md "The cloud twin"): `rmqbench run --target aws` of a Kafka plan
 * against the twin, which creates the controller's 3-broker Kafka template as the launch function asks for it: each
 * broker's network interface and private zone name, its own creation policy, the load generator with Kafka's tools;
 * the smoke test and the repetition run on the load generator over SSM and upload to S3 as its role.
 */
type ClusterTemplate = { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };

describe('the AWS twin runs a Kafka plan on the controller’s Kafka cluster template', () => {
  const { cdkOut, runOnTwin, changedAssembly } = twinTestSetup();
  /** A copy of the assembly with `change` applied to every Kafka cluster template it uploads. */
  const changedKafkaTemplates = (name: string, change: (template: ClusterTemplate) => void) =>
    changedAssembly<ClusterTemplate>(
      name,
      (file, json) =>
        /^asset\.[0-9a-f]+\.json$/.test(file) &&
        Object.values((json as ClusterTemplate).Resources ?? {}).some(
          (resource) => resource.Type === 'AWS::Route53::HostedZone',
        ),
      change,
    );

  test(
    'unchanged: the three brokers boot on their interfaces and form one quorum by their zone names, the smoke ' +
      'test and the repetition run on the load generator, results are ingested, no call is denied, nothing is left',
    async () => {
      const { twin, env, code, stderr, stdout, log } = await runOnTwin(cdkOut, {
        clusterSubnets: 46,
        planYaml: TWIN_KAFKA_PLAN_YAML,
      });
      expect({ code, stderr: code === 0 ? '' : `${stderr}\n${log}` }).toEqual({ code: 0, stderr: '' });
      const [stack] = [...twin.gateway.clusterStacks.values()];
      // The brokers are the instances attached to the network interfaces, each complete at its own signal.
      for (const broker of [1, 2, 3]) expect(log).toMatch(new RegExp(`KafkaBroker${broker}\\w+ CREATE_COMPLETE`));
      const brokers = stack!.instances.filter((instance) => instance.logicalId?.startsWith('KafkaBroker'));
      expect(brokers.map((broker) => broker.vm.ip).sort()).toEqual([20, 21, 22].map((host) => `10.91.46.${host}`));
      for (const broker of brokers) expect(broker.result?.status).toBe(0);
      const loadGenerator = stack!.instances.find((instance) =>
        instance.logicalId?.startsWith('LoadGeneratorInstance'),
      );
      expect(loadGenerator?.result?.status).toBe(0);
      const tasks = [...twin.gateway.executions.executions.values()][0]!.tasks;
      expect(tasks).toEqual(
        expect.arrayContaining(['SmokeTest', 'StartRepetition', 'IngestRepetition', 'TeardownCluster', 'FinishRun']),
      );
      expect(stdout).toMatch(/\| kafka-three\/steady \| 1\/1 \|/);
      // The brokers called AWS as their own role (boot log, signal), the load generator uploaded as its own.
      const brokerCalls = twin.gateway.decisions.filter((decision) =>
        brokers.some((broker) => decision.principal.endsWith(`/${broker.instanceId}`)),
      );
      expect(new Set(brokerCalls.map((decision) => decision.action))).toEqual(
        new Set(['logs:CreateLogStream', 'logs:PutLogEvents', 'cloudformation:SignalResource']),
      );
      const loadGeneratorCalls = twin.gateway.decisions.filter((decision) =>
        decision.principal.endsWith(`/${loadGenerator!.instanceId}`),
      );
      expect(loadGeneratorCalls.map((decision) => decision.action)).toContain('s3:PutObject');
      expect(twin.gateway.decisions.filter((decision) => !decision.allowed)).toEqual([]);
      const shown = rmqbenchAsync(env, 'runs', '--store', 'aws', '--json');
      expect(await shown.exited).toBe(0);
      expect(JSON.parse(shown.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ planName: 'twin-kafka', status: 'SUCCEEDED' })]),
      );
      expect(stack!.deleted).toBe(true);
      expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
    },
  );

  test(
    'the broker security group without its KRaft controller rule (9093): the brokers cannot form a quorum, the ' +
      'first broker fails and the failure names the dropped port between two brokers; nothing is left',
    async () => {
      const assembly = changedKafkaTemplates('no-9093', (template) => {
        const ids = Object.keys(template.Resources).filter(
          (id) =>
            template.Resources[id]!.Type === 'AWS::EC2::SecurityGroupIngress' &&
            template.Resources[id]!.Properties?.['FromPort'] === 9093,
        );
        expect(ids).toHaveLength(1);
        delete template.Resources[ids[0]!];
      });
      // Only to end the run sooner: no broker can reach a voter without 9093, however long it waits.
      const { twin, code, stderr } = await runOnTwin(assembly, {
        clusterSubnets: 47,
        planYaml: TWIN_KAFKA_PLAN_YAML,
        blockedBootSeconds: 30,
      });
      expect(code).toBe(1);
      expect(stderr).toMatch(
        new RegExp(
          String.raw`KafkaBroker\d\w+ \(AWS::EC2::Instance\) CREATE_FAILED: .*security groups sg-\w+ of i-\w+ ` +
            String.raw`dropped tcp from i-\w+ \(10\.91\.47\.2\d\) to port 9093: no ingress rule allows it`,
        ),
      );
      const [stack] = [...twin.gateway.clusterStacks.values()];
      expect(stack!.deleted).toBe(true);
      expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
    },
  );
});
