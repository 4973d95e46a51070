/**
 * bicep/cloud-init/rmqbench-jars.sh, the jar download and check both Azure load-generator setup scripts source
 * (rmqbench-loadgen-setup.sh for PerfTest, rmqbench-kafka-tools-setup.sh for Kafka's tools), sourced by bash as they do
 * and run with the real curl and sha256sum against a file:// Maven repository the test writes. The Kafka tools script
 * runs through it end to end in kafka-tools-setup.test.ts; the PerfTest script itself needs apt-get and root.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const LIB = join(__dirname, '../../bicep/cloud-init/rmqbench-jars.sh');
const JARS = { 'com/example/a/1.0/a-1.0.jar': 'jar a', 'org/example/b/2.0/b-2.0.jar': 'jar b' };
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe("rmqbench-jars.sh (the load generator setup scripts' shared jar download and check)", () => {
  let work: string;
  let repository: string;
  let manifest: string;
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'rmqbench-jars-'));
    repository = join(work, 'maven2');
    for (const [path, content] of Object.entries(JARS)) {
      mkdirSync(join(repository, dirname(path)), { recursive: true });
      writeFileSync(join(repository, path), content);
    }
    // The manifests' format (cloud-init/perf-test-<version>.sha256), with a blank line, which the download skips.
    manifest = join(work, 'manifest.sha256');
    writeFileSync(
      manifest,
      `${Object.entries(JARS)
        .map(([path, content]) => `${sha256(content)}  ${path}`)
        .join('\n')}\n\n`,
    );
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  /**
   * Sources the library under the scripts' `set -euo pipefail` and runs `commands` (stdin not a socket: bash reads no
   * rc file).
   */
  const run = (commands: string) =>
    spawnSync('bash', ['--norc', '-c', `set -euo pipefail; . "$LIB"; ${commands}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        LIB,
        MANIFEST: manifest,
        REPO: `file://${repository}`,
        HOME_DIR: join(work, 'home'),
      },
      timeout: 100_000,
    });

  test(
    'downloads every listed jar into HOME/lib, records ' + 'its pinned sum relative to HOME, and the check passes',
    () => {
      const result = run(
        'rmqbench_download_jars "$MANIFEST" "$REPO" "$HOME_DIR"; rmqbench_check_jars "$HOME_DIR"; echo checked',
      );
      expect({ status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({
        status: 0,
        stdout: 'checked\n',
        stderr: '',
      });
      expect(readdirSync(join(work, 'home', 'lib')).sort()).toEqual(['a-1.0.jar', 'b-2.0.jar']);
      expect(readFileSync(join(work, 'home', 'SHA256SUMS'), 'utf8')).toBe(
        `${sha256('jar a')}  lib/a-1.0.jar\n${sha256('jar b')}  lib/b-2.0.jar\n`,
      );
    },
  );

  test('a jar that does not match its pinned sum fails the check, which names it', () => {
    writeFileSync(join(repository, 'org/example/b/2.0/b-2.0.jar'), 'tampered');
    const result = run(
      'rmqbench_download_jars "$MANIFEST" "$REPO" "$HOME_DIR"; if ' +
        'rmqbench_check_jars "$HOME_DIR"; then echo passed; else echo "failed $?"; fi',
    );
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('lib/b-2.0.jar: FAILED\nfailed 1\n');
    expect(result.stderr).toContain('1 computed checksum did NOT match');
  });

  // curl retries the missing file 5 times (--retry-all-errors, backing off 1 + 2 + 4 + 8 + 16 s) before it gives up.
  test(
    'a jar that cannot be downloaded stops the download there, ' +
      'even called from a condition where set -e does not apply',
    () => {
      rmSync(join(repository, 'com/example/a/1.0/a-1.0.jar'));
      const result = run(
        'if rmqbench_download_jars "$MANIFEST" "$REPO" "$HOME_DIR"; then echo downloaded; else echo "stopped $?"; fi',
      );
      expect(result.stdout).toMatch(/^stopped [1-9]\d*\n$/);
      expect(result.stderr).toContain('curl');
      // Nothing after the failed jar was fetched or recorded.
      expect(readdirSync(join(work, 'home', 'lib'))).toEqual([]);
      expect(readFileSync(join(work, 'home', 'SHA256SUMS'), 'utf8')).toBe('');
    },
    120_000,
  );

  test('sourcing it only defines functions', () => {
    const result = run('declare -F | grep -o "rmqbench_[a-z_]*"; ls "$HOME_DIR" 2>/dev/null || echo "no home written"');
    expect(result.stdout).toBe('rmqbench_check_jars\nrmqbench_download_jars\nno home written\n');
  });
});
