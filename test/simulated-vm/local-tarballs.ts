import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { natsServerTarball } from '../../cdk/nats-artifacts';
import { NATS_SERVER_VERSION } from '../../core/nats/nats-versions';
import { cachedNatsBinary, goCommand, NATS_SERVER_BINARY } from '../../local/nats-binaries';
import { cacheDir } from '../../local/paths';

/**
 * Stand-ins for the release tarballs the cloud boots download (the Go toolchain from dl.google.com, nats-server from
 * its GitHub release), packed from what this machine has in the same layout, with their SHA-256: a boot's test seam
 * (/etc/rmqbench/install-override.sh) hands them over with their sums, and the boot's own checksum check and unpacking
 * run on them as written.
 */
export interface LocalTarball {
  readonly tarball: string;
  readonly sha256: string;
}

const sha256Of = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** This machine's Go (its GOROOT) as the official tarballs hold it: one `go/` folder. */
export function goTarballOfThisMachine(work: string, go: string = goCommand()): LocalTarball {
  const tarball = join(work, 'go.tar.gz');
  if (!existsSync(tarball)) {
    const root = execFileSync(go, ['env', 'GOROOT'], { encoding: 'utf8' }).trim();
    execFileSync('tar', [
      ...['-C', dirname(root), '--transform', `s,^${basename(root)},go,`, '-I', 'gzip -1'],
      ...['-cf', tarball, basename(root)],
    ]);
  }
  return { tarball, sha256: sha256Of(tarball) };
}

/** The nats-server this machine built (rmqbench doctor --fix) as its release tarball holds it. */
export function natsServerTarballOfThisMachine(work: string): LocalTarball {
  const release = natsServerTarball(NATS_SERVER_VERSION, 'amd64');
  const tarball = join(work, release.fileName);
  if (!existsSync(tarball)) {
    const binary = cachedNatsBinary(cacheDir(), NATS_SERVER_BINARY);
    if (!binary) throw new Error('nats-server is not in the rmqbench cache: run rmqbench doctor --fix');
    mkdirSync(join(work, release.folder), { recursive: true });
    copyFileSync(binary, join(work, release.folder, 'nats-server'));
    execFileSync('tar', ['-C', work, '-czf', tarball, release.folder]);
  }
  return { tarball, sha256: sha256Of(tarball) };
}

/** The seam lines that hand a boot these tarballs (each boot defines the functions and sums it reads). */
export function installSeamLines(go?: LocalTarball, natsServer?: LocalTarball): string[] {
  return [
    ...(go ? [`rmqbench_fetch_go() { cp '${go.tarball}' "$2"; }`, `GO_SHA256=${go.sha256}`] : []),
    ...(natsServer
      ? [`rmqbench_fetch_nats_server() { cp '${natsServer.tarball}' "$2"; }`, `NATS_SERVER_SHA256=${natsServer.sha256}`]
      : []),
  ];
}
