import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPriceCatalog, findInstancePrice } from '../../core/cost/cost-catalog';
import { catalogInstanceType } from '../../core/cost/instance-type-names';
import { estimateRun, wallMinutesOf } from '../../core/cost/estimate';
import { PlanValidationError } from '../../core/plan/errors';
import { parsePlanText, validatePlan } from '../../core/plan/plan';
import { onTarget, planOnTarget, regionOn } from '../../core/plan/plan-target';
import { targetProblems } from '../../core/plan/target-rules';
import { estimateCommand } from '../../bin/estimate-command';
import { pricingRegion } from '../../bin/cloud-commands';
import { checkBudget } from '../../bin/cloud-run-command';
import { buildSchedule, planData } from '../../state-machines/schedule';

/** Issue 26: one plan, every target. */
const planWith = (cluster: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name: 'every-target',
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, ...cluster }],
  workloads: [{ name: 'w', durationSeconds: 60 }],
  ...extra,
});
const perTarget = { instanceType: { aws: 'm5.xlarge', azure: 'Standard_F4s_v2' } };
const problems = (data: unknown, target: string) =>
  targetProblems(validatePlan(data, 'p.yaml'), target, defaultPriceCatalog).map((issue) => [issue.path, issue.message]);

describe('per-target cluster settings', () => {
  test('a per-target instanceType passes on each target it names, and a plain string keeps working', () => {
    expect(problems(planWith(perTarget), 'aws')).toEqual([]);
    expect(problems(planWith(perTarget), 'azure')).toEqual([]);
    expect(problems(planWith(perTarget), 'local')).toEqual([]);
    expect(problems(planWith({ instanceType: 'm5.xlarge' }), 'aws')).toEqual([]);
  });

  test('a target the map leaves out is named with the field, and so is a type that target cannot deploy', () => {
    expect(problems(planWith({ instanceType: { aws: 'm5.xlarge' } }), 'azure')).toEqual([
      ['clusters[0].instanceType.azure', expect.stringMatching(/^target azure needs the nodes' instance type/)],
    ]);
    expect(problems(planWith({ instanceType: { aws: 'm5.xlarge', azure: 'Standard_F4s' } }), 'azure')).toEqual([
      ['clusters[0].instanceType.azure', expect.stringContaining('Standard_F4s_v2')],
    ]);
    expect(problems(planWith({ instanceType: { aws: 'm6g.xlarge', azure: 'F4s_v2' } }), 'aws')).toEqual([
      ['clusters[0].instanceType.aws', expect.stringContaining('Arm (Graviton)')],
    ]);
  });

  test('an unknown target key and a malformed region are refused by the schema, by field', () => {
    expect(() => validatePlan(planWith({ instanceType: { gcp: 'n2-standard-4' } }), 'p.yaml')).toThrow(
      /clusters\[0\]\.instanceType/,
    );
    expect(() => validatePlan(planWith(perTarget, { region: 'Ireland' }), 'p.yaml')).toThrow(/region/);
  });

  test("a region in the other cloud's form is refused on the target it is read for", () => {
    expect(problems(planWith(perTarget, { region: 'northeurope' }), 'aws')).toEqual([
      ['region', expect.stringMatching(/^"northeurope" is not an AWS region code/)],
    ]);
    expect(problems(planWith(perTarget, { region: { aws: 'eu-west-1', azure: 'north-europe' } }), 'azure')).toEqual([
      ['region.azure', expect.stringMatching(/^"north-europe" is not an Azure location name/)],
    ]);
  });

  test('the plan resolved for a target has plain values and the same scenario ids; local keeps none', () => {
    const plan = validatePlan(planWith(perTarget, { region: { aws: 'eu-west-1', azure: 'northeurope' } }), 'p');
    const onAzure = planOnTarget(plan, 'azure');
    expect(onAzure.clusters[0]!.instanceType).toBe('Standard_F4s_v2');
    expect(onAzure.scenarios[0]!.cluster.instanceType).toBe('Standard_F4s_v2');
    expect(onAzure.region).toBe('northeurope');
    expect(onAzure.scenarios.map((scenario) => scenario.id)).toEqual(plan.scenarios.map((scenario) => scenario.id));
    const local = planOnTarget(plan, 'local');
    expect([local.clusters[0]!.instanceType, local.region]).toEqual([undefined, undefined]);
    expect(onTarget('eu-west-1', 'local')).toBeUndefined();
  });

  test('the workflow lays the run out with the resolved plan: later steps and the stored run see its values', () => {
    const input = { plan: planWith(perTarget, { region: { aws: 'eu-west-1' } }), target: 'aws' };
    const schedule = buildSchedule(input, 'exec', { aws: 'eu-west-1' });
    expect(schedule.clusters[0]!.instanceType).toBe('m5.xlarge');
    expect(schedule.plan).toMatchObject({ region: 'eu-west-1', clusters: [{ instanceType: 'm5.xlarge' }] });
    // The resolved plan validates again (the execution input of later states, the stored run record).
    expect(validatePlan(schedule.plan, 'again').clusters[0]!.instanceType).toBe('m5.xlarge');
    expect(buildSchedule({ ...input, target: 'local' }, 'exec').plan).not.toHaveProperty('region');
    // An unresolved plan's data round-trips as written.
    expect(planData(validatePlan(input.plan, 'p'))).toMatchObject({ clusters: [perTarget] });
  });

  test('a controller in another region refuses the plan, naming both regions and the field', () => {
    const input = { plan: planWith(perTarget, { region: { aws: 'eu-west-1' } }), target: 'aws' };
    let error: unknown;
    try {
      buildSchedule(input, 'exec', { aws: 'us-east-1' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PlanValidationError);
    expect((error as PlanValidationError).issues).toEqual([
      expect.objectContaining({
        path: 'region.aws',
        message: expect.stringContaining(
          'runs its clusters in eu-west-1, but this controller launches them in us-east-1',
        ),
      }),
    ]);
    // No region in the plan, or none known for the controller: no refusal.
    expect(() => buildSchedule({ ...input, plan: planWith(perTarget) }, 'exec', { aws: 'us-east-1' })).not.toThrow();
    expect(() => buildSchedule(input, 'exec')).not.toThrow();
  });

  test("the estimate prices each target's own type, in the plan's region for that target", () => {
    const plan = validatePlan(planWith(perTarget, { region: { aws: 'us-east-1', azure: 'northeurope' } }), 'p');
    const aws = estimateRun(plan, { target: 'aws', catalog: defaultPriceCatalog });
    const azure = estimateRun(plan, { target: 'azure', catalog: defaultPriceCatalog });
    expect(aws.clusters[0]!.instanceType).toBe('m5.xlarge');
    expect(azure.clusters[0]!.instanceType).toBe('Standard_F4s_v2');
    expect(aws.parts.find((part) => part.name === 'three: nodes')!.detail).toContain('(us-east-1,');
    expect(azure.parts.find((part) => part.name === 'three: nodes')!.detail).toContain('(northeurope,');
    // --region still wins over the plan's.
    const eastus = estimateRun(plan, { target: 'azure', catalog: defaultPriceCatalog, region: 'eastus' });
    expect(eastus.parts.find((part) => part.name === 'three: nodes')!.detail).toContain('(eastus,');
  });
});

describe('wall time beside cost', () => {
  test('clusters run concurrency at a time, each next one in the slot that frees first', () => {
    expect(wallMinutesOf([10, 10, 10, 10, 10], 4)).toBe(20);
    expect(wallMinutesOf([30, 10, 10, 10, 10], 2)).toBe(40);
    expect(wallMinutesOf([25], 4)).toBe(25);
    expect(wallMinutesOf([], 4)).toBe(0);
    expect(() => wallMinutesOf([1], 0)).toThrow(/at least 1/);
  });

  test("a plan's estimate carries its wall minutes with the controller's default concurrency", () => {
    const clusters = [1, 2, 3, 4, 5].map((n) => ({ name: `c${n}`, nodes: n, instanceType: 'm5.xlarge' }));
    const plan = validatePlan({ name: 'five', clusters, workloads: [{ name: 'w', durationSeconds: 60 }] }, 'p');
    const estimate = estimateRun(plan, { target: 'aws', catalog: defaultPriceCatalog });
    expect(estimate.clusterConcurrency).toBe(4);
    const minutes = estimate.clusters.map((cluster) => cluster.minutes);
    expect(estimate.wallMinutes).toBeCloseTo(minutes[0]! + minutes[4]!, 9);
    const one = estimateRun(plan, { target: 'aws', catalog: defaultPriceCatalog, clusterConcurrency: 1 });
    expect(one.wallMinutes).toBeCloseTo(
      minutes.reduce((sum, value) => sum + value, 0),
      9,
    );
  });

  test('several plans at once: each one, and their sums of cost and wall time', () => {
    const a = validatePlan(planWith(perTarget), 'a');
    const b = validatePlan({ ...planWith(perTarget), name: 'other', repetitions: 3 }, 'b');
    const result = estimateCommand([a, b], { target: 'aws', json: true, catalog: defaultPriceCatalog });
    const sum = JSON.parse(result.stdout) as {
      totalUsd: number;
      wallMinutes: number;
      complete: boolean;
      maxTotalUsd?: number;
      plans: { plan: string; totalUsd: number; wallMinutes: number; maxTotalUsd?: number }[];
    };
    expect(sum.plans.map((plan) => plan.plan)).toEqual(['every-target', 'other']);
    expect(sum.totalUsd).toBeCloseTo(sum.plans[0]!.totalUsd + sum.plans[1]!.totalUsd, 9);
    // Their ceilings (traffic at the load generators' line rate) sum too.
    expect(sum.maxTotalUsd).toBeCloseTo(sum.plans[0]!.maxTotalUsd! + sum.plans[1]!.maxTotalUsd!, 9);
    expect(sum.maxTotalUsd).toBeGreaterThan(sum.totalUsd);
    expect(sum.wallMinutes).toBeCloseTo(sum.plans[0]!.wallMinutes + sum.plans[1]!.wallMinutes, 9);
    const text = estimateCommand([a, b], { target: 'aws', json: false, catalog: defaultPriceCatalog }).stdout;
    expect(text).toMatch(/^estimated cost of 2 plans on aws, run one after another:\n/);
    expect(text).toMatch(/\n {2}total +\$\d+\.\d\d \(up to \$\d+\.\d\d\) /);
    const over = estimateCommand([a, b], { target: 'aws', json: false, catalog: defaultPriceCatalog, maxCost: '0.01' });
    expect([over.exitCode, over.error]).toEqual([1, expect.stringContaining('exceeds --max-cost $0.01')]);
    expect(() =>
      estimateCommand([a], { target: 'aws', json: false, catalog: defaultPriceCatalog, clusterConcurrency: '0' }),
    ).toThrow(/--cluster-concurrency must be a whole number from 1 to 40/);
  });
});

describe('a cluster for some targets only (`targets`)', () => {
  const matrix = {
    name: 'matrix',
    clusters: [
      { name: 'base', nodes: 3, instanceType: { aws: 'c5.xlarge', azure: 'Standard_F4s_v2' } },
      { name: 'aws-only', targets: ['aws'], nodes: 3, instanceType: 'm5.xlarge' },
      { name: 'clouds', targets: ['aws', 'azure'], nodes: 3, instanceType: { aws: 'c5.2xlarge', azure: 'F8s_v2' } },
    ],
    workloads: [{ name: 'w', durationSeconds: 60 }],
  };

  test('each target runs the clusters, and their scenarios, that name it (all when they name none)', () => {
    const plan = validatePlan(matrix, 'p.yaml');
    const on = (target: string) => planOnTarget(plan, target);
    expect(on('local').clusters.map((cluster) => cluster.name)).toEqual(['base']);
    expect(on('aws').scenarios.map((scenario) => scenario.id)).toEqual(['base/w', 'aws-only/w', 'clouds/w']);
    expect(on('azure').scenarios.map((scenario) => scenario.id)).toEqual(['base/w', 'clouds/w']);
    // Idempotent: the schedule validates and resolves the plan it stores again.
    expect(planOnTarget(on('aws'), 'aws').scenarios).toHaveLength(3);
    // An AWS-only cluster needs no Azure instance type, and every target passes.
    for (const target of ['local', 'aws', 'azure']) expect(problems(matrix, target)).toEqual([]);
    // The workflow's schedule (local and cloud alike) numbers only the clusters that run there.
    const schedule = buildSchedule({ plan: planData(plan), target: 'local' }, 'exec');
    expect(schedule.scenarioIds).toEqual(['base/w']);
    expect(buildSchedule({ plan: planData(plan), target: 'azure' }, 'exec').clusters).toHaveLength(2);
  });

  test('a plan none of whose clusters runs on a target is refused there, naming the field', () => {
    const cloudOnly = { ...matrix, clusters: matrix.clusters.slice(1) };
    expect(problems(cloudOnly, 'local')).toEqual([
      ['clusters', "no cluster runs on local (each one's targets leave it out)"],
    ]);
    expect(problems(cloudOnly, 'aws')).toEqual([]);
  });

  test.each([
    [[], 'expected at least one target'],
    [['aws', 'aws'], 'expected each target once'],
    [['gcp'], 'expected local, aws or azure'],
  ])('targets %j is refused by field: %s', (targets, message) => {
    const data = { ...matrix, clusters: [{ ...matrix.clusters[1], targets }] };
    expect(() => validatePlan(data, 'p.yaml')).toThrow(message);
    try {
      validatePlan(data, 'p.yaml');
    } catch (error) {
      expect((error as PlanValidationError).issues[0]!.path).toMatch(/^clusters\[0\]\.targets/);
    }
  });
});

describe("the built-in plans carry the seeds' machines", () => {
  const PLANS = join(__dirname, '../../plans');
  const builtIn = (name: string) => parsePlanText(readFileSync(join(PLANS, `${name}.yaml`), 'utf8'), `${name}.yaml`);
  const typesOn = (name: string, target: 'aws' | 'azure') =>
    [...new Set(planOnTarget(builtIn(name), target).clusters.map((cluster) => cluster.instanceType))].sort();
  /** The thesis's tables (seeds/000), with Azure's retired sizes replaced by their successors (see each plan). */
  const TABLES: Record<string, { aws: string[]; azure: string[]; region: { aws: string; azure: string } }> = {
    // Tables 4.2 / 4.3, high tier: r5.xlarge; A4m_v2 (4 vCPU, 32 GB) → Standard_E4s_v5.
    'thesis-ch4-lb-vs-direct': {
      aws: ['r5.xlarge'],
      azure: ['Standard_E4s_v5'],
      region: { aws: 'eu-west-1', azure: 'northeurope' },
    },
    // Tables 5.1 / 5.2: m5a.large and r5.xlarge; D2_v2 and D3_v2 → Standard_D2s_v5 and Standard_D4s_v5.
    'thesis-ch5-message-size': {
      aws: ['m5a.large', 'r5.xlarge'],
      azure: ['Standard_D2s_v5', 'Standard_D4s_v5'],
      region: { aws: 'eu-west-1', azure: 'northeurope' },
    },
    // Tables 6.2 (c5 and F4s/F8s/F16s → their Fsv2 successors) and 6.3 (m5 and t3, AWS only).
    'thesis-ch6-queue-count': {
      aws: [
        'c5.2xlarge',
        'c5.4xlarge',
        'c5.xlarge',
        'm5.2xlarge',
        'm5.4xlarge',
        'm5.xlarge',
        't3.2xlarge',
        't3.xlarge',
      ],
      azure: ['Standard_F16s_v2', 'Standard_F4s_v2', 'Standard_F8s_v2'],
      region: { aws: 'eu-west-1', azure: 'northeurope' },
    },
  };

  test.each(Object.keys(TABLES))("%s names its tables' instance types and regions on both clouds", (name) => {
    const table = TABLES[name]!;
    expect(typesOn(name, 'aws')).toEqual(table.aws);
    expect(typesOn(name, 'azure')).toEqual(table.azure);
    expect([regionOn(builtIn(name), 'aws'), regionOn(builtIn(name), 'azure')]).toEqual([
      table.region.aws,
      table.region.azure,
    ]);
  });

  test.each(Object.keys(TABLES))('%s runs on aws and azure as shipped, and locally as before', (name) => {
    expect(problems(planData(builtIn(name)), 'aws')).toEqual([]);
    expect(problems(planData(builtIn(name)), 'azure')).toEqual([]);
    expect(problems(planData(builtIn(name)), 'local')).toEqual([]);
  });

  test.each(Object.keys(TABLES))(
    "every instance type %s names is priced in the plan's region on each cloud, with a dated source",
    (name) => {
      for (const target of ['aws', 'azure'] as const) {
        const plan = planOnTarget(builtIn(name), target);
        for (const cluster of plan.clusters) {
          const price = findInstancePrice(defaultPriceCatalog, {
            provider: target,
            instanceType: catalogInstanceType(target, cluster.instanceType as string),
            region: plan.region as string,
          });
          expect(price.source).not.toMatch(/^thesis/);
          expect(price.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        }
        // The nodes and the load generator are priced; what is left unpriced is named (the eu-west-1 NLB).
        const estimate = estimateRun(plan, { target, catalog: defaultPriceCatalog });
        const unpriced = estimate.parts.filter((part) => !part.priced).map((part) => part.name);
        expect(unpriced.filter((part) => /: (nodes|load generator)$/.test(part))).toEqual([]);
      }
    },
  );
});

describe('every built-in plan runs on every target as shipped', () => {
  const PLANS = join(__dirname, '../../plans');
  const names = readdirSync(PLANS)
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => file.replace(/\.yaml$/, ''));

  test.each(names)('%s: no problem on aws, azure or local', (name) => {
    const plan = parsePlanText(readFileSync(join(PLANS, `${name}.yaml`), 'utf8'), `${name}.yaml`);
    for (const target of ['aws', 'azure', 'local']) {
      expect({ target, problems: targetProblems(plan, target, defaultPriceCatalog) }).toEqual({ target, problems: [] });
    }
  });

  test.each(names)('%s: priced in full on aws and azure (complete, every part priced)', (name) => {
    const plan = parsePlanText(readFileSync(join(PLANS, `${name}.yaml`), 'utf8'), `${name}.yaml`);
    for (const target of ['aws', 'azure'] as const) {
      const estimate = estimateRun(plan, { target, catalog: defaultPriceCatalog });
      const unpriced = estimate.parts.filter((part) => !part.priced);
      expect({ target, complete: estimate.complete, unpriced }).toEqual({ target, complete: true, unpriced: [] });
      expect(estimate.wallMinutes).toBeGreaterThan(0);
      expect(estimate.maxTotalUsd ?? estimate.totalUsd).toBeGreaterThanOrEqual(estimate.totalUsd);
    }
  });
});

describe('a per-target RabbitMQ version', () => {
  const mirrored = planWith({
    topology: { type: 'mirrored', mirrorTo: 'all' },
    instanceType: 'm5.xlarge',
    rabbitmqVersion: { aws: '3.13' },
  });

  test("pins the cloud it names (AWS's default 4.1 has no mirroring) and leaves the local target its own", () => {
    const plan = validatePlan(mirrored, 'p');
    expect(planOnTarget(plan, 'aws').clusters[0]!.rabbitmqVersion).toBe('3.13');
    expect(planOnTarget(plan, 'local').clusters[0]!.rabbitmqVersion).toBeUndefined();
    expect(problems(mirrored, 'aws')).toEqual([]);
    const without = { ...mirrored, clusters: [{ ...mirrored.clusters[0], rabbitmqVersion: { azure: '3.13' } }] };
    expect(problems(without, 'aws')).toEqual([
      ['clusters[0].topology.type', expect.stringContaining("would run 4.1.4 (the target's default)")],
    ]);
  });

  test('a version the cloud does not install is named with its target; a 4.x mirrored one is refused', () => {
    const odd = { ...mirrored, clusters: [{ ...mirrored.clusters[0], rabbitmqVersion: { aws: '3.12' } }] };
    expect(problems(odd, 'aws')).toEqual([['clusters[0].rabbitmqVersion.aws', expect.stringContaining('not 3.12')]]);
    const four = { ...mirrored, clusters: [{ ...mirrored.clusters[0], rabbitmqVersion: { azure: '4.1' } }] };
    expect(() => validatePlan(four, 'p')).toThrow(
      /mirroring was removed in RabbitMQ 4\.0 and this cluster asks for 4\.1/,
    );
  });
});

describe('where `run --target` prices a cloud run before it starts', () => {
  const plan = validatePlan(planWith(perTarget, { region: { aws: 'eu-west-1', azure: 'northeurope' } }), 'p');

  test("aws: the controller's region, and a plan for another region is refused before anything starts", () => {
    expect(pricingRegion(plan, 'aws', 'eu-west-1')).toBe('eu-west-1');
    expect(() => pricingRegion(plan, 'aws', 'us-east-1')).toThrow(
      'the plan runs its clusters in eu-west-1 (region.aws), but the controller is in us-east-1',
    );
    expect(pricingRegion(validatePlan(planWith(perTarget), 'p'), 'aws', 'us-east-1')).toBe('us-east-1');
  });

  test("azure: never the controller's AWS region (the plan's azure region prices it), so the nodes are priced", () => {
    expect(pricingRegion(plan, 'azure', 'us-east-1')).toBeUndefined();
    const estimate = checkBudget(
      plan,
      'azure',
      defaultPriceCatalog,
      undefined,
      pricingRegion(plan, 'azure', 'us-east-1'),
    );
    expect(estimate.stdout).toMatch(
      /three: nodes +\$ +\d+\.\d\d {2}3 × Standard_F4s_v2 × [\d.]+ min at \$[\d.]+\/h \(northeurope,/,
    );
  });
});
