import { brokerReading } from '../../local/management-metrics';

// Trimmed answers of a real local 2-node cluster (RabbitMQ 3.10.8) to BROKER_METRICS_PATHS, one connection on node 2.
const nodes = [
  {
    name: 'rmqbench1@localhost',
    running: true,
    cluster_links: [
      {
        name: 'rmqbench2@localhost',
        sock_port: 56592,
        recv_bytes: 63740,
        send_bytes: 62634,
        stats: { send_bytes: 7893, recv_bytes: 6543 },
      },
    ],
  },
  {
    name: 'rmqbench2@localhost',
    running: true,
    cluster_links: [{ name: 'rmqbench1@localhost', sock_port: 38821, recv_bytes: 63258, send_bytes: 64364 }],
  },
  { name: 'rmqbench3@localhost', running: false },
];
// The alarms health check's 503 body (rabbit_mgmt_wm_health_check_alarms.erl) with node 2 in memory alarm.
const alarms = {
  status: 'failed',
  reason: 'There are alarms in effect in the cluster',
  alarms: [
    { resource: 'memory', node: 'rmqbench2@localhost' },
    { resource: 'disk', node: 'rmqbench1@localhost' },
  ],
};
const connections = [
  { name: '127.0.0.1:36230 -> 127.0.0.1:33411', node: 'rmqbench2@localhost', recv_oct: 367, send_oct: 540 },
  // Before its first statistics emission a connection has no octets.
  { name: '127.0.0.1:36240 -> 127.0.0.1:33411', node: 'rmqbench2@localhost' },
];
const queues = [
  { name: 'perf-test-1', node: 'rmqbench2@localhost', messages: 100 },
  { name: 'perf-test-2', node: 'rmqbench2@localhost', messages: 5 },
  { name: 'rmqbench-verifier', node: 'rmqbench1@localhost', messages: 7 },
  { name: 'someone-elses-queue', node: 'rmqbench1@localhost', messages: 1000 },
  // A queue whose leader is down has no message count.
  { name: 'perf-test-3', node: 'rmqbench3@localhost' },
];

describe('broker reading from the management API', () => {
  const reading = brokerReading(4.02, { nodes, alarms, connections, queues });

  test('memory alarm per running node, 0/1 (a disk alarm is not a memory alarm)', () => {
    expect([...reading.memoryAlarm]).toEqual([
      ['rmqbench1@localhost', 0],
      ['rmqbench2@localhost', 1],
    ]);
    expect([
      ...brokerReading(1, { nodes, alarms: { status: 'ok' }, connections, queues }).memoryAlarm.values(),
    ]).toEqual([0, 0]);
  });

  test('queue depth: messages of the benchmark queues summed per leading node; other queues ignored', () => {
    expect([...reading.queueDepth]).toEqual([
      ['rmqbench1@localhost', 7],
      ['rmqbench2@localhost', 105],
    ]);
  });

  test('network counters per node: its inter-node links (cumulative recv + send) and its client connections', () => {
    expect([...reading.networkCounters.get('rmqbench1@localhost')!]).toEqual([
      ['link rmqbench2@localhost:56592', 63740 + 62634],
    ]);
    expect([...reading.networkCounters.get('rmqbench2@localhost')!]).toEqual([
      ['link rmqbench1@localhost:38821', 63258 + 64364],
      ['connection 127.0.0.1:36230 -> 127.0.0.1:33411', 367 + 540],
    ]);
    expect(reading.networkCounters.has('rmqbench3@localhost')).toBe(false);
  });

  test('an answer that is not a list is refused by name', () => {
    expect(() => brokerReading(1, { nodes: { error: 'not_authorised' }, alarms, connections, queues })).toThrow(
      /management API: nodes is not a list/,
    );
    expect(() => brokerReading(1, { nodes, alarms: { error: 'timeout' }, connections, queues })).toThrow(
      /the alarms health check answered \{"error":"timeout"\}/,
    );
  });
});
