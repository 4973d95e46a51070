/**
 * NatsCluster's boot script (cdk/user-data/nats-node.ts, rendered as the construct renders it, with its exit trap) runs
 * verbatim on three simulated EC2 instances (harness.ts) against fake IMDSv2, CloudWatch Logs and CloudFormation
 * (fake-aws.py), and the three servers must form one JetStream cluster with a meta leader.
 *
 * Only the download goes through the script's one seam (/etc/rmqbench/install-override.sh): instead of the GitHub
 * release, the tarball is one this test packs with the release's layout (a folder `nats-server-v<pinned
 * version>-linux-amd64` holding `nats-server`) around the nats-server of the same version the local target builds with
 * `go install` into the rmqbench cache (local/nats-binaries.ts; the Go module proxy serves it, GitHub cannot be
 * reached). Its SHA-256 differs from the pinned release's, so the seam also sets
 * NATS_SERVER_SHA256 to the checksum this test computed: the script's own check still runs, on the test's tarball. No
 * DNS zone runs here: the private zone's names are in every VM's /etc/hosts (`dnsNames`), as the Kafka boot test does.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UserData } from 'aws-cdk-lib/aws-ec2';
import { NATS_CLIENT_PORT, NATS_CLUSTER_PORT, NATS_MONITORING_PORT } from '../../cdk/NatsCluster';
import { NATS_SERVER_VERSION_ON_CLOUD, natsServerTarball } from '../../cdk/nats-artifacts';
import { natsNodeBootCommands, type NatsServerIdentity } from '../../cdk/user-data/nats-node';
import { BOOT_LOG_FILE, DATA_VOLUME_DEVICE, INSTALL_OVERRIDE_FILE } from '../../cdk/user-data/rabbitmq-node';
import { ensureNatsBinary, NATS_SERVER_BINARY } from '../../local/nats-binaries';
import { cacheDir } from '../../local/paths';
import { cloudConfigFiles, moduleCustomData, runCommands, shellQuote, type CloudConfig } from './azure-custom-data';
import { awsCliDirectory, SimulatedHub, type SimulatedVm } from './harness';

jest.setTimeout(600_000);

const REGION = 'us-east-1';
const ZONE = 'nats-5e1f0a2b.rmqbench.internal';
const OVERLAYS = ['/etc', '/opt', '/var/lib'];
const MINIMAL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number; replicas?: { name: string; current: boolean }[] };
}

/** nats-server built with the machine's Go, packed as the pinned release's tarball is laid out; with its SHA-256. */
async function packNatsServerTarball(workDir: string): Promise<{ file: string; sha256: string }> {
  // The local target's build of the pinned version (setup builds it; built here if missing).
  const server = await ensureNatsBinary(cacheDir(), NATS_SERVER_BINARY);
  const { folder, fileName } = natsServerTarball(NATS_SERVER_VERSION_ON_CLOUD, 'amd64');
  mkdirSync(join(workDir, folder));
  copyFileSync(server, join(workDir, folder, 'nats-server'));
  const file = join(workDir, fileName);
  execFileSync('tar', ['-czf', file, '-C', workDir, folder]);
  return { file, sha256: createHash('sha256').update(readFileSync(file)).digest('hex') };
}

