import type { CloudProvider, InstancePrice, PriceCatalog } from '../core/cost/cost-catalog';
import { AZURE_VM_SIZES } from '../core/cost/azure-vm-sizes';
import { catalogInstanceType, THESIS_SOURCE_PREFIX } from '../core/cost/cost-catalog';
import { DEFAULT_LOAD_GENERATOR_TYPE } from '../core/cost/estimate';
import { updateLoadBalancerPrices } from './load-balancer-prices';
import { updateNatGatewayPrices } from './nat-gateway-prices';
import {
  AZURE_RETAIL_PRICES_URL,
  azureRetailItems,
  newestPricedMeter,
  reason,
  type AwsGetProducts,
  type AzureRetailMeter,
  type FetchLike,
} from './price-api';

export { AZURE_RETAIL_PRICES_URL, type AwsGetProducts, type FetchLike } from './price-api';

/**
 * The network half of `rmqbench prices update`: refreshes the on-demand Linux prices of every
 * (provider, region, instance type) the catalog knows, and adds those of what the cloud targets deploy that it does
 * not know yet (every Azure size the templates allow, each provider's default load generator) in each of its regions,
 * from
 *  - Azure: the public Retail Prices API (no credentials), following NextPageLink;
 *  - AWS: the Price List Query API (GetProducts), which needs credentials, so the caller passes a
 *    client function when it has them. The public bulk offer file of a region is hundreds of MB,
 *    too much for a price refresh.
 * Each provider is all or nothing: any failure keeps that provider's old entries and says why. The load balancers'
 * prices are refreshed the same way (bin/load-balancer-prices.ts), and AWS's NAT gateways (bin/nat-gateway-prices.ts).
 * The thesis entries (Tables 7.1–7.3) are reference data and are never replaced; current prices are
 * added next to them.
 */

export interface UpdatePriceCatalogOptions {
  /** @default globalThis.fetch */
  readonly fetchImpl?: FetchLike;
  /** Date recorded as `asOf` of refreshed entries. @default - the current time */
  readonly now?: Date;
  /** AWS Price List client; without it AWS prices are kept and a message says so. */
  readonly awsGetProducts?: AwsGetProducts;
  /** Per request. @default 20000 */
  readonly timeoutMs?: number;
  /** Safety limit on Azure result pages per region. @default 20 */
  readonly maxPages?: number;
}

export interface PriceCatalogUpdate {
  /** The input catalog itself when nothing was refreshed. */
  readonly catalog: PriceCatalog;
  /** One line per provider: what was refreshed or why not. */
  readonly messages: readonly string[];
}

type Target = { provider: CloudProvider; region: string; instanceType: string };

