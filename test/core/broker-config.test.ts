import { generateBrokerConfig, policyCommandArgs } from '../../core/broker-config';

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
    const config = generateBrokerConfig({ topology: { type: 'quorum' }, rabbitmqVersion: '4.1', peerDiscovery: { backend: 'aws', region: 'eu-west-1' }, nodeCount: 3 });
    expect(config.enabledPlugins).toEqual(['rabbitmq_management', 'rabbitmq_peer_discovery_aws']);
    expect(config.rabbitmqConf).toMatch(/cluster_formation\.peer_discovery_backend = aws\n/);
    expect(config.rabbitmqConf).toContain('cluster_formation.aws.use_autoscaling_group = true');
    expect(config.rabbitmqConf).toContain('cluster_formation.node_cleanup.only_log_warning = false');
    expect(config.rabbitmqConf).toContain('listeners.tcp.default = 5672');
  });

  test('mirroring to N nodes ("N+1") becomes an ha-mode exactly policy on benchmark queues only', () => {
    const config = generateBrokerConfig({ topology: { type: 'mirrored', mirrorTo: 2 }, rabbitmqVersion: '3.13', peerDiscovery: { backend: 'external' }, nodeCount: 3 });
    expect(config.policies).toEqual([
      expect.objectContaining({ pattern: '^(perf-test|rmqbench)', definition: { 'ha-mode': 'exactly', 'ha-params': 2, 'ha-sync-mode': 'automatic' } }),
    ]);
    expect(policyCommandArgs(config.policies[0]!)).toEqual([
      'set_policy', '--apply-to', 'queues', '--priority', '0', 'rmqbench-mirroring', '^(perf-test|rmqbench)',
      '{"ha-mode":"exactly","ha-params":2,"ha-sync-mode":"automatic"}',
    ]);
  });

  test('mirroring on RabbitMQ 4 is refused', () => {
    expect(() =>
      generateBrokerConfig({ topology: { type: 'mirrored', mirrorTo: 'all' }, rabbitmqVersion: '4.0.5', peerDiscovery: { backend: 'external' }, nodeCount: 3 }),
    ).toThrow(/removed in 4\.0/);
  });

  test('the configuration holds no credentials', () => {
    const config = generateBrokerConfig({ topology: { type: 'classic' }, rabbitmqVersion: '3.13', peerDiscovery: { backend: 'aws' }, nodeCount: 3 });
    expect(config.rabbitmqConf).not.toMatch(/default_pass|default_user|cookie|password/i);
  });
});
