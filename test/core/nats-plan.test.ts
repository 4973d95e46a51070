import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { groupScenariosByCluster, parsePlanText } from '../../core/plan/plan';
import { targetProblems } from '../../core/plan/target-rules';
import { natsServerConfig, type NatsServerNode } from '../../core/nats/nats-server-config';
import { buildSchedule } from '../../state-machines/schedule';
import { issuesOf as issuesOfPlan } from './plan-issues';

const issuesOf = (text: string) => issuesOfPlan(text, 'nats.yaml');

const natsPlan = (cluster: string, workload: string) => `
name: nats
clusters:
  - { name: n3, broker: nats, nodes: 3${cluster} }
workloads:
  - { name: w, messageCount: 1000${workload} }
`;

describe('NATS plan fields', () => {
  test('a NATS cluster with every JetStream field parses, and they reach the scenario', () => {
    const plan = parsePlanText(
      natsPlan(
        ', syncInterval: always',
        ', replicas: 3, storage: memory, maxBytes: 1000000, maxMsgs: 5000, retention: interest, ' +
          'consumerMode: push, ackPolicy: all, producers: 2, consumers: 2, messageSizeBytes: 100, ' +
          'publishRateLimit: 500, durationSeconds: 30',
      ),
      'ok.yaml',
    );
    expect(plan.clusters[0]).toMatchObject({ broker: 'nats', syncInterval: 'always' });
    expect(plan.scenarios[0]!.workload).toMatchObject({
      replicas: 3,
      storage: 'memory',
      maxBytes: 1_000_000,
      maxMsgs: 5000,
      retention: 'interest',
      consumerMode: 'push',
      ackPolicy: 'all',
      messageCount: 1000,
    });
    // A timed workload (no messageCount) runs flat out or at its rate for durationSeconds.
    expect(() =>
      parsePlanText(natsPlan('', '').replace('messageCount: 1000', 'durationSeconds: 5'), 'timed.yaml'),
    ).not.toThrow();
  });

  test('the sync interval takes "always" or a duration such as the default "2m", nothing else', () => {
    for (const value of ['2m', '10s', '500ms', '1m30s', 'always'])
      expect(() => parsePlanText(natsPlan(`, syncInterval: "${value}"`, ''), 'ok.yaml')).not.toThrow();
    for (const value of ['2 minutes', 'never', '10', '0s']) {
      expect(issuesOf(natsPlan(`, syncInterval: "${value}"`, ''))).toEqual([
        expect.objectContaining({ path: 'clusters[0].syncInterval', value }),
      ]);
    }
  });

  test('replicas are 1, 3 or 5 and at most the node count; storage, retention, modes and acks by their values', () => {
    expect(issuesOf(natsPlan('', ', replicas: 2'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].replicas', message: 'expected 1, 3 or 5 stream replicas' }),
    ]);
    expect(issuesOf(natsPlan('', ', replicas: 5'))).toEqual([
      { path: 'workloads[0].replicas', message: 'must be at most the number of nodes of cluster "n3" (3)', value: 5 },
    ]);
    expect(issuesOf(natsPlan('', ', sweep: { replicas: [1, 3, 5] }'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].replicas', value: 5 }),
    ]);
    expect(issuesOf(natsPlan('', ', storage: disk'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].storage', message: expect.stringMatching(/file.*memory/) }),
    ]);
    expect(issuesOf(natsPlan('', ', retention: queue'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].retention', message: expect.stringMatching(/limits.*workqueue/) }),
    ]);
    expect(issuesOf(natsPlan('', ', consumerMode: ordered, ackPolicy: some'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].consumerMode' }),
      expect.objectContaining({ path: 'workloads[0].ackPolicy' }),
    ]);
    expect(issuesOf(natsPlan('', ', maxBytes: 0, maxMsgs: -1'))).toEqual([
      expect.objectContaining({ path: 'workloads[0].maxBytes', value: 0 }),
      expect.objectContaining({ path: 'workloads[0].maxMsgs', value: -1 }),
    ]);
  });

  test('a workqueue stream needs explicit acks, as nats-server says', () => {
    expect(issuesOf(natsPlan('', ', retention: workqueue, ackPolicy: none'))).toEqual([
      {
        path: 'workloads[0].ackPolicy',
        message: 'a workqueue stream needs explicit acks (nats-server: "workqueue stream requires explicit ack")',
        value: 'none',
      },
    ]);
    expect(() => parsePlanText(natsPlan('', ', retention: workqueue'), 'wq.yaml')).not.toThrow();
  });

  test('RabbitMQ-only workload fields on a NATS cluster are refused by field, with what JetStream has instead', () => {
    const issues = issuesOf(
      natsPlan(
        '',
        ', queues: 2, producers: 2, consumers: 2, persistent: true, confirmWindow: 10, autoAck: false, prefetch: 5, ' +
          'multiAckEvery: 10, consumerRateLimit: 5, exchange: { type: fanout }, queueMode: lazy, maxLength: 10, ' +
          'overflow: drop-head',
      ),
    );
    expect(issues.map((issue) => issue.path).sort()).toEqual(
      [
        'autoAck',
        'confirmWindow',
        'consumerRateLimit',
        'exchange',
        'maxLength',
        'multiAckEvery',
        'overflow',
        'persistent',
        'prefetch',
        'queueMode',
        'queues',
      ]
        .map((field) => `workloads[0].${field}`)
        .sort(),
    );
    expect(issues.find((issue) => issue.path === 'workloads[0].maxLength')!.message).toBe(
      'is RabbitMQ-only and cluster "n3" runs NATS: use maxMsgs (or maxBytes)',
    );
    expect(issues.find((issue) => issue.path === 'workloads[0].persistent')!.message).toContain('use storage');
  });

  test('Kafka-only workload fields on a NATS cluster are refused by field', () => {
    const issues = issuesOf(natsPlan('', ', partitions: 3, replicationFactor: 3, acks: all, lingerMs: 5'));
    expect(issues).toEqual([
      expect.objectContaining({
        path: 'workloads[0].partitions',
        message: 'is Kafka-only and cluster "n3" runs NATS (broker: nats): a NATS workload uses one stream',
      }),
      expect.objectContaining({
        path: 'workloads[0].replicationFactor',
        message: 'is Kafka-only and cluster "n3" runs NATS (broker: nats): use replicas',
      }),
      expect.objectContaining({ path: 'workloads[0].acks', value: 'all' }),
      expect.objectContaining({ path: 'workloads[0].lingerMs', value: 5 }),
    ]);
  });

  test('NATS-only fields on RabbitMQ and Kafka clusters are refused by field, naming the broker', () => {
    const rabbit = issuesOf(
      'name: r\nclusters: [{ name: r1, nodes: 3, syncInterval: always }]\n' +
        'workloads: [{ name: w, durationSeconds: 5, replicas: 3, storage: memory, ackPolicy: none }]\n',
    );
    expect(rabbit).toEqual([
      expect.objectContaining({
        path: 'clusters[0].syncInterval',
        message: expect.stringMatching(/^is NATS-only .* cluster "r1" runs RabbitMQ \(broker: rabbitmq\)$/),
      }),
    ]);
    const rabbitWorkload = issuesOf(
      'name: r\nclusters: [{ name: r1, nodes: 3 }]\n' +
        'workloads: [{ name: w, durationSeconds: 5, replicas: 3, storage: memory, ackPolicy: none }]\n',
    );
    expect(rabbitWorkload).toEqual([
      {
        path: 'workloads[0].replicas',
        message: 'is NATS-only and cluster "r1" runs RabbitMQ (broker: rabbitmq)',
        value: 3,
      },
      expect.objectContaining({ path: 'workloads[0].storage', value: 'memory' }),
      expect.objectContaining({ path: 'workloads[0].ackPolicy', value: 'none' }),
    ]);
    const kafka = issuesOf(
      'name: k\nclusters: [{ name: k1, broker: kafka, nodes: 3 }]\n' +
        'workloads: [{ name: w, messageCount: 100, retention: workqueue }]\n',
    );
    expect(kafka).toEqual([
      {
        path: 'workloads[0].retention',
        message: 'is NATS-only and cluster "k1" runs Kafka (broker: kafka)',
        value: 'workqueue',
      },
    ]);
  });

  test('RabbitMQ-only cluster fields on a NATS cluster are refused', () => {
    const issues = issuesOf(
      natsPlan(', rabbitmqVersion: "3.13", topology: { type: quorum }, connection: leader, loadGenerators: 2', ''),
    );
    expect(issues.map((issue) => issue.path)).toEqual([
      'clusters[0].rabbitmqVersion',
      'clusters[0].topology.type',
      'clusters[0].connection',
      'clusters[0].loadGenerators',
    ]);
  });

  test(
    'what the load client needs: a producer, 8 bytes of body, an even share per producer; ' +
      'no capacity ladder; a fault on a node the cluster has',
    () => {
      expect(issuesOf(natsPlan('', ', producers: 0'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].producers', value: 0 }),
      ]);
      expect(issuesOf(natsPlan('', ', messageSizeBytes: 4'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].messageSizeBytes', value: 4 }),
      ]);
      expect(issuesOf(natsPlan('', ', producers: 3'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].messageCount', message: expect.stringMatching(/multiple of/) }),
      ]);
      expect(issuesOf(natsPlan('', ', totalBytes: 1000'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].totalBytes' }),
      ]);
      const capacity = natsPlan('', '').replace(
        'messageCount: 1000',
        'capacity: { minRate: 100, maxRate: 400, stepFactor: 2, stepSeconds: 10, p99LatencyMs: 50 }',
      );
      expect(issuesOf(capacity)).toEqual([expect.objectContaining({ path: 'workloads[0].capacity' })]);
      const fault = (spec: string) =>
        natsPlan('', '').replace('messageCount: 1000', `durationSeconds: 20, fault: ${spec}`);
      const accepted = parsePlanText(
        fault('{ action: kill, node: leader, atSeconds: 5, healAtSeconds: 12 }'),
        'f.yaml',
      );
      expect(accepted.scenarios[0]!.workload.fault).toMatchObject({
        action: 'kill',
        node: 'leader',
        healAtSeconds: 12,
      });
      expect(issuesOf(fault('{ action: stop, node: 7, atSeconds: 5 }'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].fault.node', value: 7 }),
      ]);
      expect(issuesOf(fault('{ action: kill, node: leader, atSeconds: 25 }'))).toEqual([
        expect.objectContaining({ path: 'workloads[0].fault.atSeconds', value: 25 }),
      ]);
    },
  );

  test('NATS, Kafka and RabbitMQ clusters of one size are separate groups, and so are two sync intervals', () => {
    const plan = parsePlanText(
      'name: three\nclusters:\n  - { name: r, nodes: 1 }\n  - { name: k, nodes: 1, broker: kafka }\n' +
        '  - { name: n, nodes: 1, broker: nats }\n' +
        '  - { name: n-always, nodes: 1, broker: nats, syncInterval: always }\n' +
        'workloads: [{ name: w, publishRateLimit: 10, durationSeconds: 5 }]\n',
      'three.yaml',
    );
    const groups = groupScenariosByCluster(plan);
    expect(groups.map((group) => [group.broker, group.syncInterval])).toEqual([
      ['rabbitmq', undefined],
      ['kafka', undefined],
      ['nats', undefined],
      ['nats', 'always'],
    ]);
    // RabbitMQ keys stay as stored runs have them.
    expect(groups[0]!.key).not.toContain('broker');
  });
});