export async function updatePriceCatalog(
  catalog: PriceCatalog,
  options: UpdatePriceCatalogOptions = {},
): Promise<PriceCatalogUpdate> {
  const now = options.now ?? new Date();
  const asOf = now.toISOString().slice(0, 10);
  const targets = uniqueTargets(catalog.instances);
  const messages: string[] = [];
  const fresh: InstancePrice[] = [];

  for (const provider of ['azure', 'aws'] as const) {
    const wanted = targets.filter((target) => target.provider === provider);
    if (wanted.length === 0) continue;
    const kept = `kept the ${describeOld(catalog, provider)}`;
    try {
      const prices =
        provider === 'azure'
          ? await fetchAzurePrices(wanted, options)
          : options.awsGetProducts === undefined
            ? undefined
            : await fetchAwsPrices(wanted, options.awsGetProducts);
      if (prices === undefined) {
        messages.push(
          `AWS prices not refreshed: the AWS Price List API needs AWS credentials (none were given); ${kept}`,
        );
        continue;
      }
      const found = prices.map((price) => ({ ...price, monthlyUsd: price.hourlyUsd * catalog.hoursPerMonth, asOf }));
      fresh.push(...found);
      const missing = wanted.filter((target) => !found.some((price) => sameKey(price, target)));
      messages.push(
        `${label(provider)} prices refreshed for ${found.length} of ${wanted.length} instance type/region ` +
          `pairs (as of ${asOf})` +
          (missing.length === 0
            ? ''
            : `; not offered any more or not found, kept as they were: ${missing.map(show).join(', ')}`),
      );
    } catch (error) {
      messages.push(`${label(provider)} prices not refreshed (${reason(error)}); ${kept}`);
    }
  }

  const { loadBalancers, messages: loadBalancerMessages } = await updateLoadBalancerPrices(catalog, asOf, options);
  messages.push(...loadBalancerMessages);
  const { natGateways, messages: natMessages } = await updateNatGatewayPrices(catalog, asOf, options);
  messages.push(...natMessages);
  if (
    fresh.length === 0 &&
    loadBalancers.every((entry, index) => entry === catalog.loadBalancers[index]) &&
    natGateways === catalog.natGateways
  )
    return { catalog, messages };
  const replaced = (entry: InstancePrice) =>
    !entry.source.startsWith(THESIS_SOURCE_PREFIX) && fresh.some((price) => sameKey(price, entry));
  return {
    catalog: {
      ...catalog,
      instances: [...catalog.instances.filter((entry) => !replaced(entry)), ...fresh],
      loadBalancers,
      natGateways,
    },
    messages,
  };
}

/** The catalog as core/data/prices.json stores it (hourly and monthly both written; the loader accepts both). */
export function serializePriceCatalog(catalog: PriceCatalog): string {
  return `${JSON.stringify(catalog, null, 2)}\n`;
}

async function fetchAzurePrices(
  targets: readonly Target[],
  options: UpdatePriceCatalogOptions,
): Promise<Omit<InstancePrice, 'monthlyUsd' | 'asOf'>[]> {
  const prices: Omit<InstancePrice, 'monthlyUsd' | 'asOf'>[] = [];
  for (const region of [...new Set(targets.map((target) => target.region))]) {
    const inRegion = targets.filter((target) => target.region === region);
    const skus = inRegion.map((target) => `armSkuName eq '${azureArmSku(target.instanceType)}'`).join(' or ');
    const filter =
      `serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq '${region}' and ` +
      `(${skus})`;
    const items = await azureRetailItems<AzureRetailMeter>(filter, options, region);
    for (const target of inRegion) {
      const linux = newestPricedMeter(
        items,
        (item) =>
          item.armSkuName?.toLowerCase() === azureArmSku(target.instanceType).toLowerCase() &&
          item.armRegionName === region &&
          item.type === 'Consumption' &&
          item.unitOfMeasure === '1 Hour' &&
          !/windows/i.test(item.productName ?? '') &&
          !/spot|low priority/i.test(item.skuName ?? ''),
      );
      if (linux === undefined) continue;
      prices.push({
        provider: 'azure',
        region,
        instanceType: target.instanceType,
        hourlyUsd: linux.retailPrice!,
        source: [
          `Azure Retail Prices API (${AZURE_RETAIL_PRICES_URL})`,
          [linux.productName, linux.skuName].filter(Boolean).join(' '),
          'Linux pay-as-you-go',
          `effective ${linux.effectiveStartDate?.slice(0, 10) ?? 'date not given'}`,
        ]
          .filter(Boolean)
          .join(', '),
      });
    }
  }
  return prices;
}

