import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The archive of PerfTest's classes, beside its jars (one per PerfTest version, as the jars are). */
export const PERFTEST_CLASS_ARCHIVE = 'perf-test-classes.jsa';

/**
 * Class-data sharing for a JVM that starts once per repetition (PerfTest): a dynamic archive of the classes one run
 * loaded (JDK 13+; https://docs.oracle.com/en/java/javase/17/vm/class-data-sharing.html, "Dynamic CDS Archive") lets
 * later runs map them instead of loading, parsing and verifying them again. The first run (no archive yet) dumps at
 * its exit (`-XX:ArchiveClassesAtExit`) to a file of its own, moved into place once complete, so that generators
 * started together never map a half-written archive; later runs map it (`-XX:SharedArchiveFile`). A JVM that cannot
 * use or write the archive (another JDK, a changed class path) only warns and runs as before: `-Xlog:disable` keeps
 * those warnings of the JVM's unified logging out of PerfTest's stdout, which the result parser reads.
 */
export function classDataSharing(
  directory: string,
  archiveName = PERFTEST_CLASS_ARCHIVE,
): {
  readonly args: string[];
  /** This run writes the archive at its exit: give it time to (a SIGKILL mid-dump leaves no archive). */
  readonly creating: boolean;
  /** After the JVM has exited: a complete archive (the JVM was not killed) is moved into place. */
  readonly afterExit: (killed: boolean) => void;
} {
  const archive = join(directory, archiveName);
  if (existsSync(archive))
    return { args: ['-Xlog:disable', `-XX:SharedArchiveFile=${archive}`], creating: false, afterExit: () => {} };
  const partial = `${archive}.${process.pid}.${Date.now()}.partial`;
  return {
    args: ['-Xlog:disable', `-XX:ArchiveClassesAtExit=${partial}`],
    creating: true,
    afterExit: (killed) => {
      try {
        if (!killed && existsSync(partial) && !existsSync(archive)) renameSync(partial, archive);
      } finally {
        rmSync(partial, { force: true });
      }
    },
  };
}
