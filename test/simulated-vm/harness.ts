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
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { holderName, holdMountpoint, releaseMountpoint } from './mountpoints';

/** This folder (also when a bundle elsewhere, e.g. dist/twin, holds this module). */
const HERE = existsSync(join(__dirname, 'fake-aws.py')) ? __dirname : join(__dirname, '../../test/simulated-vm');
/** Paths a VM gets its own copy of (host directory that stays untouched → per-VM directory). */
const PRIVATE_DIRECTORIES = [
  '/etc/rabbitmq',
  '/var/lib/rabbitmq',
  '/var/log',
  '/etc/rmqbench',
  '/var/lib/rmqbench',
  '/usr/local/sbin',
  '/etc/systemd/system',
  '/var/lib/cloud',
];
/**
 * The AWS CLI for boot scripts' CloudWatch Logs and CloudFormation calls (the AMI ships CLI v2; the calls used have the
 * same syntax in v1): the one scripts/setup.sh pins in .venv-tools first (.venv-tools/cli holds it alone), so that a
 * machine's own CLI (e.g. a pyenv one
 * with a mismatched botocore) is never what a test runs (issue 23); the machine's only when setup has not run.
 */
export function awsCliDirectory(): string {
  const pinned = join(HERE, '../../.venv-tools/cli');
  if (existsSync(join(pinned, 'aws'))) return pinned;
  for (const probe of ['pyenv which aws', 'command -v aws']) {
    try {
      return dirname(execFileSync('bash', ['-c', probe], { encoding: 'utf8' }).trim());
    } catch {
      // try the next way
    }
  }
  throw new Error('the AWS CLI is needed on this machine (scripts/setup.sh installs the awscli package)');
}

/**
 * The environment cloud-init gives an EC2 instance's user data (and SSM its documents) on Amazon Linux 2023: root's,
 * nothing of the test's, the AWS CLI on PATH, and the test CA (the AWS CLI keeps its own CA bundle, so AWS_CA_BUNDLE
 * points it at the test CA that curl finds in the system bundle). AWS_DEFAULT_REGION stands for what the AMI's AWS CLI
 * v2 does without a configured region and the pinned v1 here does not: it takes the instance's region from IMDS
 * (aws/aws-cli v2 awscli/utils.py IMDSRegionProvider, placement/availability-zone without its letter).
 */
