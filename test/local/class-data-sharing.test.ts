import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { classDataSharing, PERFTEST_CLASS_ARCHIVE } from '../../local/class-data-sharing';
import { tempDir } from './helpers';

describe("PerfTest's class archive beside its jars", () => {
  const partialOf = (args: readonly string[]) =>
    args.find((arg) => arg.startsWith('-XX:ArchiveClassesAtExit='))!.split('=')[1]!;

  test('the first run dumps to a file of its own, moved into place after a clean exit; later runs map it', () => {
    const dir = tempDir('cds');
    try {
      const first = classDataSharing(dir.path);
      expect(first.creating).toBe(true);
      expect(first.args).toContain('-Xlog:disable');
      const partial = partialOf(first.args);
      expect(partial).toMatch(new RegExp(`^${join(dir.path, PERFTEST_CLASS_ARCHIVE)}\\.\\d+\\.\\d+\\.partial$`));
      writeFileSync(partial, 'archive');
      first.afterExit(false);
      expect(readdirSync(dir.path)).toEqual([PERFTEST_CLASS_ARCHIVE]);
      const later = classDataSharing(dir.path);
      expect(later).toMatchObject({
        creating: false,
        args: ['-Xlog:disable', `-XX:SharedArchiveFile=${join(dir.path, PERFTEST_CLASS_ARCHIVE)}`],
      });
    } finally {
      dir.cleanup();
    }
  });

  test('a JVM killed while dumping leaves no archive, and neither does one that wrote none', () => {
    const dir = tempDir('cds');
    try {
      const killed = classDataSharing(dir.path);
      writeFileSync(partialOf(killed.args), 'half an archive');
      killed.afterExit(true);
      const none = classDataSharing(dir.path);
      none.afterExit(false);
      expect(readdirSync(dir.path)).toEqual([]);
      expect(existsSync(join(dir.path, PERFTEST_CLASS_ARCHIVE))).toBe(false);
    } finally {
      dir.cleanup();
    }
  });
});
