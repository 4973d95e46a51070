import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, WriteStream } from 'node:fs';

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
  private exitStatus: ExitStatus | undefined;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    private readonly log: WriteStream | undefined,
  ) {
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

  /** SIGTERM to the whole group, SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.hasExited) {
      this.signalGroup('SIGTERM');
      const timer = setTimeout(() => this.signalGroup('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    // Children that outlive the leader (e.g. erl_child_setup) share its group.
    this.signalGroup('SIGKILL');
    await new Promise<void>((resolve) => (this.log ? this.log.end(resolve) : resolve()));
  }

  private signalGroup(signal: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * Every process the local target starts is registered here and stopped by `stopAll`, which also
 * runs on Ctrl-C and SIGTERM so that no broker, HAProxy, PerfTest or DynamoDB Local is left behind.
 */
export class ProcessRegistry {
  private readonly processes: ManagedProcess[] = [];

  start(name: string, command: string, args: readonly string[], options: StartOptions = {}): ManagedProcess {
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
        log?.write(chunk);
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

  async stopAll(graceMs = 2000): Promise<void> {
    const all = this.processes.splice(0);
    await Promise.all(all.map((p) => p.stop(graceMs)));
  }
}

/** Runs `cleanup` on SIGINT/SIGTERM before exiting (130/143); returns a function that uninstalls the handlers. */
export function stopOnSignals(cleanup: () => Promise<void>): () => void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\nrmqbench: ${signal} received, stopping every process started by this run...\n`);
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
