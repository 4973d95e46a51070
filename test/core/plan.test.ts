import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PlanValidationError } from '../../core/plan/errors';
import { fixedMessageCount } from '../../core/plan/fixed-work';
import { parsePlanText } from '../../core/plan/plan';
import { issuesOf } from './plan-issues';
import { buildSchedule, planData } from '../../state-machines/schedule';

const minimal = `
name: demo
clusters:
  - name: three
    nodes: 3
    topology: { type: quorum }
workloads:
  - name: small
    messageSizeBytes: 150
    durationSeconds: 10
`;

describe('plan parsing', () => {
  test('applies documented defaults and builds one scenario per cluster x workload', () => {
    const plan = parsePlanText(minimal, 'demo.yaml');
    expect(plan.repetitions).toBe(1);
    expect(plan.scenarios).toHaveLength(1);
    const [scenario] = plan.scenarios;
    expect(scenario!.id).toBe('three/small');
    expect(scenario!.cluster.connection).toBe('lb');
    expect(scenario!.workload).toMatchObject({
      producers: 1,
      consumers: 1,
      queues: 1,
      autoAck: true,
      persistent: false,
    });
  });

  test('expands a sweep into the cartesian product with the swept values in the scenario id', () => {
    const plan = parsePlanText(
      `${minimal}    sweep:\n      messageSizeBytes: [12, 150]\n` +
        `      queues: [1, 2]\n      producers: [2]\n      consumers: [2]\n`,
      'sweep.yaml',
    );
    expect(plan.scenarios.map((s) => s.id)).toEqual([
      'three/small@messageSizeBytes=12,queues=1,producers=2,consumers=2',
      'three/small@messageSizeBytes=12,queues=2,producers=2,consumers=2',
      'three/small@messageSizeBytes=150,queues=1,producers=2,consumers=2',
      'three/small@messageSizeBytes=150,queues=2,producers=2,consumers=2',
    ]);
    expect(plan.scenarios[3]!.workload.queues).toBe(2);
  });

  test('a wrong type names the field path, the bad value and the expected type', () => {
    const [issue] = issuesOf(minimal.replace('nodes: 3', 'nodes: "three"'));
    expect(issue).toMatchObject({ path: 'clusters[0].nodes', value: 'three' });
    expect(issue!.message).toMatch(/number/);
  });

  test('an unknown field is an error, not silently ignored', () => {
    const issues = issuesOf(minimal.replace('durationSeconds: 10', 'durationSeconds: 10\n    mesageSize: 4'));
    expect(issues).toEqual([
      expect.objectContaining({ path: 'workloads[0].mesageSize', message: expect.stringMatching(/unknown field/) }),
    ]);
  });

  test('an unknown field near a known one says which one it likely meant, at any depth', () => {
    const issues = issuesOf(
      minimal
        .replace('nodes: 3', 'nodes: 3\n    instancetype: c5.xlarge')
        .replace(
          'durationSeconds: 10',
          'durationSecond: 10\n    producer: 2\n    messageSize: 100\n' +
            '    fault: { action: kill, node: leader, atSeconds: 5, healAtSecond: 8 }',
        ),
    );
    expect(
      issues
        .filter((issue) => issue.message.startsWith('unknown field'))
        .map(({ path, message }) => `${path}: ${message}`)
        .sort(),
    ).toEqual([
      'clusters[0].instancetype: unknown field (did you mean "instanceType"?)',
      'workloads[0].durationSecond: unknown field (did you mean "durationSeconds"?)',
      'workloads[0].fault.healAtSecond: unknown field (did you mean "healAtSeconds"?)',
      'workloads[0].messageSize: unknown field (did you mean "messageSizeBytes"?)',
      'workloads[0].producer: unknown field (did you mean "producers"?)',
    ]);
    // Nothing near: the pointer to the plan reference, no guess.
    expect(issuesOf(minimal.replace('durationSeconds: 10', 'durationSeconds: 10\n    colour: blue'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].colour',
        message: 'unknown field (check its spelling against the plan reference, docs/plans.md)',
      }),
    ]);
  });

  test('a required field left out is named as missing, with what it expects', () => {
    const issues = issuesOf(
      minimal.replace('  - name: three\n', '  - nodes: 3\n').replace('    nodes: 3\n    topology', '    topology'),
    );
    expect(issues).toEqual([{ path: 'clusters[0].name', message: 'required field missing (expected a string)' }]);
    expect(issuesOf(minimal.replace(/workloads:[\s\S]*$/, ''))).toEqual([
      expect.objectContaining({ path: 'workloads', message: 'required field missing (expected a list)' }),
    ]);
  });

  test('a negative count is rejected with the allowed minimum', () => {
    const [issue] = issuesOf(minimal.replace('durationSeconds: 10', 'durationSeconds: 10\n    producers: -2'));
    expect(issue).toMatchObject({ path: 'workloads[0].producers', value: -2 });
    expect(issue!.message).toMatch(/>=\s*0/);
  });

  test('classic mirroring on RabbitMQ 4 is refused with the reason', () => {
    const issues = issuesOf(
      minimal.replace(
        'topology: { type: quorum }',
        'rabbitmqVersion: "4.1"\n    topology: { type: mirrored, mirrorTo: 2 }',
      ),
    );
    expect(issues).toEqual([
      expect.objectContaining({
        path: 'clusters[0].topology.type',
        message: expect.stringMatching(/removed in RabbitMQ 4\.0.*4\.1/),
      }),
    ]);
  });

  test('classic mirroring on RabbitMQ 3.13 is accepted', () => {
    const plan = parsePlanText(
      minimal.replace(
        'topology: { type: quorum }',
        'rabbitmqVersion: "3.13"\n    topology: { type: mirrored, mirrorTo: 2 }',
      ),
      'ok.yaml',
    );
    expect(plan.clusters[0]!.topology).toEqual({ type: 'mirrored', mirrorTo: 2 });
  });

  test('a bad swept value points at its index inside the sweep', () => {
    const issues = issuesOf(`${minimal}    sweep:\n      messageSizeBytes: [12, -1]\n`);
    expect(issues).toEqual([expect.objectContaining({ path: 'workloads[0].sweep.messageSizeBytes[1]', value: -1 })]);
  });

  test(
    'fewer producers or consumers than queues are refused by field (round-robin ' +
      'would leave queues without one); uneven counts are fine',
    () => {
      const withQueues = (fields: string) =>
        minimal.replace('durationSeconds: 10', `durationSeconds: 10\n    queues: 4\n    ${fields}`);
      expect(issuesOf(withQueues('producers: 2\n    consumers: 3'))).toEqual([
        expect.objectContaining({
          path: 'workloads[0].producers',
          value: 2,
          message: expect.stringContaining('queues perf-test-3… would get no messages'),
        }),
        expect.objectContaining({
          path: 'workloads[0].consumers',
          value: 3,
          message: expect.stringContaining('queues perf-test-4… would have no consumer'),
        }),
      ]);
      // One producer feeds every queue through a fanout exchange (seed 002's fan-out experiment).
      expect(
        parsePlanText(withQueues('producers: 1\n    consumers: 4\n    exchange: { type: fanout }'), 'fanout.yaml')
          .scenarios[0]!.workload.exchange,
      ).toEqual({ type: 'fanout' });
      expect(parsePlanText(withQueues('producers: 5\n    consumers: 6'), 'uneven.yaml').scenarios).toHaveLength(1);
      expect(
        parsePlanText(withQueues('producers: 1\n    consumers: 0\n    exchange: { type: fanout }'), 'publish-only.yaml')
          .scenarios,
      ).toHaveLength(1);
    },
  );

  test('queue mode and length limits: refused where the queue type or version ignores them, naming the field', () => {
    const on = (topology: string, version: string, fields: string) =>
      issuesOf(
        minimal
          .replace('{ type: quorum }', topology + version)
          .replace('durationSeconds: 10', `durationSeconds: 10\n    ${fields}`),
      );
    expect(on('{ type: quorum }', '', 'queueMode: lazy')).toEqual([
      expect.objectContaining({
        path: 'workloads[0].queueMode',
        message: expect.stringContaining('lazy is a classic queue mode'),
      }),
    ]);
    expect(on('{ type: classic }', '\n    rabbitmqVersion: "3.13"', 'queueMode: lazy')).toEqual([
      expect.objectContaining({
        path: 'workloads[0].queueMode',
        message: expect.stringContaining('ignores the lazy queue mode from 3.12 on'),
      }),
    ]);
    expect(on('{ type: stream }', '', 'maxLength: 10\n    autoAck: false\n    prefetch: 10')).toEqual([
      expect.objectContaining({ path: 'workloads[0].maxLength', value: 10 }),
    ]);
    expect(on('{ type: quorum }', '', 'maxLength: 10\n    overflow: reject-publish-dlx')).toEqual([
      expect.objectContaining({
        path: 'workloads[0].overflow',
        message: expect.stringContaining('not reject-publish-dlx'),
      }),
    ]);
    expect(on('{ type: classic }', '', 'overflow: reject-publish')).toEqual([
      expect.objectContaining({ path: 'workloads[0].overflow', message: expect.stringContaining('needs maxLength') }),
    ]);
    const accepted = parsePlanText(
      minimal
        .replace('{ type: quorum }', '{ type: mirrored }\n    rabbitmqVersion: "3.11"')
        .replace(
          'durationSeconds: 10',
          'durationSeconds: 10\n    queueMode: lazy\n    maxLength: 100\n    overflow: reject-publish',
        ),
      'ok.yaml',
    );
    expect(accepted.scenarios[0]!.workload).toMatchObject({
      queueMode: 'lazy',
      maxLength: 100,
      overflow: 'reject-publish',
    });
  });

  test('a fixed amount of work: refused by field where PerfTest could not end it by itself', () => {
    const fixed = (fields: string) =>
      issuesOf(minimal.replace('durationSeconds: 10', `durationSeconds: 10\n    ${fields}`));
    expect(fixed('messageCount: 100\n    totalBytes: 1000').map((issue) => issue.path)).toEqual([
      'workloads[0].totalBytes',
    ]);
    expect(
      issuesOf(minimal.replace('messageSizeBytes: 150', 'messageSizeBytes: 0\n    totalBytes: 1000')).map(
        (issue) => issue.path,
      ),
    ).toEqual(['workloads[0].totalBytes']);
    expect(fixed('messageCount: 100\n    producers: 3\n    queues: 3\n    consumers: 3')).toEqual([
      expect.objectContaining({
        path: 'workloads[0].messageCount',
        message: expect.stringContaining('multiple of producers (3)'),
      }),
    ]);
    expect(fixed('messageCount: 100\n    consumers: 2')).toEqual([
      expect.objectContaining({
        path: 'workloads[0].consumers',
        message: expect.stringContaining('exactly one consumer (consumers = queues = 1)'),
      }),
    ]);
    expect(fixed('messageCount: 120\n    producers: 3\n    queues: 2\n    consumers: 2')).toEqual([
      expect.objectContaining({
        path: 'workloads[0].producers',
        message: expect.stringContaining('multiple of queues'),
      }),
    ]);
    expect(fixed('messageCount: 100\n    producers: 0\n    consumers: 1')).toEqual([
      expect.objectContaining({ path: 'workloads[0].producers', value: 0 }),
    ]);
  });

  test('totalBytes becomes a message count rounded up to a multiple of the producers (seed 004: 7 GB per test)', () => {
    expect(fixedMessageCount({ totalBytes: 7_000_000_000, messageSizeBytes: 1000, producers: 3 })).toBe(7_000_002);
    expect(fixedMessageCount({ totalBytes: 7_000_000_000, messageSizeBytes: 100, producers: 5 })).toBe(70_000_000);
    expect(fixedMessageCount({ messageCount: 42, messageSizeBytes: 100, producers: 1 })).toBe(42);
    expect(fixedMessageCount({ messageSizeBytes: 100, producers: 1 })).toBeUndefined();
    const plan = parsePlanText(
      minimal
        .replace('messageSizeBytes: 150', 'messageSizeBytes: 1000')
        .replace(
          'durationSeconds: 10',
          'durationSeconds: 600\n    totalBytes: 7000000000\n    producers: 3\n    queues: 3\n    consumers: 3',
        ),
      'seed-004.yaml',
    );
    expect(plan.scenarios).toHaveLength(1);
  });

  test(
    'a workload that names its clusters runs only on them; ' +
      'unknown names and clusters without a workload are refused by field',
    () => {
      const plan = parsePlanText(
        'name: pairs\nclusters:\n  - { name: a, nodes: 1 }\n  - { name: b, nodes: 3 }\nworkloads:\n' +
          '  - { name: everywhere, durationSeconds: 5 }\n  - { name: only-b, durationSeconds: 5, clusters: [b] }\n',
        'pairs.yaml',
      );
      expect(plan.scenarios.map((scenario) => scenario.id)).toEqual(['a/everywhere', 'b/everywhere', 'b/only-b']);
      expect(plan.scenarios[2]!.workload).not.toHaveProperty('clusters');
      expect(
        issuesOf(
          'name: pairs\nclusters:\n  - { name: a, nodes: 1 }\n  - { name: b, nodes: 3 }\n' +
            'workloads:\n  - { name: w, durationSeconds: 5, clusters: [a, c] }\n',
        ),
      ).toEqual([
        { path: 'workloads[0].clusters[1]', message: 'no plan cluster is named "c"; clusters: a, b', value: 'c' },
        {
          path: 'clusters[1]',
          message: 'no workload runs on cluster "b": add it to a workload\'s clusters or remove it',
          value: 'b',
        },
      ]);
    },
  );

  test('a sweep over the exchange names each scenario by the exchange type', () => {
    const plan = parsePlanText(
      minimal.replace(
        'durationSeconds: 10',
        'durationSeconds: 10\n    sweep: { exchange: [{ type: direct }, { type: fanout }] }',
      ),
      'sweep.yaml',
    );
    expect(plan.scenarios.map((scenario) => scenario.id)).toEqual([
      'three/small@exchange=direct',
      'three/small@exchange=fanout',
    ]);
  });

  test('every problem is reported at once, and the message names the file', () => {
    const text = minimal.replace('nodes: 3', 'nodes: 0').replace('durationSeconds: 10', 'durationSeconds: 0');
    expect(() => parsePlanText(text, 'broken.yaml')).toThrow(
      /broken\.yaml.*clusters\[0\]\.nodes.*workloads\[0\]\.durationSeconds/,
    );
  });

  test('schema errors and the semantic problems of the parts that do parse are all reported in one go', () => {
    const issues = issuesOf(`
name: My Plan
clusters:
  - { name: c1, nodes: 3, rabbitmqVersion: "4.0", topology: { type: mirrored, mirrorTo: 5 }, conection: lb }
workloads:
  - { name: w, producers: 1, queues: 2, sweep: { durationSeconds: [10, -5] } }
`);
    expect(issues.map((issue) => issue.path).sort()).toEqual([
      'clusters[0].conection',
      'clusters[0].topology.mirrorTo',
      'clusters[0].topology.type',
      'name',
      'workloads[0].consumers',
      'workloads[0].producers',
      'workloads[0].sweep.durationSeconds[1]',
    ]);
  });

  test('replication beyond the node count and a follower on one node are rejected', () => {
    const issues = issuesOf(
      minimal
        .replace('nodes: 3', 'nodes: 1\n    connection: follower')
        .replace('{ type: quorum }', '{ type: quorum, replicationFactor: 3 }'),
    );
    expect(issues.map((i) => i.path).sort()).toEqual([
      'clusters[0].connection',
      'clusters[0].topology.replicationFactor',
    ]);
  });

  test('YAML syntax errors are reported as plan errors', () => {
    expect(() => parsePlanText('name: [unclosed', 'bad.yaml')).toThrow(PlanValidationError);
  });

  test('every built-in plan is valid', () => {
    const dir = join(__dirname, '../../plans');
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const file of files) {
      const plan = parsePlanText(readFileSync(join(dir, file), 'utf8'), file);
      expect(plan.name).toBe(file.replace(/\.yaml$/, ''));
    }
  });
});

