import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoDbLocal } from '../../local/dynamodb-local';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import { ResultsStore } from '../../store/results-store';

/** A temporary folder removed by `cleanup`. */
export function tempDir(prefix: string): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), `rmqbench-${prefix}-`));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** DynamoDB Local started by the test suite (in memory unless a data path is given), with a fresh table. */
export async function startStore(processes: ProcessRegistry, workDir: string, dataPath?: string) {
  const local = await startDynamoDbLocal({
    cacheDir: cacheDir(),
    processes,
    logPath: join(workDir, 'dynamodb.log'),
    ...(dataPath ? { dataPath } : {}),
  });
  const store = ResultsStore.forEndpoint(local.endpoint, `test-${Date.now()}`);
  await store.ensureTable();
  return { store, local };
}

/** PIDs of processes in this registry that are still alive according to the kernel. */
export function alivePids(processes: ProcessRegistry): number[] {
  return processes.running
    .map((p) => p.pid)
    .filter((pid): pid is number => {
      if (pid === undefined) return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
}
