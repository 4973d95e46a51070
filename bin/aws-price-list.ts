import { GetProductsCommand, PricingClient } from '@aws-sdk/client-pricing';
import type { AwsGetProducts } from './prices-update';

/**
 * The AWS Price List Query API (GetProducts) with the default credential chain. The API lives in
 * us-east-1 whatever region is priced; without credentials the call fails and `prices update` keeps
 * the AWS prices it has, saying why.
 */
export function awsPriceList(client = new PricingClient({ region: 'us-east-1', maxAttempts: 2 })): AwsGetProducts {
  return async (input) => {
    const response = await client.send(new GetProductsCommand(input));
    return {
      PriceList: (response.PriceList ?? []).map((entry: unknown) => String(entry)),
      ...(response.NextToken ? { NextToken: response.NextToken } : {}),
    };
  };
}
