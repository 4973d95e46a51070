import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VerifierCounts } from '../core/failover/failover';
import { parseVerifierCounts } from '../core/failover/verifier-output';
import type { ManagedProcess, ProcessRegistry } from './processes';

/** How the workflow's fault steps reach the verifier: signals (NATS's Go client) or a control file (Kafka's JVM). */
export type VerifierControl = { readonly kind: 'signals' } | { readonly kind: 'file'; readonly path: string };

/**
 * A lost-message verifier that runs as a process of its own: NATS's (local/nats-load/verify.go, the load client's
 * `-verify` mode) and Kafka's (local/kafka-verifier/KafkaLostMessageVerifier.java). It is told of the fault, of the
 * heal and to finish (last acknowledgements, drain, a final read, counts) by signals (SIGUSR1, SIGUSR2, SIGTERM) or by
 * one word per line in a control file ("fault", "heal", "finish"; a JVM keeps SIGUSR1 and SIGUSR2 for itself). Its
 * interface is the RabbitMQ verifier's (local/lost-message-verifier.ts), so that the workflow's fault steps drive all
 * three alike.
 */
export class ProcessLostMessageVerifier {
  private readonly readyAt = Date.now();

  private constructor(
    private readonly process: ManagedProcess,
    private readonly files: { readonly output: string; readonly log: string },
    private readonly control: VerifierControl,
    /** "NATS" or "Kafka", in error messages. */
    readonly broker: string,
    /** The verifier's stream or topic: "leader" faults hit the node leading it. */
    readonly resource: string,
  ) {}

  /** Starts the verifier and waits (at most `timeoutMs`) until it printed its `ready` line. */
  static async start(options: {
    readonly broker: string;
    readonly command: string;
    /** Its arguments; `outputFile` is where it writes its JSON lines (NATS: -output; Kafka: stdout, the log). */
    readonly args: readonly string[];
    readonly outputDir: string;
    readonly resource: string;
    readonly control: VerifierControl;
    readonly processes: ProcessRegistry;
    /** The file its JSON lines end up in: its own -output file, or its log (stdout). */
    readonly outputFile?: string;
    /** @default 60000 */
    readonly timeoutMs?: number;
  }): Promise<ProcessLostMessageVerifier> {
    mkdirSync(options.outputDir, { recursive: true });
    const name = `${options.broker.toLowerCase()}-verifier`;
    const log = join(options.outputDir, `${name}.log`);
    let ready: () => void = () => undefined;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const verifier = options.processes.start(name, options.command, options.args, {
      logPath: log,
      onLine: (line) => {
        if (jsonLineType(line) === 'ready') ready();
      },
    });
    const timeoutMs = options.timeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      isReady.then(() => 'ready' as const),
      verifier.exited.then(() => 'exited' as const),
      new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (outcome !== 'ready') {
      await verifier.stop(1000);
      const said = existsSync(log) ? readFileSync(log, 'utf8').trim().slice(-600) : '';
      const why = outcome === 'late' ? `was not ready within ${Math.round(timeoutMs / 1000)} s` : 'exited';
      throw new Error(`the ${options.broker} lost-message verifier ${why}: ${said || '(no output)'}`);
    }
    const files = { output: options.outputFile ?? log, log };
    return new ProcessLostMessageVerifier(verifier, files, options.control, options.broker, options.resource);
  }

  private seconds(): number {
    return (Date.now() - this.readyAt) / 1000;
  }

  private tell(word: 'fault' | 'heal' | 'finish'): void {
    if (this.control.kind === 'file') appendFileSync(this.control.path, `${word}\n`);
    else this.process.send(word === 'fault' ? 'SIGUSR1' : word === 'heal' ? 'SIGUSR2' : 'SIGTERM');
  }

  /** Records the moment of the fault (the verifier keeps its own clock and what was unacknowledged then). */
  markFault(): number {
    this.tell('fault');
    return this.seconds();
  }

  markHeal(): number {
    this.tell('heal');
    return this.seconds();
  }

  /** Stops publishing, drains, reads once more, and returns the counts (stopped after `timeoutMs`). */
  async finish(timeoutMs = 90_000): Promise<VerifierCounts> {
    this.tell('finish');
    const timer = setTimeout(() => void this.process.stop(1000, 'SIGKILL'), timeoutMs);
    await this.process.exited;
    clearTimeout(timer);
    await this.process.stop(0);
    const output = existsSync(this.files.output) ? readFileSync(this.files.output, 'utf8') : '';
    try {
      return parseVerifierCounts(output, this.broker);
    } catch (error) {
      const log = existsSync(this.files.log) ? readFileSync(this.files.log, 'utf8').trim().slice(-400) : '';
      throw new Error(`${(error as Error).message}${log ? `; its log ends: ${log}` : ''}`);
    }
  }

  /** Stops it at once (teardown after a failure); no counts. */
  async abort(): Promise<void> {
    await this.process.stop(1000);
  }
}

/** The `type` of one of the verifiers' and the Go load client's JSON lines (keys may come sorted, not first). */
export function jsonLineType(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as { type?: unknown };
    return typeof parsed.type === 'string' ? parsed.type : undefined;
  } catch {
    return undefined;
  }
}
