/**
 * Azure Monitor's platform metrics of the twin's VMs, measured on this machine: what IngestRepetition reads through the
 * twin's ARM (test/lambdas/fake-arm.ts `metricValues`, served as Metrics - List answers). Each VM is the processes of
 * its network namespace: "Percentage CPU" from their CPU time (/proc/<pid>/stat utime + stime, proc(5)) over the
 * machine's cores, "Disk Write Bytes" from their write_bytes (/proc/<pid>/io), "Network In Total" / "Network Out
 * Total" from the namespace's interfaces (/proc/<pid>/net/dev, loopback excluded) and "Available Memory Bytes" as the
 * VM size's memory less their resident memory (/proc/<pid>/statm). Azure Monitor's grain for VMs is one minute: a
 * point per minute at its start, CPU and memory the minute's average, bytes its total
 * (https://learn.microsoft.com/azure/azure-monitor/reference/supported-metrics/microsoft-compute-virtualmachines-metrics).
 * A scale set's VMs are filed under the scale set with their VM name (its `$filter=VMName eq '*'` split).
 * The twin records the minute in progress as it goes, so a read made at once finds it; Azure's ingestion delay is
 * not modelled (docs/verification.md).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { cpus } from 'node:os';

/** A VM as the recorder measures it. */
export interface MeteredVm {
  /** The resource its metrics are filed under: its own id, or its scale set's. */
  readonly resourceId: string;
  /** A scale set's VM: its name, the split's `vmname` metadata value. */
  readonly vmName?: string;
  /** A process in the VM's network namespace (the namespace's holder). */
  readonly pid: number;
  /** The VM size's memory, when known: "Available Memory Bytes" is recorded only then. */
  readonly memoryBytes?: number;
}

/** One recorded point, as FakeArm's metricValues holds them. */
export interface MetricEntry {
  readonly metric: string;
  readonly vmName?: string;
  readonly timeStamp: string;
  readonly value: number;
}

/** USER_HZ, the unit of /proc/<pid>/stat's times on Linux (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

interface Counters {
  readonly at: number;
  readonly cpuTicks: Map<number, number>;
  readonly writeBytes: Map<number, number>;
  readonly received: number;
  readonly sent: number;
}

interface Minute {
  cpuSum: number;
  cpuSamples: number;
  availableSum: number;
  availableSamples: number;
  diskBytes: number;
  receivedBytes: number;
  sentBytes: number;
}

const readOr = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // the process ended between the listing and the read
  }
};

/** Every process id by its network namespace (`net:[inode]`). */
function processesByNetworkNamespace(): Map<string, number[]> {
  const byNamespace = new Map<string, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let namespace: string;
    try {
      namespace = readlinkSync(`/proc/${entry}/ns/net`);
    } catch {
      continue;
    }
    byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), Number(entry)]);
  }
  return byNamespace;
}

