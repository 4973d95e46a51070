import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PERFTEST_CLASS_ARCHIVE } from '../../local/class-data-sharing';
import { runPerfTestProcess } from '../../local/perftest-process';
import { ProcessRegistry } from '../../local/processes';
import { tempDir } from './helpers';

/**
 * A stand-in for `java ... PerfTest`: prints a summary as PerfTest does, then, as PerfTest closing its connections,
 * stays until it is stopped. It writes "TERM" to `signals` when it gets a SIGTERM, and exits.
 */
function standInJava(dir: string, signals: string): string {
  const path = join(dir, 'java');
  writeFileSync(
    path,
    [
      '#!/bin/bash',
      `trap 'echo TERM >> "${signals}"; exit 143' TERM`,
      'echo "id: test-1, starting consumer #0"',
      'printf "id: test-1, sending rate avg: 100 msg/s\\nid: test-1, receiving rate avg: 100 msg/s\\n"',
      'echo "id: test-1, consumer latency min/median/75th/95th/99th 1/2/3/4/5 µs"',
      'for i in $(seq 1 300); do sleep 0.1; done',
      '',
    ].join('\n'),
  );
  chmodSync(path, 0o755);
  return path;
}

describe('a PerfTest process after its summary', () => {
  const run = async (withArchive: boolean) => {
    const dir = tempDir('perftest-process');
    const processes = new ProcessRegistry();
    try {
      if (withArchive) writeFileSync(join(dir.path, PERFTEST_CLASS_ARCHIVE), 'archive');
      const signals = join(dir.path, 'signals');
      const result = await runPerfTestProcess({
        jarsDir: dir.path,
        args: [],
        outputDir: dir.path,
        durationSeconds: 1,
        csvPath: join(dir.path, 'perftest.csv'),
        processes,
        javaCommand: standInJava(dir.path, signals),
        finalLinePattern: /consumer latency min\/median\/75th\/95th\/99th \d/,
        graceSeconds: 20,
      });
      return { result, signals: existsSync(signals) ? readFileSync(signals, 'utf8') : '' };
    } finally {
      await processes.stopAll();
      dir.cleanup();
    }
  };

  test('is killed at once (no SIGTERM, no wait for it to close its connections), its summary kept', async () => {
    const { result, signals } = await run(true);
    expect(result).toMatchObject({ stoppedAfterSummary: true, timedOut: false, exitCode: null });
    expect(result.stdout).toMatch(/consumer latency min\/median\/75th\/95th\/99th 1\/2\/3\/4\/5/);
    expect(signals).toBe('');
  });

  test('gets a SIGTERM instead when it writes the class archive at its exit (a SIGKILL loses it)', async () => {
    const { result, signals } = await run(false);
    expect(result).toMatchObject({ stoppedAfterSummary: true, timedOut: false });
    expect(signals).toBe('TERM\n');
  });
});
