import { AWS_QUORUM_TARGET_GROUP_SIZE, generateBrokerConfig, policyCommandArgs } from '../../core/broker/broker-config';

describe('broker configuration generator', () => {
  test('classic peer discovery lists every node and binds local ports', () => {
    const config = generateBrokerConfig({
      topology: { type: 'quorum' },
      rabbitmqVersion: '3.10.8',
      peerDiscovery: { backend: 'classic', nodes: ['rabbit1@localhost', 'rabbit2@localhost'] },
      nodeCount: 2,
      amqpPort: 40001,
      managementPort: 40002,
      bindAddress: '127.0.0.1',
    });
    expect(config.rabbitmqConf).toContain('listeners.tcp.1 = 127.0.0.1:40001');
    expect(config.rabbitmqConf).toContain('management.tcp.port = 40002');
    expect(config.rabbitmqConf).toContain('cluster_formation.classic_config.nodes.2 = rabbit2@localhost');
    expect(config.enabledPluginsFile).toBe('[rabbitmq_management].\n');
    expect(config.queueArguments).toEqual({ 'x-queue-type': 'quorum', 'x-quorum-initial-group-size': 2 });
    expect(config.policies).toEqual([]);
  });

  test('AWS peer discovery enables the plugin and cleans up departed nodes', () => {
    const config = generateBrokerConfig({
      topology: { type: 'quorum' },
      rabbitmqVersion: '4.1',
      peerDiscovery: { backend: 'aws', region: 'eu-west-1' },
      nodeCount: 3,
    });
    expect(config.enabledPlugins).toEqual(['rabbitmq_management', 'rabbitmq_peer_discovery_aws']);
    expect(config.rabbitmqConf).toMatch(/cluster_formation\.peer_discovery_backend = aws\n/);
    expect(config.rabbitmqConf).toContain('cluster_formation.aws.use_autoscaling_group = true');
    expect(config.rabbitmqConf).toContain('cluster_formation.node_cleanup.only_log_warning = false');
    expect(config.rabbitmqConf).toContain('listeners.tcp.default = 5672');
  });

  test(
    'every target places queue leaders client-local with ' +
      'queue_leader_locator, not the deprecated queue_master_locator',
    () => {
      for (const peerDiscovery of [
        { backend: 'classic' as const, nodes: ['rabbit1@localhost'] },
        { backend: 'aws' as const },
        { backend: 'external' as const },
      ]) {
        const { rabbitmqConf } = generateBrokerConfig({
          topology: { type: 'quorum' },
          rabbitmqVersion: '3.10.8',
          peerDiscovery,
          nodeCount: 1,
        });
        expect(rabbitmqConf).toContain('queue_leader_locator = client-local\n');
        expect(rabbitmqConf).not.toContain('queue_master_locator');
      }
    },
  );

  test(
    'AWS clusters from 3.13 on reconcile quorum queue membership onto ' +
      'replaced and added nodes, with a node-count-independent target',
    () => {
      for (const version of ['3.13.7', '4.1.4']) {
        for (const nodeCount of [1, 3, 7]) {
          const { rabbitmqConf } = generateBrokerConfig({
            topology: { type: 'quorum' },
            rabbitmqVersion: version,
            peerDiscovery: { backend: 'aws' },
            nodeCount,
          });
          expect(rabbitmqConf).toContain('quorum_queue.continuous_membership_reconciliation.enabled = true\n');
          expect(rabbitmqConf).toContain(
            `quorum_queue.continuous_membership_reconciliation.target_group_size = ${AWS_QUORUM_TARGET_GROUP_SIZE}\n`,
          );
          expect(rabbitmqConf).toContain('quorum_queue.continuous_membership_reconciliation.auto_remove = true\n');
        }
      }
      expect(AWS_QUORUM_TARGET_GROUP_SIZE).toBe(7);
    },
  );

  test(
    'releases without membership reconciliation (3.10, 3.12) ' +
      'and the local and Azure backends get none of its keys',
    () => {
      const conf = (
        rabbitmqVersion: string,
        peerDiscovery: Parameters<typeof generateBrokerConfig>[0]['peerDiscovery'],
      ) =>
        generateBrokerConfig({ topology: { type: 'quorum' }, rabbitmqVersion, peerDiscovery, nodeCount: 3 })
          .rabbitmqConf;
      expect(conf('3.10.8', { backend: 'aws' })).not.toContain('continuous_membership_reconciliation');
      expect(conf('3.12.14', { backend: 'aws' })).not.toContain('continuous_membership_reconciliation');
      expect(conf('4.1.4', { backend: 'classic', nodes: ['rabbit1@localhost'] })).not.toContain(
        'continuous_membership_reconciliation',
      );
      expect(conf('4.1.4', { backend: 'external' })).not.toContain('continuous_membership_reconciliation');
    },
  );

  test('mirroring to N nodes ("N+1") becomes an ha-mode exactly policy on benchmark queues only', () => {
    const config = generateBrokerConfig({
      topology: { type: 'mirrored', mirrorTo: 2 },
      rabbitmqVersion: '3.13',
      peerDiscovery: { backend: 'external' },
      nodeCount: 3,
    });
    expect(config.policies).toEqual([
      expect.objectContaining({
        pattern: '^(perf-test|rmqbench)',
        definition: { 'ha-mode': 'exactly', 'ha-params': 2, 'ha-sync-mode': 'automatic' },
      }),
    ]);
    expect(policyCommandArgs(config.policies[0]!)).toEqual([
      'set_policy',
      '--apply-to',
      'queues',
      '--priority',
      '0',
      'rmqbench-mirroring',
      '^(perf-test|rmqbench)',
      '{"ha-mode":"exactly","ha-params":2,"ha-sync-mode":"automatic"}',
    ]);
  });

  test('mirroring on RabbitMQ 4 is refused', () => {
    expect(() =>
      generateBrokerConfig({
        topology: { type: 'mirrored', mirrorTo: 'all' },
        rabbitmqVersion: '4.0.5',
        peerDiscovery: { backend: 'external' },
        nodeCount: 3,
      }),
    ).toThrow(/removed in 4\.0/);
  });

  test('the configuration holds no credentials', () => {
    const config = generateBrokerConfig({
      topology: { type: 'classic' },
      rabbitmqVersion: '3.13',
      peerDiscovery: { backend: 'aws' },
      nodeCount: 3,
    });
    expect(config.rabbitmqConf).not.toMatch(/default_pass|default_user|cookie|password/i);
  });
});