/** utime + stime of a process, in clock ticks (fields 14 and 15 of /proc/<pid>/stat, counted after its name). */
function cpuTicksOf(pid: number): number | undefined {
  const stat = readOr(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function writeBytesOf(pid: number): number | undefined {
  const match = /^write_bytes:\s*(\d+)$/m.exec(readOr(`/proc/${pid}/io`) ?? '');
  return match ? Number(match[1]) : undefined;
}

function residentBytesOf(pid: number): number {
  return Number((readOr(`/proc/${pid}/statm`) ?? '0 0').split(' ')[1] ?? 0) * PAGE_BYTES;
}

/** Received and sent bytes of every interface but loopback in a process's network namespace. */
function interfaceBytesOf(pid: number): { received: number; sent: number } {
  let received = 0;
  let sent = 0;
  for (const line of (readOr(`/proc/${pid}/net/dev`) ?? '').split('\n').slice(2)) {
    const [name, counters] = line.split(':');
    if (!counters || name!.trim() === 'lo') continue;
    const values = counters.trim().split(/\s+/).map(Number);
    received += values[0] ?? 0;
    sent += values[8] ?? 0;
  }
  return { received, sent };
}

const keyOf = (vm: MeteredVm) => `${vm.resourceId}|${vm.vmName ?? ''}|${vm.pid}`;

/** `read` of each process that could still be read. */
function measured(pids: readonly number[], read: (pid: number) => number | undefined): Map<number, number> {
  const values = new Map<number, number>();
  for (const pid of pids) {
    const value = read(pid);
    if (value !== undefined) values.set(pid, value);
  }
  return values;
}

export class PlatformMetricsRecorder {
  private readonly previous = new Map<string, Counters>();
  private readonly minutes = new Map<string, Map<number, Minute>>();
  private readonly cores = Math.max(1, cpus().length);

  constructor(
    private readonly vms: () => readonly MeteredVm[],
    /** Receives every entry of a resource each time it changes (FakeArm's metricValues.set). */
    private readonly sink: (resourceId: string, entries: MetricEntry[]) => void,
  ) {}

  /** Measures every VM once and hands each resource's points to the sink. */
  sample(now = Date.now()): void {
    const byNamespace = processesByNetworkNamespace();
    const minuteStart = Math.floor(now / 60_000) * 60_000;
    for (const vm of this.vms()) {
      let namespace: string;
      try {
        namespace = readlinkSync(`/proc/${vm.pid}/ns/net`);
      } catch {
        continue; // the VM was stopped
      }
      const pids = byNamespace.get(namespace) ?? [];
      const counters: Counters = {
        at: now,
        cpuTicks: measured(pids, cpuTicksOf),
        writeBytes: measured(pids, writeBytesOf),
        ...interfaceBytesOf(vm.pid),
      };
      const key = keyOf(vm);
      const before = this.previous.get(key);
      this.previous.set(key, counters);
      if (!before || now <= before.at) continue;
      // A process new since the last sample counts from 0: it started within the interval.
      const grown = (current: Map<number, number>, then: Map<number, number>) =>
        [...current].reduce((sum, [pid, value]) => sum + Math.max(0, value - (then.get(pid) ?? 0)), 0);
      const minutes = this.minutes.get(key) ?? new Map<number, Minute>();
      this.minutes.set(key, minutes);
      const minute = minutes.get(minuteStart) ?? {
        cpuSum: 0,
        cpuSamples: 0,
        availableSum: 0,
        availableSamples: 0,
        diskBytes: 0,
        receivedBytes: 0,
        sentBytes: 0,
      };
      minutes.set(minuteStart, minute);
      const seconds = (now - before.at) / 1000;
      minute.cpuSum +=
        (100 * grown(counters.cpuTicks, before.cpuTicks)) / CLOCK_TICKS_PER_SECOND / (seconds * this.cores);
      minute.cpuSamples += 1;
      minute.diskBytes += grown(counters.writeBytes, before.writeBytes);
      minute.receivedBytes += Math.max(0, counters.received - before.received);
      minute.sentBytes += Math.max(0, counters.sent - before.sent);
      if (vm.memoryBytes !== undefined) {
        const resident = pids.reduce((sum, pid) => sum + residentBytesOf(pid), 0);
        minute.availableSum += Math.max(0, vm.memoryBytes - resident);
        minute.availableSamples += 1;
      }
    }
    this.publish();
  }

  private publish(): void {
    const byResource = new Map<string, MetricEntry[]>();
    for (const vm of this.vms()) {
      const entries = byResource.get(vm.resourceId) ?? [];
      byResource.set(vm.resourceId, entries);
      for (const [start, minute] of this.minutes.get(keyOf(vm)) ?? []) {
        const timeStamp = new Date(start).toISOString();
        const point = (metric: string, value: number) =>
          entries.push({ metric, ...(vm.vmName === undefined ? {} : { vmName: vm.vmName }), timeStamp, value });
        point('Percentage CPU', minute.cpuSum / minute.cpuSamples);
        point('Disk Write Bytes', minute.diskBytes);
        point('Network In Total', minute.receivedBytes);
        point('Network Out Total', minute.sentBytes);
        if (minute.availableSamples > 0) point('Available Memory Bytes', minute.availableSum / minute.availableSamples);
      }
    }
    for (const [resourceId, entries] of byResource) this.sink(resourceId, entries);
  }
}
