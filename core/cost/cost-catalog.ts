// A namespace import lets esbuild drop what the schemas do not use (ValidatePlan's Lambda bundle validates instance
// types with this catalog).
import * as z from 'zod';
import pricesJson from '../data/prices.json';
import { catalogInstanceType } from './instance-type-names';

export { catalogInstanceType };

/**
 * The cost catalog: on-demand prices per instance type and region, shipped as data with the date and
 * source of every entry, and the cluster cost model built on it (nodes × instance price + load balancer).
 */

/** The month the thesis and the cloud calculators use: 24 h × 365 d / 12. */
export const HOURS_PER_MONTH = 730;

export type CloudProvider = 'aws' | 'azure';

/** Entries whose source starts with this are the seed thesis's reference data (Tables 7.1–7.3). */
export const THESIS_SOURCE_PREFIX = 'thesis';

export interface InstancePrice {
  readonly provider: CloudProvider;
  /** AWS region code (`eu-west-1`) or Azure `armRegionName` (`northeurope`). */
  readonly region: string;
  /** AWS instance type (`c5.xlarge`) or Azure size without the `Standard_` prefix (`F4s`). */
  readonly instanceType: string;
  readonly hourlyUsd: number;
  /** hourlyUsd × 730, or the published monthly figure when the source gives one. */
  readonly monthlyUsd: number;
  /** ISO date (or year / year-month) the price was valid. */
  readonly asOf: string;
  readonly source: string;
}

export interface LoadBalancerPrice {
  readonly provider: CloudProvider;
  /** `*` means the price applies in every region of the provider. */
  readonly region: string;
  readonly kind: string;
  readonly hourlyUsd: number;
  readonly monthlyUsd: number;
  /**
   * The charge per GB the load balancer processes (both directions), when the catalog knows it: Azure's "Standard Data
   * Processed" meter; for an AWS NLB, the NLCU-hour price, one NLCU being 1 GB processed per hour (the dimension that
   * decides for a benchmark's few long-lived connections). Absent: only the hourly charge is known.
   */
  readonly perGbProcessedUsd?: number;
  readonly asOf: string;
  readonly source: string;
}

/** A managed NAT gateway's charges: each hour it exists and each GB it processes (AWS and Azure NAT gateways). */
export interface NatGatewayPrice {
  readonly provider: CloudProvider;
  /** `*` means the price applies in every region of the provider. */
  readonly region: string;
  readonly hourlyUsd: number;
  readonly monthlyUsd: number;
  readonly perGbProcessedUsd: number;
  /**
   * The hour of a static public IPv4 address, which an Azure NAT gateway needs (as does the public load balancer of an
   * Azure cluster). Absent on AWS: the controller's NAT gateway and its Elastic IP are the controller's, not a run's.
   */
  readonly publicIpv4HourlyUsd?: number;
  readonly asOf: string;
  readonly source: string;
}

export interface PriceCatalog {
  readonly currency: 'USD';
  readonly hoursPerMonth: number;
  readonly notes?: string;
  readonly instances: readonly InstancePrice[];
  readonly loadBalancers: readonly LoadBalancerPrice[];
  readonly natGateways: readonly NatGatewayPrice[];
}

/** The catalog is malformed, or does not hold what was asked for; the message says what would be right. */
export class PriceCatalogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PriceCatalogError';
  }
}

const positivePrice = z.number().positive();
const dated = {
  provider: z.enum(['aws', 'azure']),
  region: z.string().min(1),
  asOf: z.string().regex(/^\d{4}(-\d{2}(-\d{2})?)?$/, 'expected an ISO date such as "2019", "2024-06" or "2024-06-30"'),
  source: z.string().min(1),
  hourlyUsd: positivePrice.optional(),
  monthlyUsd: positivePrice.optional(),
};
const catalogSchema = z.object({
  currency: z.literal('USD'),
  hoursPerMonth: z.number().positive().default(HOURS_PER_MONTH),
  notes: z.string().optional(),
  instances: z.array(z.strictObject({ ...dated, instanceType: z.string().min(1) })),
  loadBalancers: z
    .array(
      z.strictObject({ ...dated, kind: z.string().min(1), perGbProcessedUsd: z.number().nonnegative().optional() }),
    )
    .default([]),
  natGateways: z
    .array(
      z.strictObject({
        ...dated,
        perGbProcessedUsd: z.number().nonnegative(),
        publicIpv4HourlyUsd: z.number().nonnegative().optional(),
      }),
    )
    .default([]),
});

