import { defaultPriceCatalog, findInstancePrice, THESIS_SOURCE_PREFIX, type CloudProvider } from '../../core/cost-catalog';
import {
  candidatesForQueues,
  capacityPercent,
  formatRangeRow,
  mergeIntoRanges,
  pricePerformanceTable,
  PricePerformanceError,
  rankCandidates,
  requirementRows,
  score,
  type PricePerformanceCandidate,
} from '../../core/price-performance';

/*
 * Reproducing Tables 7.4–7.7 of the seed thesis from its own inputs.
 *
 * Costs: Tables 7.1–7.3, read from the shipped catalog (thesis entries).
 * Measured maxima: the thesis takes them from Figures 6.1–6.4, whose numbers are not in its text. Every
 * capacity printed in Tables 7.4–7.7 is `required / maximum`, so each maximum below is a value that
 * reproduces all of that instance's printed capacities (half-up rounding); the interval it must lie in is
 * in the comment. Instances that never appear in a table get a value just under the bound the table
 * implies (otherwise they would have been chosen), or the value the thesis text quotes.
 */
const PROVIDER: Record<string, CloudProvider> = { F4s: 'azure', F8s: 'azure', F16s: 'azure' };

const THESIS_MAXIMA: Record<1 | 2 | 10 | 200, Record<string, number>> = {
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

function thesisCandidates(queues: keyof typeof THESIS_MAXIMA): PricePerformanceCandidate[] {
  return Object.entries(THESIS_MAXIMA[queues]).map(([instanceType, maxThroughput]) => ({
    instanceType,
    maxThroughput,
    monthlyCostUsd: findInstancePrice(defaultPriceCatalog, {
      provider: PROVIDER[instanceType] ?? 'aws',
      instanceType,
      sourcePrefix: THESIS_SOURCE_PREFIX,
    }).monthlyUsd,
  }));
}

function thesisTable(queues: keyof typeof THESIS_MAXIMA): string[][] {
  return pricePerformanceTable(thesisCandidates(queues)).map((row) => formatRangeRow(row));
}

describe('price-performance model (thesis chapter 7)', () => {
  it('reproduces Table 7.4 (1 queue) exactly', () => {
    expect(thesisTable(1)).toEqual([
      ['Up to 10k-20k', 't3.xlarge (35% - 70%)', 'c5.xlarge (18% - 36%)', 'm5.xlarge (20% - 41%)'],
      ['Up to 30k-40k', 'c5.xlarge (54% - 72%)', 'm5.xlarge (61% - 81%)', 'F4s (67% - 89%)'],
      ['Up to 50k', 'c5.xlarge (90%)', 'c5.2xlarge (71%)', 'm5.2xlarge (74%)'],
      ['Up to 60k', 'c5.2xlarge (85%)', 'm5.2xlarge (89%)', 'c5.4xlarge (83%)'],
      ['Up to 70k', 'c5.2xlarge (99%)', 'c5.4xlarge (97%)', '-'],
    ]);
  });

  it('reproduces Table 7.5 (2 queues) exactly', () => {
    expect(thesisTable(2)).toEqual([
      ['Up to 10k-50k', 't3.xlarge (18% - 88%)', 'c5.xlarge (13% - 65%)', 'm5.xlarge (14% - 69%)'],
      ['Up to 60k', 'c5.xlarge (78%)', 'm5.xlarge (83%)', 'F4s (86%)'],
      ['Up to 70k', 'c5.xlarge (91%)', 'm5.xlarge (97%)', 't3.2xlarge (82%)'],
      ['Up to 80k', 't3.2xlarge (93%)', 'c5.2xlarge (76%)', 'm5.2xlarge (91%)'],
      ['Up to 90k', 'c5.2xlarge (85%)', 'c5.4xlarge (63%)', 'm5.4xlarge (99%)'],
      ['Up to 100k', 'c5.2xlarge (95%)', 'c5.4xlarge (70%)', '-'],
      ['Up to 110k-140k', 'c5.4xlarge (77% - 98%)', '-', '-'],
    ]);
  });

  it('reproduces Table 7.6 (10 queues), except one m5.4xlarge capacity no single maximum can give', () => {
    // Thesis row 4: "m5.4xlarge (71% - 76%)", row 5: "m5.4xlarge (81% - 96%)". 130k at 71% needs a maximum
    // of 181.8k-184.4k, 180k at 96% needs 186.5k-188.5k: the printed figures are inconsistent with
    // equation 7.2 for any single maximum. 184.2k reproduces three of the four; 180k gives 98%, not 96%.
    expect(thesisTable(10)).toEqual([
      ['Up to 10k-50k', 't3.xlarge (17% - 86%)', 'c5.xlarge (13% - 66%)', 'm5.xlarge (13% - 67%)'],
      ['Up to 60k-70k', 'c5.xlarge (79% - 92%)', 'm5.xlarge (81% - 94%)', 't3.2xlarge (76% - 88%)'],
      ['Up to 80k-120k', 'c5.2xlarge (54% - 81%)', 'm5.2xlarge (62% - 92%)', 'c5.4xlarge (30% - 45%)'],
      ['Up to 130k-140k', 'c5.2xlarge (88% - 94%)', 'c5.4xlarge (49% - 52%)', 'm5.4xlarge (71% - 76%)'],
      ['Up to 150k-180k', 'c5.4xlarge (56% - 67%)', 'm5.4xlarge (81% - 98%)', '-'], // thesis: (81% - 96%)
      ['Up to 190k-260k', 'c5.4xlarge (71% - 97%)', '-', '-'],
    ]);
  });

  it('reproduces Table 7.7 (200 queues) capacities; two range labels differ from the thesis', () => {
    // Thesis rows 5-6 are labelled "Up to 150k-180k" and "Up to 190k-260k" (the labels of Table 7.6) but
    // their capacities are those of 140k-190k and 200k-250k: c5.4xlarge 54% and m5.4xlarge 72% are 140k,
    // 73%/98% are 190k, 77% is 200k and 96% is 250k. With the printed labels, 140k would be missing from
    // the table and 150k would have to read 58%/77%. The method gives the rows below.
    expect(thesisTable(200)).toEqual([
      ['Up to 10k-40k', 't3.xlarge (22% - 89%)', 'c5.xlarge (15% - 60%)', 'm5.xlarge (21% - 84%)'],
      ['Up to 50k-60k', 'c5.xlarge (75% - 90%)', 't3.2xlarge (46% - 55%)', 'c5.2xlarge (38% - 45%)'],
      ['Up to 70k-100k', 't3.2xlarge (65% - 92%)', 'c5.2xlarge (53% - 75%)', 'm5.2xlarge (68% - 98%)'],
      ['Up to 110k-130k', 'c5.2xlarge (83% - 98%)', 'c5.4xlarge (42% - 50%)', 'm5.4xlarge (57% - 67%)'],
      ['Up to 140k-190k', 'c5.4xlarge (54% - 73%)', 'm5.4xlarge (72% - 98%)', '-'], // thesis label: 150k-180k
      ['Up to 200k-250k', 'c5.4xlarge (77% - 96%)', '-', '-'], // thesis label: 190k-260k
    ]);
  });

  it('ranks capable instances cheapest first, because at a fixed requirement the score only depends on cost', () => {
    const choices = rankCandidates(40_000, thesisCandidates(1));
    expect(choices.map((choice) => choice.instanceType)).toEqual(['c5.xlarge', 'm5.xlarge', 'F4s']);
    expect(choices[0]!.score).toBeCloseTo(40_000 / 140.55, 6);
    expect(choices[0]!.capacityPercent).toBeCloseTo((40_000 / 55_500) * 100, 6);
  });
});

describe('price-performance building blocks', () => {
  const candidates: PricePerformanceCandidate[] = [
    { instanceType: 'small', maxThroughput: 15_000, monthlyCostUsd: 100 },
    { instanceType: 'large', maxThroughput: 35_000, monthlyCostUsd: 300 },
    { instanceType: 'large-twin', maxThroughput: 40_000, monthlyCostUsd: 300 },
  ];

  it('computes equations 7.1 and 7.2', () => {
    expect(score(20_000, 400)).toBe(50);
    expect(capacityPercent(20_000, 80_000)).toBe(25);
  });

  it('excludes an instance whose maximum is below the requirement but keeps one exactly at it', () => {
    expect(rankCandidates(15_000, candidates).map((c) => c.instanceType)).toContain('small');
    expect(rankCandidates(15_001, candidates).map((c) => c.instanceType)).not.toContain('small');
  });

  it('breaks a cost tie by headroom, so the instance with the higher maximum comes first', () => {
    expect(rankCandidates(30_000, candidates).map((c) => c.instanceType)).toEqual(['large-twin', 'large']);
  });

  it('limits the choices to `top`', () => {
    expect(rankCandidates(10_000, candidates, 2)).toHaveLength(2);
  });

  it('stops the table at the highest requirement some candidate reaches', () => {
    const rows = requirementRows(candidates);
    expect(rows.map((row) => row.requiredThroughput)).toEqual([10_000, 20_000, 30_000, 40_000]);
  });

  it('merges only consecutive rows with the same ordered choices', () => {
    const ranges = mergeIntoRanges(requirementRows(candidates));
    expect(ranges.map((range) => [range.fromThroughput, range.toThroughput])).toEqual([
      [10_000, 10_000],
      [20_000, 30_000],
      [40_000, 40_000],
    ]);
  });

  it('drops requirements nobody reaches when an explicit upper bound is given', () => {
    expect(pricePerformanceTable(candidates, { upTo: 100_000 }).at(-1)!.toThroughput).toBe(40_000);
  });

  it('rejects a candidate without a positive cost, naming it', () => {
    expect(() => rankCandidates(10_000, [{ instanceType: 'free', maxThroughput: 1, monthlyCostUsd: 0 }])).toThrow(
      new PricePerformanceError('free: monthly cost must be a positive number of USD, got 0'),
    );
  });

  it('returns no rows for no candidates instead of failing', () => {
    expect(pricePerformanceTable([])).toEqual([]);
  });
});

describe('candidates from measurements', () => {
  it('keeps each instance type\'s highest throughput at the asked queue count and prices it', () => {
    const measurements = [
      { instanceType: 'c5.xlarge', queues: 2, throughput: 70_000 },
      { instanceType: 'c5.xlarge', queues: 2, throughput: 77_000 },
      { instanceType: 'c5.xlarge', queues: 10, throughput: 90_000 },
      { instanceType: 'm5.xlarge', queues: 2, throughput: 72_300 },
    ];
    expect(candidatesForQueues(measurements, 2, (type) => (type === 'c5.xlarge' ? 140.55 : 156.65))).toEqual([
      { instanceType: 'c5.xlarge', maxThroughput: 77_000, monthlyCostUsd: 140.55 },
      { instanceType: 'm5.xlarge', maxThroughput: 72_300, monthlyCostUsd: 156.65 },
    ]);
  });

  it('lets an unknown instance type surface as the catalog\'s error', () => {
    const unknown = () => {
      throw new Error('unknown aws instance type "x"');
    };
    expect(() => candidatesForQueues([{ instanceType: 'x', queues: 1, throughput: 1 }], 1, unknown)).toThrow(/unknown aws instance type/);
  });
});
