import { chooseFaultNode, faultScript, healScript, notCountedReason, queueLeader } from '../../core/cloud-fault';

// The scripts themselves run for real on simulated EC2 nodes (test/simulated-vm/aws-node.integration.test.ts); here:
// reading their answers and choosing the node.

const nodes = [
  { id: 'i-0a', nodeName: 'rabbit@10.0.1.10' },
  { id: 'i-0b', nodeName: 'rabbit@10.0.2.20' },
  { id: 'i-0c', nodeName: 'rabbit@10.0.3.30' },
];

describe('the cloud fault step: which node, from what the broker says', () => {
  // Shaped as the script prints it on RabbitMQ 3.10 (the simulated nodes): JSON pids carry no node name.
  const listing = (queues: unknown[], local: Record<string, string[]>) => JSON.stringify({ queues, local });

  test('a quorum queue names its leader; a classic queue (empty leader) is led by the one node that hosts it locally; other queues do not matter', () => {
    const local = { 'rabbit@10.0.1.10': ['rmqbench-smoke-1'], 'rabbit@10.0.2.20': ['perf-test-1'], 'rabbit@10.0.3.30': [] };
    expect(queueLeader(listing([{ name: 'rmqbench-smoke-1', type: 'classic', leader: '' }, { name: 'perf-test-1', type: 'quorum', leader: 'rabbit@10.0.3.30' }], local), 'perf-test-1')).toBe('rabbit@10.0.3.30');
    expect(queueLeader(listing([{ name: 'perf-test-1', type: 'classic', leader: '' }], local), 'perf-test-1')).toBe('rabbit@10.0.2.20');
  });

  test('a missing benchmark queue, unreadable output or no single host is an error saying why, never a guessed node', () => {
    expect(() => queueLeader(listing([], {}), 'perf-test-1')).toThrow(/queue perf-test-1 does not exist on the cluster .*queues: none.*is atSeconds before they have connected/);
    expect(() => queueLeader('', 'perf-test-1')).toThrow(/printed no queues and hosts/);
    expect(() => queueLeader('Error: unable to perform an operation on node', 'perf-test-1')).toThrow(/printed no JSON: Error: unable/);
    expect(() => queueLeader(listing([{ name: 'perf-test-1', type: 'classic', leader: '' }], { a: [], b: [] }), 'perf-test-1')).toThrow(/no running node hosts it locally/);
    expect(() => queueLeader(listing([{ name: 'perf-test-1', type: 'classic', leader: '' }], { 'rabbit@a': ['perf-test-1'], 'rabbit@b': ['perf-test-1'] }), 'perf-test-1')).toThrow(/several nodes \(rabbit@a, rabbit@b\)/);
  });

  test('leader, follower and an index choose among the running nodes; a leader that is none of them or an index past the end is refused', () => {
    expect(chooseFaultNode(nodes, 'leader', 'rabbit@10.0.2.20')).toEqual(nodes[1]);
    expect(chooseFaultNode(nodes, 'follower', 'rabbit@10.0.1.10')).toEqual(nodes[1]);
    expect(chooseFaultNode(nodes, 2)).toEqual(nodes[2]);
    expect(() => chooseFaultNode(nodes, 3)).toThrow('fault.node 3 is not a node of this cluster, which runs 3 (0 to 2)');
    expect(() => chooseFaultNode(nodes, 'leader', 'rabbit@10.0.9.9')).toThrow(/led by rabbit@10\.0\.9\.9, which is none of the cluster's running instances/);
    expect(() => chooseFaultNode([nodes[0]!], 'follower', 'rabbit@10.0.1.10')).toThrow(/no other node runs, so there is no follower/);
    expect(() => chooseFaultNode([], 0)).toThrow('the cluster has no running node to fault');
  });

  test('a node name that is not rabbit@<IPv4 or host name> never reaches a script (it is written into the shell text)', () => {
    expect(() => faultScript('kill', "rabbit@10.0.0.1'; reboot; '")).toThrow(/expected a node name rabbit@<private IPv4 address or host name>/);
    expect(() => healScript('rabbit@host name')).toThrow(/expected a node name/);
    expect(() => healScript('guest@10.0.0.1')).toThrow(/expected a node name/);
    expect(faultScript('stop', 'rabbit@10.0.1.10')).toContain("EXPECTED='rabbit@10.0.1.10'");
    expect(healScript('rabbit@RMQBENCHN000001')).toContain("EXPECTED='rabbit@RMQBENCHN000001'");
  });

  test('what a cloud repetition records instead of counts says "not counted" and names the target', () => {
    expect(notCountedReason('aws', 'the verifier printed no result line')).toMatch(/^lost messages not counted on aws: the verifier printed no result line, so lostMessages, .* were not measured$/);
  });
});
