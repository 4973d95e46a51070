import type { NatGatewayPrice, PriceCatalog } from '../core/cost/cost-catalog';
import { awsUsagePrices, reason, type AwsGetProducts } from './price-api';

/**
 * The NAT gateway half of `rmqbench prices update`, AWS only: in each AWS region the catalog prices instances in,
 * Price List GetProducts of service AmazonEC2, productFamily "NAT Gateway"
 * (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html); the hour is the
 * product whose usagetype ends in `NatGateway-Hours`, the data the one ending in `NatGateway-Bytes` (per GB), as the
 * AmazonEC2 offer file names them (eu-west-1: `EU-NatGateway-Hours`, `EU-NatGateway-Bytes`; the catalog's eu-west-1
 * entry cites that offer). All or nothing, as for the load balancers: a failure keeps the old entries and says why.
 * Azure's NAT gateway entry (region `*`) is kept as it is: its Retail Prices meters are not read yet.
 */
export async function updateNatGatewayPrices(
  catalog: PriceCatalog,
  asOf: string,
  getProducts: AwsGetProducts | undefined,
): Promise<{ natGateways: readonly NatGatewayPrice[]; messages: string[] }> {
  const kept = { natGateways: catalog.natGateways };
  const azure =
    'Azure NAT gateway prices not refreshed: their Retail Prices meters are not read yet; kept the old ones';
  if (getProducts === undefined) {
    return {
      ...kept,
      messages: ['AWS NAT gateway prices not refreshed: the AWS Price List API needs AWS credentials', azure],
    };
  }
  const regions = [...new Set(catalog.instances.filter((i) => i.provider === 'aws').map((i) => i.region))].sort();
  try {
    const fresh: NatGatewayPrice[] = [];
    for (const region of regions) fresh.push({ ...(await fetchNatGateway(region, getProducts)), asOf });
    const natGateways = [
      ...catalog.natGateways.filter(
        (entry) => !fresh.some((price) => price.provider === entry.provider && price.region === entry.region),
      ),
      ...fresh.map((entry) => ({ ...entry, monthlyUsd: entry.hourlyUsd * catalog.hoursPerMonth })),
    ];
    return {
      natGateways,
      messages: [`AWS NAT gateway prices refreshed for ${regions.join(', ')} (as of ${asOf})`, azure],
    };
  } catch (error) {
    return { ...kept, messages: [`AWS NAT gateway prices not refreshed (${reason(error)}); kept the old ones`, azure] };
  }
}

async function fetchNatGateway(region: string, getProducts: AwsGetProducts): Promise<Omit<NatGatewayPrice, 'asOf'>> {
  const priced = await awsUsagePrices(getProducts, 'AmazonEC2', { productFamily: 'NAT Gateway', regionCode: region });
  const price = (usageType: RegExp, what: string) => priced(usageType, `NAT gateway ${what} in ${region}`);
  const hourlyUsd = price(/(^|-)NatGateway-Hours$/, 'hour (usagetype NatGateway-Hours)');
  return {
    provider: 'aws',
    region,
    hourlyUsd,
    monthlyUsd: 0,
    perGbProcessedUsd: price(/(^|-)NatGateway-Bytes$/, 'data processed (usagetype NatGateway-Bytes)'),
    source:
      'AWS Price List Query API (GetProducts, AmazonEC2, NAT Gateway): usagetype NatGateway-Hours per hour and ' +
      'NatGateway-Bytes per GB processed',
  };
}
