import {
  azureArmSku,
  serializePriceCatalog,
  updatePriceCatalog,
  type AwsGetProducts,
  type FetchLike,
} from '../../bin/prices-update';
import { AZURE_VM_SIZES } from '../../core/cost/azure-vm-sizes';
import {
  defaultPriceCatalog,
  findInstancePrice,
  loadPriceCatalog,
  THESIS_SOURCE_PREFIX,
} from '../../core/cost/cost-catalog';

const NOW = new Date('2025-03-04T05:06:07Z');

/**
 * An Azure Retail Prices API item as the API returns it (field set and values shaped like the real ones; prices
 * illustrative).
 */
function azureItem(overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    currencyCode: 'USD',
    tierMinimumUnits: 0.0,
    retailPrice: 0.199,
    unitPrice: 0.199,
    armRegionName: 'northeurope',
    location: 'EU North',
    effectiveStartDate: '2016-10-01T00:00:00Z',
    meterId: '0b0c2f2d-4c2b-4a4e-9d7a-4a6b2b0f2a11',
    meterName: 'F4s',
    productId: 'DZH318Z0BQ5S',
    skuId: 'DZH318Z0BQ5S/00BN',
    availabilityId: null,
    productName: 'Virtual Machines FS Series',
    skuName: 'F4s',
    serviceName: 'Virtual Machines',
    serviceId: 'DZH313Z7MMC8',
    serviceFamily: 'Compute',
    unitOfMeasure: '1 Hour',
    type: 'Consumption',
    isPrimaryMeterRegion: true,
    armSkuName: 'Standard_F4s',
    ...overrides,
  };
}

const PAGE_1 = {
  BillingCurrency: 'USD',
  CustomerEntityId: 'Default',
  CustomerEntityType: 'Retail',
  Items: [
    azureItem({ productName: 'Virtual Machines FS Series Windows', retailPrice: 0.383, unitPrice: 0.383 }),
    azureItem({ skuName: 'F4s Spot', meterName: 'F4s Spot', retailPrice: 0.0398, unitPrice: 0.0398 }),
    azureItem({ skuName: 'F4s Low Priority', meterName: 'F4s Low Priority', retailPrice: 0.0398, unitPrice: 0.0398 }),
    azureItem({ retailPrice: 0.21, unitPrice: 0.21, effectiveStartDate: '2015-01-01T00:00:00Z' }),
    azureItem({}),
  ],
  NextPageLink: 'https://prices.azure.com:443/api/retail/prices?$filter=...&$skip=100',
  Count: 5,
};
const PAGE_2 = {
  BillingCurrency: 'USD',
  CustomerEntityId: 'Default',
  CustomerEntityType: 'Retail',
  Items: [
    azureItem({ meterName: 'F8s', skuName: 'F8s', armSkuName: 'Standard_F8s', retailPrice: 0.398, unitPrice: 0.398 }),
  ],
  NextPageLink: null,
  Count: 1,
};

function respond(body: unknown, status = 200): ReturnType<FetchLike> {
  return Promise.resolve({
    ok: status >= 200 && status < 300,
    status,
    statusText: status === 200 ? 'OK' : 'Too Many Requests',
    json: () => Promise.resolve(body),
  });
}

describe('updatePriceCatalog without network', () => {
  const offline: FetchLike = () =>
    Promise.reject(new TypeError('fetch failed', { cause: new Error('getaddrinfo ENOTFOUND prices.azure.com') }));

  it('returns the old catalog unchanged with a message per provider', async () => {
    const update = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: offline, now: NOW });
    expect(update.catalog).toBe(defaultPriceCatalog);
    expect(update.messages).toEqual([
      'Azure prices not refreshed (fetch failed: getaddrinfo ENOTFOUND prices.azure.com); kept the 21 Azure ' +
        'entries (as of 2019, 2026-06-18)',
      'AWS prices not refreshed: the AWS Price List API needs AWS credentials (none were given); kept the 33 ' +
        'AWS entries (as of 2019, 2020-07-02, 2024-06, 2026-07-20)',
      'Azure load balancer prices not refreshed (fetch failed: getaddrinfo ENOTFOUND prices.azure.com); ' +
        'kept the old ones',
      'AWS load balancer prices not refreshed: the AWS Price List API needs AWS credentials',
      'Azure NAT gateway prices not refreshed (fetch failed: getaddrinfo ENOTFOUND prices.azure.com); ' +
        'kept the old ones',
      'AWS NAT gateway prices not refreshed: the AWS Price List API needs AWS credentials',
    ]);
  });

  it('keeps the old catalog when the API answers with an HTTP error', async () => {
    const update = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: () => respond({}, 429), now: NOW });
    expect(update.catalog).toBe(defaultPriceCatalog);
    expect(update.messages[0]).toMatch(
      /^Azure prices not refreshed \(Azure Retail Prices API answered HTTP 429 Too Many Requests\)/,
    );
  });

  it('keeps the old catalog when the answer is not a price page', async () => {
    const update = await updatePriceCatalog(defaultPriceCatalog, {
      fetchImpl: () => respond({ error: 'nope' }),
      now: NOW,
    });
    expect(update.catalog).toBe(defaultPriceCatalog);
    expect(update.messages[0]).toMatch(/answered without an Items list/);
  });

  it('discards a provider entirely when a later page fails, so no half-refreshed provider results', async () => {
    let calls = 0;
    const flaky: FetchLike = () => (++calls === 1 ? respond(PAGE_1) : Promise.reject(new Error('socket hang up')));
    const update = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: flaky, now: NOW });
    expect(update.catalog).toBe(defaultPriceCatalog);
    expect(update.messages[0]).toMatch(/socket hang up/);
  });
});

