#!/usr/bin/env bash
# Installs the Go toolchain on the rmqbench Azure load generator of a NATS cluster, as the AWS load generator's boot
# does (cdk/user-data/load-generator.ts natsToolsBootCommands): the official tarball from dl.google.com, checked against
# its pinned SHA-256 (/etc/rmqbench/go.sha256, lines "<sha256>  go<version>.linux-<arch>.tar.gz", the pins of
# cdk/go-toolchain.ts) before it is unpacked into /opt/go, then the READY file the controller's NATS scripts
# (lambdas/shared/nats-load-generator.ts) wait for before they build the load client from the source they carry.
# Usage: rmqbench-go-setup <go-version|none>   (none: a load generator of another broker installs nothing)
# Test seam (absent on Azure): /etc/rmqbench/install-override.sh may redefine rmqbench_fetch_go (<url> <file>) and
# GO_SHA256, for a tarball of its own; the checksum check runs either way.
set -euo pipefail
version="${1:?go version or none}"
[ "$version" = none ] && exit 0
case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) echo "rmqbench-go-setup: no pinned Go tarball for $(uname -m)" >&2; exit 1 ;;
esac
file="go${version}.linux-${arch}.tar.gz"
GO_SHA256=$(awk -v file="$file" '$2 == file { print $1 }' /etc/rmqbench/go.sha256)
[ -n "$GO_SHA256" ] || { echo "rmqbench-go-setup: /etc/rmqbench/go.sha256 does not pin $file" >&2; exit 1; }
rmqbench_fetch_go() { curl -fsSL --retry 5 --retry-connrefused -o "$2" "$1"; }
if [ -f /etc/rmqbench/install-override.sh ]; then . /etc/rmqbench/install-override.sh; fi
install -d /opt/nats-load /opt/go
rm -f /opt/nats-load/READY
rmqbench_fetch_go "https://dl.google.com/go/$file" /opt/nats-load/go.tar.gz
if ! echo "$GO_SHA256  /opt/nats-load/go.tar.gz" | sha256sum -c --quiet -; then
  rm -f /opt/nats-load/go.tar.gz
  echo "rmqbench-go-setup: the Go tarball differs from the pinned one ($GO_SHA256, cdk/go-toolchain.ts)" >&2
  exit 1
fi
tar -xzf /opt/nats-load/go.tar.gz -C /opt/go --strip-components=1 --no-same-owner
rm -f /opt/nats-load/go.tar.gz
/opt/go/bin/go version
echo "$version" > /opt/nats-load/READY
