#!/usr/bin/env bash
# Installs and starts one nats-server of the rmqbench Azure NATS JetStream cluster, then waits until JetStream is
# enabled and the meta group has a leader and every server.
# Settings come from /etc/rmqbench/nats.env (RMQBENCH_NATS_ENV overrides the path), written by
# modules/nats-cluster.bicep: NODE_INDEX, SERVER_HOSTS (the servers' static private IPs, in index order), CLIENT_PORT,
# CLUSTER_PORT, MONITORING_PORT, NATS_VERSION, SYNC_INTERVAL, CLUSTER_TIMEOUT_SECONDS. No secret: the servers run
# without authentication inside the VNet, as the AWS ones (cdk/user-data/nats-node.ts). The release tarball comes from
# GitHub and must match its line in /etc/rmqbench/nats-server.sha256 (the pins of cdk/nats-artifacts.ts), or the setup
# fails before anything is unpacked.
set -euo pipefail
# shellcheck disable=SC1090
. "${RMQBENCH_NATS_ENV:-/etc/rmqbench/nats.env}"
home=/opt/nats
data_mount=/var/lib/nats
INSTALL_OVERRIDE_FILE=/etc/rmqbench/install-override.sh
folder="nats-server-v${NATS_VERSION}-linux-amd64"
tarball="$folder.tar.gz"

read -r -a hosts <<<"$(tr ',' ' ' <<<"$SERVER_HOSTS")"
count=${#hosts[@]}

# The same keys as the AWS servers (cdk/user-data/nats-node.ts natsServerConf, whose comment cites nats-server's option
# parser), with private IPs for names.
nats_conf() {
  local host
  cat <<CONF
# Written by rmqbench (NATS on Azure): one server of a JetStream cluster, no authentication inside the VNet.
server_name: "nats-$NODE_INDEX"
listen: "0.0.0.0:$CLIENT_PORT"
http_port: $MONITORING_PORT
jetstream {
  store_dir: "$data_mount"
  sync_interval: "$SYNC_INTERVAL"
}
cluster {
  name: "rmqbench-nats"
  listen: "0.0.0.0:$CLUSTER_PORT"
  routes: [
CONF
  for host in "${hosts[@]}"; do echo "    nats-route://$host:$CLUSTER_PORT"; done
  printf '  ]\n}\n'
}

# The data disk at LUN 0, by the name Azure's udev rules give it (either of the two forms).
data_disk() {
  local root="${1:-}" link
  for link in "$root/dev/disk/azure/scsi1/lun0" "$root/dev/disk/azure/data/by-lun/0"; do
    [ -e "$link" ] && { echo "$link"; return 0; }
  done
  return 1
}

case "${1:-}" in
  --print-conf) nats_conf; exit 0 ;;
esac

# The one test seam (absent on Azure): the file may redefine install_nats_server <url> <file> and NATS_SERVER_SHA256.
install_nats_server() { curl -fsSL --retry 5 --retry-connrefused -o "$2" "$1"; }
NATS_SERVER_SHA256="$(awk -v f="$tarball" '$2 == f { print $1 }' /etc/rmqbench/nats-server.sha256)"
[ -n "$NATS_SERVER_SHA256" ] || { echo "rmqbench-nats-setup: $tarball is not pinned in /etc/rmqbench/nats-server.sha256" >&2; exit 1; }
if [ -f "$INSTALL_OVERRIDE_FILE" ]; then . "$INSTALL_OVERRIDE_FILE"; fi
work="$(mktemp -d)"
install_nats_server "https://github.com/nats-io/nats-server/releases/download/v$NATS_VERSION/$tarball" "$work/$tarball"
if ! echo "$NATS_SERVER_SHA256  $work/$tarball" | sha256sum --check --strict --quiet; then
  rm -rf "$work"
  echo "rmqbench-nats-setup: $tarball differs from the pinned one ($NATS_SERVER_SHA256)" >&2
  exit 1
fi
tar -xzf "$work/$tarball" -C "$work"
install -D -m 0755 "$work/$folder/nats-server" "$home/bin/nats-server"
rm -rf "$work"

disk=''
for _ in $(seq 1 60); do disk="$(data_disk)" && break; sleep 2; done
[ -n "$disk" ] || { echo "rmqbench-nats-setup: the data disk (LUN 0) did not appear" >&2; exit 1; }
# mkfs.xfs (xfsprogs) named rather than assumed to be in the image, as the Kafka setup does.
command -v mkfs.xfs >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q xfsprogs; }
blkid "$disk" >/dev/null || mkfs.xfs -q "$disk"
mkdir -p "$data_mount"
grep -q " $data_mount " /etc/fstab || echo "$(readlink -f "$disk") $data_mount xfs defaults,nofail 0 2" >>/etc/fstab
mountpoint -q "$data_mount" || mount "$data_mount"

id nats >/dev/null 2>&1 || useradd --system --home-dir "$data_mount" --shell /usr/sbin/nologin nats
chown -R nats:nats "$data_mount"
mkdir -p /etc/nats
nats_conf >/etc/nats/nats-server.conf

cat >/etc/systemd/system/nats-server.service <<UNIT
[Unit]
Description=NATS Server $NATS_VERSION (JetStream), installed by rmqbench
After=network-online.target local-fs.target
Wants=network-online.target

[Service]
User=nats
Group=nats
ExecStart=$home/bin/nats-server --config /etc/nats/nats-server.conf
Restart=on-failure
RestartSec=5
LimitNOFILE=100000
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now nats-server.service

# Formed when JetStream is enabled here (/healthz?js-enabled-only=true) and /jsz shows a meta leader and every server.
monitor="http://127.0.0.1:$MONITORING_PORT"
deadline=$((SECONDS + CLUSTER_TIMEOUT_SECONDS))
while :; do
  leader='-'; size=0
  if curl -fsS "$monitor/healthz?js-enabled-only=true" >/dev/null 2>&1; then
    read -r leader size < <(curl -fsS "$monitor/jsz" 2>/dev/null | python3 -c 'import json,sys; m=json.load(sys.stdin).get("meta_cluster") or {}; print(m.get("leader") or "-", m.get("cluster_size", 0))' 2>/dev/null || echo "- 0")
  fi
  if [ "$leader" != "-" ] && [ "$size" -eq "$count" ]; then
    echo "rmqbench-nats-setup: JetStream cluster formed: meta leader $leader, $size servers" >&2
    exit 0
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "rmqbench-nats-setup: the JetStream cluster did not form within $CLUSTER_TIMEOUT_SECONDS s (meta leader $leader, $size of $count servers)" >&2
    systemctl status nats-server.service --no-pager >&2 || true
    journalctl -u nats-server.service -n 30 --no-pager >&2 || true
    exit 1
  fi
  sleep 5
done
