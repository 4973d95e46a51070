import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseProgressLine } from '../core/perftest/perftest-output';
import { classDataSharing } from './class-data-sharing';
import { ManagedProcess, ProcessRegistry } from './processes';

export interface PerfTestRun {
  readonly stdout: string;
  readonly csv: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** True when rmqbench stopped PerfTest after its complete summary (so a non-zero exit code is expected). */
  readonly stoppedAfterSummary: boolean;
  readonly wallSeconds: number;
}

export interface PerfTestProgress {
  readonly time: number;
  readonly sent: number;
  readonly received: number;
}

/**
 * Runs the real PerfTest (java -cp <jars>/* com.rabbitmq.perf.PerfTest) and collects its stdout and CSV.
 * The process is killed if it overruns its duration by `graceSeconds`.
 */
export async function runPerfTestProcess(options: {
  readonly jarsDir: string;
  readonly args: readonly string[];
  readonly outputDir: string;
  readonly durationSeconds: number;
  readonly csvPath: string;
  readonly processes: ProcessRegistry;
  readonly onProgress?: (progress: PerfTestProgress) => void;
  /** @default 60 */
  readonly graceSeconds?: number;
  /** @default 'java' */
  readonly javaCommand?: string;
  /** The last summary line PerfTest prints (consumer or confirm latency); once seen, the measurement is complete. */
  readonly finalLinePattern?: RegExp;
  /** Called with PerfTest's JVM once it is spawned (the metrics sampler reads its /proc as the load generator's). */
  readonly onStarted?: (process: ManagedProcess) => void;
}): Promise<PerfTestRun> {
  const stdoutPath = join(options.outputDir, 'perftest.stdout.txt');
  let stoppedAfterSummary = false;
  const started = Date.now();
  // PerfTest's JVM starts once per repetition: after the first, its classes come from an archive
  // (class-data-sharing.ts).
  const sharing = classDataSharing(options.jarsDir);
  const child = options.processes.start(
    'perftest',
    options.javaCommand ?? 'java',
    [
      '-XX:+UseParallelGC',
      ...sharing.args,
      '-cp',
      `${options.jarsDir}/*`,
      'com.rabbitmq.perf.PerfTest',
      ...options.args,
    ],
    {
      logPath: stdoutPath,
      cwd: options.outputDir,
      onLine: (line) => {
        const progress = parseProgressLine(line);
        if (progress) options.onProgress?.(progress);
        // The measurement is complete once the summary is out: PerfTest prints it in one write, after its last CSV
        // row (DefaultPerformanceMetrics.close(): the reporting executor stopped, then printFinal(); the CSV writer
        // flushes each row: PerfTest.openCsvFileForWriting, rabbitmq-perf-test v2.22.1). Closing its connections
        // would take another 0.3 s per repetition, so it is killed at once; the run that writes the class archive at
        // its exit gets the time to finish it instead.
        if (options.finalLinePattern?.test(line)) {
          stoppedAfterSummary = true;
          void (sharing.creating ? child.stop(15_000) : child.stop(0, 'SIGKILL'));
        }
      },
    },
  );
  options.onStarted?.(child);
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      void child.stop(2000);
    },
    (options.durationSeconds + (options.graceSeconds ?? 60)) * 1000,
  );
  const status = await child.exited;
  clearTimeout(timer);
  await child.stop(0);
  sharing.afterExit(status.signal === 'SIGKILL');
  return {
    stdout: existsSync(stdoutPath) ? readFileSync(stdoutPath, 'utf8') : '',
    csv: existsSync(options.csvPath) ? readFileSync(options.csvPath, 'utf8') : '',
    exitCode: status.code,
    timedOut,
    stoppedAfterSummary,
    wallSeconds: (Date.now() - started) / 1000,
  };
}
