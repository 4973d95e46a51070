import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VerifierCounts } from '../core/failover/failover';
import { parseNatsVerifierCounts } from '../core/nats/nats-verifier-output';
import type { ManagedProcess, ProcessRegistry } from './processes';

/**
 * The lost-message verifier of a NATS repetition with a fault: local/nats-load/verify.go (the load client's
 * `-verify` mode) in a process of its own, driven by signals: SIGUSR1 marks the fault, SIGUSR2 the heal, SIGTERM
 * finishes it (last acknowledgements, drain, counts). The interface is the RabbitMQ verifier's
 * (local/lost-message-verifier.ts), so that the workflow's fault steps drive both alike.
 */
export class NatsLostMessageVerifier {
  private readonly readyAt = Date.now();

  private constructor(
    private readonly process: ManagedProcess,
    private readonly outputFile: string,
    private readonly logFile: string,
    /** The verifier's stream: "leader" faults hit the node leading it. */
    readonly stream: string,
  ) {}

  /** Starts the verifier and waits (at most `timeoutMs`) until its stream, consumer and publisher are ready. */
  static async start(options: {
    readonly binary: string;
    readonly args: readonly string[];
    readonly stream: string;
    readonly outputDir: string;
    readonly processes: ProcessRegistry;
    /** @default 60000 */
    readonly timeoutMs?: number;
  }): Promise<NatsLostMessageVerifier> {
    mkdirSync(options.outputDir, { recursive: true });
    const outputFile = join(options.outputDir, 'nats-verifier.jsonl');
    const logFile = join(options.outputDir, 'nats-verifier.log');
    let ready: () => void = () => undefined;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const process = options.processes.start('nats-verifier', options.binary, [...options.args, '-output', outputFile], {
      logPath: logFile,
      onLine: (line) => {
        if (jsonLineType(line) === 'ready') ready();
      },
    });
    const timeoutMs = options.timeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      isReady.then(() => 'ready' as const),
      process.exited.then(() => 'exited' as const),
      new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (outcome !== 'ready') {
      await process.stop(1000);
      const said = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().slice(-600) : '';
      const why = outcome === 'late' ? `was not ready within ${Math.round(timeoutMs / 1000)} s` : 'exited';
      throw new Error(`the NATS lost-message verifier ${why}: ${said || '(no output)'}`);
    }
    return new NatsLostMessageVerifier(process, outputFile, logFile, options.stream);
  }

  private seconds(): number {
    return (Date.now() - this.readyAt) / 1000;
  }

  /** Records the moment of the fault (the verifier keeps its own clock and what was unacknowledged then). */
  markFault(): number {
    this.process.send('SIGUSR1');
    return this.seconds();
  }

  markHeal(): number {
    this.process.send('SIGUSR2');
    return this.seconds();
  }

  /** Stops publishing, drains, and returns the counts (the verifier needs up to 35 s; 60 s before it is stopped). */
  async finish(timeoutMs = 60_000): Promise<VerifierCounts> {
    this.process.send('SIGTERM');
    const timer = setTimeout(() => void this.process.stop(1000, 'SIGKILL'), timeoutMs);
    await this.process.exited;
    clearTimeout(timer);
    await this.process.stop(0);
    const output = existsSync(this.outputFile) ? readFileSync(this.outputFile, 'utf8') : '';
    try {
      return parseNatsVerifierCounts(output);
    } catch (error) {
      const log = existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8').trim().slice(-400) : '';
      throw new Error(`${(error as Error).message}${log ? `; its log ends: ${log}` : ''}`);
    }
  }

  /** Stops it at once (teardown after a failure); no counts. */
  async abort(): Promise<void> {
    await this.process.stop(1000);
  }
}

/** The `type` of one of the Go clients' JSON lines (their keys come sorted, so not necessarily first). */
export function jsonLineType(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as { type?: unknown };
    return typeof parsed.type === 'string' ? parsed.type : undefined;
  } catch {
    return undefined;
  }
}
