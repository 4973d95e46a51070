/** Descriptive statistics with a Student-t 95% confidence interval for the mean. */
export interface Stats {
  readonly n: number;
  readonly mean: number;
  readonly median: number;
  /** Sample standard deviation (n - 1); 0 when n = 1. */
  readonly stddev: number;
  /** Half-width of the 95% confidence interval of the mean; 0 when n = 1. */
  readonly ci95: number;
  readonly min: number;
  readonly max: number;
}

// Two-sided 95% critical values of Student's t for 1..30 degrees of freedom.
const T_95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** Two-sided 95% t critical value for the given degrees of freedom (normal approximation above 120). */
export function tCritical95(degreesOfFreedom: number): number {
  if (!Number.isInteger(degreesOfFreedom) || degreesOfFreedom < 1) {
    throw new Error(`degrees of freedom must be a positive integer, got ${degreesOfFreedom}`);
  }
  if (degreesOfFreedom <= 30) return T_95[degreesOfFreedom - 1]!;
  if (degreesOfFreedom <= 40) return 2.021;
  if (degreesOfFreedom <= 60) return 2.0;
  if (degreesOfFreedom <= 120) return 1.98;
  return 1.96;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function describe(values: readonly number[]): Stats {
  if (values.length === 0) throw new Error('statistics of no values');
  if (values.some((value) => !Number.isFinite(value)))
    throw new Error(`statistics need finite numbers, got ${values.join(', ')}`);
  const n = values.length;
  const mean = values.reduce((sum, value) => sum + value, 0) / n;
  const variance = n > 1 ? values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (n - 1) : 0;
  const stddev = Math.sqrt(variance);
  return {
    n,
    mean,
    median: median(values),
    stddev,
    ci95: n > 1 ? (tCritical95(n - 1) * stddev) / Math.sqrt(n) : 0,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}
