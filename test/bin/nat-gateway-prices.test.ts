import type { AwsGetProducts, FetchLike } from '../../bin/price-api';
import { updatePriceCatalog } from '../../bin/prices-update';
import { defaultPriceCatalog, findNatGatewayPrice } from '../../core/cost/cost-catalog';

const NOW = new Date('2026-11-26T10:00:00Z');
const offlineAzure: FetchLike = () =>
  Promise.resolve({ ok: false, status: 503, statusText: 'offline', json: () => Promise.resolve({}) });

/** An AmazonEC2 NAT Gateway product as GetProducts returns it: a JSON string with its on-demand term. */
function natProduct(usagetype: string, usd: string, unit: string): string {
  return JSON.stringify({
    product: { productFamily: 'NAT Gateway', attributes: { usagetype, servicecode: 'AmazonEC2' } },
    terms: { OnDemand: { 'SKU.T': { priceDimensions: { 'SKU.T.D': { unit, pricePerUnit: { USD: usd } } } } } },
  });
}

describe('prices update: the NAT gateways', () => {
  const perRegion =
    "AWS: GetProducts of AmazonEC2's NAT Gateway products per region, the hour and the GB by usage type";
  test(perRegion, async () => {
    const inputs: Parameters<AwsGetProducts>[0][] = [];
    const products: Record<string, string[]> = {
      'us-east-1': [
        natProduct('NatGateway-Hours', '0.0450000000', 'Hrs'),
        natProduct('NatGateway-Bytes', '0.0450000000', 'GB'),
      ],
      'eu-west-1': [
        natProduct('EU-NatGateway-Hours', '0.0500000000', 'Hrs'),
        natProduct('EU-NatGateway-Bytes', '0.0500000000', 'GB'),
      ],
    };
    const getProducts: AwsGetProducts = async (input) => {
      inputs.push(input);
      if (input.ServiceCode !== 'AmazonEC2') return { PriceList: [] };
      const value = (field: string) => input.Filters.find((filter) => filter.Field === field)?.Value ?? '';
      return { PriceList: value('productFamily') === 'NAT Gateway' ? (products[value('regionCode')] ?? []) : [] };
    };
    const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
      fetchImpl: offlineAzure,
      awsGetProducts: getProducts,
      now: NOW,
    });
    const asked = inputs.filter((input) => input.Filters.some((filter) => filter.Value === 'NAT Gateway'));
    expect(asked.map((input) => input.Filters.find((filter) => filter.Field === 'regionCode')!.Value).sort()).toEqual(
      expect.arrayContaining(['eu-west-1', 'us-east-1']),
    );
    expect(findNatGatewayPrice(catalog, 'aws', 'eu-west-1')).toMatchObject({
      hourlyUsd: 0.05,
      perGbProcessedUsd: 0.05,
      monthlyUsd: 0.05 * catalog.hoursPerMonth,
      asOf: '2026-11-26',
    });
    // Azure's entry stays, one per provider and region.
    expect(findNatGatewayPrice(catalog, 'azure', 'northeurope')).toEqual(
      findNatGatewayPrice(defaultPriceCatalog, 'azure', 'northeurope'),
    );
    expect(
      catalog.natGateways.filter((entry) => entry.provider === 'aws' && entry.region === 'us-east-1'),
    ).toHaveLength(1);
    expect(messages).toContainEqual(
      expect.stringMatching(/^AWS NAT gateway prices refreshed for .*eu-west-1.*us-east-1.* \(as of 2026-11-26\)$/),
    );
  });

  test('AWS without the per-GB product: the old entries are kept and the message names what is missing', async () => {
    const getProducts: AwsGetProducts = async (input) =>
      input.Filters.some((filter) => filter.Value === 'NAT Gateway')
        ? { PriceList: [natProduct('NatGateway-Hours', '0.045', 'Hrs')] }
        : { PriceList: [] };
    const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
      fetchImpl: offlineAzure,
      awsGetProducts: getProducts,
      now: NOW,
    });
    expect(catalog.natGateways).toEqual(defaultPriceCatalog.natGateways);
    expect(messages).toContainEqual(
      expect.stringMatching(
        new RegExp(
          '^AWS NAT gateway prices not refreshed \\(AmazonEC2 has no priced NAT gateway data processed ' +
            '\\(usagetype NatGateway-Bytes\\) in [a-z0-9-]+\\); kept the old ones$',
        ),
      ),
    );
  });

  describe('Azure: the Retail Prices API', () => {
    /** A meter as the Retail Prices API lists it. */
    const meter = (meterName: string, armRegionName: string, retailPrice: number, unitOfMeasure: string) => ({
      currencyCode: 'USD',
      meterName,
      armRegionName,
      retailPrice,
      unitOfMeasure,
      skuName: meterName.startsWith('StandardV2') ? 'StandardV2' : 'Standard',
      effectiveStartDate: '2026-01-01T00:00:00Z',
    });
    const azureRegions = [
      ...new Set(defaultPriceCatalog.instances.filter((i) => i.provider === 'azure').map((i) => i.region)),
    ];
    const natMeters = [
      meter('Standard Gateway', 'Global', 0.046, '1 Hour'),
      meter('Standard Data Processed', 'Global', 0.047, '1 GB'),
      // The other SKU's lookalikes, which the templates do not deploy.
      meter('StandardV2 Gateway', 'Global', 0.09, '1 Hour'),
      meter('StandardV2 Data Processed', 'Global', 0.09, '1 GB'),
    ];
    const addressMeters = (regions: readonly string[]) =>
      regions.map((region, index) => meter('Standard IPv4 Static Public IP', region, 0.004 + index / 10000, '1 Hour'));
    /** Answers each $filter from `byService` (by the serviceName it names) and records the filters asked. */
    const retailApi =
      (byService: Record<string, unknown[]>, asked: string[] = []): FetchLike =>
      async (url) => {
        const filter = decodeURIComponent(new URL(url).searchParams.get('$filter') ?? '');
        asked.push(filter);
        const service = /serviceName eq '([^']+)'/.exec(filter)?.[1] ?? '';
        const items = byService[service] ?? [];
        return { ok: true, status: 200, statusText: 'OK', json: () => Promise.resolve({ Items: items }) };
      };

    test('every Azure region gets the Global NAT meters (not StandardV2) and its own public IPv4 hour', async () => {
      const asked: string[] = [];
      const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
        fetchImpl: retailApi({ 'NAT Gateway': natMeters, 'Virtual Network': addressMeters(azureRegions) }, asked),
        now: NOW,
      });
      expect(asked).toContainEqual(
        "serviceName eq 'NAT Gateway' and priceType eq 'Consumption' and armRegionName eq 'Global'",
      );
      azureRegions.forEach((region, index) =>
        expect(findNatGatewayPrice(catalog, 'azure', region)).toMatchObject({
          region,
          hourlyUsd: 0.046,
          perGbProcessedUsd: 0.047,
          publicIpv4HourlyUsd: 0.004 + index / 10000,
          monthlyUsd: 0.046 * catalog.hoursPerMonth,
          asOf: '2026-11-26',
        }),
      );
      expect(messages).toContainEqual(expect.stringMatching(/^Azure NAT gateway prices refreshed for .*\(as of /));
      // AWS without credentials: its entries are the old ones.
      expect(catalog.natGateways.filter((entry) => entry.provider === 'aws')).toEqual(
        defaultPriceCatalog.natGateways.filter((entry) => entry.provider === 'aws'),
      );
    });

    test('a region without a public IP meter: no Azure entry changes, and the message names the region', async () => {
      const { catalog, messages } = await updatePriceCatalog(defaultPriceCatalog, {
        fetchImpl: retailApi({ 'NAT Gateway': natMeters, 'Virtual Network': addressMeters(azureRegions.slice(1)) }),
        now: NOW,
      });
      expect(catalog.natGateways).toEqual(defaultPriceCatalog.natGateways);
      expect(messages).toContainEqual(
        `Azure NAT gateway prices not refreshed (the Retail Prices API has no priced "Standard IPv4 Static Public ` +
          `IP" (1 Hour) in ${azureRegions[0]}); kept the old ones`,
      );
    });
  });
});
