import {
  hostMetricsFromCloudWatch,
  KAFKA_BROKER_ROLE,
  LOAD_GENERATOR_ROLE,
  NODE_ROLE,
  nodeOf,
} from '../../core/metrics/cloudwatch-host-metrics';

const metric = (role: string | undefined, instance = 'i-0abc') => ({
  name: 'cpu_usage_active',
  dimensions: {
    ClusterId: 'rmqbench-run-1-c1',
    InstanceId: instance,
    cpu: 'cpu-total',
    ...(role === undefined ? {} : { Role: role }),
  },
});

describe('the node a CloudWatch agent metric belongs to', () => {
  test(
    'a RabbitMQ node and a Kafka broker are each a node ' +
      'named by its instance id; the load generator is load-generator',
    () => {
      expect(nodeOf(metric(NODE_ROLE, 'i-0node'))).toBe('i-0node');
      expect(nodeOf(metric(KAFKA_BROKER_ROLE, 'i-0broker'))).toBe('i-0broker');
      expect(nodeOf(metric(LOAD_GENERATOR_ROLE, 'i-0loadgen'))).toBe('load-generator');
    },
  );

  test('a metric of another role, or of none, belongs to no node', () => {
    expect(nodeOf(metric('zookeeper'))).toBeUndefined();
    expect(nodeOf(metric(undefined))).toBeUndefined();
  });

  test(
    "Kafka brokers' cpu becomes one series per broker beside the " +
      "load generator's, which the load-generator-bound verdict reads",
    () => {
      const startedAt = new Date('2026-11-23T20:00:00Z');
      const at = (second: number) => new Date(startedAt.getTime() + second * 1000);
      const metrics = hostMetricsFromCloudWatch(
        [
          { metric: metric(KAFKA_BROKER_ROLE, 'i-0broker2'), timestamps: [at(0), at(1)], values: [30, 35] },
          { metric: metric(KAFKA_BROKER_ROLE, 'i-0broker1'), timestamps: [at(0), at(1)], values: [50, 55] },
          { metric: metric(LOAD_GENERATOR_ROLE, 'i-0loadgen'), timestamps: [at(0), at(1)], values: [95, 96] },
        ],
        startedAt,
        1,
      );
      expect(metrics.series.map((series) => [series.node, series.metric, series.points])).toEqual([
        [
          'i-0broker1',
          'cpuPercent',
          [
            [0, 50],
            [1, 55],
          ],
        ],
        [
          'i-0broker2',
          'cpuPercent',
          [
            [0, 30],
            [1, 35],
          ],
        ],
        [
          'load-generator',
          'cpuPercent',
          [
            [0, 95],
            [1, 96],
          ],
        ],
      ]);
    },
  );
});
