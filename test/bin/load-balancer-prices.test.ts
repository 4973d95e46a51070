import { AZURE_LB_KIND, NLB_KIND } from '../../bin/load-balancer-prices';
import type { AwsGetProducts, FetchLike } from '../../bin/price-api';
import { updatePriceCatalog } from '../../bin/prices-update';
import { defaultPriceCatalog, findLoadBalancerPrice } from '../../core/cost/cost-catalog';
import { estimateRun } from '../../core/cost/estimate';
import { parsePlanText } from '../../core/plan/plan';

const NOW = new Date('2026-11-26T10:00:00Z');

/**
 * A Load Balancer meter as the Azure Retail Prices API lists it (the fields of its documented response; the Standard
 * meters are global, and each has a "- Free" twin priced 0).
 */
function meter(meterName: string, retailPrice: number, unitOfMeasure: string, extra: Record<string, unknown> = {}) {
  return {
    currencyCode: 'USD',
    tierMinimumUnits: 0,
    retailPrice,
    unitPrice: retailPrice,
    armRegionName: 'Global',
    location: 'Global',
    effectiveStartDate: '2018-04-11T00:00:00Z',
    meterName,
    productName: 'Load Balancer',
    skuName: 'Standard',
    serviceName: 'Load Balancer',
    serviceFamily: 'Networking',
    unitOfMeasure,
    type: 'Consumption',
    isPrimaryMeterRegion: true,
    armSkuName: '',
    ...extra,
  };
}

const AZURE_METERS = [
  meter('Standard Data Processed - Free', 0, '1 GB'),
  meter('Standard Included LB Rules and Outbound Rules - Free', 0, '1 Hour'),
  meter('Standard Included LB Rules and Outbound Rules', 0.031, '1 Hour', {
    armRegionName: 'usgovvirginia',
    location: 'US Gov Virginia',
  }),
  meter('Standard Included LB Rules and Outbound Rules', 0.025, '1 Hour'),
  meter('Standard Overage LB Rules and Outbound Rules', 0.01, '1/Hour'),
  meter('Standard Data Processed', 0.005, '1 GB'),
];

const respond = (body: unknown): ReturnType<FetchLike> =>
  Promise.resolve({ ok: true, status: 200, statusText: 'OK', json: () => Promise.resolve(body) });

/** Azure answers the Load Balancer query with `meters` and the VM queries with nothing. */
const azureApi =
  (meters: unknown[], asked: string[] = []): FetchLike =>
  (url) => {
    asked.push(decodeURIComponent(url));
    return respond({ Items: url.includes('Load%20Balancer') ? meters : [], NextPageLink: null });
  };

/** A Price List product of AWSELB as GetProducts returns it: a JSON string with the product and its on-demand term. */
function elbProduct(usagetype: string, usd: string): string {
  return JSON.stringify({
    product: { productFamily: 'Load Balancer-Network', attributes: { usagetype, servicecode: 'AWSELB' } },
    terms: {
      OnDemand: {
        'SKU.JRTCKXETXF': {
          priceDimensions: { 'SKU.JRTCKXETXF.6YS6EN2CT7': { unit: 'Hrs', pricePerUnit: { USD: usd } } },
        },
      },
    },
  });
}

