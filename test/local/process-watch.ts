import { readdirSync, readFileSync } from 'node:fs';

/** A process as the kernel lists it; read here independently of local/process-table.ts, which is under test. */
export interface Seen {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly state: string;
  readonly comm: string;
  readonly start: string;
}

function stat(pid: string): Seen | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    const fields = text.slice(close + 2).split(' ');
    return {
      pid: Number(pid),
      comm: text.slice(text.indexOf('(') + 1, close),
      state: fields[0]!,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      start: fields[19]!,
    };
  } catch {
    return undefined;
  }
}

function table(): Seen[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => stat(name) ?? []);
}

function mentions(pid: number, text: string): boolean {
  for (const file of ['cmdline', 'environ']) {
    try {
      if (readFileSync(`/proc/${pid}/${file}`, 'latin1').includes(text)) return true;
    } catch {
      // gone, or a zombie (no memory left to read)
    }
  }
  return false;
}

/**
 * Samples /proc every 100 ms while a CLI runs: every descendant of `rootPid` and every process
 * whose command line or environment names `marker` (the run's data folder).
 */
export function watchProcesses(rootPid: number, marker: string): { stop: () => Seen[] } {
  const seen = new Map<string, Seen>();
  const sample = () => {
    const all = table();
    const tree = new Set([rootPid]);
    for (let grew = true; grew;) {
      grew = false;
      for (const entry of all) {
        if (!tree.has(entry.pid) && tree.has(entry.ppid)) {
          tree.add(entry.pid);
          grew = true;
        }
      }
    }
    for (const entry of all) {
      if (tree.has(entry.pid) || mentions(entry.pid, marker)) seen.set(`${entry.pid}/${entry.start}`, entry);
    }
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return [...seen.values()];
    },
  };
}

/**
 * What the kernel still lists, in any state (zombies included), of the processes seen, of their
 * process groups, or naming `marker`, apart from the test itself.
 */
export function stillListed(seen: readonly Seen[], marker: string): string[] {
  const pids = new Set(seen.map((s) => `${s.pid}/${s.start}`));
  // The CLI itself runs in the test's process group, which holds the test runner too.
  const ownGroup = stat(String(process.pid))?.pgid;
  const groups = new Set(seen.map((s) => s.pgid).filter((pgid) => pgid !== ownGroup && pgid > 1));
  return table()
    .filter(
      (entry) =>
        entry.pid !== process.pid &&
        (pids.has(`${entry.pid}/${entry.start}`) || groups.has(entry.pgid) || mentions(entry.pid, marker)),
    )
    .map((entry) => `${entry.comm} pid ${entry.pid} state ${entry.state} parent ${entry.ppid} group ${entry.pgid}`);
}
