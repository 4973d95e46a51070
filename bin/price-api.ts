/** What `rmqbench prices update` needs of the vendors' price APIs (prices-update.ts, load-balancer-prices.ts). */

export const AZURE_RETAIL_PRICES_URL = 'https://prices.azure.com/api/retail/prices';

/** The part of the Fetch API used here, so that tests can pass their own. */
export type FetchLike = (
  url: string,
  init?: { signal?: AbortSignal },
) => Promise<{ ok: boolean; status: number; statusText: string; json(): Promise<unknown> }>;

/** Shape of @aws-sdk/client-pricing GetProducts, e.g. `(input) => client.send(new GetProductsCommand(input))`. */
export type AwsGetProducts = (input: {
  ServiceCode: string;
  Filters: { Type: 'TERM_MATCH'; Field: string; Value: string }[];
  NextToken?: string;
}) => Promise<{ PriceList?: (string | Record<string, unknown>)[]; NextToken?: string }>;

/**
 * Every item the Azure Retail Prices API lists for `filter` (an OData $filter), following NextPageLink for at most
 * `maxPages` pages; an HTTP error or an answer without an Items list throws, so that a provider's refresh is all or
 * nothing.
 */
export async function azureRetailItems<T>(
  filter: string,
  options: { readonly fetchImpl?: FetchLike; readonly timeoutMs?: number; readonly maxPages?: number },
  what: string,
): Promise<T[]> {
  const fetchImpl = options.fetchImpl ?? (globalThis.fetch as unknown as FetchLike);
  const maxPages = options.maxPages ?? 20;
  let url: string | undefined = `${AZURE_RETAIL_PRICES_URL}?$filter=${encodeURIComponent(filter)}`;
  const items: T[] = [];
  for (let page = 0; url !== undefined; page++) {
    if (page >= maxPages) throw new Error(`more than ${maxPages} result pages for ${what}`);
    const response = await fetchImpl(url, { signal: AbortSignal.timeout(options.timeoutMs ?? 20_000) });
    if (!response.ok)
      throw new Error(`Azure Retail Prices API answered HTTP ${response.status} ${response.statusText}`);
    const body = (await response.json()) as { Items?: T[]; NextPageLink?: string | null } | null;
    if (body === null || typeof body !== 'object' || !Array.isArray(body.Items)) {
      throw new Error('Azure Retail Prices API answered without an Items list');
    }
    items.push(...body.Items);
    url = body.NextPageLink ?? undefined;
  }
  return items;
}

/** A Retail Prices API item, as far as the price updates read it. */
export interface AzureRetailMeter {
  meterName?: string;
  armSkuName?: string;
  productName?: string;
  armRegionName?: string;
  skuName?: string;
  type?: string;
  currencyCode?: string;
  retailPrice?: number;
  unitOfMeasure?: string;
  effectiveStartDate?: string;
}

/**
 * The newest item of `items` that `matches` and has a positive USD price (a "- Free" meter is priced 0); undefined when
 * there is none.
 */
export function newestPricedMeter(
  items: readonly AzureRetailMeter[],
  matches: (item: AzureRetailMeter) => boolean,
): AzureRetailMeter | undefined {
  return items
    .filter(
      (item) =>
        matches(item) && item.currencyCode === 'USD' && typeof item.retailPrice === 'number' && item.retailPrice > 0,
    )
    .sort((a, b) => (b.effectiveStartDate ?? '').localeCompare(a.effectiveStartDate ?? ''))[0];
}

/** An error as one line: its message and its cause's (fetch failures carry the reason in `cause`). */
export function reason(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    return `${error.name === 'TimeoutError' ? 'timed out' : error.message}${detail}`;
  }
  return String(error);
}

/**
 * The USD of each on-demand price dimension of a Price List product (GetProducts returns each as a JSON string), with
 * its product's usage type.
 */
export function priceDimensions(product: unknown): { usageType: string; usd: number }[] {
  const entry = (typeof product === 'string' ? JSON.parse(product) : product) as {
    product?: { attributes?: { usagetype?: string } };
    terms?: { OnDemand?: Record<string, { priceDimensions?: Record<string, { pricePerUnit?: { USD?: string } }> }> };
  };
  const usageType = entry?.product?.attributes?.usagetype ?? '';
  return Object.values(entry?.terms?.OnDemand ?? {}).flatMap((term) =>
    Object.values(term.priceDimensions ?? {}).map((dimension) => ({
      usageType,
      usd: Number(dimension.pricePerUnit?.USD),
    })),
  );
}

/**
 * The on-demand price of the first product of `serviceCode` matching `filters` (TERM_MATCH, every page) whose usage
 * type matches `usageType` and whose price is above 0; throws "<serviceCode> has no priced <what>" without one.
 */
export async function awsUsagePrices(
  getProducts: AwsGetProducts,
  serviceCode: string,
  filters: Record<string, string>,
): Promise<(usageType: RegExp, what: string) => number> {
  const Filters = Object.entries(filters).map(([Field, Value]) => ({ Type: 'TERM_MATCH' as const, Field, Value }));
  const found: { usageType: string; usd: number }[] = [];
  let nextToken: string | undefined;
  do {
    const page = await getProducts({
      ServiceCode: serviceCode,
      Filters,
      ...(nextToken === undefined ? {} : { NextToken: nextToken }),
    });
    for (const entry of page.PriceList ?? []) found.push(...priceDimensions(entry));
    nextToken = page.NextToken;
  } while (nextToken !== undefined);
  return (usageType, what) => {
    const match = found.find((dimension) => usageType.test(dimension.usageType) && dimension.usd > 0);
    if (!match) throw new Error(`${serviceCode} has no priced ${what}`);
    return match.usd;
  };
}
