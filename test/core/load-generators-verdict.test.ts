import { MAX_LOAD_GENERATORS } from '../../core/loadgen/load-generator-count';
import { loadGeneratorsVerdict, TARGET_LOAD_GENERATOR_CPU_PERCENT } from '../../core/loadgen/load-generators-verdict';
import { LOAD_GENERATOR_BOUND_PERCENT, loadGeneratorBoundLine } from '../../core/metrics/host-metrics';

describe('loadGeneratorsVerdict', () => {
  test('names every generator above the bound, busiest first, and only those', () => {
    const verdict = loadGeneratorsVerdict(
      [
        { id: 'lg-1', cpuPercent: 93.2, sendRate: 40_000 },
        { id: 'lg-2', cpuPercent: 88, sendRate: 39_000 },
        { id: 'lg-3', cpuPercent: 97.5, sendRate: 41_000 },
      ],
      3,
    )!;
    expect(verdict.bound).toBe(true);
    expect(verdict.boundGenerators).toEqual([
      { id: 'lg-3', cpuPercent: 97.5 },
      { id: 'lg-1', cpuPercent: 93.2 },
    ]);
    expect(verdict.line).toMatch(/on lg-3 at 97\.5 %, lg-1 at 93\.2 % of 3 load generators/);
    expect(verdict.line).not.toMatch(/lg-2/);
  });

  test('suggests the smallest N that brings the busiest generator to the target, from its CPU', () => {
    for (const [cpu, n] of [
      [95, 1],
      [91, 2],
      [99, 3],
      [100, 4],
    ] as const) {
      const verdict = loadGeneratorsVerdict([{ id: 'lg-1', cpuPercent: cpu, sendRate: 10_000 }], n)!;
      const suggested = verdict.suggestedLoadGenerators!;
      expect(suggested).toBeGreaterThan(n);
      expect((cpu * n) / suggested).toBeLessThanOrEqual(TARGET_LOAD_GENERATOR_CPU_PERCENT);
      expect((cpu * n) / (suggested - 1)).toBeGreaterThan(TARGET_LOAD_GENERATOR_CPU_PERCENT);
      expect(verdict.expectedMaxCpuPercent).toBeCloseTo((cpu * n) / suggested, 9);
    }
  });

  test('the report line gives the suggestion and the measured rate shared over the suggested generators', () => {
    const verdict = loadGeneratorsVerdict(
      [
        { id: 'lg-1', cpuPercent: 96, sendRate: 41_000 },
        { id: 'lg-2', cpuPercent: 92, sendRate: 39_000 },
      ],
      2,
    )!;
    // ⌈2 × 96 / 70⌉ = 3: the busiest at 64 %, 80,000 msg/s over 3.
    expect(verdict.suggestedLoadGenerators).toBe(3);
    expect(verdict.line).toBe(
      `load-generator bound (CPU median above ${LOAD_GENERATOR_BOUND_PERCENT} % on lg-1 at 96.0 %, lg-2 at 92.0 % of ` +
        "2 load generators): the broker's maximum was not measured; loadGenerators: 3 would bring the busiest to " +
        'about 64 % CPU (80,000 msg/s measured, about 26,667 each)',
    );
    // The same opening as the one-generator verdict line.
    expect(verdict.line!.slice(0, 14)).toBe(loadGeneratorBoundLine(1, 1).slice(0, 14));
  });

  test('the suggestion stops at the maximum, and the line says the maximum may not be enough', () => {
    const capped = loadGeneratorsVerdict([{ id: 'lg-1', cpuPercent: 99, sendRate: 1 }], 8)!;
    expect(capped.suggestedLoadGenerators).toBe(MAX_LOAD_GENERATORS);
    expect(capped.line).toMatch(new RegExp(`even loadGenerators: ${MAX_LOAD_GENERATORS} \\(the maximum\\)`));
    expect(capped.expectedMaxCpuPercent).toBeGreaterThan(TARGET_LOAD_GENERATOR_CPU_PERCENT);
    const atMaximum = loadGeneratorsVerdict([{ id: 'lg-4', cpuPercent: 95, sendRate: 1 }], MAX_LOAD_GENERATORS)!;
    expect(atMaximum.line).toMatch(/already at the maximum/);
  });

  test('at the bound exactly is not bound; no suggestion then, and nothing measured gives no verdict', () => {
    const verdict = loadGeneratorsVerdict([{ id: 'lg-1', cpuPercent: LOAD_GENERATOR_BOUND_PERCENT, sendRate: 5 }], 2)!;
    expect(verdict).toEqual({ bound: false, boundGenerators: [], maxCpuPercent: LOAD_GENERATOR_BOUND_PERCENT });
    expect(loadGeneratorsVerdict([], 2)).toBeUndefined();
  });

  test('more generators measured than ran is an error', () => {
    expect(() =>
      loadGeneratorsVerdict(
        [
          { id: 'lg-1', cpuPercent: 95, sendRate: 1 },
          { id: 'lg-2', cpuPercent: 95, sendRate: 1 },
        ],
        1,
      ),
    ).toThrow(/2 generators measured, but only 1 ran/);
  });
});
