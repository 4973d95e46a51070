import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPriceCatalog, loadPriceCatalog, PriceCatalogError } from '../../core/cost/cost-catalog';
import {
  loadEffectiveCatalog,
  SHIPPED_CATALOG,
  showPrices,
  updatePrices,
  userCatalogPath,
} from '../../bin/prices-command';
import type { FetchLike } from '../../bin/prices-update';

const home = () => mkdtempSync(join(tmpdir(), 'rmqbench-prices-'));
const now = new Date('2026-02-03T10:00:00Z');

const offline: FetchLike = async () => {
  throw new TypeError('fetch failed', { cause: new Error('getaddrinfo ENOTFOUND prices.azure.com') });
};

/** The Azure Retail Prices API answering one Linux pay-as-you-go price per requested size. */
const azureApi: FetchLike = async (url) => {
  const skus = [...decodeURIComponent(url).matchAll(/armSkuName eq '([^']+)'/g)].map((match) => match[1]!);
  const region = /armRegionName eq '([^']+)'/.exec(decodeURIComponent(url))![1]!;
  return {
    ok: true,
    status: 200,
    statusText: 'OK',
    json: async () => ({
      Items: skus.map((sku) => ({
        currencyCode: 'USD',
        retailPrice: 0.5,
        unitOfMeasure: '1 Hour',
        armRegionName: region,
        armSkuName: sku,
        skuName: sku.replace('Standard_', ''),
        productName: 'Virtual Machines FSv2 Series',
        type: 'Consumption',
        effectiveStartDate: '2025-01-01T00:00:00Z',
      })),
      NextPageLink: null,
    }),
  };
};

describe('rmqbench prices', () => {
  it('shows the shipped catalog when nothing was refreshed, one line per price with its source', () => {
    const text = showPrices(loadEffectiveCatalog(userCatalogPath(home())), false);
    expect(text.split('\n')[0]).toBe(`price catalog: ${SHIPPED_CATALOG} (USD, on demand, 730 h per month)`);
    expect(text).toMatch(/^aws\s+eu-west-1\s+c5\.xlarge\s+\$0\.1925\s+\$140\.55\s+2019\s+thesis Table 7\.1$/m);
    expect(JSON.parse(showPrices(loadEffectiveCatalog(userCatalogPath(home())), true)).instances).toHaveLength(
      defaultPriceCatalog.instances.length,
    );
  });

  it('offline: keeps the catalog, writes nothing, and says why for each provider', async () => {
    const dir = home();
    const out = userCatalogPath(dir);
    const result = await updatePrices(loadEffectiveCatalog(out), out, { fetchImpl: offline, now });
    expect(result.refreshed).toBe(false);
    expect(existsSync(out)).toBe(false);
    expect(result.messages).toEqual([
      expect.stringMatching(
        new RegExp(
          String.raw`^Azure prices not refreshed \(fetch failed: getaddrinfo ENOTFOUND prices\.azure\.com\); ` +
            String.raw`kept the \d+ Azure entries`,
        ),
      ),
      expect.stringMatching(/^AWS prices not refreshed: the AWS Price List API needs AWS credentials/),
      'Azure load balancer prices not refreshed (fetch failed: getaddrinfo ENOTFOUND prices.azure.com); ' +
        'kept the old ones',
      'AWS load balancer prices not refreshed: the AWS Price List API needs AWS credentials',
      'Azure NAT gateway prices not refreshed (fetch failed: getaddrinfo ENOTFOUND prices.azure.com); ' +
        'kept the old ones',
      'AWS NAT gateway prices not refreshed: the AWS Price List API needs AWS credentials',
      `no prices refreshed: kept ${SHIPPED_CATALOG} unchanged`,
    ]);
  });

  it('online: writes the refreshed catalog to the data folder, and later commands use it', async () => {
    const dir = home();
    const out = userCatalogPath(dir);
    const result = await updatePrices(loadEffectiveCatalog(out), out, { fetchImpl: azureApi, now });
    expect(result.refreshed).toBe(true);
    expect(result.file).toBe(out);
    expect(result.messages.at(-1)).toBe(
      `wrote ${out}; rmqbench uses it from now on (delete it to go back to ${SHIPPED_CATALOG})`,
    );
    const effective = loadEffectiveCatalog(out);
    expect(effective.source).toBe(out);
    const fresh = effective.catalog.instances.filter((entry) => entry.asOf === '2026-02-03');
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.every((entry) => entry.provider === 'azure' && entry.hourlyUsd === 0.5)).toBe(true);
    // The thesis reference prices stay next to the fresh ones.
    expect(effective.catalog.instances.filter((entry) => entry.source.startsWith('thesis'))).toHaveLength(
      defaultPriceCatalog.instances.filter((entry) => entry.source.startsWith('thesis')).length,
    );
    expect(loadPriceCatalog(JSON.parse(readFileSync(out, 'utf8')))).toEqual(effective.catalog);
  });

  it('names a broken refreshed catalog and how to get back to the shipped one', () => {
    const dir = home();
    const out = userCatalogPath(dir);
    writeFileSync(out, '{"currency":"EUR","instances":[]}');
    expect(() => loadEffectiveCatalog(out)).toThrow(PriceCatalogError);
    expect(() => loadEffectiveCatalog(out)).toThrow(
      new RegExp(`^${out}: invalid price catalog: currency: .*; fix it, or delete it to use ${SHIPPED_CATALOG}$`),
    );
    writeFileSync(out, '{');
    expect(() => loadEffectiveCatalog(out)).toThrow(/is not valid JSON/);
  });
});
