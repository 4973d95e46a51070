/**
 * The Go toolchain a load generator installs to build rmqbench's NATS load client (local/nats-load/) from its source:
 * the official linux tarball from dl.google.com, checked against its pinned SHA-256 before anything is unpacked.
 *
 * Version and sums: docker-library/golang versions.json at commit 7c8c182bfc19ee3169d0596ae63917d2c7166f94
 * (2026-08-19), key "1.26": version 1.26.7, arches amd64 and arm64v8, each with its `url`
 * (https://dl.google.com/go/go1.26.7.linux-<arch>.tar.gz) and `sha256`, the sums the official Docker images check the
 * same tarballs against. 1.26.x because the load client's go.mod says `go 1.26.0` (core/nats/nats-versions.ts
 * NATS_MIN_GO_VERSION); the build runs with GOTOOLCHAIN=local, so no other toolchain is ever fetched.
 */
export const GO_VERSION_ON_CLOUD = '1.26.7';

export type GoArch = 'amd64' | 'arm64';

export interface GoTarball {
  readonly version: string;
  readonly arch: GoArch;
  readonly url: string;
  readonly sha256: string;
}

const GO_SHA256: Readonly<Record<string, Readonly<Record<GoArch, string>>>> = {
  '1.26.7': {
    amd64: 'ffb5f8de10c62550dfddab66b36b57030721e0a44a3218e9e1181d7b59f121ca',
    arm64: '5a4ec883379d51ee9ce1040d5e87f8d35e20387574dd8c947feb01eabc3c1b37',
  },
};

/** The pinned Go tarball of `version` for `arch`; an unpinned version is refused by name. */
export function goTarball(arch: GoArch, version: string = GO_VERSION_ON_CLOUD): GoTarball {
  const sums = GO_SHA256[version];
  if (!sums)
    throw new Error(
      `Go ${version} is not pinned: allowed versions are ${Object.keys(GO_SHA256).join(', ')} (cdk/go-toolchain.ts)`,
    );
  return { version, arch, url: `https://dl.google.com/go/go${version}.linux-${arch}.tar.gz`, sha256: sums[arch] };
}