describe('prices update: the load balancers', () => {
  test(
    "Azure: the global Standard meters (not the free twins, not US Gov's): $0.025 an hour and $0.005 per GB, " +
      'replacing the old entry',
    async () => {
      const asked: string[] = [];
      const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
        fetchImpl: azureApi(AZURE_METERS, asked),
        now: NOW,
      });
      expect(asked).toContain(
        "https://prices.azure.com/api/retail/prices?$filter=serviceName eq 'Load Balancer' and priceType eq " +
          "'Consumption' and armRegionName eq 'Global'",
      );
      const azure = catalog.loadBalancers.filter((entry) => entry.provider === 'azure');
      expect(azure).toEqual([
        expect.objectContaining({
          region: '*',
          kind: AZURE_LB_KIND,
          hourlyUsd: 0.025,
          perGbProcessedUsd: 0.005,
          asOf: '2026-11-26',
        }),
      ]);
      expect(messages).toContain('Azure load balancer prices refreshed (as of 2026-11-26)');
    },
  );

  test('Azure without the data meter: the old entry is kept and the message names the missing meter', async () => {
    const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
      fetchImpl: azureApi(AZURE_METERS.filter((item) => item.meterName !== 'Standard Data Processed')),
      now: NOW,
    });
    expect(catalog.loadBalancers.filter((entry) => entry.provider === 'azure')).toEqual(
      defaultPriceCatalog.loadBalancers.filter((entry) => entry.provider === 'azure'),
    );
    expect(messages).toContain(
      'Azure load balancer prices not refreshed (the Load Balancer meters have no priced "Standard Data Processed" ' +
        '(1 GB)); kept the old ones',
    );
  });

  test(
    "AWS: GetProducts of AWSELB's Network Load Balancer products in each region the catalog prices, the hour and the " +
      'NLCU by usage type; eu-west-1 is then priced',
    async () => {
      const inputs: Parameters<AwsGetProducts>[0][] = [];
      const prices: Record<string, [string, string][]> = {
        'us-east-1': [
          ['LoadBalancerUsage', '0.0225000000'],
          ['LCUUsage', '0.0060000000'],
        ],
        'eu-west-1': [
          ['EU-LoadBalancerUsage', '0.0252000000'],
          ['EU-LCUUsage', '0.0060000000'],
        ],
      };
      const getProducts: AwsGetProducts = async (input) => {
        inputs.push(input);
        if (input.ServiceCode !== 'AWSELB') return { PriceList: [] };
        const region = input.Filters.find((filter) => filter.Field === 'regionCode')!.Value;
        return { PriceList: (prices[region] ?? []).map(([usage, usd]) => elbProduct(usage, usd)) };
      };
      // A catalog without the shipped eu-west-1 NLB entry, so that the update is what prices that region.
      const withoutIreland = {
        ...defaultPriceCatalog,
        loadBalancers: defaultPriceCatalog.loadBalancers.filter((entry) => entry.region !== 'eu-west-1'),
      };
      const { catalog, messages } = await updatePriceCatalog(withoutIreland, {
        fetchImpl: azureApi([]),
        awsGetProducts: getProducts,
        now: NOW,
      });
      const elb = inputs.filter((input) => input.ServiceCode === 'AWSELB');
      expect(elb.map((input) => input.Filters)).toEqual(
        ['eu-west-1', 'us-east-1'].map((region) => [
          { Type: 'TERM_MATCH', Field: 'productFamily', Value: 'Load Balancer-Network' },
          { Type: 'TERM_MATCH', Field: 'regionCode', Value: region },
        ]),
      );
      expect(findLoadBalancerPrice(catalog, 'aws', 'eu-west-1')).toMatchObject({
        kind: NLB_KIND,
        hourlyUsd: 0.0252,
        perGbProcessedUsd: 0.006,
        asOf: '2026-11-26',
      });
      expect(catalog.loadBalancers.filter((entry) => entry.provider === 'aws')).toHaveLength(2);
      expect(messages).toContain('AWS load balancer prices refreshed for eu-west-1, us-east-1 (as of 2026-11-26)');
      // An estimate in eu-west-1 now prices its load balancer.
      const plan = parsePlanText(
        'name: p\nclusters:\n  - { name: c, nodes: 3, instanceType: c5.xlarge }\n' +
          'workloads:\n  - { name: w, durationSeconds: 60, publishRateLimit: 100 }\n',
        'p.yaml',
      );
      const before = estimateRun(plan, { target: 'aws', catalog: withoutIreland, region: 'eu-west-1' });
      const after = estimateRun(plan, { target: 'aws', catalog, region: 'eu-west-1' });
      const lb = (estimate: typeof before) => estimate.parts.find((part) => part.name === 'c: load balancer')!;
      expect(lb(before).priced).toBe(false);
      expect(lb(after)).toMatchObject({ priced: true, detail: expect.stringContaining('at $0.03/h') });
    },
  );

  test('AWS with no capacity-unit product in one region: no AWS entry changes; the message says which', async () => {
    const getProducts: AwsGetProducts = async (input) => ({
      PriceList: input.ServiceCode === 'AWSELB' ? [elbProduct('LoadBalancerUsage', '0.0225')] : [],
    });
    const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
      fetchImpl: azureApi([]),
      awsGetProducts: getProducts,
      now: NOW,
    });
    expect(catalog.loadBalancers.filter((entry) => entry.provider === 'aws')).toEqual(
      defaultPriceCatalog.loadBalancers.filter((entry) => entry.provider === 'aws'),
    );
    expect(messages).toContain(
      'AWS load balancer prices not refreshed (AWSELB has no priced Network Load Balancer capacity unit (usagetype ' +
        'LCUUsage) in eu-west-1); kept the old ones',
    );
  });
});
