import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * What /proc says about one process (Linux, proc(5): https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html,
 * proc_pid_status.5.html, proc_pid_io.5.html).
 */
export interface ProcessReading {
  /** utime + stime of /proc/<pid>/stat: CPU time in user and kernel mode, in clock ticks (sysconf(_SC_CLK_TCK)). */
  readonly cpuTicks: number;
  /** VmRSS of /proc/<pid>/status, bytes. */
  readonly rssBytes: number;
  /** write_bytes of /proc/<pid>/io: bytes this process caused to be sent to the storage layer. */
  readonly writeBytes: number;
}

/**
 * utime + stime, fields 14 and 15 of /proc/<pid>/stat. The second field (comm) is in parentheses and may itself
 * hold spaces or parentheses, so the fields are counted from after its LAST ')' (proc_pid_stat(5)).
 */
export function parseCpuTicks(stat: string): number {
  const afterComm = stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .split(/\s+/);
  // afterComm[0] is field 3 (state): field n is afterComm[n - 3].
  const utime = Number(afterComm[14 - 3]);
  const stime = Number(afterComm[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime))
    throw new Error(`/proc/<pid>/stat has no utime/stime: ${stat.slice(0, 80)}`);
  return utime + stime;
}

/** VmRSS of /proc/<pid>/status ("VmRSS:   123456 kB"; the kernel's kB are KiB), in bytes. */
export function parseRssBytes(status: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!match) throw new Error('/proc/<pid>/status has no VmRSS line');
  return Number(match[1]) * 1024;
}

/** write_bytes of /proc/<pid>/io. */
export function parseWriteBytes(io: string): number {
  const match = /^write_bytes:\s+(\d+)$/m.exec(io);
  if (!match) throw new Error('/proc/<pid>/io has no write_bytes line');
  return Number(match[1]);
}

/** The state letter of /proc/<pid>/stat (field 3): `Z` zombie and `X` dead have exited already. */
export function parseState(stat: string): string {
  return stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .charAt(0);
}

/** Reads one process; undefined when it is gone (a node killed by a fault, a tool that exited and awaits reaping). */
export function readProcess(pid: number, procDir = '/proc'): ProcessReading | undefined {
  try {
    const stat = readFileSync(`${procDir}/${pid}/stat`, 'utf8');
    // An exited process not yet reaped still has a stat, but no VmRSS and no meaningful counters.
    if (['Z', 'X'].includes(parseState(stat))) return undefined;
    return {
      cpuTicks: parseCpuTicks(stat),
      rssBytes: parseRssBytes(readFileSync(`${procDir}/${pid}/status`, 'utf8')),
      writeBytes: parseWriteBytes(readFileSync(`${procDir}/${pid}/io`, 'utf8')),
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH')
      return undefined;
    throw error;
  }
}

/** sysconf(_SC_CLK_TCK), the unit of utime and stime (100 on every Linux this runs on; asked, not assumed). */
export function clockTicksPerSecond(): number {
  const answer = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const ticks = Number(answer.stdout?.trim());
  return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
}

/** The CPUs this process may run on: the "all CPUs" that cpuPercent is a share of. */
export function hostCpuCount(): number {
  return availableParallelism();
}