describe('updatePriceCatalog with the Azure Retail Prices API', () => {
  const requested: string[] = [];
  const azure: FetchLike = (url) => {
    // The load balancers' and NAT gateways' meters are asked for separately (test/bin/load-balancer-prices.test.ts,
    // nat-gateway-prices.test.ts).
    if (!decodeURIComponent(url).includes("serviceName eq 'Virtual Machines'") && !url.includes('$skip=100'))
      return respond({ Items: [] });
    requested.push(url);
    return respond(url.includes('$skip=100') ? PAGE_2 : PAGE_1);
  };

  it(
    'asks for the catalog sizes and every size the templates deploy in each region, follows NextPageLink and ' +
      'keeps the newest Linux pay-as-you-go price',
    async () => {
      requested.length = 0;
      const update = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: azure, now: NOW });
      const deployed = AZURE_VM_SIZES.map((size) => `armSkuName eq '${size}'`).join(' or ');
      expect(decodeURIComponent(requested[0]!)).toBe(
        "https://prices.azure.com/api/retail/prices?$filter=serviceName eq 'Virtual Machines' and priceType eq " +
          "'Consumption' and " +
          `armRegionName eq 'northeurope' and (armSkuName eq 'Standard_F4s' or armSkuName eq 'Standard_F8s' or ` +
          `armSkuName eq 'Standard_F16s' or ${deployed})`,
      );
      // Two pages for northeurope, then eastus (where the catalog has only the deployable sizes), two pages again.
      expect(requested).toHaveLength(4);
      expect(decodeURIComponent(requested[2]!)).toContain(`armRegionName eq 'eastus' and (${deployed})`);

      const f4s = findInstancePrice(update.catalog, { provider: 'azure', instanceType: 'F4s' });
      expect(f4s).toMatchObject({ region: 'northeurope', hourlyUsd: 0.199, asOf: '2025-03-04' });
      expect(f4s.monthlyUsd).toBeCloseTo(0.199 * 730, 10);
      expect(f4s.source).toBe(
        'Azure Retail Prices API (https://prices.azure.com/api/retail/prices), Virtual Machines FS Series F4s, ' +
          'Linux pay-as-you-go, effective 2016-10-01',
      );
      expect(findInstancePrice(update.catalog, { provider: 'azure', instanceType: 'F8s' }).hourlyUsd).toBe(0.398);
      expect(update.messages[0]).toMatch(
        new RegExp(
          String.raw`^Azure prices refreshed for 2 of 21 instance type\/region pairs \(as of 2025-03-04\); not ` +
            String.raw`offered any more or not found, kept as they were: F16s in northeurope, D2s_v5 in eastus, ` +
            String.raw`.*, F32s_v2 in northeurope$`,
        ),
      );
    },
  );

  it('adds a deployable size the catalog lacks instead of refreshing only what it has', async () => {
    const thesisOnly = {
      ...defaultPriceCatalog,
      instances: defaultPriceCatalog.instances.filter((entry) => entry.source.startsWith(THESIS_SOURCE_PREFIX)),
    };
    const f16sV2: FetchLike = (url) =>
      respond({
        Items: decodeURIComponent(url).includes("'Standard_F16s_v2'")
          ? [
              azureItem({
                armSkuName: 'Standard_F16s_v2',
                skuName: 'F16s v2',
                productName: 'Virtual Machines FSv2 Series',
                retailPrice: 0.768,
              }),
            ]
          : [],
        NextPageLink: null,
      });
    const update = await updatePriceCatalog(thesisOnly, { fetchImpl: f16sV2, now: NOW });
    expect(findInstancePrice(update.catalog, { provider: 'azure', instanceType: 'Standard_F16s_v2' })).toMatchObject({
      region: 'northeurope',
      hourlyUsd: 0.768,
      asOf: '2025-03-04',
    });
  });

  it('keeps the thesis entries next to the refreshed ones', async () => {
    const update = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: azure, now: NOW });
    expect(
      findInstancePrice(update.catalog, { provider: 'azure', instanceType: 'F4s', sourcePrefix: THESIS_SOURCE_PREFIX })
        .monthlyUsd,
    ).toBe(164.98);
  });

  it('replaces an earlier refreshed entry instead of piling up duplicates', async () => {
    const once = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: azure, now: NOW });
    const twice = await updatePriceCatalog(once.catalog, { fetchImpl: azure, now: new Date('2025-04-01T00:00:00Z') });
    const f4sEntries = twice.catalog.instances.filter((entry) => entry.instanceType === 'F4s');
    expect(f4sEntries.map((entry) => entry.asOf).sort()).toEqual(['2019', '2025-04-01']);
  });

  it('writes a catalog the loader reads back', async () => {
    const update = await updatePriceCatalog(defaultPriceCatalog, { fetchImpl: azure, now: NOW });
    expect(loadPriceCatalog(JSON.parse(serializePriceCatalog(update.catalog)))).toEqual(update.catalog);
  });
});

