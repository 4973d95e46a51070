import {
  clusterCost,
  costOfRun,
  defaultPriceCatalog,
  findInstancePrice,
  findLoadBalancerPrice,
  HOURS_PER_MONTH,
  loadPriceCatalog,
  PriceCatalogError,
  THESIS_SOURCE_PREFIX,
} from '../../core/cost/cost-catalog';

describe('shipped price catalog', () => {
  it.each([
    ['aws', 'c5.xlarge', 140.55, '7.1'],
    ['azure', 'F4s', 164.98, '7.1'],
    ['aws', 'm5.xlarge', 156.65, '7.1'],
    ['aws', 't3.xlarge', 133.52, '7.1'],
    ['aws', 'c5.2xlarge', 281.09, '7.2'],
    ['azure', 'F8s', 329.96, '7.2'],
    ['aws', 'm5.2xlarge', 313.3, '7.2'],
    ['aws', 't3.2xlarge', 267.04, '7.2'],
    ['aws', 'c5.4xlarge', 562.18, '7.3'],
    ['azure', 'F16s', 660.65, '7.3'],
    ['aws', 'm5.4xlarge', 626.6, '7.3'],
  ] as const)(
    'holds the thesis price of %s %s ($%s, Table %s) with its date and source',
    (provider, type, monthly, table) => {
      const price = findInstancePrice(defaultPriceCatalog, {
        provider,
        instanceType: type,
        sourcePrefix: THESIS_SOURCE_PREFIX,
      });
      expect(price.monthlyUsd).toBe(monthly);
      expect(price.hourlyUsd).toBeCloseTo(monthly / HOURS_PER_MONTH, 10);
      expect(price.source).toMatch(new RegExp(`^thesis Table ${table.replace('.', '\\.')} `));
      expect(price.asOf).toBe('2019');
      expect(price.region).toBe(provider === 'aws' ? 'eu-west-1' : 'northeurope');
    },
  );

  it('gives every entry a date and a source', () => {
    for (const entry of [...defaultPriceCatalog.instances, ...defaultPriceCatalog.loadBalancers]) {
      expect(entry.asOf).toMatch(/^\d{4}/);
      expect(entry.source.length).toBeGreaterThan(10);
    }
  });

  it('picks the newest entry when no region is asked for, and the asked region otherwise', () => {
    expect(findInstancePrice(defaultPriceCatalog, { provider: 'aws', instanceType: 'c5.xlarge' }).region).toBe(
      'us-east-1',
    );
    // In eu-west-1 the Price List capture of 2020-07-02 ($0.192/h × 730) is newer than the thesis's 2019 figure, which
    // stays reachable as reference data (the chapter 7 reproduction asks for it by its source).
    expect(
      findInstancePrice(defaultPriceCatalog, { provider: 'aws', instanceType: 'c5.xlarge', region: 'eu-west-1' }),
    ).toMatchObject({ monthlyUsd: 140.16, asOf: '2020-07-02' });
    expect(
      findInstancePrice(defaultPriceCatalog, {
        provider: 'aws',
        instanceType: 'c5.xlarge',
        region: 'eu-west-1',
        sourcePrefix: THESIS_SOURCE_PREFIX,
      }).monthlyUsd,
    ).toBe(140.55);
  });

  it('matches instance types case-insensitively', () => {
    expect(findInstancePrice(defaultPriceCatalog, { provider: 'azure', instanceType: 'f4s' }).instanceType).toBe('F4s');
  });
});

describe('bad lookups', () => {
  it('names an unknown instance type and lists the known ones', () => {
    expect(() => findInstancePrice(defaultPriceCatalog, { provider: 'aws', instanceType: 'c9.mega' })).toThrow(
      PriceCatalogError,
    );
    expect(() => findInstancePrice(defaultPriceCatalog, { provider: 'aws', instanceType: 'c9.mega' })).toThrow(
      /unknown aws instance type "c9.mega" in the price catalog; known: c5\.2xlarge, .*rmqbench prices update/,
    );
  });

  it('says which regions have a known type when the asked region has none', () => {
    expect(() =>
      findInstancePrice(defaultPriceCatalog, { provider: 'azure', instanceType: 'F4s', region: 'westus' }),
    ).toThrow(/no price for azure F4s in region westus; the catalog has it for: northeurope/);
  });

  it('does not find an Azure size under AWS', () => {
    expect(() => findInstancePrice(defaultPriceCatalog, { provider: 'aws', instanceType: 'F4s' })).toThrow(
      /unknown aws instance type/,
    );
  });
});