async function fetchAwsPrices(
  targets: readonly Target[],
  getProducts: AwsGetProducts,
): Promise<Omit<InstancePrice, 'monthlyUsd' | 'asOf'>[]> {
  const prices: Omit<InstancePrice, 'monthlyUsd' | 'asOf'>[] = [];
  for (const target of targets) {
    const filters: { Type: 'TERM_MATCH'; Field: string; Value: string }[] = [
      ['instanceType', target.instanceType],
      ['regionCode', target.region],
      ['operatingSystem', 'Linux'],
      ['tenancy', 'Shared'],
      ['preInstalledSw', 'NA'],
      ['capacitystatus', 'Used'],
      ['licenseModel', 'No License required'],
    ].map(([Field, Value]) => ({ Type: 'TERM_MATCH' as const, Field: Field!, Value: Value! }));
    let nextToken: string | undefined;
    let hourly: number | undefined;
    do {
      const page = await getProducts({
        ServiceCode: 'AmazonEC2',
        Filters: filters,
        ...(nextToken === undefined ? {} : { NextToken: nextToken }),
      });
      for (const entry of page.PriceList ?? []) {
        hourly ??= onDemandHourlyUsd(typeof entry === 'string' ? (JSON.parse(entry) as unknown) : entry);
      }
      nextToken = page.NextToken;
    } while (nextToken !== undefined && hourly === undefined);
    if (hourly !== undefined) {
      prices.push({
        provider: 'aws',
        region: target.region,
        instanceType: target.instanceType,
        hourlyUsd: hourly,
        source: 'AWS Price List Query API (GetProducts, AmazonEC2), Linux, shared tenancy, on-demand',
      });
    }
  }
  return prices;
}

/** The USD per hour of the first on-demand price dimension of a Price List product, if any. */
function onDemandHourlyUsd(product: unknown): number | undefined {
  const onDemand = (
    product as {
      terms?: {
        OnDemand?: Record<
          string,
          { priceDimensions?: Record<string, { unit?: string; pricePerUnit?: { USD?: string } }> }
        >;
      };
    }
  )?.terms?.OnDemand;
  for (const term of Object.values(onDemand ?? {})) {
    for (const dimension of Object.values(term.priceDimensions ?? {})) {
      const usd = Number(dimension.pricePerUnit?.USD);
      if (dimension.unit === 'Hrs' && usd > 0) return usd;
    }
  }
  return undefined;
}

/** Catalog Azure sizes are written as in the thesis (`F4s`); the API's armSkuName is `Standard_F4s`. */
export function azureArmSku(instanceType: string): string {
  return /^standard_/i.test(instanceType) ? instanceType : `Standard_${instanceType}`;
}

/** What a cloud target deploys whatever the plan says: the catalog needs their prices in every region it covers. */
function deployedTypes(provider: CloudProvider): string[] {
  const sizes = provider === 'azure' ? AZURE_VM_SIZES.map((size) => catalogInstanceType('azure', size)) : [];
  return [...sizes, DEFAULT_LOAD_GENERATOR_TYPE[provider]];
}

function uniqueTargets(entries: readonly InstancePrice[]): Target[] {
  const targets: Target[] = [];
  const regions = [...new Set(entries.map(({ provider, region }) => `${provider} ${region}`))].map(
    (key) => key.split(' ') as [CloudProvider, string],
  );
  const deployed = regions.flatMap(([provider, region]) =>
    deployedTypes(provider).map((instanceType) => ({ provider, region, instanceType })),
  );
  for (const { provider, region, instanceType } of [...entries, ...deployed]) {
    if (!targets.some((target) => sameKey(target, { provider, region, instanceType })))
      targets.push({ provider, region, instanceType });
  }
  return targets;
}

function sameKey(a: Target, b: Target): boolean {
  return (
    a.provider === b.provider && a.region === b.region && a.instanceType.toLowerCase() === b.instanceType.toLowerCase()
  );
}

function describeOld(catalog: PriceCatalog, provider: CloudProvider): string {
  const entries = catalog.instances.filter((entry) => entry.provider === provider);
  const dates = [...new Set(entries.map((entry) => entry.asOf))].sort();
  return `${entries.length} ${label(provider)} entries (as of ${dates.join(', ')})`;
}

function label(provider: CloudProvider): string {
  return provider === 'aws' ? 'AWS' : 'Azure';
}

function show(target: Target): string {
  return `${target.instanceType} in ${target.region}`;
}
