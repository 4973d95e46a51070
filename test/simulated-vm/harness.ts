/**
 * Simulated VMs for the real node boot scripts (issue 9 section 2). Each VM is a network + mount + UTS namespace made
 * with unshare(1): its own host name, its own address on a bridge that exists only in the test's hub network namespace,
 * no route anywhere else. The hub also holds the fake cloud endpoints (fake-azure.py): IMDS at 169.254.169.254, ARM and
 * Key Vault over HTTPS with a certificate from a test CA. Inside each VM's mount namespace, bind mounts provide what a
 * VM image has and this machine lacks: /etc/hosts naming the peers and the Azure hosts, the test CA as the system CA
 * bundle, a per-VM /etc/rabbitmq, /var/lib/rabbitmq, /var/log/rabbitmq, /etc/rmqbench, /var/lib/rmqbench,
 * /usr/local/sbin and /etc/systemd/system, a private /run, and a `systemctl` stand-in (systemctl-shim.sh: no systemd
 * runs in a namespace). RabbitMQ is Debian's package already installed here (3.10.8), reached through the scripts'
 * one install seam. Everything is removed by cleanup(), which the tests call in afterAll and which also runs on exit.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const HERE = __dirname;
/** Paths a VM gets its own copy of (host directory that stays untouched → per-VM directory). */
const PRIVATE_DIRECTORIES = ['/etc/rabbitmq', '/var/lib/rabbitmq', '/var/log/rabbitmq', '/etc/rmqbench', '/var/lib/rmqbench', '/usr/local/sbin', '/etc/systemd/system'];
const RABBITMQ_OWNED = new Set(['/etc/rabbitmq', '/var/lib/rabbitmq', '/var/log/rabbitmq']);

export interface SimulatedVm {
  /** ARM name, e.g. rmqbench-vmss_3f2a9c1d (Flexible orchestration: {scale-set-name}_{8-char-guid}). */
  readonly name: string;
  /** Host name (osProfile.computerName), case preserved. */
  readonly computerName: string;
  readonly ip: string;
  /** PID of the namespace holder process: nsenter target. */
  readonly pid: number;
  /** Per-VM backing directory of the private paths. */
  readonly root: string;
  readonly netnsInode: string;
}

export interface CommandResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

interface FakeVmState {
  name: string;
  computerName: string;
  ip: string;
  timeCreated: string;
  deleted?: boolean;
}

export interface HubOptions {
  /** Third octet of 10.91.X.0/24; distinct per test file so that files never share addresses. */
  readonly subnet: number;
  readonly subscriptionId?: string;
  readonly resourceGroup?: string;
  readonly scaleSetName: string;
  readonly identityClientId: string;
  readonly vaultName: string;
  readonly secrets: Record<string, string>;
}

const liveHubs = new Set<SimulatedHub>();
let exitGuardInstalled = false;
function installExitGuard(): void {
  if (exitGuardInstalled) return;
  exitGuardInstalled = true;
  process.on('exit', () => {
    for (const hub of liveHubs) hub.cleanup();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const hub of liveHubs) hub.cleanup();
      process.exit(130);
    });
  }
}

const run = (command: string, args: string[], input?: string): string =>
  execFileSync(command, args, { encoding: 'utf8', input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });

const netnsInodeOf = (pid: number): string => readlinkSync(`/proc/${pid}/ns/net`);

/** PIDs of every process whose network namespace is `inode` (what a deleted namespace would leave running). */
function pidsInNetns(inode: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) === inode) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

function killNetns(inode: string): void {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const pids = pidsInNetns(inode);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    execFileSync('sleep', ['0.1']);
  }
}

export class SimulatedHub {
  readonly dir: string;
  readonly hubNetns: string;
  readonly hubAddress: string;
  readonly caFile: string;
  private readonly stateFile: string;
  private readonly state: Record<string, unknown> & { vms: FakeVmState[] };
  private readonly vms: SimulatedVm[] = [];
  private readonly createdMountpoints: string[] = [];
  private fakePid?: number;
  private cleaned = false;

  constructor(private readonly options: HubOptions) {
    installExitGuard();
    liveHubs.add(this);
    this.dir = mkdtempSync(join(tmpdir(), 'rmqbench-sim-'));
    this.hubNetns = `rmqsim-${process.pid}-${options.subnet}`;
    this.hubAddress = `10.91.${options.subnet}.1`;
    this.caFile = join(this.dir, 'ca.pem');
    this.stateFile = join(this.dir, 'fake-azure-state.json');
    this.state = {
      subscriptionId: options.subscriptionId ?? '00000000-0000-0000-0000-000000000091',
      resourceGroup: options.resourceGroup ?? 'rmqbench-sim',
      scaleSetName: options.scaleSetName,
      identityClientId: options.identityClientId,
      vaultName: options.vaultName,
      secrets: options.secrets,
      vms: [],
    };
  }