/** Validates catalog data (the shipped JSON, or a refreshed copy) and fills in hourly/monthly from each other. */
export function loadPriceCatalog(data: unknown): PriceCatalog {
  const parsed = catalogSchema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '<catalog>'}: ${issue.message}`);
    throw new PriceCatalogError(`invalid price catalog: ${issues.join('; ')}`);
  }
  const { hoursPerMonth } = parsed.data;
  const complete = <T extends { hourlyUsd?: number; monthlyUsd?: number }>(entry: T, where: string) => {
    if (entry.hourlyUsd === undefined && entry.monthlyUsd === undefined) {
      throw new PriceCatalogError(`invalid price catalog: ${where} needs hourlyUsd or monthlyUsd`);
    }
    const hourlyUsd = entry.hourlyUsd ?? entry.monthlyUsd! / hoursPerMonth;
    return { ...entry, hourlyUsd, monthlyUsd: entry.monthlyUsd ?? hourlyUsd * hoursPerMonth };
  };
  return {
    currency: 'USD',
    hoursPerMonth,
    ...(parsed.data.notes === undefined ? {} : { notes: parsed.data.notes }),
    instances: parsed.data.instances.map((entry, index) => complete(entry, `instances.${index}`)),
    loadBalancers: parsed.data.loadBalancers.map((entry, index) => complete(entry, `loadBalancers.${index}`)),
    natGateways: parsed.data.natGateways.map((entry, index) => complete(entry, `natGateways.${index}`)),
  };
}

/** The catalog shipped with rmqbench (core/data/prices.json). */
export const defaultPriceCatalog: PriceCatalog = loadPriceCatalog(pricesJson);

export interface PriceQuery {
  readonly provider: CloudProvider;
  readonly instanceType: string;
  /** Omitted: the newest entry in any region. */
  readonly region?: string;
  /** Only entries whose source starts with this (e.g. THESIS_SOURCE_PREFIX). */
  readonly sourcePrefix?: string;
}

/** The newest matching price; throws PriceCatalogError naming the known alternatives when there is none. */
export function findInstancePrice(catalog: PriceCatalog, query: PriceQuery): InstancePrice {
  // Either Azure spelling (`Standard_F4s_v2` or `F4s_v2`) finds the catalog's entry.
  const wanted = catalogInstanceType(query.provider, query.instanceType).toLowerCase();
  const sameType = catalog.instances.filter(
    (entry) => entry.provider === query.provider && entry.instanceType.toLowerCase() === wanted,
  );
  const matches = sameType.filter(
    (entry) =>
      (query.region === undefined || entry.region === query.region) &&
      (query.sourcePrefix === undefined || entry.source.startsWith(query.sourcePrefix)),
  );
  const newest = newestFirst(matches)[0];
  if (newest !== undefined) return newest;
  if (sameType.length === 0) {
    const known = [
      ...new Set(catalog.instances.filter((e) => e.provider === query.provider).map((e) => e.instanceType)),
    ];
    throw new PriceCatalogError(
      `unknown ${query.provider} instance type "${query.instanceType}" in the price catalog; ` +
        `known: ${known.sort().join(', ') || 'none'} ` +
        `(run "rmqbench prices update" or add it to core/data/prices.json)`,
    );
  }
  const available = [...new Set(sameType.map((e) => `${e.region} (${e.source.split(' ')[0]}, ${e.asOf})`))].join(', ');
  throw new PriceCatalogError(
    `no price for ${query.provider} ${query.instanceType}` +
      (query.region === undefined ? '' : ` in region ${query.region}`) +
      (query.sourcePrefix === undefined ? '' : ` from source "${query.sourcePrefix}…"`) +
      `; the catalog has it for: ${available}`,
  );
}

/**
 * The newest entry for a provider in a region, a region-specific price winning over the provider-wide one (`*`);
 * undefined when there is neither.
 */
function newestInRegion<T extends { provider: CloudProvider; region: string; asOf: string }>(
  entries: readonly T[],
  provider: CloudProvider,
  region: string,
): T | undefined {
  const matches = entries.filter(
    (entry) => entry.provider === provider && (entry.region === region || entry.region === '*'),
  );
  return newestFirst(matches.filter((entry) => entry.region === region))[0] ?? newestFirst(matches)[0];
}

/** The newest load balancer price for a provider in a region (or region `*`); undefined when the catalog has none. */
export function findLoadBalancerPrice(
  catalog: PriceCatalog,
  provider: CloudProvider,
  region: string,
): LoadBalancerPrice | undefined {
  return newestInRegion(catalog.loadBalancers, provider, region);
}

/** The newest NAT gateway price for a provider in a region (or region `*`); undefined when the catalog has none. */
export function findNatGatewayPrice(
  catalog: PriceCatalog,
  provider: CloudProvider,
  region: string,
): NatGatewayPrice | undefined {
  return newestInRegion(catalog.natGateways, provider, region);
}

export interface ClusterCostInput {
  readonly provider: CloudProvider;
  readonly instanceType: string;
  /** Omitted: the newest price in any region. */
  readonly region?: string;
  readonly nodes: number;
  /** Whether the cluster has a load balancer in front (plan `connection: lb`). */
  readonly loadBalancer: boolean;
  readonly sourcePrefix?: string;
}

export interface ClusterCost {
  readonly instance: InstancePrice;
  readonly nodes: number;
  /** Absent when there is no load balancer or the catalog has no price for one (see `notes`). */
  readonly loadBalancer?: LoadBalancerPrice;
  readonly hourlyUsd: number;
  readonly monthlyUsd: number;
  /** Caveats a report should show next to the figure. */
  readonly notes: readonly string[];
}

/** Cost of a cluster: nodes × instance price, plus the load balancer's fixed hourly charge when there is one. */
export function clusterCost(catalog: PriceCatalog, input: ClusterCostInput): ClusterCost {
  if (!Number.isInteger(input.nodes) || input.nodes < 1) {
    throw new PriceCatalogError(`nodes must be a positive integer, got ${input.nodes}`);
  }
  const instance = findInstancePrice(catalog, input);
  const notes: string[] = [];
  const loadBalancer = input.loadBalancer ? findLoadBalancerPrice(catalog, input.provider, instance.region) : undefined;
  if (input.loadBalancer && loadBalancer === undefined) {
    notes.push(`no ${input.provider} load balancer price in the catalog for ${instance.region}; cost excludes it`);
  }
  if (loadBalancer !== undefined) notes.push(`load balancer: fixed hourly charge only (${loadBalancer.source})`);
  const instanceMonthly = input.nodes * instance.monthlyUsd;
  const monthlyUsd = instanceMonthly + (loadBalancer?.monthlyUsd ?? 0);
  return {
    instance,
    nodes: input.nodes,
    ...(loadBalancer === undefined ? {} : { loadBalancer }),
    hourlyUsd: monthlyUsd / catalog.hoursPerMonth,
    monthlyUsd,
    notes,
  };
}

/** What running the cluster for one benchmark run costs (wall-clock seconds, billed pro rata). */
export function costOfRun(cost: Pick<ClusterCost, 'hourlyUsd'>, durationSeconds: number): number {
  if (!Number.isFinite(durationSeconds) || durationSeconds < 0) {
    throw new PriceCatalogError(`run duration must be a non-negative number of seconds, got ${durationSeconds}`);
  }
  return (cost.hourlyUsd * durationSeconds) / 3600;
}

function newestFirst<T extends { asOf: string }>(entries: readonly T[]): T[] {
  return [...entries].sort((a, b) => b.asOf.localeCompare(a.asOf));
}
