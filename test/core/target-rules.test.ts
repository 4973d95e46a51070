import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AZURE_VM_SIZES } from '../../core/cost/azure-vm-sizes';
import { azurePlanClusterParameters } from '../../core/cloud/azure-cloud-init';
import { generateBrokerConfig, policyCommandArgs } from '../../core/broker/broker-config';
import { DEFAULT_CLOUD_RABBITMQ_VERSION } from '../../core/cloud/cloud-releases';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { estimateRun } from '../../core/cost/estimate';
import { PlanValidationError } from '../../core/plan/errors';
import { validatePlan } from '../../core/plan/plan';
import {
  assertPlanRunsOnTarget,
  azureVmSize,
  catalogInstanceType,
  isArmInstanceType,
  targetProblems,
} from '../../core/plan/target-rules';
import { buildSchedule } from '../../state-machines/schedule';

const planWith = (clusters: Record<string, unknown>[]) =>
  validatePlan(
    {
      name: 'p',
      clusters: clusters.map((cluster, index) => ({ name: `c${index}`, nodes: 3, ...cluster })),
      workloads: [{ name: 'w', durationSeconds: 10 }],
    },
    'test',
  );

describe('what a cloud target needs from a plan', () => {
  test('every cluster of an aws or azure plan names its instance type; the local target does not need one', () => {
    const plan = planWith([{}, { instanceType: 'c5.xlarge' }]);
    expect(targetProblems(plan, 'local', defaultPriceCatalog)).toEqual([]);
    const [missing, ...rest] = targetProblems(plan, 'aws', defaultPriceCatalog);
    expect(rest).toEqual([]);
    expect(missing!.path).toBe('clusters[0].instanceType');
    expect(missing!.message).toMatch(
      new RegExp(
        String.raw`^target aws needs the nodes' instance type \(e\.g\. "c5\.xlarge", or one per target: \{ ` +
          String.raw`aws: c5\.xlarge, azure: Standard_F4s_v2 \}\), so that the run can be priced; the price ` +
          String.raw`catalog knows c5\.2xlarge, .*t3\.xlarge$`,
      ),
    );
  });

  const faultPlan = (fault: Record<string, unknown>) =>
    validatePlan(
      {
        name: 'p',
        clusters: [{ name: 'c', nodes: 3, instanceType: 'c5.xlarge' }],
        workloads: [{ name: 'w', durationSeconds: 120, fault }],
      },
      'test',
    );

  test(
    'the local target refuses a partition fault by field (so `rmqbench ' +
      'validate` says so before a run starts) and takes kill, stop and restart',
    () => {
      expect(
        targetProblems(
          faultPlan({ action: 'partition', node: 'follower', atSeconds: 3, healAtSeconds: 6 }),
          'local',
          defaultPriceCatalog,
        ),
      ).toEqual([
        {
          path: 'workloads[0].fault.action',
          value: 'partition',
          message: expect.stringMatching(
            /^fault action "partition" is not available on the local target: its nodes share the loopback interface/,
          ),
        },
      ]);
      for (const action of ['kill', 'stop', 'restart'])
        expect(
          targetProblems(faultPlan({ action, node: 'leader', atSeconds: 5 }), 'local', defaultPriceCatalog),
        ).toEqual([]);
    },
  );

  test(
    'aws runs kill, stop, restart and partition faults ' + "that heal (partition through the node's own firewall)",
    () => {
      for (const action of ['kill', 'stop'])
        expect(
          targetProblems(
            faultPlan({ action, node: 'leader', atSeconds: 5, healAtSeconds: 8 }),
            'aws',
            defaultPriceCatalog,
          ),
        ).toEqual([]);
      // restart brings its node back by itself (the plan refuses healAtSeconds on it).
      expect(
        targetProblems(faultPlan({ action: 'restart', node: 1, atSeconds: 5 }), 'aws', defaultPriceCatalog),
      ).toEqual([]);
      expect(
        targetProblems(
          faultPlan({ action: 'partition', node: 'leader', atSeconds: 5, healAtSeconds: 80 }),
          'aws',
          defaultPriceCatalog,
        ),
      ).toEqual([]);
      // Healed before net_ticktime can have noticed it: refused, naming the earliest heal.
      expect(
        targetProblems(
          faultPlan({ action: 'partition', node: 'leader', atSeconds: 5, healAtSeconds: 8 }),
          'aws',
          defaultPriceCatalog,
        ),
      ).toEqual([
        {
          path: 'workloads[0].fault.healAtSeconds',
          value: 8,
          message:
            'a partition healed 3 s after atSeconds may end before the cluster ' +
            "notices it (RabbitMQ's net_ticktime of 60 s declares a node down " +
            'after 45 to 75 s); heal at least 75 s after atSeconds (healAtSeconds >= 80)',
        },
      ]);
      // A partition left standing would leave the next repetition a node short: it needs its heal like kill and stop.
      expect(
        targetProblems(faultPlan({ action: 'partition', node: 'leader', atSeconds: 5 }), 'aws', defaultPriceCatalog),
      ).toEqual([
        expect.objectContaining({
          path: 'workloads[0].fault.healAtSeconds',
          message: expect.stringMatching(
            /^on aws a partition fault needs healAtSeconds: the heal step is what removes the partition/,
          ),
        }),
      ]);
    },
  );

  test(
    'on aws a kill or stop without healAtSeconds is refused by field: ' +
      'the next repetition would run on a cluster missing a node',
    () => {
      expect(
        targetProblems(faultPlan({ action: 'kill', node: 'leader', atSeconds: 5 }), 'aws', defaultPriceCatalog),
      ).toEqual([
        expect.objectContaining({
          path: 'workloads[0].fault.healAtSeconds',
          message: expect.stringMatching(/^on aws a kill fault needs healAtSeconds/),
        }),
      ]);
      // The local target starts the node again after each repetition.
      expect(
        targetProblems(faultPlan({ action: 'kill', node: 'leader', atSeconds: 5 }), 'local', defaultPriceCatalog),
      ).toEqual([]);
    },
  );

  test('azure runs kill, stop, restart and partition faults too', () => {
    const onAzure = (plan: ReturnType<typeof faultPlan>) => ({
      ...plan,
      clusters: plan.clusters.map((cluster) => ({ ...cluster, instanceType: 'F4s_v2' })),
      scenarios: plan.scenarios.map((scenario) => ({
        ...scenario,
        cluster: { ...scenario.cluster, instanceType: 'F4s_v2' },
      })),
    });
    expect(
      targetProblems(
        onAzure(faultPlan({ action: 'kill', node: 'leader', atSeconds: 5, healAtSeconds: 8 })),
        'azure',
        defaultPriceCatalog,
      ),
    ).toEqual([]);
    expect(
      targetProblems(onAzure(faultPlan({ action: 'restart', node: 0, atSeconds: 5 })), 'azure', defaultPriceCatalog),
    ).toEqual([]);
    expect(
      targetProblems(
        onAzure(faultPlan({ action: 'partition', node: 'leader', atSeconds: 5, healAtSeconds: 80 })),
        'azure',
        defaultPriceCatalog,
      ),
    ).toEqual([]);
    expect(
      targetProblems(
        onAzure(faultPlan({ action: 'stop', node: 'leader', atSeconds: 5 })),
        'azure',
        defaultPriceCatalog,
      ).map((issue) => issue.path),
    ).toEqual(['workloads[0].fault.healAtSeconds']);
  });

  test(
    "azure refuses a fault whose Run Commands (20 s or more each) cannot land before the repetition's end, " +
      'naming the shortest durationSeconds; aws and local do not',
    () => {
      const onAzure = (fault: Record<string, unknown>, durationSeconds: number) =>
        validatePlan(
          {
            name: 'p',
            clusters: [{ name: 'c', nodes: 3, instanceType: 'Standard_F4s_v2' }],
            workloads: [{ name: 'w', durationSeconds, fault }],
          },
          'test',
        );
      const leader = { action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 25 };
      expect(targetProblems(onAzure(leader, 30), 'azure', defaultPriceCatalog)).toEqual([
        {
          path: 'workloads[0].durationSeconds',
          value: 30,
          message:
            "on azure the fault step's leader lookup and action are two Run Commands of about 20 s or more each " +
            "(Microsoft's minimum for a Run Command), so a fault at atSeconds 10 would land after the repetition " +
            'ends and count nothing: leave at least 45 s after atSeconds (durationSeconds >= 55)',
        },
      ]);
      expect(targetProblems(onAzure(leader, 55), 'azure', defaultPriceCatalog)).toEqual([]);
      // A node index needs no lookup: one Run Command.
      const byIndex = { action: 'kill', node: 1, atSeconds: 10, healAtSeconds: 25 };
      expect(targetProblems(onAzure(byIndex, 35), 'azure', defaultPriceCatalog)).toEqual([]);
      expect(targetProblems(onAzure(byIndex, 34), 'azure', defaultPriceCatalog)).toEqual([
        expect.objectContaining({ path: 'workloads[0].durationSeconds', message: expect.stringMatching(/>= 35\)$/) }),
      ]);
      expect(
        targetProblems(faultPlan({ ...leader, atSeconds: 100, healAtSeconds: 110 }), 'aws', defaultPriceCatalog),
      ).toEqual([]);
    },
  );

  test(
    'lazy queues are refused on the clouds, whose releases (3.13 and later) ignore the mode, ' +
      'naming the workload field; the local target decides by its installed version',
    () => {
      const plan = validatePlan(
        {
          name: 'p',
          clusters: [{ name: 'c', nodes: 3, instanceType: 'c5.xlarge', topology: { type: 'classic' } }],
          workloads: [
            { name: 'w', durationSeconds: 10 },
            { name: 'lazy', durationSeconds: 10, queueMode: 'lazy' },
          ],
        },
        'test',
      );
      for (const target of ['aws', 'azure']) {
        const issues = targetProblems(
          {
            ...plan,
            clusters: plan.clusters.map((cluster) => ({
              ...cluster,
              instanceType: target === 'aws' ? 'c5.xlarge' : 'F4s_v2',
            })),
            scenarios: plan.scenarios.map((scenario) => ({
              ...scenario,
              cluster: { ...scenario.cluster, instanceType: target === 'aws' ? 'c5.xlarge' : 'F4s_v2' },
            })),
          },
          target,
          defaultPriceCatalog,
        );
        expect(issues).toEqual([
          expect.objectContaining({
            path: 'workloads[1].queueMode',
            message: expect.stringContaining('ignores the lazy queue mode (3.12 and later)'),
          }),
        ]);
      }
      expect(targetProblems(plan, 'local', defaultPriceCatalog)).toEqual([]);
    },
  );

  test('an instance type the catalog does not price is refused by name, with the known ones', () => {
    const [issue] = targetProblems(planWith([{ instanceType: 'c5.mega' }]), 'aws', defaultPriceCatalog);
    expect(issue).toEqual({
      path: 'clusters[0].instanceType',
      value: 'c5.mega',
      message: expect.stringMatching(
        new RegExp(
          String.raw`^the price catalog shipped with rmqbench \(core\/data\/prices\.json\) has no aws price for ` +
            String.raw`this type, so the run could not be priced; known: c5\.2xlarge, `,
        ),
      ),
    });
    // An Azure size is not an AWS type, and the other way round.
    expect(targetProblems(planWith([{ instanceType: 'Standard_F4s' }]), 'aws', defaultPriceCatalog)).toHaveLength(1);
    expect(targetProblems(planWith([{ instanceType: 'c5.xlarge' }]), 'azure', defaultPriceCatalog)).toHaveLength(1);
  });

  test(
    'Azure sizes are accepted with or without the Standard_ ' +
      'prefix and in any case; the template gets its own spelling',
    () => {
      expect(
        targetProblems(
          planWith([{ instanceType: 'Standard_F4s_v2' }, { instanceType: 'd2s_v5' }]),
          'azure',
          defaultPriceCatalog,
        ),
      ).toEqual([]);
      expect(catalogInstanceType('azure', 'Standard_F4s_v2')).toBe('F4s_v2');
      expect(catalogInstanceType('azure', 'standard_d2s_v5')).toBe('D2s_v5');
      expect(catalogInstanceType('aws', 'c5.xlarge')).toBe('c5.xlarge');
      expect([azureVmSize('F4s_v2'), azureVmSize('standard_f4s_v2'), azureVmSize('Standard_F4s')]).toEqual([
        'Standard_F4s_v2',
        'Standard_F4s_v2',
        'Standard_F4s',
      ]);
    },
  );

  test(
    'a size the Azure templates do not deploy is refused by field, ' +
      "naming the allowed sizes; the thesis's F4s points at its successor",
    () => {
      const [thesis, other] = targetProblems(
        planWith([{ instanceType: 'F4s' }, { instanceType: 'Standard_E8s_v5' }]),
        'azure',
        defaultPriceCatalog,
      );
      expect(thesis).toEqual({
        path: 'clusters[0].instanceType',
        value: 'F4s',
        message:
          'is not a size the Azure target deploys (bicep/main.bicep clusterVmSize @allowed): use one of ' +
          `${AZURE_VM_SIZES.join(', ')}; the thesis's F4s is an Fs-series (v1) ` +
          `size, whose current successor is Standard_F4s_v2`,
      });
      expect(other).toMatchObject({
        path: 'clusters[1].instanceType',
        value: 'Standard_E8s_v5',
        message: expect.not.stringContaining('thesis'),
      });
    },
  );

  test(
    'every size the Azure templates deploy, and each ' + 'default load generator, is priced by the shipped catalog',
    () => {
      for (const size of AZURE_VM_SIZES) {
        expect(targetProblems(planWith([{ instanceType: size }]), 'azure', defaultPriceCatalog)).toEqual([]);
      }
      for (const provider of ['aws', 'azure'] as const) {
        const estimate = estimateRun(planWith([{ instanceType: provider === 'aws' ? 'c5.xlarge' : 'F4s_v2' }]), {
          target: provider,
          catalog: defaultPriceCatalog,
        });
        expect(estimate.parts.find((part) => part.name.endsWith('load generator'))).toMatchObject({ priced: true });
      }
    },
  );

  test.each([
    ['m6g.large', true],
    ['c7gn.xlarge', true],
    ['t4g.micro', true],
    ['is4gen.large', true],
    ['x2gd.xlarge', true],
    ['a1.large', true],
    ['c5.xlarge', false],
    ['m5a.large', false],
    ['r5dn.2xlarge', false],
    ['x2iedn.xlarge', false],
    ['m7i-flex.large', false],
    ['g4dn.xlarge', false],
  ])('%s is an Arm (Graviton) type: %s', (instanceType, arm) => {
    expect(isArmInstanceType(instanceType)).toBe(arm);
  });

  test('an Arm type on aws is refused before the catalog is asked, naming why', () => {
    const catalog = {
      ...defaultPriceCatalog,
      instances: [
        ...defaultPriceCatalog.instances,
        { ...defaultPriceCatalog.instances[0]!, instanceType: 'm6g.large' },
      ],
    };
    const [issue] = targetProblems(planWith([{ instanceType: 'm6g.large' }]), 'aws', catalog);
    expect(issue!.message).toMatch(
      /^is an Arm \(Graviton\) type, but Team RabbitMQ's RPM repositories provide x86-64 Erlang packages only/,
    );
  });

  test('the workflow refuses the same plan at ValidatePlan, before any cluster exists, naming every field', () => {
    const plan = {
      name: 'p',
      clusters: [
        { name: 'a', nodes: 3 },
        { name: 'b', nodes: 3, instanceType: 'z9.huge' },
      ],
      workloads: [{ name: 'w', durationSeconds: 10 }],
    };
    const error = (() => {
      try {
        buildSchedule({ plan, target: 'aws', runId: 'r' }, 'exec');
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(PlanValidationError);
    expect((error as PlanValidationError).issues.map((issue) => issue.path)).toEqual([
      'clusters[0].instanceType',
      'clusters[1].instanceType',
    ]);
    expect((error as Error).message).toMatch(
      /^invalid plan the execution input \(target aws\): clusters\[0\]\.instanceType: target aws needs/,
    );
    expect(() => buildSchedule({ plan, target: 'local', runId: 'r' }, 'exec')).not.toThrow();
    expect(() => assertPlanRunsOnTarget(validatePlan(plan, 'x'), 'local', defaultPriceCatalog, 'x')).not.toThrow();
  });

  test('two plan clusters that differ only in instance type are two scheduled clusters, each carrying its type', () => {
    const plan = {
      name: 'p',
      clusters: [
        { name: 'small', nodes: 3, instanceType: 'c5.xlarge' },
        { name: 'large', nodes: 3, instanceType: 'c5.2xlarge' },
      ],
      workloads: [{ name: 'w', durationSeconds: 10 }],
    };
    const schedule = buildSchedule({ plan, target: 'aws', runId: 'r' }, 'exec');
    expect(schedule.clusters.map((cluster) => [cluster.nodes, cluster.instanceType])).toEqual([
      [3, 'c5.xlarge'],
      [3, 'c5.2xlarge'],
    ]);
  });
});

describe('RabbitMQ versions on the cloud targets', () => {
  test('a version the target does not install is refused by field; mirrored queues need 3.x, also by default', () => {
    const plan = planWith([
      { instanceType: 'c5.xlarge', rabbitmqVersion: '3.12' },
      { instanceType: 'c5.xlarge', topology: { type: 'mirrored' } },
      { instanceType: 'c5.xlarge', rabbitmqVersion: '3.13', topology: { type: 'mirrored' } },
    ]);
    const issues = targetProblems(plan, 'aws', defaultPriceCatalog);
    expect(issues.map((issue) => [issue.path, issue.message])).toEqual([
      [
        'clusters[0].rabbitmqVersion',
        'target aws installs RabbitMQ 3.13.7 or 4.1.4, not 3.12 (give "major.minor" or the exact version)',
      ],
      [
        'clusters[1].topology.type',
        'classic queue mirroring was removed in RabbitMQ 4.0 and this cluster would run ' +
          '4.1.4 (the target\'s default): set rabbitmqVersion to "3.13" or use "quorum"',
      ],
    ]);
    // Azure's default release is 3.13.7 (main.bicep), where mirroring still exists.
    const azurePlan = planWith([{ instanceType: 'F4s_v2', topology: { type: 'mirrored' } }]);
    expect(targetProblems(azurePlan, 'azure', defaultPriceCatalog)).toEqual([]);
  });

  test(
    'an Azure plan cluster gets its own version and broker ' + "configuration, the generator's output for its topology",
    () => {
      const quorum = azurePlanClusterParameters({
        nodes: 5,
        topology: { type: 'quorum', replicationFactor: 3 },
        rabbitmqVersion: '4.1',
      });
      const expected = generateBrokerConfig({
        topology: { type: 'quorum', replicationFactor: 3 },
        rabbitmqVersion: '4.1.4',
        peerDiscovery: { backend: 'external' },
        nodeCount: 5,
      });
      expect(quorum).toEqual({
        rabbitmqVersion: '4.1.4',
        rabbitmqConf: expected.rabbitmqConf,
        enabledPluginsFile: expected.enabledPluginsFile,
        policyCommandsJson: JSON.stringify(expected.policies.map(policyCommandArgs)),
      });
      expect(
        azurePlanClusterParameters({ nodes: 3, topology: { type: 'mirrored', mirrorTo: 2 } }).rabbitmqVersion,
      ).toBe('3.13.7');
      expect(
        JSON.parse(
          azurePlanClusterParameters({ nodes: 3, topology: { type: 'mirrored', mirrorTo: 2 } }).policyCommandsJson,
        ),
      ).toEqual([
        expect.arrayContaining(['set_policy', '{"ha-mode":"exactly","ha-params":2,"ha-sync-mode":"automatic"}']),
      ]);
      expect(() =>
        azurePlanClusterParameters({
          nodes: 3,
          topology: { type: 'mirrored', mirrorTo: 'all' },
          rabbitmqVersion: '4.1',
        }),
      ).toThrow(/classic queue mirroring was removed in RabbitMQ 4\.0 and this cluster would run 4\.1\.4:/);
      expect(() =>
        azurePlanClusterParameters({ nodes: 3, topology: { type: 'quorum' }, rabbitmqVersion: '3.12' }),
      ).toThrow('target azure installs RabbitMQ 3.13.7 or 4.1.4, not 3.12');
    },
  );

  test("the Azure default is main.bicep's rabbitmqVersion default", () => {
    const bicep = readFileSync(join(__dirname, '../../bicep/main.bicep'), 'utf8');
    expect(/^param rabbitmqVersion string = '([^']+)'/m.exec(bicep)?.[1]).toBe(DEFAULT_CLOUD_RABBITMQ_VERSION.azure);
  });
});
