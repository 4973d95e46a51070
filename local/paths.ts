import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where runs, raw PerfTest output and DynamoDB Local data are kept. Override with RMQBENCH_HOME. */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.RMQBENCH_HOME ?? join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'rmqbench');
}

/** Where downloaded jars are cached. Override with RMQBENCH_CACHE. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.RMQBENCH_CACHE ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rmqbench');
}
