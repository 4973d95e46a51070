import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { NATS_SERVER_SHA256, NATS_SERVER_VERSIONS_ON_CLOUD } from '../../cdk/nats-artifacts';
import { natsServerConf } from '../../cdk/user-data/nats-node';
import { BICEP_DIR, evaluateString, parseBicepFile, propertyValues } from './bicep-tree';

/**
 * The Azure NATS module (bicep/modules/nats-cluster.bicep) and its boot files: the tarball pins are the AWS servers'
 * (cdk/nats-artifacts.ts), the setup script renders the same nats-server.conf as the AWS servers (IPs for names), the
 * customData evaluates to a cloud-config with every placeholder filled, and main.bicep selects the module by broker.
 */
const CLOUD_INIT = join(BICEP_DIR, 'cloud-init');
const SETUP = join(CLOUD_INIT, 'rmqbench-nats-setup.sh');
const HOSTS = ['10.20.1.100', '10.20.1.101', '10.20.1.102'];

function printConf(env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rmqbench-nats-setup-'));
  try {
    const envFile = join(dir, 'nats.env');
    writeFileSync(
      envFile,
      Object.entries(env)
        .map(([key, value]) => `${key}=${value}\n`)
        .join(''),
    );
    const run = spawnSync('bash', [SETUP, '--print-conf'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RMQBENCH_NATS_ENV: envFile },
      timeout: 30_000,
    });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('Azure NATS cluster module', () => {
  test('the pin file holds the tarball checksums of cdk/nats-artifacts.ts for the allowed versions', async () => {
    const module = await parseBicepFile(join(BICEP_DIR, 'modules/nats-cluster.bicep'));
    const allowed = module.params.get('natsServerVersion')?.decorators.find((d) => d.startsWith('allowed('));
    expect([...(allowed ?? '').matchAll(/'([^']+)'/g)].map((match) => match[1])).toEqual([
      ...NATS_SERVER_VERSIONS_ON_CLOUD,
    ]);
    for (const version of NATS_SERVER_VERSIONS_ON_CLOUD) {
      expect(readFileSync(join(CLOUD_INIT, `nats-server-${version}.sha256`), 'utf8')).toBe(
        (['amd64', 'arm64'] as const)
          .map((arch) => `${NATS_SERVER_SHA256[version]![arch]}  nats-server-v${version}-linux-${arch}.tar.gz\n`)
          .join(''),
      );
    }
  });

  test('the setup script renders the AWS servers nats-server.conf, with static IPs for names', () => {
    const run = printConf({
      NODE_INDEX: '2',
      SERVER_HOSTS: HOSTS.join(','),
      CLIENT_PORT: '4222',
      CLUSTER_PORT: '6222',
      MONITORING_PORT: '8222',
      NATS_VERSION: '2.15.0',
      SYNC_INTERVAL: 'always',
      CLUSTER_TIMEOUT_SECONDS: '600',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const all = HOSTS.map((host, i) => ({ index: i + 1, serverName: `nats-${i + 1}`, hostName: host }));
    const aws = natsServerConf({
      self: all[1]!,
      all,
      clusterName: 'rmqbench-nats',
      clientPort: 4222,
      clusterPort: 6222,
      monitoringPort: 8222,
      syncInterval: 'always',
    });
    // The first line names the cloud; everything after it is the same configuration.
    expect(run.stdout.split('\n').slice(1)).toEqual(aws.split('\n').slice(1));
  });

  test('customData: a cloud-config whose env names this server, every server and syncInterval', async () => {
    const module = await parseBicepFile(join(BICEP_DIR, 'modules/nats-cluster.bicep'));
    const vm = module.resources.find((resource) => resource.resourceType === 'Microsoft.Compute/virtualMachines');
    const [customData] = propertyValues(vm?.body as never, 'customData');
    const text = evaluateString(module, customData as never, {
      i: '0',
      namePrefix: 'rmqbench',
      serverHostList: HOSTS.join(','),
      natsServerVersion: '2.15.0',
      syncInterval: '10s',
      clusterTimeoutSeconds: '600',
    });
    const config = parseYaml(Buffer.from(text, 'base64').toString('utf8')) as {
      write_files: { path: string; content: string }[];
      runcmd: string[][];
    };
    const files = Object.fromEntries(
      config.write_files.map((entry) => [entry.path, Buffer.from(entry.content, 'base64').toString('utf8')]),
    );
    expect(files['/etc/rmqbench/nats.env']).toBe(
      `NODE_INDEX=1\nSERVER_HOSTS=${HOSTS.join(',')}\nCLIENT_PORT=4222\nCLUSTER_PORT=6222\nMONITORING_PORT=8222\n` +
        'NATS_VERSION=2.15.0\nSYNC_INTERVAL=10s\nCLUSTER_TIMEOUT_SECONDS=600\n',
    );
    expect(files['/usr/local/sbin/rmqbench-nats-setup']).toBe(readFileSync(SETUP, 'utf8'));
    expect(files['/etc/rmqbench/nats-server.sha256']).toBe(
      readFileSync(join(CLOUD_INIT, 'nats-server-2.15.0.sha256'), 'utf8'),
    );
    expect(config.runcmd).toEqual([['/usr/local/sbin/rmqbench-nats-setup']]);
  });

  test('main.bicep deploys it only with broker nats, passing natsSyncInterval (typed)', async () => {
    const main = await parseBicepFile(join(BICEP_DIR, 'main.bicep'));
    const module = main.modules.find((candidate) => candidate.path === 'modules/nats-cluster.bicep');
    expect(module?.node.text).toMatch(/= if \(broker == 'nats'\) \{/);
    const body = module?.body.text ?? '';
    expect(body).toMatch(/syncInterval: natsSyncInterval/);
    expect(body).toMatch(/serverCount: instanceCount/);
    expect(main.params.get('natsSyncInterval')?.type).toBe('natsSyncIntervalType');
    expect(main.params.get('broker')?.decorators.join(' ')).toContain("'nats'");
  });

  test('the NSG opens 4222 to the load generator as 5672, and 6222/8222 only inside the cluster subnet', async () => {
    const network = await parseBicepFile(join(BICEP_DIR, 'modules/network.bicep'));
    const ports = (name: string) =>
      [...(network.variables.get(name)?.text ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]);
    expect(ports('clientPorts')).toEqual(expect.arrayContaining(['5672', '4222']));
    expect(ports('interNodePorts')).toEqual(expect.arrayContaining(['6222', '8222']));
    expect(ports('clientPorts')).not.toContain('6222');
    expect(ports('clientPorts')).not.toContain('8222');
  });
});
