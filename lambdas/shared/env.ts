/**
 * Reads a required environment variable once at load; a missing one fails the cold start with its name and who sets it.
 */
export function requireEnv(name: string, setBy = 'the BenchmarkController sets it'): string {
  const value = process.env[name];
  if (!value) throw new Error(`environment variable ${name} is not set (${setBy})`);
  return value;
}

/**
 * A positive number from the environment variable `name`, or `fallback` when it is unset, not a number or not positive
 * (an optional setting whose default the function otherwise keeps).
 */
export function positiveEnvNumber(
  name: string,
  fallback: number,
  environment: NodeJS.ProcessEnv = process.env,
): number {
  const configured = Number(environment[name]);
  return Number.isFinite(configured) && configured > 0 ? configured : fallback;
}

/** Tags every launched resource carries: the safety nets find them by these. */
export const RUN_ID_TAG = 'rmqbench:run-id';
export const EXPIRES_AT_TAG = 'rmqbench:expires-at';
export const COMPONENT_TAG = 'rmqbench:component';
