import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, WriteStream } from 'node:fs';
import { ProcessEntry, processTree, stillListed } from './process-table';
import { settledOrAfter } from './ports';

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface StartOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** stdout and stderr are appended to this file. */
  readonly logPath?: string;
  /** Called with each complete stdout/stderr line. */
  readonly onLine?: (line: string) => void;
}

/** A child process started by rmqbench, in a process group of its own so that stopping it stops its children too. */
export class ManagedProcess {
  readonly exited: Promise<ExitStatus>;
  private readonly outputClosed: Promise<void>;
  private exitStatus: ExitStatus | undefined;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    private readonly log: WriteStream | undefined,
  ) {
    this.outputClosed = new Promise((resolve) => child.once('close', () => resolve()));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitStatus = { code, signal };
        resolve(this.exitStatus);
      });
      child.once('error', () => {
        this.exitStatus = { code: -1, signal: null };
        resolve(this.exitStatus);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exitStatus !== undefined;
  }

  /** Sends `name` to this process alone (not its group), while it runs: a signal it handles itself. */
  send(name: NodeJS.Signals): void {
    if (this.child.pid !== undefined && !this.hasExited) signal(this.child.pid, name);
  }

  /**
   * SIGTERM (or `firstSignal`: SIGKILL for a fault that kills) to the whole group, SIGKILL after `graceMs`; resolves
   * once the process has exited, and
   * kills what it started. `untilGone` then tells when all of that has left the process table.
   */
  async stop(graceMs = 5000, firstSignal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const tree = this.child.pid === undefined ? [] : processTree(this.child.pid);
    if (!this.hasExited) {
      this.signalGroup(firstSignal);
      const timer = setTimeout(() => this.signalGroup('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    // Children that outlive the leader: those of its group, and those that left it (setsid).
    this.signalGroup('SIGKILL');
    for (const entry of tree) {
      if (entry.pid !== this.child.pid && stillListed(entry)) signal(entry.pid, 'SIGKILL');
    }
    if (tree.length > 0) this.reaped = untilReaped(tree, 15_000);
    // Resolves once the child's stdout and stderr have closed (all its output is in the log), or after 2 s.
    await settledOrAfter(this.outputClosed, 2000);
    await new Promise<void>((resolve) => (this.log ? this.log.end(resolve) : resolve()));
  }

  /**
   * Resolves once everything `stop` found in this process's tree is gone from the process table,
   * zombies included, with what was still listed after 15 s. A grandchild whose parent died first
   * (erl_child_setup runs in a session of its own below beam.smp) is re-parented to PID 1, which
   * reaps it when it gets to it: on this kind of machine (a Firecracker VM whose PID 1 is not an
   * init system) that took up to 2 s, so a CLI that did not wait exited while `ps` still showed them.
   */
  untilGone(): Promise<ProcessEntry[]> {
    return this.reaped ?? Promise.resolve([]);
  }

  private reaped: Promise<ProcessEntry[]> | undefined;

  private signalGroup(name: NodeJS.Signals): void {
    if (this.child.pid !== undefined) signal(-this.child.pid, name);
  }
}

/** The pids of those processes that have not exited: what a metrics sampler reads. */
export function livePids(...processes: readonly (ManagedProcess | undefined)[]): number[] {
  return processes.flatMap((process) =>
    process && !process.hasExited && process.pid !== undefined ? [process.pid] : [],
  );
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Waits until none of `entries` is listed any more; returns those still listed after `timeoutMs`. */
async function untilReaped(entries: readonly ProcessEntry[], timeoutMs: number): Promise<ProcessEntry[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const listed = entries.filter(stillListed);
    if (listed.length === 0 || Date.now() > deadline) return listed;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Every process the local target starts is registered here and stopped by `stopAll`, which also
 * runs on Ctrl-C and SIGTERM so that no broker, HAProxy, PerfTest or DynamoDB Local is left behind.
 */
export class ProcessRegistry {
  private readonly processes: ManagedProcess[] = [];

  /**
   * Starts and registers a process, unless `stopAll` was called: a process started after it (a PerfTest or Kafka tool
   * whose step began as Ctrl-C stopped the others) would not be stopped by it and would outlive rmqbench. The check
   * and the spawn are one synchronous step, so a stop cannot come between them.
   */
  start(name: string, command: string, args: readonly string[], options: StartOptions = {}): ManagedProcess {
    if (this.stopRequested) throw new Error(`not starting ${name}: every process of this run is being stopped`);
    const log = options.logPath ? createWriteStream(options.logPath, { flags: 'a' }) : undefined;
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const managed = new ManagedProcess(name, child, log);
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream?.on('data', (chunk: Buffer) => {
        // The child's 'exit' can come before the last of its output: `stop` ends the log once the pipes closed
        // (or after a grace), and what a grandchild still writes after that is dropped, not thrown
        // ("write after end").
        if (log && !log.writableEnded) log.write(chunk);
        if (!options.onLine) return;
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) options.onLine(line);
      });
    }
    this.processes.push(managed);
    return managed;
  }

  get running(): ManagedProcess[] {
    return this.processes.filter((p) => !p.hasExited);
  }

  /**
   * Stops every process and waits until each one, and all it started, is reaped; returns what was
   * still listed. A second call (the Ctrl-C handler and the run's own cleanup) waits for the first.
   */
  async stopAll(graceMs = 2000): Promise<ProcessEntry[]> {
    this.stopRequested = true;
    const all = this.processes.splice(0);
    const cleanups = this.cleanups.splice(0);
    const stopping = Promise.all(all.map((p) => p.stop(graceMs))).then(async () => {
      // The cleanups run while the stopped processes are reaped (also those a teardown stopped earlier: their reaping
      // was not waited for then).
      const [left] = await Promise.all([
        Promise.all(all.map((p) => p.untilGone())),
        Promise.all(cleanups.map((cleanup) => cleanup())),
      ]);
      return left.flat();
    });
    this.stopping.push(stopping);
    return (await Promise.all(this.stopping)).flat();
  }

  /** True once `stopAll` was called (Ctrl-C, or the end of a run): `start` refuses from then on. */
  stopRequested = false;

  /**
   * Runs `cleanup` once every process is stopped (also on Ctrl-C), e.g. to delete what only they needed; `stopAll`
   * waits for what it returns. Also for work a teardown began and the run need not wait for before it goes on, but
   * must before it ends (a stopped cluster's data deleted in the background).
   */
  afterStop(cleanup: () => void | Promise<void>): void {
    this.cleanups.push(cleanup);
  }

  private readonly stopping: Promise<ProcessEntry[]>[] = [];
  private readonly cleanups: (() => void | Promise<void>)[] = [];
}

let exitingOnSignal = false;

/** True once a signal handler installed by `stopOnSignals` is stopping everything and will exit itself. */
export function exitingAfterSignal(): boolean {
  return exitingOnSignal;
}

/**
 * Exits with `code` once everything written to stdout and stderr has been handed to them. Writes to "Pipes (and
 * sockets): synchronous on Windows, asynchronous on POSIX", so output is "not written at all if process.exit() is
 * called before an asynchronous write completes" (https://nodejs.org/api/process.html#a-note-on-process-io):
 * `rmqbench show --json | jq` received the first 64 KiB of a larger answer.
 */
export function exitWhenWritten(code: number): void {
  let pending = 2;
  const written = () => {
    pending -= 1;
    if (pending === 0) process.exit(code);
  };
  process.stdout.write('', written);
  process.stderr.write('', written);
}

/** The signals after which the CLI stops what it started, and the exit code of each (128 + its number). */
const STOPPING_SIGNALS = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

/** Why a run is being stopped: one of those signals, or an output that can no longer be written. */
export type StopReason = keyof typeof STOPPING_SIGNALS | 'output closed';

/**
 * Runs `cleanup` before exiting on SIGINT, SIGTERM or SIGHUP (a closed terminal or SSH session), and when stdout or
 * stderr can no longer be written (EPIPE: whatever read the pipe is gone), which would otherwise end the process with
 * an unhandled 'error' event. The processes a run starts are in process groups of their own, so neither reaches them:
 * without this, the broker nodes, DynamoDB Local and PerfTest outlived the CLI. Returns a function that uninstalls the
 * handlers.
 */
export function stopOnSignals(cleanup: (reason: StopReason) => Promise<unknown>): () => void {
  let stopping = false;
  const stop = (reason: StopReason, code: number) => {
    if (stopping) return;
    stopping = true;
    exitingOnSignal = true;
    // Nothing more can be written to an output that closed; a signal is said on stderr.
    const canWrite = reason !== 'output closed';
    if (canWrite)
      process.stderr.write(`\nrmqbench: ${reason} received, stopping every process started by this run...\n`);
    void cleanup(reason).finally(() => (canWrite ? exitWhenWritten(code) : process.exit(code)));
  };
  const onSignal = (signal: keyof typeof STOPPING_SIGNALS) => stop(signal, STOPPING_SIGNALS[signal]);
  // Any error of an output stream: nothing more can be written there (141: 128 + SIGPIPE, as a shell reports it).
  const onOutputError = () => stop('output closed', 141);
  const signals = Object.keys(STOPPING_SIGNALS) as (keyof typeof STOPPING_SIGNALS)[];
  for (const signal of signals) process.on(signal, onSignal);
  process.stdout.on('error', onOutputError);
  process.stderr.on('error', onOutputError);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
    process.stdout.off('error', onOutputError);
    process.stderr.off('error', onOutputError);
  };
}
