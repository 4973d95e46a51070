import { findInstancePrice, THESIS_SOURCE_PREFIX, type CloudProvider, type PriceCatalog } from '../cost/cost-catalog';
import { formatRangeRow, pricePerformanceTable, type PricePerformanceCandidate } from '../cost/price-performance';

/*
 * The inputs of Tables 7.4–7.7 of the seed thesis, shared by their unit test (test/core/price-performance.test.ts)
 * and `rmqbench report --thesis-ch7`.
 *
 * Costs: Tables 7.1–7.3, read from the shipped catalog (thesis entries).
 * Measured maxima: the thesis takes them from Figures 6.1–6.4, whose numbers are not in its text. Every
 * capacity printed in Tables 7.4–7.7 is `required / maximum`, so each maximum below is a value that
 * reproduces all of that instance's printed capacities (half-up rounding); the interval it must lie in is
 * in the comment. Instances that never appear in a table get a value just under the bound the table
 * implies (otherwise they would have been chosen), or the value the thesis text quotes.
 */

/** The queue counts of Tables 7.4–7.7 (and Figures 6.1–6.4), with the table number of each. */
export type ThesisQueueCount = 1 | 2 | 10 | 200;
export const THESIS_TABLES: readonly { readonly queues: ThesisQueueCount; readonly table: string }[] = [
  { queues: 1, table: '7.4' },
  { queues: 2, table: '7.5' },
  { queues: 10, table: '7.6' },
  { queues: 200, table: '7.7' },
];

export const THESIS_PROVIDER: Record<string, CloudProvider> = { F4s: 'azure', F8s: 'azure', F16s: 'azure' };

export const THESIS_MAXIMA: Record<ThesisQueueCount, Record<string, number>> = {
  1: {
    't3.xlarge': 28_500, // 28.4k-28.7k
    'c5.xlarge': 55_500, // 55.3k-55.8k
    'm5.xlarge': 49_200, // 49.1k-49.3k
    F4s: 44_900, // 44.7k-45.1k
    'c5.2xlarge': 70_600, // 70.4k-70.9k
    'm5.2xlarge': 67_500, // 67.2k-67.7k
    'c5.4xlarge': 72_200, // 71.9k-72.5k
    't3.2xlarge': 49_500, // not in Table 7.4: below 50k, else it would beat c5.2xlarge at 50k
    'm5.4xlarge': 69_500, // not in Table 7.4: below 70k, else third at 70k
    F8s: 59_500, // not in Table 7.4: below 60k, else ahead of c5.4xlarge at 60k
    F16s: 69_500, // not in Table 7.4: below 70k, else third at 70k
  },
  2: {
    't3.xlarge': 56_800, // 56.5k-57.1k
    'c5.xlarge': 77_000, // 76.6k-77.3k
    'm5.xlarge': 72_300, // 72.0k-72.5k
    F4s: 69_800, // 69.4k-70.1k, below 70k (absent at 70k)
    't3.2xlarge': 85_700, // 85.6k-85.8k
    'c5.2xlarge': 105_500, // 105.3k-105.8k
    'm5.2xlarge': 88_000, // 87.5k-88.3k, below 90k
    'c5.4xlarge': 142_900, // 142.2k-143.5k
    'm5.4xlarge': 90_900, // 90.5k-91.3k, below 100k
    F8s: 89_500, // text (6.3): "a maximum throughput ... at around 90K msgs/s for the F16s and F8s"; below 90k
    F16s: 89_500, // same quote; below 100k
  },
  10: {
    't3.xlarge': 58_100, // 57.9k-58.4k
    'c5.xlarge': 76_000, // 75.7k-76.3k
    'm5.xlarge': 74_300, // 74.1k-74.5k
    't3.2xlarge': 79_300, // 79.1k-79.4k
    'c5.2xlarge': 148_400, // 148.2k-148.5k
    'm5.2xlarge': 129_900, // 129.8k-130.0k, below 130k
    'c5.4xlarge': 267_500, // 266.7k-268.0k
    'm5.4xlarge': 184_200, // no single value fits all four printed capacities (see the Table 7.6 test)
    F4s: 59_500, // not in Table 7.6: below 60k, else ahead of t3.2xlarge at 60k
    F8s: 79_500, // not in Table 7.6: below 80k, else ahead of c5.4xlarge at 80k
    F16s: 89_500, // "around 90K" (6.3); not in Table 7.6, which needs below 150k
  },
  200: {
    't3.xlarge': 44_900, // 44.7k-45.1k
    'c5.xlarge': 66_700, // 66.3k-67.0k
    'm5.xlarge': 47_600, // 47.4k-47.9k
    't3.2xlarge': 108_400, // 108.2k-108.5k
    'c5.2xlarge': 133_000, // 132.5k-133.3k
    'm5.2xlarge': 102_400, // 102.2k-102.5k
    'c5.4xlarge': 259_500, // 259.1k-261.1k with the capacities placed at 140k/190k/200k/250k (see Table 7.7)
    'm5.4xlarge': 194_000, // 193.1k-194.7k, likewise
    F4s: 49_500, // not in Table 7.7: below 50k, else second at 50k
    // 6.3: c5n.4xlarge "has a throughput advantage over the F16s ... of approximately 900% when sending
    // traffic over 200 queues", and F8s and F16s "perform equally throughout the test".
    F8s: 26_000,
    F16s: 26_000,
  },
};

export function thesisCandidates(queues: ThesisQueueCount, catalog: PriceCatalog): PricePerformanceCandidate[] {
  return Object.entries(THESIS_MAXIMA[queues]).map(([instanceType, maxThroughput]) => ({
    instanceType,
    maxThroughput,
    monthlyCostUsd: findInstancePrice(catalog, {
      provider: THESIS_PROVIDER[instanceType] ?? 'aws',
      instanceType,
      sourcePrefix: THESIS_SOURCE_PREFIX,
    }).monthlyUsd,
  }));
}

/** Tables 7.4–7.7 as the thesis prints them, from its own inputs and `catalog`'s thesis prices. */
export function thesisChapter7Tables(
  catalog: PriceCatalog,
): { queues: ThesisQueueCount; table: string; rows: string[][] }[] {
  return THESIS_TABLES.map(({ queues, table }) => ({
    queues,
    table,
    rows: pricePerformanceTable(thesisCandidates(queues, catalog)).map((row) => formatRangeRow(row)),
  }));
}
