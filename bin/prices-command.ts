import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { defaultPriceCatalog, loadPriceCatalog, PriceCatalogError, type PriceCatalog } from '../core/cost/cost-catalog';
import { serializePriceCatalog, updatePriceCatalog, type UpdatePriceCatalogOptions } from './prices-update';

/**
 * `rmqbench prices` and `rmqbench prices update`. The shipped catalog (core/data/prices.json) is
 * read-only; a refreshed catalog is written to `<RMQBENCH_HOME>/prices.json`, which from then on is
 * the catalog every command uses (delete it to go back to the shipped one).
 */

export interface EffectiveCatalog {
  readonly catalog: PriceCatalog;
  /** Where it came from, for messages: a file path, or "the catalog shipped with rmqbench". */
  readonly source: string;
}

export const SHIPPED_CATALOG = 'the catalog shipped with rmqbench';

export function userCatalogPath(dataDir: string): string {
  return join(dataDir, 'prices.json');
}

/** The refreshed catalog in the data folder when there is one, otherwise the shipped one. */
export function loadEffectiveCatalog(path: string): EffectiveCatalog {
  if (!existsSync(path)) return { catalog: defaultPriceCatalog, source: SHIPPED_CATALOG };
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new PriceCatalogError(
      `${path} is not valid JSON (${(error as Error).message}); fix it, or delete it to use ${SHIPPED_CATALOG}`,
    );
  }
  try {
    return { catalog: loadPriceCatalog(data), source: path };
  } catch (error) {
    throw new PriceCatalogError(`${path}: ${(error as Error).message}; fix it, or delete it to use ${SHIPPED_CATALOG}`);
  }
}

/** `rmqbench prices [--json]`: every price, one line each, newest entries of a type last. */
export function showPrices(effective: EffectiveCatalog, json: boolean): string {
  const { catalog, source } = effective;
  if (json) return `${JSON.stringify({ source, ...catalog }, null, 2)}\n`;
  const rows = [...catalog.instances]
    .sort(
      (a, b) =>
        a.provider.localeCompare(b.provider) ||
        a.instanceType.localeCompare(b.instanceType, 'en', { numeric: true }) ||
        a.asOf.localeCompare(b.asOf),
    )
    .map((entry) =>
      [
        entry.provider.padEnd(5),
        entry.region.padEnd(13),
        entry.instanceType.padEnd(12),
        money(entry.hourlyUsd, 4).padStart(9),
        money(entry.monthlyUsd, 2).padStart(10),
        entry.asOf.padEnd(10),
        shortSource(entry.source),
      ].join('  '),
    );
  const loadBalancers = catalog.loadBalancers.map((entry) =>
    [
      entry.provider.padEnd(5),
      entry.region.padEnd(13),
      entry.kind.padEnd(24),
      money(entry.hourlyUsd, 4).padStart(9),
      money(entry.monthlyUsd, 2).padStart(10),
      entry.asOf.padEnd(10),
      shortSource(entry.source),
    ].join('  '),
  );
  const header = [
    'cloud',
    'region'.padEnd(13),
    'instance'.padEnd(12),
    'USD/hour'.padStart(9),
    'USD/month'.padStart(10),
    'as of'.padEnd(10),
    'source',
  ].join('  ');
  return [
    `price catalog: ${source} (USD, on demand, ${catalog.hoursPerMonth} h per month)`,
    header,
    ...rows,
    ...(loadBalancers.length > 0
      ? [
          '',
          [
            'cloud',
            'region'.padEnd(13),
            'load balancer'.padEnd(24),
            'USD/hour'.padStart(9),
            'USD/month'.padStart(10),
            'as of'.padEnd(10),
            'source',
          ].join('  '),
          ...loadBalancers,
        ]
      : []),
    ...natGatewayLines(catalog),
    '',
  ].join('\n');
}

const money = (value: number, digits: number) => `$${value.toFixed(digits)}`;

/** The catalog's NAT gateways: hour and GB processed (estimate prices what a run's VMs download through them). */
function natGatewayLines(catalog: PriceCatalog): string[] {
  if (catalog.natGateways.length === 0) return [];
  const header = [
    'cloud',
    'region'.padEnd(13),
    'NAT gateway'.padEnd(24),
    'USD/hour'.padStart(9),
    'USD/GB'.padStart(10),
  ];
  return [
    '',
    [...header, 'as of'.padEnd(10), 'source'].join('  '),
    ...catalog.natGateways.map((entry) =>
      [
        entry.provider.padEnd(5),
        entry.region.padEnd(13),
        (entry.publicIpv4HourlyUsd === undefined ? '' : `+ IPv4 ${money(entry.publicIpv4HourlyUsd, 4)}/h`).padEnd(24),
        money(entry.hourlyUsd, 4).padStart(9),
        money(entry.perGbProcessedUsd, 4).padStart(10),
        entry.asOf.padEnd(10),
        shortSource(entry.source),
      ].join('  '),
    ),
  ];
}

export interface PricesUpdateResult {
  readonly stdout: string;
  /** True when at least one provider's prices were refreshed and written. */
  readonly refreshed: boolean;
  readonly messages: readonly string[];
  readonly file?: string;
}

/**
 * `rmqbench prices update`: refreshes the effective catalog from the providers' price APIs and writes it
 * to `out`. When nothing could be refreshed (offline, API down) nothing is written and the messages say
 * which data was kept.
 */
export async function updatePrices(
  effective: EffectiveCatalog,
  out: string,
  options: UpdatePriceCatalogOptions & { readonly json?: boolean } = {},
): Promise<PricesUpdateResult> {
  const update = await updatePriceCatalog(effective.catalog, options);
  const refreshed = update.catalog !== effective.catalog;
  const messages = [...update.messages];
  let file: string | undefined;
  if (refreshed) {
    file = resolve(out);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, serializePriceCatalog(update.catalog));
    messages.push(`wrote ${file}; rmqbench uses it from now on (delete it to go back to ${SHIPPED_CATALOG})`);
  } else {
    messages.push(`no prices refreshed: kept ${effective.source} unchanged`);
  }
  const stdout = options.json
    ? `${JSON.stringify({ refreshed, messages, ...(file === undefined ? {} : { file }) }, null, 2)}\n`
    : `${messages.join('\n')}\n`;
  return { stdout, refreshed, messages, ...(file === undefined ? {} : { file }) };
}

/** "thesis Table 7.1 (…)" → "thesis Table 7.1"; API sources keep their first clause. */
function shortSource(source: string): string {
  const cut = source.search(/ \(|,/);
  return cut < 0 ? source : source.slice(0, cut);
}
