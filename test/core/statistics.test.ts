import { describe as stats, median, tCritical95 } from '../../core/results/statistics';

describe('statistics', () => {
  test('mean, median, sample standard deviation and Student-t 95% interval', () => {
    const result = stats([2, 4, 4, 4, 5, 5, 7, 9]);
    expect(result.mean).toBe(5);
    expect(result.median).toBe(4.5);
    expect(result.stddev).toBeCloseTo(2.13809, 4);
    expect(result.ci95).toBeCloseTo((2.365 * 2.13809) / Math.sqrt(8), 3);
  });

  test('one value has no spread', () => {
    expect(stats([42])).toMatchObject({ n: 1, mean: 42, stddev: 0, ci95: 0 });
  });

  test('odd-length median and large-sample t value', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(tCritical95(1000)).toBe(1.96);
    expect(tCritical95(4)).toBe(2.776);
  });

  test('empty or non-finite input is an error, not NaN', () => {
    expect(() => stats([])).toThrow(/no values/);
    expect(() => stats([1, Number.NaN])).toThrow(/finite/);
  });
});
