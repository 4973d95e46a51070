import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { PlanValidationError } from '../../core/plan/errors';
import { BOOT_DOWNLOAD_GB_PER_VM, budgetProblem, estimateRun, stateTransitions } from '../../core/cost/estimate';
import { parsePlanText, validatePlan } from '../../core/plan/plan';
import { targetProblems } from '../../core/plan/target-rules';
import { buildSchedule } from '../../state-machines/schedule';

/** The thesis's chapter-4 plan as an aws run: each cluster on c5.xlarge, in no particular region. */
function thesisCh4OnAws(extra: Record<string, unknown> = {}) {
  const text = readFileSync(join(__dirname, '../../plans/thesis-ch4-lb-vs-direct.yaml'), 'utf8')
    .replace(/instanceType: \{[^}]*\}/g, 'instanceType: c5.xlarge')
    .replace(/^region: .*\n/m, '');
  const plan = parsePlanText(text, 'thesis-ch4');
  return validatePlan(
    { ...Object.fromEntries(Object.entries(plan).filter(([key]) => key !== 'scenarios')), ...extra },
    'thesis-ch4',
  );
}

describe('rmqbench estimate: the cost of a cloud run before it starts', () => {
  test('a cluster with loadGenerators: 3 pays for three load generators, and nothing else changes', () => {
    const text = (extra: string) => `
name: lg
clusters:
  - { name: c, nodes: 3, instanceType: c5.xlarge${extra} }
workloads:
  - { name: w, producers: 6, consumers: 6, queues: 6, durationSeconds: 60 }
`;
    const options = { target: 'aws' as const, catalog: defaultPriceCatalog, region: 'us-east-1' };
    const one = estimateRun(parsePlanText(text(''), 'lg.yaml'), options);
    const three = estimateRun(parsePlanText(text(', loadGenerators: 3'), 'lg.yaml'), options);
    const part = (estimate: typeof one, name: string) => estimate.parts.find((candidate) => candidate.name === name)!;
    expect(part(three, 'c: load generator').usd).toBeCloseTo(3 * part(one, 'c: load generator').usd, 9);
    expect(part(three, 'c: load generator').detail).toMatch(/^3 × c5n\.4xlarge × /);
    expect(part(three, 'c: nodes').usd).toBe(part(one, 'c: nodes').usd);
  });

  describe('the NAT gateway: what the VMs download at boot, and on Azure its hours and public addresses', () => {
    const plan = (broker = '', instanceType = 'c5.xlarge') => `
name: nat
clusters:
  - { name: c, nodes: 3, instanceType: ${instanceType}, loadGenerators: 2${broker} }
workloads:
  - { name: w, producers: 2, consumers: 2, queues: 2, durationSeconds: 60, publishRateLimit: 100 }
`;
    const part = (estimate: ReturnType<typeof estimateRun>) =>
      estimate.parts.find((candidate) => candidate.name === 'c: NAT gateway')!;
    const hoursOf = (estimate: ReturnType<typeof estimateRun>) => estimate.clusters[0]!.minutes / 60;

    test("aws: the 5 VMs' boot downloads at $0.045/GB; the hours are the controller's standing NAT gateway", () => {
      const estimate = estimateRun(parsePlanText(plan(), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
      });
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(5 * BOOT_DOWNLOAD_GB_PER_VM * 0.045, 9),
      });
      expect(part(estimate).detail).toMatch(/controller's NAT gateway, whose hours are the controller's/);
    });

    test("azure: the run's own NAT gateway for the cluster's minutes, the downloads and two public addresses", () => {
      const estimate = estimateRun(parsePlanText(plan('', 'Standard_D4s_v5'), 'p.yaml'), {
        target: 'azure',
        catalog: defaultPriceCatalog,
        region: 'northeurope',
      });
      const hours = hoursOf(estimate);
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(0.045 * hours + 5 * BOOT_DOWNLOAD_GB_PER_VM * 0.045 + 2 * 0.005 * hours, 9),
      });
    });

    test('a catalog without NAT gateway prices leaves the part unpriced and the estimate incomplete', () => {
      const catalog = { ...defaultPriceCatalog, natGateways: [] };
      const estimate = estimateRun(parsePlanText(plan(), 'p.yaml'), { target: 'aws', catalog, region: 'us-east-1' });
      expect(part(estimate)).toMatchObject({ priced: false, usd: 0 });
      expect(part(estimate).detail).toBe('no aws NAT gateway price in the catalog for us-east-1');
      expect(estimate.complete).toBe(false);
    });
  });

  test('on azure too, loadGenerators: 3 prices three load generator VMs (the loadgen module deploys as many)', () => {
    const text = (extra: string) => `
name: lg
clusters:
  - { name: c, nodes: 3, instanceType: Standard_D2s_v5${extra} }
workloads:
  - { name: w, producers: 6, consumers: 6, queues: 6, durationSeconds: 60 }
`;
    const options = { target: 'azure' as const, catalog: defaultPriceCatalog, region: 'eastus' };
    const one = estimateRun(parsePlanText(text(''), 'lg.yaml'), options);
    const three = estimateRun(parsePlanText(text(', loadGenerators: 3'), 'lg.yaml'), options);
    const part = (estimate: typeof one) => estimate.parts.find((candidate) => candidate.name === 'c: load generator')!;
    expect(part(one).priced).toBe(true);
    expect(part(one).usd).toBeGreaterThan(0);
    expect(part(three).usd).toBeCloseTo(3 * part(one).usd, 9);
    expect(part(three).detail).toMatch(/^3 × F16s_v2 × /);
  });

  test('adaptive repetitions: the estimate counts max and shows the run at min (every scenario settled early)', () => {
    const text = (repetitions: string) => `
name: adaptive
repetitions: ${repetitions}
clusters:
  - { name: c, nodes: 3, instanceType: c5.xlarge }
workloads:
  - { name: w, durationSeconds: 60 }
`;
    const options = { target: 'aws' as const, catalog: defaultPriceCatalog, region: 'us-east-1' };
    const adaptive = estimateRun(parsePlanText(text('{ min: 2, max: 5, ciPercent: 5 }'), 'a.yaml'), options);
    const five = estimateRun(parsePlanText(text('5'), 'a.yaml'), options);
    const two = estimateRun(parsePlanText(text('2'), 'a.yaml'), options);
    // The cluster's minutes and cost are those of 5 repetitions; only the workflow records more (the checks past min).
    expect(adaptive.clusters).toEqual(five.clusters);
    expect(adaptive.stateTransitions).toBe(five.stateTransitions + 2 * 3);
    expect(adaptive.totalUsd).toBeGreaterThan(five.totalUsd);
    expect(adaptive.totalUsd - five.totalUsd).toBeLessThan(0.001);
    expect(adaptive.adaptiveRepetitions).toEqual({
      min: 2,
      max: 5,
      ciPercent: 5,
      minimumUsd: two.totalUsd,
      minimumWallMinutes: two.wallMinutes,
    });
    expect(two.totalUsd).toBeLessThan(five.totalUsd);
    expect(five.adaptiveRepetitions).toBeUndefined();
  });

  describe("the load balancer: its hours and the traffic it processes (the catalog's per-GB charge)", () => {
    // 2 producers × 500 msg/s × 1,000 B × 60 s × 2 repetitions = 0.12 GB published through the load balancer, and
    // as much delivered out of it to the consumers: 0.24 GB processed.
    const plan = (limit: string, connection = 'lb') => `
name: lbgb
repetitions: 2
clusters:
  - { name: c, nodes: 3, instanceType: c5.xlarge, connection: ${connection} }
workloads:
  - { name: w, producers: 2, consumers: 2, messageSizeBytes: 1000, durationSeconds: 60${limit} }
`;
    const part = (estimate: ReturnType<typeof estimateRun>) =>
      estimate.parts.find((candidate) => candidate.name === 'c: load balancer')!;
    const minutesOf = (estimate: ReturnType<typeof estimateRun>) => estimate.clusters[0]!.minutes;

    test('aws, rate-limited: the NLB hour plus 0.24 GB at $0.006 (NLCU by processed bytes)', () => {
      const estimate = estimateRun(parsePlanText(plan(', publishRateLimit: 500'), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
      });
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(0.0225 * (minutesOf(estimate) / 60) + 0.24 * 0.006, 9),
      });
      expect(part(estimate).detail).toMatch(/\+ 0\.24 GB of planned traffic processed at \$0\.006\/GB/);
    });

    test('azure: two load balancers (internal and the public one for the controller) and $0.005 per GB', () => {
      const estimate = estimateRun(
        parsePlanText(plan(', publishRateLimit: 500').replace('c5.xlarge', 'Standard_D4s_v5'), 'p.yaml'),
        {
          target: 'azure',
          catalog: defaultPriceCatalog,
          region: 'eastus',
        },
      );
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(2 * 0.025 * (minutesOf(estimate) / 60) + 0.24 * 0.005, 9),
      });
      expect(part(estimate).detail).toMatch(/^2 × /);
    });

    test('a direct connection sends nothing through it: the hour only', () => {
      const estimate = estimateRun(parsePlanText(plan(', publishRateLimit: 500', 'direct'), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
      });
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(0.0225 * (minutesOf(estimate) / 60), 9),
      });
    });

    test('fixed work without a rate: its messages are the traffic (60,000 × 1,000 B × 2 repetitions × 2 ways)', () => {
      const estimate = estimateRun(
        parsePlanText(plan(', messageCount: 60000').replace('consumers: 2', 'consumers: 1'), 'p.yaml'),
        {
          target: 'aws',
          catalog: defaultPriceCatalog,
          region: 'us-east-1',
        },
      );
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(0.0225 * (minutesOf(estimate) / 60) + 0.24 * 0.006, 9),
      });
      expect(estimate.complete).toBe(true);
      const zones = estimate.parts.find((candidate) => candidate.name === 'data transfer between zones')!;
      expect(zones.priced).toBe(true);
      // 0.12 GB published, into and out of another zone (2 of 3 times) on a classic queue (no follower copies).
      expect(zones.usd).toBeCloseTo(0.12 * (2 / 3) * 2 * 0.01, 9);
    });

    test('fixed work with a rate: the smaller of the two (the rate allows 0.24 GB, the count 0.02 GB)', () => {
      const text = plan(', publishRateLimit: 500, messageCount: 5000').replace('consumers: 2', 'consumers: 1');
      const estimate = estimateRun(parsePlanText(text, 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
      });
      expect(part(estimate).detail).toMatch(/\+ 0\.02 GB of planned traffic processed/);
    });

    test("a capacity ladder: its steps' rates over their seconds are the traffic, whatever the cluster holds", () => {
      // 1,000, 2,000 and 4,000 msg/s for 10 s each: 70,000 messages × 1,000 B × 2 repetitions = 0.14 GB published,
      // 0.28 GB processed.
      const capacity =
        ', capacity: { p99LatencyMs: 100, minRate: 1000, maxRate: 4000, stepFactor: 2, stepSeconds: 10 }';
      const estimate = estimateRun(parsePlanText(plan(capacity).replace(', durationSeconds: 60', ''), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
      });
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(0.0225 * (minutesOf(estimate) / 60) + 0.28 * 0.006, 9),
      });
      expect(part(estimate).detail).toMatch(/\+ 0\.28 GB of planned traffic processed/);
      expect(estimate.complete).toBe(true);
    });

    test("no publishRateLimit: priced with a ceiling, the load generator's line rate (25 Gbps each way)", () => {
      const estimate = estimateRun(parsePlanText(plan(''), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
      });
      const hours = 0.0225 * (minutesOf(estimate) / 60);
      // 25 Gbps = 3.125 GB/s × 60 s × 2 repetitions = 375 GB published at most, × 2 ways = 750 GB processed.
      expect(part(estimate)).toMatchObject({
        priced: true,
        usd: expect.closeTo(hours, 9),
        maxUsd: expect.closeTo(hours + 750 * 0.006, 9),
      });
      expect(part(estimate).detail).toMatch(
        new RegExp(
          String.raw`1 scenario\(s\) have neither a publishRateLimit nor fixed work \(messageCount, totalBytes\).*` +
            String.raw`up to 750 GB more at the load generators' line rate, so at most \$4\.\d\d ` +
            String.raw`\(c5n\.4xlarge: up to 25 Gbps`,
        ),
      );
      expect(estimate.complete).toBe(true);
      // The ceiling of the run: every part at its most (the zones' part too: 375 GB × 2/3 × 2 on a classic queue).
      expect(estimate.maxTotalUsd).toBeCloseTo(estimate.totalUsd + 750 * 0.006 + 375 * (2 / 3) * 2 * 0.01, 6);
    });

    test('no publishRateLimit and a load generator without a line rate on record: unpriced, a lower bound', () => {
      const estimate = estimateRun(parsePlanText(plan(''), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
        region: 'us-east-1',
        loadGeneratorInstanceType: 'c5.xlarge',
      });
      expect(part(estimate)).toMatchObject({ priced: false });
      expect(part(estimate).maxUsd).toBeUndefined();
      expect(part(estimate).detail).toMatch(/depends on the measured rate \(\$0\.006 per GB\)$/);
      expect(estimate.complete).toBe(false);
      expect(estimate.maxTotalUsd).toBeUndefined();
    });

    test('azure, no publishRateLimit: F16s_v2 bounds it at 12.5 Gbps', () => {
      const estimate = estimateRun(parsePlanText(plan(''), 'p.yaml'), {
        target: 'azure',
        catalog: defaultPriceCatalog,
      });
      // 1.5625 GB/s × 60 s × 2 repetitions × 2 ways = 375 GB at $0.005.
      expect(part(estimate)).toMatchObject({ priced: true });
      expect(part(estimate).maxUsd! - part(estimate).usd).toBeCloseTo(375 * 0.005, 9);
      expect(part(estimate).detail).toContain('F16s_v2: 12,500 Mbps');
    });

    test('no region given: priced in the region the nodes were priced in, not left out', () => {
      const estimate = estimateRun(parsePlanText(plan(', publishRateLimit: 500'), 'p.yaml'), {
        target: 'aws',
        catalog: defaultPriceCatalog,
      });
      expect(part(estimate).priced).toBe(true);
      expect(part(estimate).detail).toContain('network-load-balancer, us-east-1');
    });
  });

  test('thesis chapter 4 on aws, by hand: one launched cluster, 44.33 cluster-minutes, 570 transitions', () => {
    const estimate = estimateRun(thesisCh4OnAws(), {
      target: 'aws',
      catalog: defaultPriceCatalog,
      region: 'us-east-1',
    });
    // lb and direct differ only in connection mode: one launched cluster runs all 4 scenarios × 5 repetitions.
    // Per scenario 5 × (20 s PerfTest + 45 s overhead) + 4 pauses × 10 s = 365 s; 4 scenarios = 1,460 s = 24.33 min;
    // + 15 min provisioning + 5 min teardown = 44.33 min.
    expect(estimate.clusters).toEqual([
      { cluster: 'three-nodes-lb', nodes: 3, instanceType: 'c5.xlarge', minutes: expect.closeTo(44.333, 3) },
    ]);
    const part = (name: string) => estimate.parts.find((candidate) => candidate.name === name)!;
    expect(part('three-nodes-lb: nodes').usd).toBeCloseTo((3 * 0.17 * 44.3333) / 60, 6); // $0.3768
    expect(part('three-nodes-lb: load balancer').usd).toBeCloseTo((0.0225 * 44.3333) / 60, 6);
    // The default load generator (c5n.4xlarge, cdk/LoadGenerator.ts) at the shipped catalog's us-east-1 price.
    expect(part('three-nodes-lb: load generator')).toMatchObject({
      priced: true,
      usd: expect.closeTo((0.864 * 44.3333) / 60, 6),
      detail: expect.stringMatching(/^1 × c5n\.4xlarge × 44\.3 min at \$0\.86\/h \(us-east-1, /),
    });
    // 6 per run; 8 + 3 × 30 cluster polls (15 min / 30 s) + 3 × 10 teardown polls (5 min / 30 s); 20 repetitions × (6 +
    // 3 × 5 polls (65 s / 15 s)); 16 pauses.
    expect(estimate.stateTransitions).toBe(6 + 98 + 30 + 20 * 21 + 16);
    expect(part('Step Functions').usd).toBeCloseTo(570 * 0.000025, 9);
    // No publishRateLimit: the traffic between zones is bounded only by the load generator's line rate.
    expect(part('data transfer between zones')).toMatchObject({ usd: 0, priced: true });
    expect(part('data transfer between zones').maxUsd).toBeGreaterThan(0);
    expect(estimate.complete).toBe(true);
    expect(estimate.totalUsd).toBeCloseTo(
      estimate.parts.reduce((sum, candidate) => sum + candidate.usd, 0),
      9,
    );
  });

  test('a rate-limited workload prices its traffic between zones: in, out and to each replica', () => {
    const plan = validatePlan(
      {
        name: 'p',
        clusters: [{ name: 'q', nodes: 3, instanceType: 'c5.xlarge', topology: { type: 'quorum' } }],
        workloads: [
          {
            name: 'w',
            producers: 2,
            consumers: 2,
            messageSizeBytes: 1000,
            durationSeconds: 100,
            publishRateLimit: 500,
          },
        ],
      },
      'p',
    );
    const part = estimateRun(plan, { target: 'aws', catalog: defaultPriceCatalog }).parts.find(
      (candidate) => candidate.name === 'data transfer between zones',
    )!;
    // 2 × 500 msg/s × 1,000 B × 100 s = 0.1 GB, × 2/3 across zones × (in + out + 2 follower copies) = 0.2667 GB.
    expect(part).toMatchObject({ priced: true, usd: expect.closeTo(0.26667 * 0.01, 6) });
  });

  test(
    'a plan over its maxCostUsd is refused by ValidatePlan ' + 'and validate --target, naming the field and the figure',
    () => {
      const plan = thesisCh4OnAws({ maxCostUsd: 0.1 });
      const [issue] = targetProblems(plan, 'aws', defaultPriceCatalog);
      expect(issue).toMatchObject({
        path: 'maxCostUsd',
        value: 0.1,
        message: expect.stringMatching(
          new RegExp(
            String.raw`^the estimated cost \$1\.\d\d on aws exceeds maxCostUsd \$0\.10 \(up to \$\d+\.\d\d at the ` +
              String.raw`load generators' line rate\); see rmqbench estimate$`,
          ),
        ),
      });
      const input = {
        plan: Object.fromEntries(Object.entries(plan).filter(([key]) => key !== 'scenarios')),
        target: 'aws',
        runId: 'r',
      };
      expect(() => buildSchedule(input, 'exec')).toThrow(PlanValidationError);
      expect(() => buildSchedule(input, 'exec')).toThrow(/maxCostUsd: the estimated cost/);
      expect(targetProblems(thesisCh4OnAws({ maxCostUsd: 5 }), 'aws', defaultPriceCatalog)).toEqual([]);
      // Locally a plan costs nothing: no budget check.
      expect(() => buildSchedule({ ...input, target: 'local' }, 'exec')).not.toThrow();
    },
  );

  test("a Kafka workload with durationSeconds only: each repetition's time is its duration, as on RabbitMQ", () => {
    const text = (seconds: number) => `
name: kd
repetitions: 2
clusters:
  - { name: k, broker: kafka, nodes: 3, instanceType: c5.xlarge }
workloads:
  - { name: w, messageSizeBytes: 100, durationSeconds: ${seconds} }
`;
    const options = { target: 'aws' as const, catalog: defaultPriceCatalog, region: 'us-east-1' };
    const short = estimateRun(parsePlanText(text(60), 'kd.yaml'), options);
    const long = estimateRun(parsePlanText(text(600), 'kd.yaml'), options);
    // Two repetitions, each 540 s longer.
    expect(long.clusters[0]!.minutes - short.clusters[0]!.minutes).toBeCloseTo((2 * 540) / 60, 9);
    expect(long.wallMinutes - short.wallMinutes).toBeCloseTo((2 * 540) / 60, 9);
  });

  test('a RabbitMQ cluster is charged a load balancer; Kafka and NATS clusters, reached node by node, are not', () => {
    const plan = parsePlanText(
      `
name: brokers
clusters:
  - { name: rabbit, nodes: 3, instanceType: c5.xlarge }
  - { name: kafka, broker: kafka, nodes: 3, instanceType: c5.xlarge }
  - { name: nats, broker: nats, nodes: 3, instanceType: c5.xlarge }
workloads:
  - { name: w, messageSizeBytes: 100, publishRateLimit: 100, durationSeconds: 60 }
`,
      'brokers.yaml',
    );
    const parts = estimateRun(plan, { target: 'aws', catalog: defaultPriceCatalog, region: 'us-east-1' }).parts.map(
      (part) => part.name,
    );
    expect(parts.filter((name) => name.endsWith(': load balancer'))).toEqual(['rabbit: load balancer']);
    for (const cluster of ['rabbit', 'kafka', 'nats']) expect(parts).toContain(`${cluster}: nodes`);
  });

  test('budgetProblem: none without a budget or within it', () => {
    const estimate = estimateRun(thesisCh4OnAws(), { target: 'aws', catalog: defaultPriceCatalog });
    expect(budgetProblem(estimate, undefined, 'x')).toBeUndefined();
    expect(budgetProblem(estimate, 1_000, 'x')).toBeUndefined();
    expect(budgetProblem(estimate, 0.01, '--max-cost')).toMatch(/exceeds --max-cost \$0\.01/);
  });

  test(
    'stateTransitions adds up per run, cluster and repetition (checked ' +
      'against the real definition in test/state-machines)',
    () => {
      // A cluster deleted at once (local): IsTeardownDone once, no CheckTeardown.
      expect(stateTransitions([{ clusterPolls: 1, teardownPolls: 0, repetitions: [{ polls: 1, pause: false }] }])).toBe(
        26,
      );
      // Adaptive repetitions: a repetition past min is checked first (CheckSettled, IsSettled).
      expect(
        stateTransitions([
          { clusterPolls: 1, teardownPolls: 0, repetitions: [{ polls: 1, pause: false, settledCheck: true }] },
        ]),
      ).toBe(28);
      expect(
        stateTransitions([
          {
            clusterPolls: 3,
            teardownPolls: 0,
            repetitions: [
              { polls: 4, pause: true },
              { polls: 1, pause: false },
            ],
          },
        ]),
      ).toBe(6 + 17 + 18 + 8 + 2);
      // On azure each cluster also waits for Azure Monitor's late minutes and reads them again.
      expect(
        stateTransitions([
          { clusterPolls: 1, rereadsMetrics: true, teardownPolls: 0, repetitions: [{ polls: 1, pause: false }] },
        ]),
      ).toBe(28);
      // Each check of a cluster being deleted: WaitForTeardown, CheckTeardown, IsTeardownDone.
      expect(stateTransitions([{ clusterPolls: 1, teardownPolls: 4, repetitions: [{ polls: 1, pause: false }] }])).toBe(
        26 + 12,
      );
    },
  );
});
