/**
 * Reads a required environment variable once at load; a missing one fails the cold start with its name and who sets it.
 */
export function requireEnv(name: string, setBy = 'the BenchmarkController sets it'): string {
  const value = process.env[name];
  if (!value) throw new Error(`environment variable ${name} is not set (${setBy})`);
  return value;
}

/** Tags every launched resource carries: the safety nets find them by these. */
export const RUN_ID_TAG = 'rmqbench:run-id';
export const EXPIRES_AT_TAG = 'rmqbench:expires-at';
export const COMPONENT_TAG = 'rmqbench:component';