describe('fault field', () => {
  const withFault = (fault: string, duration = 10) =>
    minimal.replace('durationSeconds: 10', `durationSeconds: ${duration}\n    fault: ${fault}`);

  test('a fault with its times inside the repetition is accepted as written', () => {
    const plan = parsePlanText(
      withFault('{ action: kill, node: leader, atSeconds: 4, healAtSeconds: 7 }'),
      'fault.yaml',
    );
    expect(plan.scenarios[0]!.workload.fault).toEqual({
      action: 'kill',
      node: 'leader',
      atSeconds: 4,
      healAtSeconds: 7,
    });
  });

  test('atSeconds at or after durationSeconds is refused by field', () => {
    expect(issuesOf(withFault('{ action: kill, node: leader, atSeconds: 10 }'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.atSeconds',
        value: 10,
        message: expect.stringMatching(/less than durationSeconds \(10\)/),
      }),
    ]);
  });

  test('healAtSeconds must come after atSeconds and before the end', () => {
    expect(issuesOf(withFault('{ action: stop, node: 1, atSeconds: 5, healAtSeconds: 5 }'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.healAtSeconds',
        message: expect.stringMatching(/greater than atSeconds \(5\)/),
      }),
    ]);
    expect(issuesOf(withFault('{ action: stop, node: 1, atSeconds: 5, healAtSeconds: 12 }'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.healAtSeconds',
        message: expect.stringMatching(/less than durationSeconds/),
      }),
    ]);
  });

  test('a restart with healAtSeconds is refused: it heals itself', () => {
    expect(issuesOf(withFault('{ action: restart, node: 0, atSeconds: 3, healAtSeconds: 6 }'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.healAtSeconds',
        message: expect.stringMatching(/restart starts the node again/),
      }),
    ]);
  });

  test('a node index beyond the cluster is refused with the valid range', () => {
    expect(issuesOf(withFault('{ action: kill, node: 3, atSeconds: 3 }'))).toEqual([
      expect.objectContaining({
        path: 'workloads[0].fault.node',
        value: 3,
        message: expect.stringMatching(/3 node\(s\), numbered from 0 to 2/),
      }),
    ]);
  });

  test('an unknown action names the field and the allowed actions', () => {
    const [issue] = issuesOf(withFault('{ action: explode, node: leader, atSeconds: 3 }'));
    expect(issue).toMatchObject({ path: 'workloads[0].fault.action', value: 'explode' });
    expect(issue!.message).toMatch(/kill.*stop.*restart.*partition/);
  });

  test('a follower fault on a single-node cluster is refused', () => {
    expect(
      issuesOf(withFault('{ action: kill, node: follower, atSeconds: 3 }').replace('nodes: 3', 'nodes: 1')),
    ).toEqual([
      expect.objectContaining({ path: 'workloads[0].fault.node', message: expect.stringMatching(/no follower/) }),
    ]);
  });
});

