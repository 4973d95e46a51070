import { PricingClient } from '@aws-sdk/client-pricing';
import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { awsPriceList } from '../../bin/aws-price-list';
import { updatePriceCatalog } from '../../bin/prices-update';

describe('prices update through the real AWS Price List client', () => {
  test('without credentials the AWS prices are kept and the message says why', async () => {
    const client = new PricingClient({
      region: 'us-east-1',
      maxAttempts: 1,
      credentials: async () => {
        throw new Error('no AWS credentials configured');
      },
    });
    const offline = () => Promise.reject(new Error('getaddrinfo ENOTFOUND prices.azure.com'));
    const result = await updatePriceCatalog(defaultPriceCatalog, {
      fetchImpl: offline,
      awsGetProducts: awsPriceList(client),
      timeoutMs: 2000,
    });
    expect(result.catalog).toBe(defaultPriceCatalog);
    const aws = result.messages.filter((message) => /AWS/.test(message)).join('\n');
    expect(aws).toMatch(/no AWS credentials configured/);
  });
});
