import { chooseFaultNode, faultScript, healScript, notCountedReason, queueLeader } from '../../core/cloud-fault';

// The scripts themselves run for real on simulated EC2 nodes (test/simulated-vm/aws-node.integration.test.ts); here:
// reading their answers and choosing the node.

const nodes = [
  { id: 'i-0a', nodeName: 'rabbit@10.0.1.10' },
  { id: 'i-0b', nodeName: 'rabbit@10.0.2.20' },
  { id: 'i-0c', nodeName: 'rabbit@10.0.3.30' },
];

describe('the cloud fault step: which node, from what the broker says', () => {
  test('a quorum queue names its leader; a classic queue its node through its pid; other queues do not matter', () => {
    const output = JSON.stringify([
      { name: 'rmqbench-smoke-1', type: 'classic', leader: '', pid: '<rabbit@10.0.1.10.1.999.0>' },
      { name: 'perf-test-1', type: 'quorum', leader: 'rabbit@10.0.2.20', pid: '<rabbit@10.0.2.20.1.1234.0>' },
    ]);
    expect(queueLeader(output, 'perf-test-1')).toBe('rabbit@10.0.2.20');
    expect(queueLeader(JSON.stringify([{ name: 'perf-test-1', type: 'classic', leader: '', pid: '<rabbit@10.0.3.30.1.604.0>' }]), 'perf-test-1')).toBe('rabbit@10.0.3.30');
  });

  test('a missing benchmark queue or unreadable output is an error saying why, never a guessed node', () => {
    expect(() => queueLeader('[]', 'perf-test-1')).toThrow(/queue perf-test-1 does not exist on the cluster .*queues: none.*is atSeconds before PerfTest has connected/);
    expect(() => queueLeader('', 'perf-test-1')).toThrow(/printed no list of queues/);
    expect(() => queueLeader('Error: unable to perform an operation on node', 'perf-test-1')).toThrow(/printed no JSON: Error: unable/);
    expect(() => queueLeader(JSON.stringify([{ name: 'perf-test-1', type: 'quorum', leader: '' }]), 'perf-test-1')).toThrow(/neither a leader nor a process id/);
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

  test('a node name that is not rabbit@<IPv4> never reaches a script (it is written into the shell text)', () => {
    expect(() => faultScript('kill', "rabbit@10.0.0.1'; reboot; '")).toThrow(/expected a node name rabbit@<private IPv4 address>/);
    expect(() => healScript('rabbit@host')).toThrow(/expected a node name/);
    expect(faultScript('stop', 'rabbit@10.0.1.10')).toContain("EXPECTED='NODENAME=rabbit@10.0.1.10'");
  });

  test('what a cloud repetition records instead of counts says "not counted" and names the target', () => {
    expect(notCountedReason('aws')).toMatch(/^lost messages not counted on aws: /);
  });
});
