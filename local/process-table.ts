import { readdirSync, readFileSync } from 'node:fs';

/** One line of the kernel's process table (/proc/<pid>/stat), zombies included. */
export interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  /** R, S, D, Z (zombie: exited, not yet reaped by its parent), ... */
  readonly state: string;
  readonly comm: string;
  /** Start time in clock ticks since boot: tells a process from a later one that reuses its PID. */
  readonly startTime: string;
}

/**
 * Parses /proc/<pid>/stat. The command name is in parentheses and may itself contain spaces and
 * parentheses, so the fields after it are found from the last ')'. Field order: proc(5)
 * https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html (pid, comm, state, ppid, pgrp, ..., starttime is field
 * 22).
 */
export function parseStat(text: string): ProcessEntry | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const rest = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state), so field N is rest[N - 3].
  const [state, ppid, pgid] = [rest[0], rest[1], rest[2]];
  const startTime = rest[22 - 3];
  if (!state || !ppid || !pgid || !startTime) return undefined;
  return {
    pid: Number(text.slice(0, open).trim()),
    ppid: Number(ppid),
    pgid: Number(pgid),
    state,
    comm: text.slice(open + 1, close),
    startTime,
  };
}

export function readProcess(pid: number): ProcessEntry | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined; // gone (and reaped)
  }
}

/** Every process the kernel still lists, zombies included; empty where there is no /proc. */
export function readProcessTable(): ProcessEntry[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  return names.filter((name) => /^\d+$/.test(name)).flatMap((name) => readProcess(Number(name)) ?? []);
}

/**
 * `root`, every process below it and every process of the process groups among them. A process
 * whose parent has exited is re-parented (to PID 1 or a subreaper), so only a snapshot taken while
 * the tree is whole finds all of it.
 */
export function processTree(rootPid: number, table = readProcessTable()): ProcessEntry[] {
  const found = new Map<number, ProcessEntry>();
  const root = table.find((entry) => entry.pid === rootPid);
  if (!root) return [];
  found.set(root.pid, root);
  for (let grew = true; grew;) {
    grew = false;
    const pgids = new Set([...found.values()].map((entry) => entry.pgid));
    for (const entry of table) {
      if (!found.has(entry.pid) && (found.has(entry.ppid) || pgids.has(entry.pgid))) {
        found.set(entry.pid, entry);
        grew = true;
      }
    }
  }
  return [...found.values()];
}

/** True while the kernel lists this process (running or zombie); false once it was reaped. */
export function stillListed(entry: ProcessEntry): boolean {
  return readProcess(entry.pid)?.startTime === entry.startTime;
}
