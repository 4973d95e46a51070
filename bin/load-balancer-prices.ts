import type { CloudProvider, LoadBalancerPrice, PriceCatalog } from '../core/cost/cost-catalog';
import {
  AZURE_RETAIL_PRICES_URL,
  azureRetailItems,
  awsUsagePrices,
  newestPricedMeter,
  reason,
  type AzureRetailMeter,
  type AwsGetProducts,
  type FetchLike,
} from './price-api';

/**
 * The load-balancer half of `rmqbench prices update`: the hourly and per-GB charges of the load balancers the cloud
 * targets deploy, from the same price APIs as the instances (bin/prices-update.ts).
 *  - Azure Standard Load Balancer: the Retail Prices API's Load Balancer meters are global (armRegionName `Global`,
 *    no regional rows; serviceName 'Load Balancer':
 *    https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices), so one entry for region
 *    `*`: "Standard Included LB Rules and Outbound Rules" (per hour, the first five rules of a load balancer;
 *    rmqbench's have at most four) and "Standard Data Processed" (per GB). The "- Free" meters of the same names are
 *    priced 0 and skipped.
 *  - AWS Network Load Balancer, in each AWS region the catalog prices instances in: Price List GetProducts of service
 *    AWSELB, productFamily "Load Balancer-Network"
 *    (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html); the hour is
 *    the product whose usagetype ends in `LoadBalancerUsage`, the capacity unit the one whose usagetype ends in
 *    `LCUUsage` (`NLCUUsage` matches too), as the AWSELB offer files name them. One NLCU is 1 GB processed per hour
 *    (https://aws.amazon.com/elasticloadbalancing/pricing/), so its hourly price is the per-GB charge of a benchmark
 *    whose few long-lived connections leave bytes the deciding dimension.
 * Each provider is all or nothing, as for instances: a failure keeps its old entries and says why.
 */

export const NLB_KIND = 'network-load-balancer';
export const AZURE_LB_KIND = 'standard-load-balancer';
const AZURE_RULES_METER = 'Standard Included LB Rules and Outbound Rules';
const AZURE_DATA_METER = 'Standard Data Processed';

type Fresh = Omit<LoadBalancerPrice, 'monthlyUsd' | 'asOf'>;

export interface LoadBalancerPriceOptions {
  readonly fetchImpl?: FetchLike;
  readonly awsGetProducts?: AwsGetProducts;
  readonly timeoutMs?: number;
}

/** Refreshed load-balancer entries (the catalog's own when nothing was refreshed) and one message per provider. */
export async function updateLoadBalancerPrices(
  catalog: PriceCatalog,
  asOf: string,
  options: LoadBalancerPriceOptions,
): Promise<{ loadBalancers: LoadBalancerPrice[]; messages: string[] }> {
  const messages: string[] = [];
  const fresh: Fresh[] = [];
  try {
    fresh.push(await fetchAzureLoadBalancer(options));
    messages.push(`Azure load balancer prices refreshed (as of ${asOf})`);
  } catch (error) {
    messages.push(`Azure load balancer prices not refreshed (${reason(error)}); kept the old ones`);
  }
  const awsRegions = [...new Set(catalog.instances.filter((i) => i.provider === 'aws').map((i) => i.region))].sort();
  if (options.awsGetProducts === undefined) {
    messages.push('AWS load balancer prices not refreshed: the AWS Price List API needs AWS credentials');
  } else {
    try {
      const found: Fresh[] = [];
      for (const region of awsRegions) found.push(await fetchNetworkLoadBalancer(region, options.awsGetProducts));
      fresh.push(...found);
      messages.push(`AWS load balancer prices refreshed for ${awsRegions.join(', ')} (as of ${asOf})`);
    } catch (error) {
      messages.push(`AWS load balancer prices not refreshed (${reason(error)}); kept the old ones`);
    }
  }
  const same = (a: { provider: CloudProvider; region: string; kind: string }, b: typeof a) =>
    a.provider === b.provider && a.region === b.region && a.kind === b.kind;
  const dated = fresh.map((entry) => ({ ...entry, asOf, monthlyUsd: entry.hourlyUsd * catalog.hoursPerMonth }));
  return {
    loadBalancers: [...catalog.loadBalancers.filter((entry) => !dated.some((price) => same(price, entry))), ...dated],
    messages,
  };
}

async function fetchAzureLoadBalancer(options: LoadBalancerPriceOptions): Promise<Fresh> {
  const filter = "serviceName eq 'Load Balancer' and priceType eq 'Consumption' and armRegionName eq 'Global'";
  const items = await azureRetailItems<AzureRetailMeter>(filter, options, 'the Load Balancer meters');
  const meter = (name: string, unit: string) => {
    const found = newestPricedMeter(
      items,
      (item) =>
        item.meterName === name &&
        item.armRegionName === 'Global' &&
        item.skuName === 'Standard' &&
        item.unitOfMeasure === unit,
    );
    if (!found) throw new Error(`the Load Balancer meters have no priced "${name}" (${unit})`);
    return found;
  };
  const rules = meter(AZURE_RULES_METER, '1 Hour');
  const data = meter(AZURE_DATA_METER, '1 GB');
  return {
    provider: 'azure',
    region: '*',
    kind: AZURE_LB_KIND,
    hourlyUsd: rules.retailPrice!,
    perGbProcessedUsd: data.retailPrice!,
    source:
      `Azure Retail Prices API (${AZURE_RETAIL_PRICES_URL}), Load Balancer Standard, Global meters: ` +
      `"${AZURE_RULES_METER}" ` +
      `per hour (the first five rules), "${AZURE_DATA_METER}" per GB`,
  };
}

async function fetchNetworkLoadBalancer(region: string, getProducts: AwsGetProducts): Promise<Fresh> {
  const priced = await awsUsagePrices(getProducts, 'AWSELB', {
    productFamily: 'Load Balancer-Network',
    regionCode: region,
  });
  const price = (usageType: RegExp, what: string) => priced(usageType, `Network Load Balancer ${what} in ${region}`);
  return {
    provider: 'aws',
    region,
    kind: NLB_KIND,
    hourlyUsd: price(/(^|-)LoadBalancerUsage$/, 'hour (usagetype LoadBalancerUsage)'),
    perGbProcessedUsd: price(/(^|-)N?LCUUsage$/, 'capacity unit (usagetype LCUUsage)'),
    source:
      'AWS Price List Query API (GetProducts, AWSELB, Load Balancer-Network): the NLB hour and the NLCU hour, ' +
      'one NLCU being 1 GB processed per hour',
  };
}
