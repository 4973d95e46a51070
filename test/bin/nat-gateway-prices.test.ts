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
});
