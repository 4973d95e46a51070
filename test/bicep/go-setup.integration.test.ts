import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GO_VERSION_ON_CLOUD } from '../../cdk/go-toolchain';
import { goTarballOfThisMachine, installSeamLines } from '../simulated-vm/local-tarballs';

/**
 * bicep/cloud-init/rmqbench-go-setup.sh, the Azure NATS load generator's Go install, run for real by bash in a mount
 * namespace whose /opt is private (tmpfs) and /etc an overlay, so nothing on this machine changes: the pinned sums
 * file as cloud-init writes it (bicep/cloud-init/go-1.26.7.sha256), and the tarball through the script's one seam
 * (/etc/rmqbench/install-override.sh: this machine's Go packed as the release is, with its SHA-256); the checksum
 * check, the unpacking, `go version` and the READY file run as written.
 */
jest.setTimeout(120_000);

const SCRIPT = join(__dirname, '../../bicep/cloud-init/rmqbench-go-setup.sh');
const SUMS = join(__dirname, '../../bicep/cloud-init/go-1.26.7.sha256');

describe("rmqbench-go-setup (the Azure NATS load generator's Go toolchain)", () => {
  const work = mkdtempSync(join(tmpdir(), 'rmqbench-go-setup-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** Runs the setup with `argument` after writing `seam` as the install override; prints what it left in /opt. */
  const setup = (argument: string, seam: string[]) => {
    writeFileSync(join(work, 'seam.sh'), `${seam.join('\n')}\n`);
    const script = [
      'set -e',
      'mount -t tmpfs tmpfs /opt',
      `mkdir -p ${work}/etc-upper ${work}/etc-work`,
      `mount -t overlay overlay -o lowerdir=/etc,upperdir=${work}/etc-upper,workdir=${work}/etc-work /etc`,
      'mkdir -p /etc/rmqbench',
      `cp ${SUMS} /etc/rmqbench/go.sha256`,
      `cp ${work}/seam.sh /etc/rmqbench/install-override.sh`,
      `set +e; bash ${SCRIPT} ${argument}; status=$?; set -e`,
      'echo "status=$status"',
      'ls /opt/go/bin 2>/dev/null | tr "\\n" " "; echo',
      'cat /opt/nats-load/READY 2>/dev/null || echo no-ready',
      'ls /opt/nats-load 2>/dev/null | tr "\\n" " "; echo',
    ].join('\n');
    return spawnSync('unshare', ['--mount', '--propagation', 'private', 'bash', '-c', script], {
      encoding: 'utf8',
      timeout: 90_000,
    });
  };

  test("'none' (a load generator of another broker) installs nothing", () => {
    const run = setup('none', []);
    expect(run.stdout.split('\n').slice(0, 3)).toEqual(['status=0', '', 'no-ready']);
  });

  test('the pinned version installs the tarball through its checksum check and writes READY last', () => {
    const local = goTarballOfThisMachine(work);
    const run = setup(GO_VERSION_ON_CLOUD, installSeamLines(local));
    const [status, bins, ready, left] = run.stdout.split('\n').filter((line) => !line.startsWith('go version'));
    expect({ status, stderr: run.stderr }).toEqual({ status: 'status=0', stderr: '' });
    expect(bins).toContain('go');
    expect(ready).toBe(GO_VERSION_ON_CLOUD);
    // The tarball is removed once unpacked.
    expect(left!.trim()).toBe('READY');
    expect(run.stdout).toMatch(/^go version go\d+\.\d+(\.\d+)? linux\/amd64$/m);
  });

  test('a tarball that differs from its pin is refused and removed, and no READY is written', () => {
    const local = goTarballOfThisMachine(work);
    const wrong = { ...local, sha256: '0'.repeat(64) };
    const run = setup(GO_VERSION_ON_CLOUD, installSeamLines(wrong));
    // sha256sum names the file it checked; then nothing is left, not even the tarball.
    expect(run.stdout.split('\n').slice(0, 5)).toEqual([
      '/opt/nats-load/go.tar.gz: FAILED',
      'status=1',
      '',
      'no-ready',
      '',
    ]);
    expect(run.stderr).toMatch(/rmqbench-go-setup: the Go tarball differs from the pinned one \(0{64}/);
  });

  test('a version without a pin is refused by name before anything is downloaded', () => {
    const run = setup('1.20.0', ['rmqbench_fetch_go() { echo fetched >&2; }']);
    expect(run.stdout.split('\n')[0]).toBe('status=1');
    expect(run.stderr).toBe('rmqbench-go-setup: /etc/rmqbench/go.sha256 does not pin go1.20.0.linux-amd64.tar.gz\n');
  });
});