describe('updatePriceCatalog with an AWS Price List client', () => {
  const product = (instanceType: string, usd: string) =>
    JSON.stringify({
      product: {
        productFamily: 'Compute Instance',
        attributes: { instanceType, regionCode: 'us-east-1', operatingSystem: 'Linux' },
        sku: 'ABC',
      },
      serviceCode: 'AmazonEC2',
      terms: {
        OnDemand: {
          'ABC.JRTCKXETXF': {
            priceDimensions: {
              'ABC.JRTCKXETXF.6YS6EN2CT7': {
                unit: 'Hrs',
                pricePerUnit: { USD: usd },
                description: `$${usd} per On Demand Linux ${instanceType} Instance Hour`,
              },
            },
            sku: 'ABC',
            effectiveDate: '2025-02-01T00:00:00Z',
          },
        },
      },
    });

  it(
    'asks GetProducts per type and region with Linux ' + 'shared-tenancy filters and records the hourly price',
    async () => {
      const inputs: Parameters<AwsGetProducts>[0][] = [];
      const getProducts: AwsGetProducts = (input) => {
        inputs.push(input);
        const type = input.Filters.find((filter) => filter.Field === 'instanceType')!.Value;
        return Promise.resolve({ PriceList: type === 'c5.xlarge' ? [product(type, '0.1700000000')] : [] });
      };
      const offline: FetchLike = () => Promise.reject(new Error('offline'));
      const update = await updatePriceCatalog(defaultPriceCatalog, {
        fetchImpl: offline,
        awsGetProducts: getProducts,
        now: NOW,
      });
      expect(inputs[0]).toEqual({
        ServiceCode: 'AmazonEC2',
        Filters: [
          { Type: 'TERM_MATCH', Field: 'instanceType', Value: 'c5.xlarge' },
          { Type: 'TERM_MATCH', Field: 'regionCode', Value: 'eu-west-1' },
          { Type: 'TERM_MATCH', Field: 'operatingSystem', Value: 'Linux' },
          { Type: 'TERM_MATCH', Field: 'tenancy', Value: 'Shared' },
          { Type: 'TERM_MATCH', Field: 'preInstalledSw', Value: 'NA' },
          { Type: 'TERM_MATCH', Field: 'capacitystatus', Value: 'Used' },
          { Type: 'TERM_MATCH', Field: 'licenseModel', Value: 'No License required' },
        ],
      });
      const c5 = findInstancePrice(update.catalog, { provider: 'aws', instanceType: 'c5.xlarge', region: 'eu-west-1' });
      expect(c5).toMatchObject({ hourlyUsd: 0.17, asOf: '2025-03-04' });
      expect(update.messages[1]).toMatch(/^AWS prices refreshed for 2 of 25 instance type\/region pairs/);
    },
  );
});

it('maps thesis Azure sizes to armSkuName', () => {
  expect(azureArmSku('F4s')).toBe('Standard_F4s');
  expect(azureArmSku('Standard_F4s_v2')).toBe('Standard_F4s_v2');
});