describe('NATS on the targets', () => {
  const plan = parsePlanText(natsPlan(', instanceType: { aws: c5.xlarge, azure: Standard_F4s_v2 }', ''), 'nats.yaml');

  test('every target takes it: local, aws (the controller templates) and azure (main.bicep with broker nats)', () => {
    for (const target of ['local', 'aws', 'azure'])
      expect(targetProblems(plan, target, defaultPriceCatalog)).toEqual([]);
    const { scenarios: _scenarios, ...data } = plan;
    for (const target of ['aws', 'azure'] as const)
      expect(buildSchedule({ plan: data, target }, 'exec-1').clusters).toHaveLength(1);
  });

  test('aws: a server count without a template, no instance type, an unhealed kill and a partition are refused', () => {
    const twoNodes = parsePlanText(natsPlan(', instanceType: c5.xlarge', '').replace('nodes: 3', 'nodes: 2'), 'n.yaml');
    expect(targetProblems(twoNodes, 'aws', defaultPriceCatalog)).toEqual([
      expect.objectContaining({
        path: 'clusters[0].nodes',
        value: 2,
        message: expect.stringMatching(/1, 3, 5 servers/),
      }),
    ]);
    const untyped = parsePlanText(natsPlan('', ''), 'n.yaml');
    expect(targetProblems(untyped, 'aws', defaultPriceCatalog)).toEqual([
      expect.objectContaining({ path: 'clusters[0].instanceType' }),
    ]);
    const faulted = parsePlanText(
      natsPlan(
        ', instanceType: c5.xlarge',
        ', durationSeconds: 30, fault: { action: kill, node: leader, atSeconds: 10 }',
      ),
      'n.yaml',
    );
    // A kill the cloud does not heal would leave the next repetition a server short.
    expect(targetProblems(faulted, 'aws', defaultPriceCatalog)).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.healAtSeconds',
        message: expect.stringMatching(/^on aws a kill fault needs healAtSeconds/),
      }),
    ]);
    const healed = (action: string) =>
      parsePlanText(
        natsPlan(
          ', instanceType: { aws: c5.xlarge, azure: Standard_F4s_v2 }',
          `, durationSeconds: 200, fault: { action: ${action}, node: leader, atSeconds: 10, healAtSeconds: 150 }`,
        ),
        'n.yaml',
      );
    expect(targetProblems(healed('kill'), 'aws', defaultPriceCatalog)).toEqual([]);
    expect(targetProblems(healed('stop'), 'azure', defaultPriceCatalog)).toEqual([]);
    expect(targetProblems(healed('partition'), 'azure', defaultPriceCatalog)).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.action',
        message: 'fault action "partition" is not applied on azure to a NATS cluster (it applies kill, stop, restart)',
      }),
    ]);
  });
});

