/**
 * How many load generators a cluster may have (`loadGenerators` in the plan, issue 27). Kept free of imports so that
 * the plan schema, which every ValidatePlan bundle carries, can read it.
 */

/** One generator: what every plan did before issue 27. */
export const DEFAULT_LOAD_GENERATORS = 1;

/**
 * At most 10 generators per cluster. The largest RabbitMQ workload in plans/ (thesis ch6, 200 queues, producers and
 * consumers) gets 20 queues per generator at 10; a cluster of 7 nodes then launches 17 instances per repetition, all
 * of which the estimate prices and the account's instance quota must hold. Beyond 10, a plan is more likely to be a
 * typo (100 for 10) than a need; raise it when a measured workload needs more.
 */
export const MAX_LOAD_GENERATORS = 10;

/** The id of the generator at `index` (0-based): `lg-1`, `lg-2`, … as reports and `show --json` name them. */
export const loadGeneratorId = (index: number): string => `lg-${index + 1}`;
