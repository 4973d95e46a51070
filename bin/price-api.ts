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

/** An error as one line: its message and its cause's (fetch failures carry the reason in `cause`). */
export function reason(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    return `${error.name === 'TimeoutError' ? 'timed out' : error.message}${detail}`;
  }
  return String(error);
}