describe('cluster cost', () => {
  it('is nodes × instance price per month without a load balancer', () => {
    const cost = clusterCost(defaultPriceCatalog, {
      provider: 'aws',
      instanceType: 'c5.xlarge',
      region: 'eu-west-1',
      nodes: 3,
      loadBalancer: false,
    });
    expect(cost.monthlyUsd).toBeCloseTo(3 * 140.16, 10);
    expect(cost.hourlyUsd).toBeCloseTo((3 * 140.16) / 730, 10);
    expect(cost.loadBalancer).toBeUndefined();
    expect(cost.notes).toEqual([]);
  });

  it('adds the load balancer hourly charge when the cluster has one', () => {
    const cost = clusterCost(defaultPriceCatalog, {
      provider: 'aws',
      instanceType: 'c5.xlarge',
      region: 'us-east-1',
      nodes: 3,
      loadBalancer: true,
    });
    expect(cost.monthlyUsd).toBeCloseTo(3 * 0.17 * 730 + 0.0225 * 730, 10);
    expect(cost.loadBalancer?.kind).toBe('network-load-balancer');
  });

  it('uses a provider-wide load balancer price in any region', () => {
    expect(findLoadBalancerPrice(defaultPriceCatalog, 'azure', 'northeurope')?.kind).toBe('standard-load-balancer');
  });

  it('says so in the notes when there is no load balancer price for the region instead of inventing one', () => {
    const withoutIreland = {
      ...defaultPriceCatalog,
      loadBalancers: defaultPriceCatalog.loadBalancers.filter((entry) => entry.region !== 'eu-west-1'),
    };
    const cost = clusterCost(withoutIreland, {
      provider: 'aws',
      instanceType: 'c5.xlarge',
      region: 'eu-west-1',
      nodes: 1,
      loadBalancer: true,
    });
    expect(cost.monthlyUsd).toBe(140.16);
    expect(cost.notes[0]).toMatch(/no aws load balancer price in the catalog for eu-west-1/);
  });

  it("prices the NLB in eu-west-1, the thesis's region, at its own rate (not us-east-1's)", () => {
    const price = findLoadBalancerPrice(defaultPriceCatalog, 'aws', 'eu-west-1');
    expect(price).toMatchObject({ region: 'eu-west-1', kind: 'network-load-balancer', hourlyUsd: 0.0252 });
    expect(price?.perGbProcessedUsd).toBe(0.006);
    expect(price?.source).toMatch(/AWSELB.*eu-west-1/);
  });

  it('prices one benchmark run pro rata', () => {
    expect(costOfRun({ hourlyUsd: 1.2 }, 1800)).toBeCloseTo(0.6, 10);
    expect(() => costOfRun({ hourlyUsd: 1 }, -1)).toThrow(/non-negative number of seconds, got -1/);
  });

  it('rejects a non-positive node count', () => {
    expect(() =>
      clusterCost(defaultPriceCatalog, { provider: 'aws', instanceType: 'c5.xlarge', nodes: 0, loadBalancer: false }),
    ).toThrow(/nodes must be a positive integer, got 0/);
  });
});

describe('loading catalog data', () => {
  it('derives monthly from hourly and hourly from monthly', () => {
    const catalog = loadPriceCatalog({
      currency: 'USD',
      instances: [
        { provider: 'aws', region: 'r', instanceType: 'a', hourlyUsd: 1, asOf: '2024-01-01', source: 'test' },
        { provider: 'aws', region: 'r', instanceType: 'b', monthlyUsd: 73, asOf: '2024-01-01', source: 'test' },
      ],
    });
    expect(catalog.instances[0]!.monthlyUsd).toBe(730);
    expect(catalog.instances[1]!.hourlyUsd).toBeCloseTo(0.1, 10);
    expect(catalog.loadBalancers).toEqual([]);
  });

  it('reports every malformed field with its path', () => {
    expect(() =>
      loadPriceCatalog({
        currency: 'EUR',
        instances: [{ provider: 'gcp', region: 'r', instanceType: 'a', hourlyUsd: -1, asOf: 'May', source: 's' }],
      }),
    ).toThrow(/currency: .*instances\.0\.provider: .*instances\.0\.asOf: expected an ISO date/);
  });

  it('rejects an entry with neither an hourly nor a monthly price', () => {
    expect(() =>
      loadPriceCatalog({
        currency: 'USD',
        instances: [{ provider: 'aws', region: 'r', instanceType: 'a', asOf: '2024', source: 's' }],
      }),
    ).toThrow('invalid price catalog: instances.0 needs hourlyUsd or monthlyUsd');
  });
});
