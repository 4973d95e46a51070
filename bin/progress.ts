import { formatFailoverLine } from '../core/failover/failover-report';
import type { RunEvent } from '../local/run-events';

const formatSeconds = (seconds: number) => {
  const s = Math.max(0, Math.round(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
};

/**
 * Live progress on stderr: scenario, repetition, current msg/s and time left. On a terminal one line
 * is redrawn; elsewhere (CI logs) a line is printed every 10 seconds of PerfTest time.
 */
export class ProgressDisplay {
  private current: Extract<RunEvent, { type: 'repetition-started' }> | undefined;
  private lastPrinted = -Infinity;
  private readonly tty: boolean;

  constructor(private readonly out: NodeJS.WriteStream) {
    this.tty = Boolean(out.isTTY);
  }

  handle(event: RunEvent): void {
    switch (event.type) {
      case 'run-started':
        this.line(
          `run ${event.runId}: about ${formatSeconds(event.plannedSeconds)} of PerfTest time; raw output in ` +
            `${event.runDir}`,
        );
        break;
      case 'cluster-starting':
        this.line(
          event.broker === 'kafka'
            ? `starting a ${event.nodes}-broker Kafka cluster (KRaft)...`
            : event.broker === 'nats'
              ? `starting a ${event.nodes}-node NATS JetStream cluster...`
              : `starting a ${event.nodes}-node RabbitMQ cluster (${event.topology} queues)...`,
        );
        break;
      case 'cluster-ready':
        this.line(`cluster ready in ${event.seconds.toFixed(1)} s`);
        break;
      case 'repetition-started':
        this.current = event;
        this.lastPrinted = -Infinity;
        this.line(
          `[${event.index}/${event.total}] ${event.scenarioId} repetition ` +
            `${event.repetition}/${event.repetitions} (${event.durationSeconds} s)`,
        );
        break;
      case 'progress': {
        const current = this.current;
        if (!current) break;
        const left = current.durationSeconds - event.progress.time;
        const planLeft = current.remainingPlannedSeconds - event.progress.time;
        const text =
          `  ${event.progress.sent} msg/s sent, ${event.progress.received} msg/s received, ` +
          `${formatSeconds(left)} left (plan: ${formatSeconds(planLeft)})`;
        if (this.tty) this.out.write(`\r\x1b[2K${text}`);
        else if (event.progress.time - this.lastPrinted >= 10) {
          this.lastPrinted = event.progress.time;
          this.out.write(`${text}\n`);
        }
        break;
      }
      case 'running': {
        const current = this.current;
        if (!current) break;
        const left = current.durationSeconds - event.elapsedSeconds;
        const planLeft = current.remainingPlannedSeconds - event.elapsedSeconds;
        const text =
          `  running, ${formatSeconds(left)} left (plan: ${formatSeconds(planLeft)}); msg/s once the repetition ` +
          `is stored`;
        if (this.tty) this.out.write(`\r\x1b[2K${text}`);
        else if (event.elapsedSeconds - this.lastPrinted >= 10) {
          this.lastPrinted = event.elapsedSeconds;
          this.out.write(`${text}\n`);
        }
        break;
      }
      case 'repetition-finished': {
        const { record } = event;
        if (record.status === 'SKIPPED') {
          this.line(`${record.scenarioId} repetition ${record.repetition} skipped: ${record.skipReason}`);
          break;
        }
        const summary = record.result
          ? `send ${record.result.summary.sendRateAvg} msg/s, receive ${record.result.summary.receiveRateAvg} msg/s`
          : `FAILED: ${record.error}`;
        this.line(`  done: ${summary}`);
        if (record.failover) this.line(`  verifier: ${formatFailoverLine(record.failover)}`);
        break;
      }
      case 'fault':
        this.line(`  fault: ${event.action === 'heal' ? 'healed' : event.action} ${event.nodeName}`);
        break;
      case 'pause':
        this.line(`  pausing ${event.seconds} s between repetitions`);
        break;
    }
  }

  finish(): void {
    if (this.tty) this.out.write('\r\x1b[2K');
  }

  private line(text: string): void {
    this.out.write(this.tty ? `\r\x1b[2K${text}\n` : `${text}\n`);
  }
}