  /** Creates the hub namespace, bridge, test CA and the fake cloud endpoints. */
  async start(): Promise<void> {
    this.makeCertificates();
    this.saveState();
    run('ip', ['netns', 'add', this.hubNetns]);
    const inHub = (...args: string[]): string => run('ip', ['netns', 'exec', this.hubNetns, ...args]);
    inHub('ip', 'link', 'set', 'lo', 'up');
    inHub('ip', 'link', 'add', 'br0', 'type', 'bridge');
    inHub('ip', 'addr', 'add', `${this.hubAddress}/24`, 'dev', 'br0');
    inHub('ip', 'addr', 'add', '169.254.169.254/32', 'dev', 'br0');
    inHub('ip', 'link', 'set', 'br0', 'up');
    const fake = spawn(
      'ip',
      ['netns', 'exec', this.hubNetns, 'python3', join(HERE, 'fake-azure.py'), this.stateFile, join(this.dir, 'fake-azure.log'), this.hubAddress, join(this.dir, 'endpoints.pem'), join(this.dir, 'endpoints.key')],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    this.fakePid = fake.pid;
    await new Promise<void>((resolve, reject) => {
      fake.once('exit', (code) => reject(new Error(`fake-azure.py exited with ${code} before it was ready`)));
      fake.stdout.once('data', () => resolve());
    });
    fake.removeAllListeners('exit');
  }

  /** Issues a test CA, the endpoints' certificate (ARM + the vault) and a broker certificate for the TLS scenario. */
  private makeCertificates(): void {
    const at = (file: string): string => join(this.dir, file);
    run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=rmqbench simulated-vm test CA', '-keyout', at('ca.key'), '-out', at('ca.pem')]);
    const issue = (name: string, subject: string, altNames: string): void => {
      run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`)]);
      writeFileSync(at(`${name}.ext`), `subjectAltName=${altNames}\n`);
      run('openssl', ['x509', '-req', '-in', at(`${name}.csr`), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', at(`${name}.ext`), '-out', at(`${name}.pem`)]);
    };
    issue('endpoints', '/CN=management.azure.com', `DNS:management.azure.com,DNS:${this.options.vaultName}.vault.azure.net`);
    issue('broker', '/CN=rmqbench-broker', 'DNS:rmqbench-broker');
  }

  pem(name: 'broker' | 'ca'): { certificate: string; privateKey: string } {
    return { certificate: readFileSync(join(this.dir, `${name}.pem`), 'utf8'), privateKey: readFileSync(join(this.dir, `${name}.key`), 'utf8') };
  }

  private saveState(): void {
    writeFileSync(this.stateFile, JSON.stringify(this.state, null, 2));
  }

  setSecret(name: string, value: string): void {
    (this.state.secrets as Record<string, string>)[name] = value;
    this.saveState();
  }

  /** Requests the fake endpoints received: "callerIp host path" lines. */
  requestLog(): string[] {
    const file = join(this.dir, 'fake-azure.log');
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
  }

  /**
   * Creates a VM: namespaces, veth to the bridge, private directories, and the files cloud-init would write
   * (`files`: absolute path → content, e.g. the scale set's customData write_files).
   */
  createVm(name: string, computerName: string, files: Record<string, { content: string; mode: number }>): SimulatedVm {
    const index = this.state.vms.length + 1;
    const ip = `10.91.${this.options.subnet}.${10 + index}`;
    const root = join(this.dir, `vm${index}`);
    for (const path of PRIVATE_DIRECTORIES) {
      mkdirSync(join(root, path), { recursive: true });
      if (RABBITMQ_OWNED.has(path)) run('chown', ['rabbitmq:rabbitmq', join(root, path)]);
      if (!existsSync(path)) {
        mkdirSync(path, { recursive: true });
        this.createdMountpoints.push(path);
      }
    }
    for (const [path, { content, mode }] of Object.entries(files)) {
      const target = join(root, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, content, { mode });
    }
    const holder = spawn('unshare', ['--net', '--mount', '--uts', '--propagation', 'private', 'sleep', 'infinity'], { stdio: 'ignore' });
    const pid = holder.pid as number;
    // unshare execs sleep once the namespaces exist: wait for the network namespace to differ from ours.
    const own = netnsInodeOf(process.pid);
    for (let attempt = 0; attempt < 100 && (!existsSync(`/proc/${pid}/ns/net`) || netnsInodeOf(pid) === own || !readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep')); attempt += 1) {
      execFileSync('sleep', ['0.05']);
    }
    const vm: SimulatedVm = { name, computerName, ip, pid, root, netnsInode: netnsInodeOf(pid) };
    this.vms.push(vm);
    const veth = `rs${this.options.subnet}v${index}`;
    run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(pid)]);
    run('ip', ['link', 'set', veth, 'netns', this.hubNetns]);
    run('ip', ['netns', 'exec', this.hubNetns, 'ip', 'link', 'set', veth, 'master', 'br0', 'up']);
    const hosts = [
      '127.0.0.1 localhost',
      `${this.hubAddress} management.azure.com ${this.options.vaultName}.vault.azure.net`,
      // Azure's VNet DNS resolves every VM's host name; /etc/hosts plays that part (rewritten as VMs are added).
    ].join('\n');
    writeFileSync(join(root, 'hosts'), `${hosts}\n`);
    const mounts = [
      'set -e',
      `hostname ${computerName}`,
      'ip link set lo up',
      `ip addr add ${ip}/24 dev eth0`,
      'ip link set eth0 up',
      'ip route add 169.254.169.254/32 dev eth0',
      ...PRIVATE_DIRECTORIES.map((path) => `mount --bind ${join(root, path)} ${path}`),
      `mount --bind ${join(root, 'hosts')} /etc/hosts`,
      `mount --bind ${this.caFile} /etc/ssl/certs/ca-certificates.crt`,
      `mount --bind ${join(HERE, 'systemctl-shim.sh')} /usr/bin/systemctl`,
      'mount -t tmpfs -o mode=0755 tmpfs /run',
    ].join('\n');
    run('nsenter', ['-t', String(pid), '-n', '-m', '-u', '--', 'bash', '-c', mounts]);
    this.state.vms.push({ name, computerName, ip, timeCreated: new Date(Date.UTC(2026, 10, 23, 8, 0, index)).toISOString() });
    this.saveState();
    this.writeHosts();
    return vm;
  }

  /** Every live VM's /etc/hosts lists all VMs (their names with their case) and the fake Azure hosts. */
  private writeHosts(): void {
    const peers = this.state.vms.filter((vm) => !vm.deleted).map((vm) => `${vm.ip} ${vm.computerName}`);
    for (const vm of this.vms) {
      const file = join(vm.root, 'hosts');
      const base = readFileSync(file, 'utf8').split('\n').slice(0, 2);
      // Rewrite in place: the bind mount follows the inode, so the file must not be replaced.
      writeFileSync(file, `${[...base, ...peers].join('\n')}\n`);
    }
  }

  /** Runs a command inside the VM (all three namespaces), as root. */
  exec(vm: SimulatedVm, script: string, timeoutMs = 600_000): Promise<CommandResult> {
    return new Promise((resolve) => {
      const child = spawn('nsenter', ['-t', String(vm.pid), '-n', '-m', '-u', '--', 'bash', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ status: code ?? -1, stdout, stderr });
      });
    });
  }

  /** The tail of the VM's broker and unit logs, for failure messages. */
  async diagnostics(vm: SimulatedVm): Promise<string> {
    const result = await this.exec(vm, 'for f in /var/log/rabbitmq/* /run/rmqbench-sim/*.out /run/rmqbench-sim/*.err; do [ -f "$f" ] && { echo "== $f"; tail -n 15 "$f"; }; done; true');
    return result.stdout;
  }

  /** `rabbitmqctl cluster_status` inside the VM, parsed. */
  async clusterStatus(vm: SimulatedVm): Promise<{ disk_nodes: string[]; running_nodes: string[] }> {
    const result = await this.exec(vm, 'rabbitmqctl -q cluster_status --formatter json');
    if (result.status !== 0) throw new Error(`rabbitmqctl cluster_status failed in ${vm.computerName}: ${result.stderr}`);
    return JSON.parse(result.stdout) as { disk_nodes: string[]; running_nodes: string[] };
  }

  /** Powers a VM off: every process in it ends; ARM still lists it (a stopped VM exists). */
  stopVm(vm: SimulatedVm): void {
    killNetns(vm.netnsInode);
  }

  /** Deletes a VM: its processes end and ARM no longer lists it. */
  deleteVm(vm: SimulatedVm): void {
    killNetns(vm.netnsInode);
    const entry = this.state.vms.find((candidate) => candidate.name === vm.name);
    if (entry) entry.deleted = true;
    this.saveState();
    this.writeHosts();
  }

  /** Removes every process, namespace, bridge, veth, mount point and file this hub created. Idempotent. */
  cleanup(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    liveHubs.delete(this);
    for (const vm of this.vms) killNetns(vm.netnsInode);
    if (existsSync(`/run/netns/${this.hubNetns}`)) {
      try {
        const pids = run('ip', ['netns', 'pids', this.hubNetns]).trim().split('\n').filter(Boolean);
        for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
      } catch {
        // nothing left
      }
      // Deleting the namespace deletes the bridge and the hub ends of the veth pairs (and with them the VM ends).
      run('ip', ['netns', 'del', this.hubNetns]);
    }
    if (this.fakePid) {
      try {
        process.kill(this.fakePid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const path of this.createdMountpoints.reverse()) {
      try {
        rmdirSync(path);
      } catch {
        // another simulated VM set still uses it, or something was put there: leave it
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
