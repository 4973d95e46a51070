import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { estimateRun } from '../../core/cost/estimate';
import { groupScenariosByCluster, parsePlanText } from '../../core/plan/plan';
import { AZURE_KAFKA_BROKER_COUNT, targetProblems } from '../../core/plan/target-rules';
import { buildSchedule } from '../../state-machines/schedule';
import { issuesOf as issuesOfPlan } from './plan-issues';

const issuesOf = (text: string) => issuesOfPlan(text, 'kafka.yaml');

const kafkaPlan = (cluster: string, workload: string) => `
name: kafka
clusters:
  - { name: k3, broker: kafka, nodes: 3${cluster} }
workloads:
  - { name: w, messageCount: 1000${workload} }
`;

describe('Kafka plan fields', () => {
  test(
    'a Kafka cluster with the Kafka fields parses; ' +
      'acks written as a YAML number is read as the string Kafka takes',
    () => {
      const plan = parsePlanText(
        kafkaPlan(
          '',
          ', partitions: 6, replicationFactor: 3, acks: 1, batchSizeBytes: 65536, lingerMs: 10, compression: snappy',
        ),
        'ok.yaml',
      );
      expect(plan.clusters[0]!.broker).toBe('kafka');
      expect(plan.scenarios[0]!.workload).toMatchObject({
        partitions: 6,
        replicationFactor: 3,
        acks: '1',
        batchSizeBytes: 65536,
        lingerMs: 10,
        compression: 'snappy',
        messageCount: 1000,
      });
    },
  );

  test('a cluster without broker is a RabbitMQ cluster, and its workloads carry no Kafka field', () => {
    const plan = parsePlanText(
      'name: r\nclusters: [{ name: r1, nodes: 1 }]\nworkloads: [{ name: w, durationSeconds: 5 }]\n',
      'r.yaml',
    );
    expect(plan.clusters[0]!.broker).toBe('rabbitmq');
    expect(plan.scenarios[0]!.workload.partitions).toBeUndefined();
    expect(plan.scenarios[0]!.workload.acks).toBeUndefined();
  });

  test('an unknown broker, acks or compression is refused with the allowed values', () => {
    expect(issuesOf(kafkaPlan('', '').replace('broker: kafka', 'broker: pulsar'))).toEqual([
      expect.objectContaining({
        path: 'clusters[0].broker',
        value: 'pulsar',
        message: expect.stringMatching(/rabbitmq.*kafka/),
      }),
    ]);
    expect(issuesOf(kafkaPlan('', ', acks: 2'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].acks', message: expect.stringMatching(/"0".*"1".*"all"/) }),
    ]);
    expect(issuesOf(kafkaPlan('', ', compression: gzip9'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].compression',
        value: 'gzip9',
        message: expect.stringMatching(/none.*snappy.*lz4.*zstd/),
      }),
    ]);
  });

  test('out-of-range partitions, batch size and linger are refused by field', () => {
    expect(issuesOf(kafkaPlan('', ', partitions: 0'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].partitions', value: 0 }),
    ]);
    expect(issuesOf(kafkaPlan('', ', batchSizeBytes: -1'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].batchSizeBytes', value: -1 }),
    ]);
    expect(issuesOf(kafkaPlan('', ', lingerMs: 1.5'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].lingerMs', value: 1.5 }),
    ]);
  });

  test('a replication factor above the broker count is refused, naming the cluster and its size', () => {
    expect(issuesOf(kafkaPlan('', ', replicationFactor: 5'))).toEqual([
      {
        path: 'workloads[0].replicationFactor',
        message: 'must be at most the number of brokers of cluster "k3" (3)',
        value: 5,
      },
    ]);
  });

  test('minInsyncReplicas above the replication factor (given or the default) is refused by field', () => {
    expect(issuesOf(kafkaPlan('', ', replicationFactor: 2, minInsyncReplicas: 3'))).toEqual([
      {
        path: 'workloads[0].minInsyncReplicas',
        message:
          'must be at most the topic\'s replication factor (2 on cluster "k3"): no acks=all write could ever be ' +
          'acknowledged',
        value: 3,
      },
    ]);
    // The default replication factor of a 3-broker cluster is 3.
    expect(() => parsePlanText(kafkaPlan('', ', minInsyncReplicas: 3'), 'k.yaml')).not.toThrow();
    expect(issuesOf(kafkaPlan('', ', minInsyncReplicas: 4'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].minInsyncReplicas', value: 4 }),
    ]);
  });

  test('a swept replication factor is checked for each value', () => {
    const issues = issuesOf(kafkaPlan('', ', sweep: { replicationFactor: [1, 4] }'));
    expect(issues).toEqual([expect.objectContaining({ path: 'workloads[0].replicationFactor', value: 4 })]);
  });

  test('RabbitMQ-only workload fields on a Kafka cluster are refused with what to use instead', () => {
    const issues = issuesOf(
      kafkaPlan(
        '',
        ', queues: 2, producers: 2, consumers: 2, persistent: true, confirmWindow: 10, autoAck: false, prefetch: 5',
      ),
    );
    expect(issues.map((issue) => issue.path).sort()).toEqual(
      [
        'workloads[0].autoAck',
        'workloads[0].confirmWindow',
        'workloads[0].persistent',
        'workloads[0].prefetch',
        'workloads[0].queues',
      ].sort(),
    );
    expect(issues.find((issue) => issue.path === 'workloads[0].queues')!.message).toBe(
      'is RabbitMQ-only and cluster "k3" runs Kafka: a Kafka workload uses one topic; use partitions',
    );
  });

  test('the RabbitMQ exchange, queue mode and length limit are refused on a Kafka cluster too', () => {
    const issues = issuesOf(
      kafkaPlan('', ', exchange: { type: fanout }, queueMode: lazy, maxLength: 10, overflow: drop-head'),
    );
    expect(issues.map((issue) => issue.path).sort()).toEqual([
      'workloads[0].exchange',
      'workloads[0].maxLength',
      'workloads[0].overflow',
      'workloads[0].queueMode',
    ]);
    expect(issues.find((issue) => issue.path === 'workloads[0].maxLength')!.message).toContain(
      'Kafka retains by size or time',
    );
  });

  test('Kafka-only workload fields on a RabbitMQ cluster are refused', () => {
    const issues = issuesOf(
      'name: r\nclusters: [{ name: r1, nodes: 3 }]\n' +
        'workloads: [{ name: w, durationSeconds: 5, partitions: 3, acks: all }]\n',
    );
    expect(issues).toEqual([
      {
        path: 'workloads[0].partitions',
        message: 'is Kafka-only and cluster "r1" runs RabbitMQ (broker: rabbitmq)',
        value: 3,
      },
      {
        path: 'workloads[0].acks',
        message: 'is Kafka-only and cluster "r1" runs RabbitMQ (broker: rabbitmq)',
        value: 'all',
      },
    ]);
  });

  test('RabbitMQ-only cluster fields on a Kafka cluster are refused', () => {
    const issues = issuesOf(kafkaPlan(', rabbitmqVersion: "3.13", topology: { type: quorum }, connection: leader', ''));
    expect(issues.map((issue) => issue.path)).toEqual([
      'clusters[0].rabbitmqVersion',
      'clusters[0].topology.type',
      'clusters[0].connection',
    ]);
  });

  test(
    'a Kafka workload with durationSeconds only is accepted (it runs for the duration); ' +
      'a message count must divide among the producers',
    () => {
      const durationOnly = kafkaPlan('', '').replace('messageCount: 1000', 'durationSeconds: 5');
      expect(parsePlanText(durationOnly, 'duration.yaml').scenarios[0]!.workload.durationSeconds).toBe(5);
      // So is a workload that names nothing: RabbitMQ's default of 60 s applies.
      const nothing = kafkaPlan('', '').replace('messageCount: 1000', 'messageSizeBytes: 100');
      expect(parsePlanText(nothing, 'nothing.yaml').scenarios[0]!.workload.durationSeconds).toBe(60);
      expect(() =>
        parsePlanText(
          durationOnly.replace('durationSeconds: 5', 'durationSeconds: 5, publishRateLimit: 100'),
          'rate.yaml',
        ),
      ).not.toThrow();
      expect(issuesOf(kafkaPlan('', ', producers: 3'))).toEqual([
        expect.objectContaining({
          path: 'workloads[0].messageCount',
          value: 1000,
          message: expect.stringMatching(/multiple of producers \(3\)/),
        }),
      ]);
      expect(issuesOf(kafkaPlan('', ', producers: 0'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].producers', value: 0 }),
      ]);
      expect(issuesOf(kafkaPlan('', ', messageSizeBytes: 0'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].messageSizeBytes', value: 0 }),
      ]);
    },
  );

  test('Kafka and RabbitMQ clusters of the same size are separate cluster groups', () => {
    const plan = parsePlanText(
      'name: both\nclusters:\n  - { name: r, nodes: 1 }\n  - { name: k, nodes: 1, broker: kafka }\n' +
        'workloads: [{ name: w, publishRateLimit: 10, durationSeconds: 5 }]\n',
      'both.yaml',
    );
    // A fixed message count is a workload field of both brokers (RabbitMQ: PerfTest's message limits).
    expect(
      parsePlanText(
        'name: both\nclusters:\n  - { name: r, nodes: 1 }\nworkloads: [{ name: w, messageCount: 100 }]\n',
        'count.yaml',
      ).scenarios[0]!.workload.messageCount,
    ).toBe(100);
    expect(groupScenariosByCluster(plan).map((group) => group.broker)).toEqual(['rabbitmq', 'kafka']);
  });
});

