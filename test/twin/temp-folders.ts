/**
 * The twin's temporary folders, removed when the process exits however it ends: after stop(), or on Ctrl-C, when the
 * simulated-VM harness's own signal handler ends the process at once (harness.ts installExitGuard) and no asynchronous
 * stop can run. Only synchronous work is possible in an 'exit' listener, and rmSync is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const folders = new Set<string>();

process.on('exit', () => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A new folder under the temporary directory, removed at exit at the latest. */
export function twinTempFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  folders.add(folder);
  return folder;
}

/** Removes a folder now (and forgets it). */
export function removeTwinTempFolder(folder: string): void {
  rmSync(folder, { recursive: true, force: true });
  folders.delete(folder);
}