describe('nats-server configuration', () => {
  const nodes: NatsServerNode[] = [1, 2, 3].map((index) => ({
    name: `nats${index}`,
    host: '127.0.0.1',
    clientPort: 4220 + index,
    clusterPort: 6220 + index,
    monitorPort: 8220 + index,
  }));

  test('a node of three: its listeners, JetStream with its store and sync interval, routes to the other two', () => {
    expect(
      natsServerConfig({
        node: nodes[1]!,
        cluster: nodes,
        clusterName: 'rmqbench',
        storeDir: '/tmp/run dir/nats2/jetstream',
        syncInterval: 'always',
      }),
    ).toBe(
      [
        '# Written by rmqbench: one node of a NATS JetStream cluster.',
        'server_name: "nats2"',
        'listen: "127.0.0.1:4222"',
        'http: "127.0.0.1:8222"',
        'jetstream {',
        '  store_dir: "/tmp/run dir/nats2/jetstream"',
        '  sync_interval: "always"',
        '}',
        'cluster {',
        '  name: "rmqbench"',
        '  listen: "127.0.0.1:6222"',
        '  routes: [',
        '    "nats-route://127.0.0.1:6221"',
        '    "nats-route://127.0.0.1:6223"',
        '  ]',
        '}',
        '',
      ].join('\n'),
    );
  });

  test('a single node has no cluster block, and without a sync interval the server keeps its default', () => {
    const text = natsServerConfig({ node: nodes[0]!, cluster: [nodes[0]!], clusterName: 'x', storeDir: '/s' });
    expect(text).not.toMatch(/^cluster|sync_interval/m);
    expect(text).toContain('jetstream {\n  store_dir: "/s"\n}');
  });
});
