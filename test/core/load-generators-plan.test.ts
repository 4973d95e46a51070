import { MAX_LOAD_GENERATORS } from '../../core/loadgen/load-generator-count';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { parsePlanText } from '../../core/plan/plan';
import { targetProblems } from '../../core/plan/target-rules';
import { issuesOf } from './plan-issues';

const plan = (cluster: string, workload = 'producers: 4, consumers: 4, queues: 4') => `
name: lg
clusters:
  - { name: c, nodes: 3, ${cluster} }
workloads:
  - { name: w, ${workload} }
`;

describe('plan field clusters[].loadGenerators', () => {
  test('defaults to 1 and accepts whole numbers up to the maximum', () => {
    expect(parsePlanText(plan('topology: { type: classic }'), 'lg.yaml').clusters[0]!.loadGenerators).toBe(1);
    const max = MAX_LOAD_GENERATORS;
    const workload = `producers: ${max}, consumers: ${max}, queues: ${max}`;
    const parsed = parsePlanText(plan(`loadGenerators: ${max}`, workload), 'lg.yaml');
    expect(parsed.scenarios[0]!.cluster.loadGenerators).toBe(max);
  });

  test.each([
    ['1.5', /whole number/],
    ['0', /at least 1/],
    [String(MAX_LOAD_GENERATORS + 1), new RegExp(`at most ${MAX_LOAD_GENERATORS} load generators`)],
  ])('refuses loadGenerators: %s at its field', (value, message) => {
    const issues = issuesOf(plan(`loadGenerators: ${value}`));
    expect(issues).toEqual([
      { path: 'clusters[0].loadGenerators', message: expect.stringMatching(message), value: Number(value) },
    ]);
  });

  test('refuses several load generators on a Kafka cluster, as RabbitMQ-only so far', () => {
    const issues = issuesOf(plan('broker: kafka, loadGenerators: 2', 'producers: 2, consumers: 2, messageCount: 1000'));
    expect(issues).toContainEqual({
      path: 'clusters[0].loadGenerators',
      message: expect.stringMatching(/RabbitMQ-only so far/),
      value: 2,
    });
  });

  test('refuses, at the workload field, a workload the cluster cannot split over its generators', () => {
    const issues = issuesOf(plan('loadGenerators: 3', 'producers: 2, consumers: 2, queues: 2'));
    expect(issues.map((issue) => issue.path)).toEqual([
      'workloads[0].queues',
      'workloads[0].producers',
      'workloads[0].consumers',
    ]);
    expect(issues[0]!.message).toMatch(/^cluster "c" has loadGenerators: 3; 3 load generators need at least 3 queues/);
  });

  test('refuses a fanout workload on a cluster with several generators, and accepts it on one', () => {
    const fanout = 'producers: 1, consumers: 4, queues: 4, exchange: { type: fanout }';
    expect(issuesOf(plan('loadGenerators: 2', fanout)).map((issue) => issue.path)).toEqual([
      'workloads[0].exchange.type',
    ]);
    expect(() => parsePlanText(plan('loadGenerators: 1', fanout), 'lg.yaml')).not.toThrow();
  });

  test('local, aws and azure all run several load generators (azure since its controller runs N VMs)', () => {
    const several = parsePlanText(plan('loadGenerators: 2, instanceType: c5.xlarge'), 'lg.yaml');
    const one = parsePlanText(plan('instanceType: c5.xlarge'), 'lg.yaml');
    for (const target of ['local', 'aws', 'azure'])
      expect(targetProblems(several, target, defaultPriceCatalog).map((issue) => issue.path)).not.toContain(
        'clusters[0].loadGenerators',
      );
    for (const target of ['local', 'aws', 'azure'])
      expect(targetProblems(one, target, defaultPriceCatalog).map((issue) => issue.path)).not.toContain(
        'clusters[0].loadGenerators',
      );
  });
});