describe('AWS NATS server user data on three simulated EC2 instances', () => {
  const hub = new SimulatedHub({
    subnet: 28,
    fakeScript: 'fake-aws.py',
    httpsNames: ['logs', 'cloudformation'].map((service) => `${service}.${REGION}.amazonaws.com`),
    state: {
      region: REGION,
      roleName: 'rmqbench-nats-role',
      autoScalingGroupName: 'none',
      desiredCapacity: 0,
      secrets: {},
    },
  });
  const workDir = mkdtempSync(join(tmpdir(), 'rmqbench-nats-sim-'));
  afterAll(() => {
    hub.cleanup();
    rmSync(workDir, { recursive: true, force: true });
  });

  const identities: NatsServerIdentity[] = [1, 2, 3].map((index) => ({
    index,
    serverName: `nats-${index}`,
    hostName: `nats-${index}.${ZONE}`,
  }));
  const vms: SimulatedVm[] = [];

  function renderUserData(self: NatsServerIdentity): string {
    const userData = UserData.forLinux();
    userData.addOnExitCommands('rmqbench_boot_finished "$exitCode"');
    userData.addCommands(
      ...natsNodeBootCommands({
        self,
        all: identities,
        clusterName: 'rmqbench-nats',
        clientPort: NATS_CLIENT_PORT,
        clusterPort: NATS_CLUSTER_PORT,
        monitoringPort: NATS_MONITORING_PORT,
        syncInterval: 'always',
        tarball: natsServerTarball(NATS_SERVER_VERSION_ON_CLOUD, 'amd64'),
        region: REGION,
        stackName: 'rmqbench-sim-nats',
        instanceLogicalId: `NatsServer${self.index}Instance`,
        bootLogGroupName: 'rmqbench-sim-nats-boot',
        dataVolumeDevice: DATA_VOLUME_DEVICE,
        clusterFormationTimeoutSeconds: 120,
      }),
    );
    return userData.render();
  }

  test('booting at once, the three servers form ONE JetStream cluster and each signals SUCCESS', async () => {
    const tarball = await packNatsServerTarball(workDir);
    await hub.start();
    for (const identity of identities) {
      const instanceId = `i-0${identity.index}a00000000000nats`;
      vms.push(
        hub.createVm(
          instanceId,
          `ip-10-91-28-${10 + identity.index}`,
          {
            '/var/lib/cloud/instance/user-data.txt': { content: renderUserData(identity), mode: 0o700 },
            [INSTALL_OVERRIDE_FILE]: {
              content:
                `rmqbench_fetch_nats_server() { cp '${tarball.file}' "$2"; }\n` +
                `NATS_SERVER_SHA256=${tarball.sha256}\n`,
              mode: 0o644,
            },
          },
          { blockDevice: DATA_VOLUME_DEVICE, state: { instanceId }, overlays: OVERLAYS, dnsNames: [identity.hostName] },
        ),
      );
    }
    const environment = {
      PATH: `${awsCliDirectory()}:${MINIMAL_PATH}`,
      HOME: '/root',
      AWS_CA_BUNDLE: '/etc/ssl/certs/ca-certificates.crt',
      AWS_CONFIG_FILE: '/nonexistent',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    };
    const results = await Promise.all(
      vms.map((vm) => hub.exec(vm, 'bash /var/lib/cloud/instance/user-data.txt', { env: environment })),
    );
    for (const [index, result] of results.entries()) {
      const vm = vms[index]!;
      const failure = result.status === 0 ? '' : `${result.stdout.slice(-3000)}\n${await hub.diagnostics(vm)}`;
      expect({ vm: vm.computerName, status: result.status, failure }).toEqual({
        vm: vm.computerName,
        status: 0,
        failure: '',
      });
    }
    const requests = hub.requestLog();
    for (const vm of vms) {
      expect(requests).toContain(`${vm.ip} cloudformation SignalResource ${vm.name} SUCCESS`);
      const bootLog = (await hub.exec(vm, `cat ${BOOT_LOG_FILE}`)).stdout;
      expect(bootLog).toContain('JetStream cluster formed: meta leader nats-');
      expect(bootLog).not.toContain('differs from the pinned one');
      expect((await hub.exec(vm, 'findmnt -n -o SOURCE,FSTYPE /var/lib/nats')).stdout).toBe(
        `${DATA_VOLUME_DEVICE} xfs\n`,
      );
      expect((await hub.exec(vm, 'ls /var/lib/nats')).stdout).toContain('jetstream');
    }
  });

  test('/jsz on every server: one meta leader, a meta group of 3, the leader sees 2 current peers', async () => {
    const jsz = await Promise.all(
      vms.map(async (vm) => {
        const result = await hub.exec(vm, `curl -fsS http://127.0.0.1:${NATS_MONITORING_PORT}/jsz`);
        return { vm, info: JSON.parse(result.stdout) as Jsz };
      }),
    );
    const leaders = new Set(jsz.map(({ info }) => info.meta_cluster?.leader));
    expect(leaders.size).toBe(1);
    const [leader] = [...leaders];
    expect(['nats-1', 'nats-2', 'nats-3']).toContain(leader);
    for (const { info } of jsz) expect(info.meta_cluster?.cluster_size).toBe(3);
    const onLeader = jsz.find(({ vm }) => vm.name.startsWith(`i-0${leader!.slice(-1)}`))!.info;
    const peers = (onLeader.meta_cluster?.replicas ?? []).map((peer) => `${peer.name}:${peer.current}`).sort();
    expect(peers).toEqual(['nats-1', 'nats-2', 'nats-3'].filter((name) => name !== leader).map((n) => `${n}:true`));
  });

  test('cleanup leaves no server process, namespace or folder behind', () => {
    expect(vms).toHaveLength(3);
    hub.cleanup();
    expect(hub.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
  });
});

describe('Azure NATS server customData (modules/nats-cluster.bicep) on three simulated VMs', () => {
  const SUBNET = 29;
  const hub = new SimulatedHub({
    subnet: SUBNET,
    fakeScript: 'fake-azure.py',
    httpsNames: ['management.azure.com'],
    state: {
      subscriptionId: '00000000-0000-0000-0000-000000000092',
      resourceGroup: 'rmqbench-sim',
      scaleSetName: 'none',
      identityClientId: 'none',
      vaultName: 'none',
      secrets: {},
    },
  });
  const workDir = mkdtempSync(join(tmpdir(), 'rmqbench-nats-azure-sim-'));
  afterAll(() => {
    hub.cleanup();
    rmSync(workDir, { recursive: true, force: true });
  });

  // The module's static IPs: cidrHost(subnetAddressPrefix, firstHostNumber + i) with the default firstHostNumber 99,
  // the subnet's address 100 + i (cidrHost's 0 is the first usable address, .1:
  // https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost).
  const FIRST_HOST_NUMBER = 99;
  const serverHosts = [0, 1, 2].map((i) => `10.91.${SUBNET}.${FIRST_HOST_NUMBER + i + 1}`);
  const vms: SimulatedVm[] = [];

  /** Server i's customData, evaluated from the module as ARM would (the static IPs given, as ARM computes them). */
  const renderCustomData = (i: number): Promise<CloudConfig> =>
    moduleCustomData('nats-cluster.bicep', {
      i: String(i),
      serverHostList: serverHosts.join(','),
      natsServerVersion: NATS_SERVER_VERSION_ON_CLOUD,
      syncInterval: 'always',
      clusterTimeoutSeconds: '120',
    });

  test(
    'booting at once, the three servers form ONE JetStream cluster at their static private IPs, ' +
      'each with its store on the data disk',
    async () => {
      const tarball = await packNatsServerTarball(workDir);
      await hub.start();
      const configs: CloudConfig[] = [];
      for (const i of [0, 1, 2]) {
        const config = await renderCustomData(i);
        configs.push(config);
        const files = cloudConfigFiles(config);
        expect(files['/etc/rmqbench/nats.env']?.content).toContain(
          `NODE_INDEX=${i + 1}\nSERVER_HOSTS=${serverHosts.join(',')}\n`,
        );
        // The pinned sums are the release's: the script must find its tarball's line there.
        expect(files['/etc/rmqbench/nats-server.sha256']?.content).toMatch(
          new RegExp(
            `^[0-9a-f]{64}  nats-server-v${NATS_SERVER_VERSION_ON_CLOUD.replace(/\./g, '\\.')}-linux-amd64`,
            'm',
          ),
        );
        // Downloads only (the script's one seam): the test's tarball of the same version, and its checksum.
        files['/etc/rmqbench/install-override.sh'] = {
          content:
            `install_nats_server() { cp ${shellQuote(tarball.file)} "$2"; }\n` +
            `NATS_SERVER_SHA256=${tarball.sha256}\n`,
          mode: 0o644,
        };
        vms.push(
          hub.createVm(`rmqbench-nats-${i + 1}`, `rmqbench-nats-${i + 1}`, files, {
            hostNumber: FIRST_HOST_NUMBER + i + 1,
            // The data disk at LUN 0, by the name Azure's udev rules give it.
            blockDevice: '/dev/disk/azure/scsi1/lun0',
            overlays: OVERLAYS,
          }),
        );
      }
      expect(vms.map((vm) => vm.ip)).toEqual(serverHosts);
      const results = await runCommands(hub, vms, configs);
      for (const [index, result] of results.entries()) {
        const vm = vms[index]!;
        const failure =
          result.status === 0
            ? ''
            : `${result.stdout.slice(-3000)}\n${result.stderr.slice(-3000)}\n${await hub.diagnostics(vm)}`;
        expect({ vm: vm.computerName, status: result.status, failure }).toEqual({
          vm: vm.computerName,
          status: 0,
          failure: '',
        });
        expect(result.stderr).toContain('rmqbench-nats-setup: JetStream cluster formed: meta leader nats-');
        expect((await hub.exec(vm, 'findmnt -n -o SOURCE,FSTYPE /var/lib/nats')).stdout).toBe(
          '/dev/disk/azure/scsi1/lun0 xfs\n',
        );
        expect((await hub.exec(vm, 'cat /etc/nats/nats-server.conf')).stdout).toContain('sync_interval: "always"');
      }
    },
  );

  test('from inside a VM, every server reports one meta leader of a meta group of 3', async () => {
    const views = await Promise.all(
      vms.map(async (vm) => {
        const other = serverHosts[(vms.indexOf(vm) + 1) % 3];
        const result = await hub.exec(vm, `curl -fsS http://${other}:${NATS_MONITORING_PORT}/jsz`);
        return JSON.parse(result.stdout) as Jsz;
      }),
    );
    const leaders = new Set(views.map((view) => view.meta_cluster?.leader));
    expect(leaders.size).toBe(1);
    expect(['nats-1', 'nats-2', 'nats-3']).toContain([...leaders][0]);
    for (const view of views) expect(view.meta_cluster?.cluster_size).toBe(3);
  });

  test('cleanup leaves no server process, namespace or folder behind', () => {
    expect(vms).toHaveLength(3);
    hub.cleanup();
    expect(hub.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
  });
});
