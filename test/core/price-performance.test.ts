import { defaultPriceCatalog } from '../../core/cost/cost-catalog';
import { thesisCandidates as thesisCandidatesFrom, type ThesisQueueCount } from '../../core/report/thesis-ch7';
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
} from '../../core/cost/price-performance';

// The thesis inputs (Tables 7.1–7.3 costs, Figures 6.1–6.4 maxima) and how they were derived:
// core/report/thesis-ch7.ts.
const thesisCandidates = (queues: ThesisQueueCount) => thesisCandidatesFrom(queues, defaultPriceCatalog);

function thesisTable(queues: ThesisQueueCount): string[][] {
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
  it("keeps each instance type's highest throughput at the asked queue count and prices it", () => {
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

  it("lets an unknown instance type surface as the catalog's error", () => {
    const unknown = () => {
      throw new Error('unknown aws instance type "x"');
    };
    expect(() => candidatesForQueues([{ instanceType: 'x', queues: 1, throughput: 1 }], 1, unknown)).toThrow(
      /unknown aws instance type/,
    );
  });
});