describe('Kafka on the cloud targets', () => {
  const plan = parsePlanText(kafkaPlan(', instanceType: c5.xlarge', ''), 'kafka.yaml');

  test(
    'aws runs a 1-, 3- or 5-broker Kafka cluster; azure runs 1 to 7 brokers ' +
      '(bicep/main.bicep instanceCount) and refuses others by field; local accepts it',
    () => {
      expect(targetProblems(plan, 'aws', defaultPriceCatalog)).toEqual([]);
      const azure = (nodes: number) =>
        parsePlanText(
          kafkaPlan(', instanceType: Standard_F4s_v2', '').replace('nodes: 3', `nodes: ${nodes}`),
          'kafka.yaml',
        );
      for (const nodes of [1, 2, 3, 5, 7])
        expect(targetProblems(azure(nodes), 'azure', defaultPriceCatalog)).toEqual([]);
      // The plan schema caps nodes at 7 as well (a parsed plan never has 8); the target rule keeps main.bicep's bound
      // if that changes.
      expect(issuesOf(kafkaPlan(', instanceType: Standard_F4s_v2', '').replace('nodes: 3', 'nodes: 8'))).toEqual([
        expect.objectContaining({ path: 'clusters[0].nodes', value: 8 }),
      ]);
      const three = azure(3);
      const eight = { ...three, clusters: [{ ...three.clusters[0]!, nodes: 8 }] };
      expect(targetProblems(eight, 'azure', defaultPriceCatalog)).toEqual([
        {
          path: 'clusters[0].nodes',
          value: 8,
          message: expect.stringMatching(
            /^a Kafka cluster on azure has 1 to 7 brokers \(bicep\/main\.bicep instanceCount\)/,
          ),
        },
      ]);
      expect(
        targetProblems(parsePlanText(kafkaPlan('', ''), 'kafka.yaml'), 'azure', defaultPriceCatalog).map(
          (issue) => issue.path,
        ),
      ).toEqual(['clusters[0].instanceType']);
      expect(targetProblems(plan, 'local', defaultPriceCatalog)).toEqual([]);
    },
  );

  test("the Azure broker-count bounds are main.bicep instanceCount's @minValue and @maxValue", () => {
    const bicep = readFileSync(join(__dirname, '../../bicep/main.bicep'), 'utf8');
    const bounds = /@minValue\((\d+)\)\s*@maxValue\((\d+)\)\s*param instanceCount int/.exec(bicep);
    expect(bounds && { min: Number(bounds[1]), max: Number(bounds[2]) }).toEqual(AZURE_KAFKA_BROKER_COUNT);
  });

  test(
    'rmqbench estimate / ValidatePlan price a Kafka cluster on azure: ' +
      'the brokers and the load generator at the catalog prices, no load balancer',
    () => {
      const azure = parsePlanText(kafkaPlan(', instanceType: Standard_F4s_v2', ', durationSeconds: 60'), 'kafka.yaml');
      // The load generator is the Azure default (bicep/main.bicep loadGeneratorVmSize), which the shipped catalog
      // prices.
      const estimate = estimateRun(azure, { target: 'azure', catalog: defaultPriceCatalog });
      const names = estimate.parts.map((part) => part.name);
      expect(names).toEqual(expect.arrayContaining(['k3: nodes', 'k3: load generator']));
      expect(names).not.toContain('k3: load balancer');
      const nodes = estimate.parts.find((part) => part.name === 'k3: nodes')!;
      expect(nodes).toMatchObject({ priced: true, detail: expect.stringMatching(/^3 × Standard_F4s_v2 × /) });
      expect(nodes.usd).toBeGreaterThan(0);
      expect(estimate.parts.find((part) => part.name === 'k3: load generator')).toMatchObject({ priced: true });
      expect(estimate.complete).toBe(true);
      expect(Number.isFinite(estimate.totalUsd) && estimate.totalUsd > 0).toBe(true);
      const { scenarios: _scenarios, ...data } = parsePlanText(
        kafkaPlan(', instanceType: Standard_F4s_v2', ', durationSeconds: 60').replace(
          'name: kafka',
          'name: kafka\nmaxCostUsd: 0.01',
        ),
        'kafka.yaml',
      );
      expect(() => buildSchedule({ plan: data, target: 'azure' }, 'exec-1')).toThrow(
        /maxCostUsd: the estimated cost \$\d+\.\d\d on azure exceeds maxCostUsd \$0\.01/,
      );
    },
  );

  test(
    'aws refuses a broker count it ships no template for, ' +
      'and an Arm type (the pinned node image is x86-64), by field',
    () => {
      const four = parsePlanText(
        kafkaPlan(', instanceType: c5.xlarge', '').replace('nodes: 3', 'nodes: 4'),
        'kafka.yaml',
      );
      expect(targetProblems(four, 'aws', defaultPriceCatalog)).toEqual([
        {
          path: 'clusters[0].nodes',
          value: 4,
          message: expect.stringMatching(
            /^a Kafka cluster on aws has 1, 3, 5 brokers \(the controller ships one cluster template per count/,
          ),
        },
      ]);
      const arm = parsePlanText(kafkaPlan(', instanceType: m6g.large', ''), 'kafka.yaml');
      expect(targetProblems(arm, 'aws', defaultPriceCatalog)).toEqual([
        expect.objectContaining({
          path: 'clusters[0].instanceType',
          value: 'm6g.large',
          message: expect.stringMatching(/pins one x86-64 Amazon Linux 2023 image/),
        }),
      ]);
      const untyped = parsePlanText(kafkaPlan('', ''), 'kafka.yaml');
      expect(targetProblems(untyped, 'aws', defaultPriceCatalog).map((issue) => issue.path)).toEqual([
        'clusters[0].instanceType',
      ]);
    },
  );

  test(
    "the workflow's ValidatePlan state accepts it on aws and on azure, " +
      "and refuses an Azure broker count above main.bicep's 7 by field",
    () => {
      const { scenarios: _scenarios, ...data } = plan;
      expect(buildSchedule({ plan: data, target: 'aws' }, 'exec-1').clusters).toHaveLength(1);
      const { scenarios: _azureScenarios, ...azure } = parsePlanText(
        kafkaPlan(', instanceType: Standard_F4s_v2', ''),
        'kafka.yaml',
      );
      expect(buildSchedule({ plan: azure, target: 'azure' }, 'exec-1').clusters).toHaveLength(1);
      expect(() =>
        buildSchedule(
          { plan: { ...azure, clusters: [{ ...azure.clusters[0]!, nodes: 8 }] }, target: 'azure' },
          'exec-1',
        ),
      ).toThrow(/clusters\[0\]\.nodes: /);
    },
  );

  test('a kill, stop or restart on a Kafka cluster runs on every target; the clouds refuse a partition', () => {
    const withFault = (action: string) =>
      parsePlanText(
        'name: kf\nclusters: [{ name: k3, broker: kafka, nodes: 3, ' +
          'instanceType: { aws: m5.xlarge, azure: Standard_D4s_v5 } }]\n' +
          'workloads:\n  - { name: w, publishRateLimit: 100, durationSeconds: 200, ' +
          `fault: { action: ${action}, node: leader, atSeconds: 5` +
          `${action === 'restart' ? '' : ', healAtSeconds: 150'} } }\n`,
        'kf.yaml',
      );
    expect(withFault('kill').scenarios[0]!.workload.fault).toMatchObject({ action: 'kill', node: 'leader' });
    for (const target of ['local', 'aws', 'azure'])
      for (const action of ['kill', 'stop', 'restart'])
        expect({ target, action, problems: targetProblems(withFault(action), target, defaultPriceCatalog) }).toEqual({
          target,
          action,
          problems: [],
        });
    expect(targetProblems(withFault('partition'), 'aws', defaultPriceCatalog)).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.action',
        message: 'fault action "partition" is not applied on aws to a Kafka cluster (it applies kill, stop, restart)',
      }),
    ]);
  });
});