export function ec2UserDataEnvironment(region = 'us-east-1'): Record<string, string> {
  return {
    AWS_DEFAULT_REGION: region,
    PATH: `${awsCliDirectory()}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: '/root',
    AWS_CA_BUNDLE: '/etc/ssl/certs/ca-certificates.crt',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  };
}

/** Private paths that a Debian machine with the rabbitmq-server package does not have; createVm makes them. */
const HOST_MOUNTPOINTS_WE_MAY_CREATE = ['/etc/rmqbench', '/var/lib/rmqbench', '/var/lib/cloud'];
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

/** /etc/hosts aliases of a VM's address beside its host name (kept out of the fake's state, which the fakes read). */
type DnsNames = Map<string, readonly string[]>;

export interface HubOptions {
  /** Third octet of 10.91.X.0/24; distinct per test so that hubs never share addresses. */
  readonly subnet: number;
  /** The fake cloud endpoints (a file of this folder), started as `<script> STATE LOG HUB_ADDRESS CERT KEY`. */
  readonly fakeScript: 'fake-azure.py' | 'fake-aws.py';
  /** Host names the fake serves over HTTPS: resolved to the hub in every VM and named in its certificate. */
  readonly httpsNames: readonly string[];
  /** Initial state file content (the fake's documentation says what it reads); `vms` is maintained by the hub. */
  readonly state: Record<string, unknown>;
}

export interface VmOptions {
  /**
   * Private paths not to bind-mount (they stay the host's directory, covered only by what the VM itself mounts), e.g.
   * /var/lib/rabbitmq where the AWS script mounts its data volume unless something is mounted there already.
   */
  readonly sharedPaths?: readonly string[];
  /** Gives the VM a private /dev with an empty block device at this path (e.g. EC2's /dev/sdf data volume). */
  readonly blockDevice?: string;
  /** Size of that block device (a sparse file: only what is written takes space). @default 1 */
  readonly blockDeviceGiB?: number;
  /** Fields added to the VM's entry in the fake's state (e.g. an EC2 instance id). */
  readonly state?: Record<string, unknown>;
  /**
   * Host paths the VM gets a private copy-on-write layer over (overlayfs: the host's directory below, a per-VM folder
   * above), mounted before the private directories. What the boot writes there stays in the VM: e.g. a system user that
   * `useradd` adds to /etc/passwd (by renaming a new file over it, which a bind-mounted file would refuse), /opt/kafka,
   * or a mount point it makes under /var/lib. The host's directories are never written.
   */
  readonly overlays?: readonly string[];
  /** Last octet of the VM's address in the hub's /24 (a static private IP the template assigns); default 10 + index. */
  readonly hostNumber?: number;
  /** More names of the VM's address in every VM's /etc/hosts (e.g. the records of a private DNS zone). */
  readonly dnsNames?: readonly string[];
  /**
   * Gives the VM its own instance of /proc (same processes), so that what the boot changes there (e.g. `mount -o
   * remount,hidepid=2 /proc`) stays in the VM: proc options are per instance since Linux 5.8.
   */
  readonly privateProc?: boolean;
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
  execFileSync(command, args, {
    encoding: 'utf8',
    input,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });

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
  // Never the machine's own namespace: that would end every process of the host.
  if (inode === netnsInodeOf(process.pid)) return;
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

const processAlive = (pid: number): boolean => existsSync(`/proc/${pid}`);

/**
 * The system's temporary folder, not the test run's own (test/jest-temp-dir.js): a run killed before its teardown
 * leaves
 * its simulation folders where the next run's sweepAbandonedRuns looks for them.
 */
const simulationTmpdir = (): string => process.env.RMQBENCH_SYSTEM_TMPDIR ?? tmpdir();

/**
 * Removes what a killed test run left behind (a SIGKILL or a SIGINT that ends Jest skips afterAll and exit handlers):
 * hub namespaces `rmqsim-<pid>-*` and folders `rmqbench-sim-<pid>-*` whose process no longer runs, every process in
 * those hubs and in their VMs (a VM's namespace is found through its holder process, marked with RMQBENCH_SIM_DIR),
 * and their loop devices.
 */
function sweepAbandonedRuns(): void {
  const dead = (name: string, prefix: string): boolean => {
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    return Number.isInteger(pid) && pid > 0 && !processAlive(pid);
  };
  const abandonedDirs = readdirSync(simulationTmpdir())
    .filter((name) => name.startsWith('rmqbench-sim-') && dead(name, 'rmqbench-sim-'))
    .map((name) => join(simulationTmpdir(), name));
  // VM processes: every process whose working files live in an abandoned folder, and everything in its namespace.
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (abandonedDirs.some((dir) => cmdline.includes(dir) || environ.includes(`RMQBENCH_SIM_DIR=${dir}`)))
        killNetns(readlinkSync(`/proc/${entry}/ns/net`));
    } catch {
      // ended meanwhile
    }
  }
  for (const name of existsSync('/run/netns') ? readdirSync('/run/netns') : []) {
    if (!name.startsWith('rmqsim-') || !dead(name, 'rmqsim-')) continue;
    try {
      for (const pid of run('ip', ['netns', 'pids', name]).trim().split('\n').filter(Boolean))
        process.kill(Number(pid), 'SIGKILL');
      run('ip', ['netns', 'del', name]);
    } catch {
      // removed meanwhile
    }
  }
  for (const line of run('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE'])
    .trim()
    .split('\n')
    .filter(Boolean)) {
    const [device, file] = line.trim().split(/\s+/);
    if (device && file && abandonedDirs.some((dir) => file.startsWith(dir))) {
      try {
        run('losetup', ['-d', device]);
      } catch {
        // still in use: left for the next sweep
      }
    }
  }
  for (const dir of abandonedDirs) rmSync(dir, { recursive: true, force: true });
  // Mount points an abandoned run created on the host (empty; one still mounted in a live VM refuses with EBUSY).
  if (abandonedDirs.length > 0) {
    for (const path of HOST_MOUNTPOINTS_WE_MAY_CREATE) {
      try {
        rmdirSync(path);
      } catch {
        // not empty, in use, or absent
      }
    }
  }
}

export class SimulatedHub {
  private dirPath?: string;
  readonly hubNetns: string;
  readonly hubAddress: string;
  private readonly state: Record<string, unknown> & { vms: FakeVmState[] };
  private readonly vms: SimulatedVm[] = [];
  private readonly heldMountpoints: string[] = [];
  private readonly loopDevices: string[] = [];
  private readonly dnsNames: DnsNames = new Map();
  private fakePid?: number;
  private cleaned = false;
  /** More /etc/hosts lines of every VM (addresses in the hub, e.g. a simulated load balancer's name). */
  private readonly hubHosts = new Map<string, readonly string[]>();

  constructor(private readonly options: HubOptions) {
    installExitGuard();
    liveHubs.add(this);
    this.hubNetns = `rmqsim-${process.pid}-${options.subnet}`;
    this.hubAddress = `10.91.${options.subnet}.1`;
    this.state = { ...options.state, vms: [] };
  }

  /** The hub's temporary folder (test CA, fake state and log, the VMs' private directories); made by start(). */
  get dir(): string {
    if (!this.dirPath) throw new Error('SimulatedHub.start() has not run');
    return this.dirPath;
  }

  private get caFile(): string {
    return join(this.dir, 'ca.pem');
  }

  private get stateFile(): string {
    return join(this.dir, 'fake-state.json');
  }

  /** Creates the hub namespace, bridge, test CA and the fake cloud endpoints. */
  async start(): Promise<void> {
    sweepAbandonedRuns();
    this.dirPath = mkdtempSync(join(simulationTmpdir(), `rmqbench-sim-${process.pid}-`));
    this.makeCertificates();
    this.saveState();
    run('ip', ['netns', 'add', this.hubNetns]);
    const inHub = (...args: string[]): string => run('ip', ['netns', 'exec', this.hubNetns, ...args]);
    inHub('ip', 'link', 'set', 'lo', 'up');
    // A bridge without an address of its own takes its ports' lowest MAC, and so changes MAC whenever a VM's veth joins
    // with a lower one: a VM that cached the old one (for IMDS, the fakes, a load balancer) then sent into the void
    // until its ARP entry failed and was learnt again (a boot's curl to IMDS hung in SYN-SENT for over a minute). An
    // address set explicitly stays (ip-link(8) `address`; the kernel keeps a user-set bridge address).
    inHub('ip', 'link', 'add', 'br0', 'address', '02:00:00:00:00:01', 'type', 'bridge');
    inHub('ip', 'addr', 'add', `${this.hubAddress}/24`, 'dev', 'br0');
    inHub('ip', 'addr', 'add', '169.254.169.254/32', 'dev', 'br0');
    inHub('ip', 'link', 'set', 'br0', 'up');
    const fake = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.hubNetns,
        'python3',
        join(HERE, this.options.fakeScript),
        this.stateFile,
        join(this.dir, 'fake-requests.log'),
        this.hubAddress,
        join(this.dir, 'endpoints.pem'),
        join(this.dir, 'endpoints.key'),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    this.fakePid = fake.pid;
    await new Promise<void>((resolve, reject) => {
      fake.once('exit', (code) =>
        reject(new Error(`${this.options.fakeScript} exited with ${code} before it was ready`)),
      );
      fake.stdout.once('data', () => resolve());
    });
    fake.removeAllListeners('exit');
  }

  /** Issues a test CA, the endpoints' certificate (ARM + the vault) and a broker certificate for the TLS scenario. */
  private makeCertificates(): void {
    const at = (file: string): string => join(this.dir, file);
    run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=rmqbench simulated-vm test CA',
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.pem'),
    ]);
    const issue = (name: string, subject: string, altNames: string): void => {
      run('openssl', [
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        subject,
        '-keyout',
        at(`${name}.key`),
        '-out',
        at(`${name}.csr`),
      ]);
      writeFileSync(at(`${name}.ext`), `subjectAltName=${altNames}\n`);
      run('openssl', [
        'x509',
        '-req',
        '-in',
        at(`${name}.csr`),
        '-CA',
        at('ca.pem'),
        '-CAkey',
        at('ca.key'),
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        at(`${name}.ext`),
        '-out',
        at(`${name}.pem`),
      ]);
    };
    issue(
      'endpoints',
      `/CN=${this.options.httpsNames[0]}`,
      this.options.httpsNames.map((name) => `DNS:${name}`).join(','),
    );
    issue('broker', '/CN=rmqbench-broker', 'DNS:rmqbench-broker');
  }

  pem(name: 'broker' | 'ca'): { certificate: string; privateKey: string } {
    return {
      certificate: readFileSync(join(this.dir, `${name}.pem`), 'utf8'),
      privateKey: readFileSync(join(this.dir, `${name}.key`), 'utf8'),
    };
  }

  /** Writes the state to a temporary file and renames it over the old one: the fake re-reads the file on every
   * request, from several threads, and a request that read a half-written file failed a CI run's boot (JSONDecodeError
   * while serving Maven Central). rename(2) replaces the name atomically. */
  private saveState(): void {
    const pending = `${this.stateFile}.${process.pid}.tmp`;
    writeFileSync(pending, JSON.stringify(this.state, null, 2));
    renameSync(pending, this.stateFile);
  }

  /** Changes the fake's state (re-read on every request). */
  updateState(change: (state: Record<string, unknown>) => void): void {
    change(this.state);
    this.saveState();
  }

  /** Requests the fake endpoints received: "callerIp host path" lines. */
  requestLog(): string[] {
    const file = join(this.dir, 'fake-requests.log');
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
  }

  /**
   * Creates a VM: namespaces, veth to the bridge, private directories, and the files cloud-init would write
   * (`files`: absolute path → content, e.g. the scale set's customData write_files).
   */
  createVm(
    name: string,
    computerName: string,
    files: Record<string, { content: string; mode: number }>,
    options: VmOptions = {},
  ): SimulatedVm {
    const index = this.state.vms.length + 1;
    const hostNumber = options.hostNumber ?? 10 + index;
    if (
      !Number.isInteger(hostNumber) ||
      hostNumber < 2 ||
      hostNumber > 254 ||
      this.state.vms.some((vm) => vm.ip.endsWith(`.${hostNumber}`))
    ) {
      throw new Error(
        `createVm: hostNumber ${hostNumber} must be a free host ` +
          `number of 10.91.${this.options.subnet}.0/24 between 2 and 254`,
      );
    }
    const ip = `10.91.${this.options.subnet}.${hostNumber}`;
    const root = join(this.dir, `vm${index}`);
    for (const path of PRIVATE_DIRECTORIES) {
      mkdirSync(join(root, path), { recursive: true });
      // Shared with every other hub (test/simulated-vm/mountpoints.ts): the last one to stop removes it.
      if (!this.heldMountpoints.includes(path)) {
        holdMountpoint(path, holderName(this.hubNetns));
        this.heldMountpoints.push(path);
      }
    }
    for (const path of RABBITMQ_OWNED) {
      mkdirSync(join(root, path), { recursive: true });
      run('chown', ['rabbitmq:rabbitmq', join(root, path)]);
    }
    writeFileSync(join(root, 'fstab'), readFileSync('/etc/fstab', 'utf8'));
    for (const [path, { content, mode }] of Object.entries(files)) {
      const target = join(root, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, content, { mode });
    }
    // RMQBENCH_SIM_DIR marks the holder (and so its namespace) as this hub's, for sweepAbandonedRuns().
    const holder = spawn('unshare', ['--net', '--mount', '--uts', '--propagation', 'private', 'sleep', 'infinity'], {
      stdio: 'ignore',
      env: { ...process.env, RMQBENCH_SIM_DIR: this.dir },
    });
    const pid = holder.pid as number;
    // unshare execs sleep once the namespaces exist: wait for the network namespace to differ from ours.
    const own = netnsInodeOf(process.pid);
    for (
      let attempt = 0;
      attempt < 100 &&
      (!existsSync(`/proc/${pid}/ns/net`) ||
        netnsInodeOf(pid) === own ||
        !readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep'));
      attempt += 1
    ) {
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
      `${this.hubAddress} ${this.options.httpsNames.join(' ')}`,
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
      ...(options.overlays ?? []).flatMap((path) => {
        const layer = join(root, 'overlay', path.replace(/\//g, '_'));
        return [
          `mkdir -p ${layer}/upper ${layer}/work`,
          `mount -t overlay overlay -o lowerdir=${path},upperdir=${layer}/upper,workdir=${layer}/work ${path}`,
        ];
      }),
      ...PRIVATE_DIRECTORIES.filter((path) => !options.sharedPaths?.includes(path)).map(
        (path) => `mount --bind ${join(root, path)} ${path}`,
      ),
      `mount --bind ${join(root, 'hosts')} /etc/hosts`,
      `mount --bind ${join(root, 'fstab')} /etc/fstab`,
      ...(options.blockDevice ? this.privateDev(root, options.blockDevice, options.blockDeviceGiB ?? 1) : []),
      `mount --bind ${this.caFile} /etc/ssl/certs/ca-certificates.crt`,
      `mount --bind ${join(HERE, 'systemctl-shim.sh')} /usr/bin/systemctl`,
      'mount -t tmpfs -o mode=0755 tmpfs /run',
      ...(options.privateProc ? ['mount -t proc proc /proc'] : []),
    ].join('\n');
    run('nsenter', ['-t', String(pid), '-n', '-m', '-u', '--', 'bash', '-c', mounts]);
    this.state.vms.push({
      ...options.state,
      name,
      computerName,
      ip,
      timeCreated: new Date(Date.UTC(2026, 10, 23, 8, 0, index)).toISOString(),
    });
    if (options.dnsNames) this.dnsNames.set(name, options.dnsNames);
    this.saveState();
    this.writeHosts();
    return vm;
  }

  /**
   * Mount commands for a private /dev: the usual character devices, /dev/fd and friends, a
   * devpts, and `path` as a block device node of a fresh loop device over an empty sparse file of `sizeGiB`.
   */
  private privateDev(root: string, path: string, sizeGiB: number): string[] {
    const image = join(root, 'data-volume.img');
    run('truncate', ['-s', `${sizeGiB}G`, image]);
    const loop = run('losetup', ['--find', '--show', image]).trim();
    this.loopDevices.push(loop);
    const [major, minor] = run('stat', ['-c', '%t %T', loop])
      .trim()
      .split(' ')
      .map((hex) => parseInt(hex, 16));
    return [
      'mount -t tmpfs -o mode=0755 tmpfs /dev',
      // The kernel's fixed numbers for these character devices (Documentation/admin-guide/devices.txt).
      ...Object.entries({ null: '1 3', zero: '1 5', full: '1 7', random: '1 8', urandom: '1 9', tty: '5 0' }).map(
        ([device, numbers]) => `mknod -m 0666 /dev/${device} c ${numbers}`,
      ),
      'ln -s /proc/self/fd /dev/fd && ln -s /proc/self/fd/0 /dev/stdin && ' +
        'ln -s /proc/self/fd/1 /dev/stdout && ln -s /proc/self/fd/2 /dev/stderr',
      'mkdir /dev/pts /dev/shm && mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts && ' +
        'ln -s pts/ptmx /dev/ptmx && mount -t tmpfs tmpfs /dev/shm',
      // Azure names its data disks by a link under /dev/disk/azure (a device node stands in for it here).
      `mkdir -p ${dirname(path)} && mknod -m 0660 ${path} b ${major} ${minor}`,
    ];
  }

  /** Every live VM's /etc/hosts lists all VMs (their names with their case) and the fake Azure hosts. */
  private writeHosts(): void {
    const peers = [
      ...this.state.vms
        .filter((vm) => !vm.deleted)
        .map((vm) => [vm.ip, vm.computerName, ...(this.dnsNames.get(vm.name) ?? [])].join(' ')),
      ...[...this.hubHosts].map(([ip, names]) => [ip, ...names].join(' ')),
    ];
    for (const vm of this.vms) {
      const file = join(vm.root, 'hosts');
      const base = readFileSync(file, 'utf8').split('\n').slice(0, 2);
      // Rewrite in place: the bind mount follows the inode, so the file must not be replaced.
      writeFileSync(file, `${[...base, ...peers].join('\n')}\n`);
    }
  }

  /** The last `lines` lines of the hub folder's log files whose names start with `prefix`. */
  fileTail(prefix: string, lines: number): string[] {
    if (!this.dirPath) return [];
    return readdirSync(this.dirPath)
      .filter((name) => name.startsWith(prefix) && name.endsWith('.log'))
      .flatMap((name) =>
        readFileSync(join(this.dirPath!, name), 'utf8').trim().split('\n').filter(Boolean).slice(-lines),
      );
  }

  /**
   * Another address of the hub on the bridge (e.g. a simulated load balancer's), with names every VM's /etc/hosts gives
   * it.
   */
  addHubAddress(ip: string, names: readonly string[]): void {
    run('ip', ['netns', 'exec', this.hubNetns, 'ip', 'addr', 'add', `${ip}/32`, 'dev', 'br0']);
    this.hubHosts.set(ip, names);
    this.writeHosts();
  }

  /** Starts a process in the hub's network namespace (cleanup() kills it with the namespace's other processes). */
  spawnInHub(command: string, args: readonly string[]): ReturnType<typeof spawn> {
    return spawn('ip', ['netns', 'exec', this.hubNetns, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** Runs a command inside the VM (all three namespaces), as root. */
  exec(
    vm: SimulatedVm,
    script: string,
    options: { timeoutMs?: number; env?: Record<string, string>; onStderrLine?: (line: string) => void } = {},
  ): Promise<CommandResult> {
    const timeoutMs = options.timeoutMs ?? 600_000;
    // With `env`, the command starts from exactly that environment (as cloud-init's is minimal), not the test's.
    const environment = options.env
      ? ['env', '-i', ...Object.entries(options.env).map(([key, value]) => `${key}=${value}`)]
      : [];
    return new Promise((resolve) => {
      const child = spawn(
        'nsenter',
        ['-t', String(vm.pid), '-n', '-m', '-u', '--', ...environment, 'bash', '-c', script],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      let pending = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (!options.onStderrLine) return;
        const lines = (pending + chunk.toString()).split('\n');
        pending = lines.pop()!;
        for (const line of lines) options.onStderrLine(line);
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ status: code ?? -1, stdout, stderr });
      });
    });
  }

  /** The tail of the VM's broker and unit logs, for failure messages. */
  async diagnostics(vm: SimulatedVm): Promise<string> {
    const result = await this.exec(
      vm,
      'for f in /var/log/rabbitmq/* /run/rmqbench-sim/*.out /run/rmqbench-sim/*.err; ' +
        'do [ -f "$f" ] && { echo "== $f"; tail -n 15 "$f"; }; done; true',
    );
    return result.stdout;
  }

  /** `rabbitmqctl cluster_status` inside the VM, parsed. */
  async clusterStatus(vm: SimulatedVm): Promise<{ disk_nodes: string[]; running_nodes: string[] }> {
    const result = await this.exec(vm, 'rabbitmqctl -q cluster_status --formatter json');
    if (result.status !== 0)
      throw new Error(`rabbitmqctl cluster_status failed in ${vm.computerName}: ${result.stderr}`);
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

  /**
   * What cleanup() must leave nothing of: processes in any VM's network namespace, the hub namespace, the hub's folder.
   */
  leftovers(): { processes: number[]; hubNamespace: boolean; folder: boolean } {
    return {
      processes: this.vms.flatMap((vm) => pidsInNetns(vm.netnsInode)),
      hubNamespace: existsSync(`/run/netns/${this.hubNetns}`),
      folder: this.dirPath !== undefined && existsSync(this.dirPath),
    };
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
    for (const loop of this.loopDevices) {
      try {
        run('losetup', ['-d', loop]);
      } catch {
        // still busy a moment after its namespace ended: autoclear is not set, so retry once
        execFileSync('sleep', ['0.5']);
        try {
          run('losetup', ['-d', loop]);
        } catch {
          // reported by the leak check of the test
        }
      }
    }
    if (this.fakePid) {
      try {
        process.kill(this.fakePid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const path of this.heldMountpoints.reverse()) releaseMountpoint(path, holderName(this.hubNetns));
    if (this.dirPath) rmSync(this.dirPath, { recursive: true, force: true });
  }
}