describe('repetitions: a number, or adaptive { min, max, ciPercent }', () => {
  const withRepetitions = (value: string) => minimal.replace('name: demo', `name: demo\nrepetitions: ${value}`);

  test('a plain number means exactly that many (no rule); the object form is kept as max plus the rule', () => {
    const plain = parsePlanText(withRepetitions('3'), 'plain.yaml');
    expect(plain.repetitions).toBe(3);
    expect(plain.adaptiveRepetitions).toBeUndefined();
    const adaptive = parsePlanText(withRepetitions('{ min: 2, max: 5, ciPercent: 5 }'), 'adaptive.yaml');
    expect(adaptive.repetitions).toBe(5);
    expect(adaptive.adaptiveRepetitions).toEqual({ min: 2, max: 5, ciPercent: 5 });
  });

  test('the schedule checks only the repetitions past min, and the plan data gives the rule back as written', () => {
    const adaptive = parsePlanText(withRepetitions('{ min: 2, max: 4, ciPercent: 50 }'), 'adaptive.yaml');
    const schedule = buildSchedule({ plan: planData(adaptive), target: 'local', runId: 'r' }, 'e');
    expect(schedule.totalRepetitions).toBe(4);
    expect(schedule.clusters[0]!.repetitions.map((item) => [item.repetition, item.settledCheck])).toEqual([
      [1, undefined],
      [2, undefined],
      [3, { min: 2, ciPercent: 50 }],
      [4, { min: 2, ciPercent: 50 }],
    ]);
    expect((schedule.plan as { repetitions: unknown }).repetitions).toEqual({ min: 2, max: 4, ciPercent: 50 });
    const plain = parsePlanText(withRepetitions('2'), 'plain.yaml');
    const plainSchedule = buildSchedule({ plan: planData(plain), target: 'local', runId: 'r' }, 'e');
    expect(plainSchedule.clusters[0]!.repetitions.every((item) => item.settledCheck === undefined)).toBe(true);
    expect((plainSchedule.plan as { repetitions: unknown }).repetitions).toBe(2);
  });

  test.each([
    ['{ min: 1, max: 5, ciPercent: 5 }', 'repetitions.min', 'must be at least 2: a confidence interval needs two'],
    ['{ min: 4, max: 3, ciPercent: 5 }', 'repetitions.max', 'must be at least min (4)'],
    ['{ min: 2, max: 5, ciPercent: 0 }', 'repetitions.ciPercent', 'must be above 0'],
    ['{ min: 2, max: 5, ciPercent: 100 }', 'repetitions.ciPercent', 'must be below 100'],
    ['{ min: 2, max: 101, ciPercent: 5 }', 'repetitions.max', 'Too big'],
    ['{ min: 2, max: 5 }', 'repetitions.ciPercent', 'required field missing (expected a number)'],
    ['{ min: 2, max: 5, ciPercent: 5, mx: 3 }', 'repetitions.mx', 'unknown field'],
    ['many', 'repetitions', 'expected a number of repetitions (1 to 100) or { min, max, ciPercent }'],
    ['0', 'repetitions', 'Too small'],
  ])('repetitions: %s is refused at %s', (value, path, message) => {
    const issues = issuesOf(withRepetitions(value));
    expect(issues).toContainEqual(expect.objectContaining({ path, message: expect.stringContaining(message) }));
  });
});
