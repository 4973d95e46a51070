import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `script` in bash with a PATH of stand-in commands first and then only /usr/bin and /bin (this machine's nft is
 * in /usr/sbin, so it is absent unless stubbed). Each stand-in records its name, arguments and DEBIAN_FRONTEND, and
 * exits with the status given for it; the calls come back in order.
 */
export function runWithStubs(
  script: string,
  stubs: Record<string, number>,
): { status: number | null; stdout: string; stderr: string; calls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'rmqbench-stubs-'));
  try {
    const log = join(dir, 'calls.log');
    for (const [name, exit] of Object.entries(stubs)) {
      const path = join(dir, name);
      writeFileSync(
        path,
        `#!/bin/sh\necho "${name} $* DEBIAN_FRONTEND=\${DEBIAN_FRONTEND:-}" >> "${log}"\nexit ${exit}\n`,
      );
      chmodSync(path, 0o755);
    }
    const run = spawnSync('/bin/bash', ['-c', script], {
      encoding: 'utf8',
      env: { PATH: `${dir}:/usr/bin:/bin`, HOME: dir },
      timeout: 30_000,
    });
    const calls = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
    return { status: run.status, stdout: run.stdout, stderr: run.stderr, calls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
