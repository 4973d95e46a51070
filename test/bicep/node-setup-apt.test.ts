import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWithStubs } from '../stub-commands';
import { BICEP_DIR } from './bicep-tree';

const SCRIPT = join(BICEP_DIR, 'cloud-init/rmqbench-node-setup.sh');

/** Sources the node script (which then only defines its functions) and runs one of them. */
function runFunction(call: string): string {
  return execFileSync('bash', ['-c', `. "${SCRIPT}"; ${call}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * A local apt repository shaped like Team RabbitMQ's: several Erlang series and rabbitmq-server whose dependency has
 * only
 * a lower bound (so apt alone would pick the newest Erlang). apt-get resolves an install with the script's preference
 * files.
 */
function simulatedInstall(root: string, rabbitmqVersion: string): string {
  const repo = join(root, 'repo');
  mkdirSync(repo, { recursive: true });
  for (const dir of [
    'etc/apt/sources.list.d',
    'etc/apt/preferences.d',
    'var/lib/apt/lists/partial',
    'var/cache/apt/archives/partial',
    'var/lib/dpkg',
  ]) {
    mkdirSync(join(root, dir), { recursive: true });
  }
  writeFileSync(join(root, 'var/lib/dpkg/status'), '');
  const stanza = (name: string, version: string, depends?: string): string =>
    `Package: ${name}\nVersion: ${version}\nArchitecture: amd64\nMaintainer: test <test@example.invalid>\n` +
    `Filename: pool/${name}.deb\nSize: 1\nDescription: test\n${depends ? `Depends: ${depends}\n` : ''}\n`;
  writeFileSync(
    join(repo, 'Packages'),
    ['1:25.3.2.21-1', '1:26.2.5.13-1', '1:27.3.4.2-1', '1:28.0.2-1']
      .map((version) => stanza('erlang-base', version))
      .join('') +
      stanza('rabbitmq-server', '3.13.7-1', 'erlang-base (>= 1:26.0)') +
      stanza('rabbitmq-server', '4.1.4-1', 'erlang-base (>= 1:26.2)'),
  );
  writeFileSync(join(root, 'etc/apt/sources.list.d/test.list'), `deb [trusted=yes] file:${repo} ./\n`);
  const options = [
    '-o',
    `Dir=${root}`,
    '-o',
    `Dir::State::status=${root}/var/lib/dpkg/status`,
    '-o',
    'Debug::NoLocking=1',
    '-o',
    'APT::Architecture=amd64',
  ];
  execFileSync('apt-get', [...options, '-qq', 'update'], { stdio: 'ignore' });
  return execFileSync('apt-get', [...options, '-s', 'install', `rabbitmq-server=${rabbitmqVersion}-1`], {
    encoding: 'utf8',
  });
}

describe("node setup: Erlang pinned per RabbitMQ release (apt preferences as in RabbitMQ's Debian guide)", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'rmqbench-apt-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  test.each([
    ['3.13.7', '1:26.2.5.13-1'],
    ['4.1.4', '1:27.3.4.2-1'],
  ])(
    'RabbitMQ %s: every erlang* package and rabbitmq-server are pinned with priority 1001 (Erlang %s)',
    (rabbitmq, erlang) => {
      runFunction(`write_apt_pins "${root}" ${rabbitmq}`);
      expect(readFileSync(join(root, 'etc/apt/preferences.d/erlang'), 'utf8')).toBe(
        `Package: erlang*\nPin: version ${erlang}\nPin-Priority: 1001\n`,
      );
      expect(readFileSync(join(root, 'etc/apt/preferences.d/rabbitmq'), 'utf8')).toBe(
        `Package: rabbitmq-server\nPin: version ${rabbitmq}-1\nPin-Priority: 1001\n`,
      );
    },
  );

  test.each([
    ['3.13.7', 'erlang-base (1:26.2.5.13-1'],
    ['4.1.4', 'erlang-base (1:27.3.4.2-1'],
  ])(
    'apt resolves RabbitMQ %s to the pinned Erlang although a newer one is in the repository',
    (rabbitmq, expected) => {
      runFunction(`write_apt_pins "${root}" ${rabbitmq}`);
      const plan = simulatedInstall(root, rabbitmq);
      expect(plan).toContain(`Inst ${expected}`);
      expect(plan).toContain(`Inst rabbitmq-server (${rabbitmq}-1`);
    },
  );

  test('without the pin apt would take the newest Erlang (the defect the pin fixes)', () => {
    expect(simulatedInstall(root, '3.13.7')).toContain('Inst erlang-base (1:28.0.2-1');
  });

  test('a release without a known Erlang is refused by name', () => {
    expect(() => runFunction(`write_apt_pins "${root}" 3.12.14`)).toThrow(
      /RabbitMQ 3.12.14 has no pinned Erlang release here \(expected 3.13.x, 4.0.x or 4.1.x\)/,
    );
  });

  test("both mirrors of both repositories for the image's code name, and apt retries downloads", () => {
    runFunction(`write_apt_sources "${root}" noble`);
    const sources = readFileSync(join(root, 'etc/apt/sources.list.d/rabbitmq.list'), 'utf8').trim().split('\n');
    const repo = (host: string, name: string): string =>
      'deb [arch=amd64 signed-by=/usr/share/keyrings/com.rabbitmq.team.gpg] ' +
      `https://${host}/${name}/ubuntu/noble noble main`;
    expect(sources).toEqual([
      repo('deb1.rabbitmq.com', 'rabbitmq-erlang'),
      repo('deb2.rabbitmq.com', 'rabbitmq-erlang'),
      repo('deb1.rabbitmq.com', 'rabbitmq-server'),
      repo('deb2.rabbitmq.com', 'rabbitmq-server'),
    ]);
    expect(readFileSync(join(root, 'etc/apt/apt.conf.d/80rmqbench-retries'), 'utf8')).toBe('Acquire::Retries "5";\n');
    // The VM image is Ubuntu 24.04 (noble): the code name the script reads from /etc/os-release there.
    expect(readFileSync(join(BICEP_DIR, 'modules/cluster.bicep'), 'utf8')).toContain("offer: 'ubuntu-24_04-lts'");
  });
});

describe('node setup: nftables for a partition fault', () => {
  test(
    'installed with apt-get when nft is missing, not when ' +
      'present; a failed install is logged and the boot goes on',
    () => {
      const boot = `. "${SCRIPT}"; install_nftables; echo continued`;
      expect(runWithStubs(boot, { 'apt-get': 0 })).toMatchObject({
        status: 0,
        stdout: 'continued\n',
        calls: ['apt-get install -y -q nftables DEBIAN_FRONTEND=noninteractive'],
      });
      expect(runWithStubs(boot, { nft: 0, 'apt-get': 0 })).toMatchObject({
        status: 0,
        stdout: 'continued\n',
        calls: [],
      });
      const failed = runWithStubs(boot, { 'apt-get': 100 });
      expect({ status: failed.status, stdout: failed.stdout }).toEqual({ status: 0, stdout: 'continued\n' });
      expect(failed.stderr).toContain('rmqbench-node-setup: nftables not installed; a partition fault installs it');
    },
  );
});
