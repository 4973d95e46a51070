import type { NatGatewayPrice, PriceCatalog } from '../core/cost/cost-catalog';
import {
  AZURE_RETAIL_PRICES_URL,
  awsUsagePrices,
  azureRetailItems,
  newestPricedMeter,
  reason,
  type AwsGetProducts,
  type AzureRetailMeter,
  type FetchLike,
} from './price-api';

/**
 * The NAT gateway half of `rmqbench prices update`, in each region the catalog prices instances in:
 *  - AWS: Price List GetProducts of service AmazonEC2, productFamily "NAT Gateway"
 *    (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html); the hour is
 *    the product whose usagetype ends in `NatGateway-Hours`, the data the one ending in `NatGateway-Bytes` (per GB), as
 *    the AmazonEC2 offer file names them (eu-west-1: `EU-NatGateway-Hours`, `EU-NatGateway-Bytes`; the catalog's
 *    eu-west-1 entry cites that offer).
 *  - Azure: the Retail Prices API (https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices,
 *    no credentials). serviceName 'NAT Gateway' lists its Standard meters under armRegionName `Global` only, as Load
 *    Balancer does: "Standard Gateway" per 1 Hour and "Standard Data Processed" per 1 GB (the `StandardV2` meters
 *    beside them are the other SKU; bicep/modules deploy sku Standard). The static public IPv4 address the gateway
 *    (and the public load balancer) needs is regional: serviceName 'Virtual Network', productName 'IP Addresses',
 *    meter "Standard IPv4 Static Public IP" per 1 Hour.
 * Each provider is all or nothing, as for the load balancers: a failure keeps its old entries and says why.
 */
export async function updateNatGatewayPrices(
  catalog: PriceCatalog,
  asOf: string,
  options: { readonly awsGetProducts?: AwsGetProducts; readonly fetchImpl?: FetchLike; readonly timeoutMs?: number },
): Promise<{ natGateways: readonly NatGatewayPrice[]; messages: string[] }> {
  const messages: string[] = [];
  const fresh: Omit<NatGatewayPrice, 'asOf' | 'monthlyUsd'>[] = [];
  const regionsOf = (provider: 'aws' | 'azure') =>
    [...new Set(catalog.instances.filter((i) => i.provider === provider).map((i) => i.region))].sort();
  const azureRegions = regionsOf('azure');
  try {
    fresh.push(...(await fetchAzureNatGateways(azureRegions, options)));
    messages.push(`Azure NAT gateway prices refreshed for ${azureRegions.join(', ')} (as of ${asOf})`);
  } catch (error) {
    messages.push(`Azure NAT gateway prices not refreshed (${reason(error)}); kept the old ones`);
  }
  const getProducts = options.awsGetProducts;
  const awsRegions = regionsOf('aws');
  if (getProducts === undefined) {
    messages.push('AWS NAT gateway prices not refreshed: the AWS Price List API needs AWS credentials');
  } else {
    try {
      const found: Omit<NatGatewayPrice, 'asOf' | 'monthlyUsd'>[] = [];
      for (const region of awsRegions) found.push(await fetchNatGateway(region, getProducts));
      fresh.push(...found);
      messages.push(`AWS NAT gateway prices refreshed for ${awsRegions.join(', ')} (as of ${asOf})`);
    } catch (error) {
      messages.push(`AWS NAT gateway prices not refreshed (${reason(error)}); kept the old ones`);
    }
  }
  if (fresh.length === 0) return { natGateways: catalog.natGateways, messages };
  const natGateways = [
    ...catalog.natGateways.filter(
      (entry) => !fresh.some((price) => price.provider === entry.provider && price.region === entry.region),
    ),
    ...fresh.map((entry) => ({ ...entry, asOf, monthlyUsd: entry.hourlyUsd * catalog.hoursPerMonth })),
  ];
  return { natGateways, messages };
}

const AZURE_NAT_HOUR_METER = 'Standard Gateway';
const AZURE_NAT_DATA_METER = 'Standard Data Processed';
const AZURE_PUBLIC_IP_METER = 'Standard IPv4 Static Public IP';

/** The price of the newest priced meter of `items` that `matches`; throws naming `what` when there is none. */
function newestMeter(
  items: readonly AzureRetailMeter[],
  matches: (item: AzureRetailMeter) => boolean,
  what: string,
): number {
  const found = newestPricedMeter(items, matches);
  if (!found) throw new Error(`the Retail Prices API has no priced ${what}`);
  return found.retailPrice!;
}

async function fetchAzureNatGateways(
  regions: readonly string[],
  options: { readonly fetchImpl?: FetchLike; readonly timeoutMs?: number },
): Promise<Omit<NatGatewayPrice, 'asOf' | 'monthlyUsd'>[]> {
  const nat = await azureRetailItems<AzureRetailMeter>(
    "serviceName eq 'NAT Gateway' and priceType eq 'Consumption' and armRegionName eq 'Global'",
    options,
    'the NAT Gateway meters',
  );
  const natMeter = (name: string, unit: string) =>
    newestMeter(
      nat,
      (item) => item.meterName === name && item.armRegionName === 'Global' && item.unitOfMeasure === unit,
      `NAT Gateway "${name}" (${unit}, Global)`,
    );
  const hourlyUsd = natMeter(AZURE_NAT_HOUR_METER, '1 Hour');
  const perGbProcessedUsd = natMeter(AZURE_NAT_DATA_METER, '1 GB');
  const addresses = await azureRetailItems<AzureRetailMeter>(
    "serviceName eq 'Virtual Network' and productName eq 'IP Addresses' and priceType eq 'Consumption' and " +
      `meterName eq '${AZURE_PUBLIC_IP_METER}'`,
    options,
    'the public IP address meters',
  );
  return regions.map((region) => ({
    provider: 'azure' as const,
    region,
    hourlyUsd,
    perGbProcessedUsd,
    publicIpv4HourlyUsd: newestMeter(
      addresses,
      (item) => item.armRegionName === region && item.unitOfMeasure === '1 Hour',
      `"${AZURE_PUBLIC_IP_METER}" (1 Hour) in ${region}`,
    ),
    source:
      `Azure Retail Prices API (${AZURE_RETAIL_PRICES_URL}): NAT Gateway Global meters "${AZURE_NAT_HOUR_METER}" per ` +
      `hour and "${AZURE_NAT_DATA_METER}" per GB; Virtual Network "${AZURE_PUBLIC_IP_METER}" per hour in ${region}`,
  }));
}

async function fetchNatGateway(
  region: string,
  getProducts: AwsGetProducts,
): Promise<Omit<NatGatewayPrice, 'asOf' | 'monthlyUsd'>> {
  const priced = await awsUsagePrices(getProducts, 'AmazonEC2', { productFamily: 'NAT Gateway', regionCode: region });
  const price = (usageType: RegExp, what: string) => priced(usageType, `NAT gateway ${what} in ${region}`);
  const hourlyUsd = price(/(^|-)NatGateway-Hours$/, 'hour (usagetype NatGateway-Hours)');
  return {
    provider: 'aws',
    region,
    hourlyUsd,
    perGbProcessedUsd: price(/(^|-)NatGateway-Bytes$/, 'data processed (usagetype NatGateway-Bytes)'),
    source:
      'AWS Price List Query API (GetProducts, AmazonEC2, NAT Gateway): usagetype NatGateway-Hours per hour and ' +
      'NatGateway-Bytes per GB processed',
  };
}
