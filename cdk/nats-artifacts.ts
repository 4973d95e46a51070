import { NATS_SERVER_VERSION } from '../core/nats/nats-versions';

/**
 * The nats-server release NatsCluster (and bicep/modules/nats-cluster.bicep) installs: the official release tarball
 * from GitHub, checked against its pinned SHA-256 before anything is unpacked.
 *
 * The release's archives are named `nats-server-v<version>-linux-<arch>.tar.gz` and hold one folder of that name with
 * `nats-server`, README.md and LICENSE; the release publishes their SHA-256 sums in an asset named SHA256SUMS
 * (nats-io/nats-server .goreleaser.yml: archives name_template "{{.ProjectName}}-{{.Tag}}-{{.Os}}-{{.Arch}}...",
 * wrap_in_directory: true, checksum name_template "SHA256SUMS").
 *
 * Version: 2.15.0 (core/nats/nats-versions.ts, which the local target builds from the Go module proxy too), not the
 * newer 2.15.2: no stored copy of v2.15.2's SHA256SUMS (or of anything quoting it) could be found, and nothing can be
 * downloaded here to compute one, while the 2.15.0 sums are published by the NATS maintainers themselves:
 * nats-io/nats-docker 2.15.x/alpine3.22/Dockerfile at commit 629985321b0b00d2c39c853782c776f91f3a3189 (PR #327
 * "Release v2.15.0"), which checks the same GitHub release tarballs with `sha256sum -c` (x86_64 → amd64, aarch64 →
 * arm64). To move to 2.15.2, add its two lines from the release's SHA256SUMS here and to
 * bicep/cloud-init/nats-server-<version>.sha256, and change core/nats/nats-versions.ts.
 */
export const NATS_SERVER_VERSION_ON_CLOUD = NATS_SERVER_VERSION;

/** The CPU architectures of the release tarballs the clouds use, as the release names them. */
export type NatsServerArch = 'amd64' | 'arm64';

export interface NatsServerTarball {
  readonly version: string;
  readonly arch: NatsServerArch;
  /** The asset's name, `nats-server-v<version>-linux-<arch>.tar.gz`. */
  readonly fileName: string;
  /** The folder the tarball unpacks to. */
  readonly folder: string;
  readonly url: string;
  readonly sha256: string;
}

/** SHA-256 of each pinned tarball, by version and architecture (sources above). */
export const NATS_SERVER_SHA256: Readonly<Record<string, Readonly<Record<NatsServerArch, string>>>> = {
  '2.15.0': {
    amd64: '5d2c51caca950333aba84911df7d377f826f3a59ec36061c6539105084f65c92',
    arm64: 'cdc208f5a3f42963a52b6ab06ef65626bb870315dc936e26ba571780c6351112',
  },
};

/** The versions whose tarballs are pinned. */
export const NATS_SERVER_VERSIONS_ON_CLOUD: readonly string[] = Object.keys(NATS_SERVER_SHA256);

/**
 * The pinned tarball of `version` for `arch`; the download URL is GitHub's release asset path
 * (https://github.com/nats-io/nats-server/releases/download/v<version>/<asset>, the URL nats-docker downloads).
 */
export function natsServerTarball(version: string, arch: NatsServerArch): NatsServerTarball {
  const sums = NATS_SERVER_SHA256[version];
  if (!sums) {
    throw new Error(
      `nats-server ${version} is not pinned: allowed versions are ` +
        `${NATS_SERVER_VERSIONS_ON_CLOUD.map((v) => `'${v}'`).join(', ')} (cdk/nats-artifacts.ts)`,
    );
  }
  const folder = `nats-server-v${version}-linux-${arch}`;
  const fileName = `${folder}.tar.gz`;
  return {
    version,
    arch,
    fileName,
    folder,
    url: `https://github.com/nats-io/nats-server/releases/download/v${version}/${fileName}`,
    sha256: sums[arch],
  };
}
