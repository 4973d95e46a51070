import {
  assertNoWorldOpenSourcePrefixes,
  MINIMUM_SOURCE_PREFIX_LENGTH,
  worldOpenReason,
} from '../../core/cloud/source-prefixes';

describe('world-open source prefixes are refused by name', () => {
  test.each([
    '*',
    'Internet',
    'INTERNET',
    'Any',
    'any',
    '0.0.0.0/0',
    '::/0',
    '0.0.0.0/1',
    '128.0.0.0/1',
    '2000::/3',
    '64.0.0.0/2',
    'AzureCloud',
    'AzureCloud.westeurope',
    ' Internet ',
  ])('%s opens the cluster to the world', (prefix) => {
    expect(worldOpenReason(prefix)).toEqual(expect.any(String));
  });

  test.each([
    '203.0.113.7/32',
    '203.0.113.7',
    '10.0.0.0/8',
    '10.20.2.0/24',
    '2001:db8::/32',
    'VirtualNetwork',
    'AzureLoadBalancer',
  ])('%s is accepted', (prefix) => {
    expect(worldOpenReason(prefix)).toBeUndefined();
  });

  test('the shortest accepted prefix is a /8', () => {
    expect(MINIMUM_SOURCE_PREFIX_LENGTH).toBe(8);
    expect(worldOpenReason('10.0.0.0/7')).toMatch(/1\/128/);
  });

  test('the error names every refused prefix and the parameter, and accepts a list without any', () => {
    expect(() => assertNoWorldOpenSourcePrefixes(['203.0.113.7/32', '0.0.0.0/0', 'Internet'])).toThrow(
      new RegExp(
        String.raw`allowedSourceAddressPrefixes must not open the cluster to the world; refused: 0\.0\.0\.0` +
          String.raw`\/0 \(.*\), Internet \(.*\)\.`,
      ),
    );
    expect(() => assertNoWorldOpenSourcePrefixes(['203.0.113.7/32', '10.20.2.0/24'])).not.toThrow();
  });
});
