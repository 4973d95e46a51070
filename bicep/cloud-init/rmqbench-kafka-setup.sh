#!/usr/bin/env bash
# Installs and starts one Apache Kafka broker of the rmqbench Azure Kafka cluster (KRaft, combined broker+controller,
# no ZooKeeper), then waits until the whole static quorum has formed.
# Usage: rmqbench-kafka-setup                         install, start, wait
#        rmqbench-kafka-setup --print-server-properties
#        rmqbench-kafka-setup --print-cluster-id
#        rmqbench-kafka-setup --print-data-disk [root]   the data disk's link found under root (default /), else exit 1
# Settings come from /etc/rmqbench/kafka.env (RMQBENCH_KAFKA_ENV overrides the path), written by
# modules/kafka-cluster.bicep: NODE_ID, BROKER_HOSTS (the brokers' static private IPs, in node id order), CLIENT_PORT,
# CONTROLLER_PORT, CLUSTER_SEED, KAFKA_VERSION, JAVA_PACKAGE, QUORUM_TIMEOUT_SECONDS. No secret: the listener is
# PLAINTEXT inside the VNet. The jars come from Maven Central; each must match the sha256 in
# /etc/rmqbench/kafka.sha256 (lines "<sha256>  <path under maven2/>", the pins of cdk/kafka-artifacts.ts), or the
# setup fails.
set -euo pipefail
# shellcheck disable=SC1090
. "${RMQBENCH_KAFKA_ENV:-/etc/rmqbench/kafka.env}"
home=/opt/kafka
config=/etc/kafka
data_mount=/var/lib/kafka
log_dir="$data_mount/data"
repository=https://repo1.maven.org/maven2
INSTALL_OVERRIDE_FILE=/etc/rmqbench/install-override.sh

read -r -a hosts <<<"$(tr ',' ' ' <<<"$BROKER_HOSTS")"
count=${#hosts[@]}

# The same keys as the AWS brokers (cdk/user-data/kafka-node.ts kafkaServerProperties), with private IPs for names:
# Kafka's broker configuration reference, https://kafka.apache.org/documentation/#brokerconfigs, and KRaft's
# "controller.quorum.voters=id1@host1:port1,...", https://kafka.apache.org/documentation/#kraft_config.
server_properties() {
  local voters='' i copies min_isr
  for ((i = 0; i < count; i++)); do voters+="${voters:+,}$((i + 1))@${hosts[$i]}:$CONTROLLER_PORT"; done
  copies=$((count < 3 ? count : 3))
  min_isr=$((copies < 2 ? copies : 2))
  cat <<PROPERTIES
# Written by rmqbench (Kafka on Azure): a combined broker+controller in KRaft mode, no ZooKeeper.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$voters
listeners=PLAINTEXT://0.0.0.0:$CLIENT_PORT,CONTROLLER://0.0.0.0:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://${hosts[$((NODE_ID - 1))]}:$CLIENT_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$log_dir
offsets.topic.replication.factor=$copies
transaction.state.log.replication.factor=$copies
transaction.state.log.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPERTIES
}

# The cluster id every broker derives from CLUSTER_SEED, as cdk/KafkaCluster.ts kafkaClusterId does: the first 16 bytes of
# its SHA-256 in URL-safe base64 without padding, rehashed while the id would start with "-" or be a reserved id (0, 1).
cluster_id() {
  python3 - "$CLUSTER_SEED" <<'PYTHON'
import base64, hashlib, sys
seed = sys.argv[1]
attempt = 0
while True:
    digest = hashlib.sha256((seed if attempt == 0 else f"{seed}#{attempt}").encode()).digest()[:16]
    text = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    if not text.startswith("-") and not (all(b == 0 for b in digest[:15]) and digest[15] <= 1):
        print(text)
        break
    attempt += 1
PYTHON
}

# The data disk (LUN 0) by its udev link: /dev/disk/azure/scsi1/lun<n> comes from WALinuxAgent's 66-azure-storage.rules
# (https://learn.microsoft.com/azure/virtual-machines/linux/azure-to-guest-disk-mapping); azure-vm-utils' 80-azure-disk.rules,
# which "the long-term plan is to migrate the udev rules ... found in WALinuxAgent into", links the same SCSI data disk as
# /dev/disk/azure/data/by-lun/<n> (Azure/azure-vm-utils doc/disk-identification.md, udev/80-azure-disk.rules). An image
# with only one of the two packages' rules still finds its disk. $1: a root directory the links are looked up under.
data_disk() {
  local link
  for link in /dev/disk/azure/scsi1/lun0 /dev/disk/azure/data/by-lun/0; do
    if [ -e "${1:-}$link" ]; then echo "${1:-}$link"; return 0; fi
  done
  return 1
}

case "${1:-}" in
  --print-server-properties) server_properties; exit 0 ;;
  --print-cluster-id) cluster_id; exit 0 ;;
  --print-data-disk) data_disk "${2:-}"; exit ;;
  '') ;;
  *) echo "rmqbench-kafka-setup: unknown argument $1" >&2; exit 2 ;;
esac

# Java and the pinned jars (into $home/libs); a function so that the one test seam can replace the downloads.
install_kafka() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # xfsprogs for mkfs.xfs of the data disk below: named rather than assumed to be in the image.
  apt-get install -y -q "$JAVA_PACKAGE" curl python3 xfsprogs
  local sum path
  while read -r sum path; do
    [ -n "$sum" ] || continue
    curl -sSf --retry 5 --retry-all-errors -o "$home/libs/$(basename "$path")" "$repository/$path"
  done </etc/rmqbench/kafka.sha256
}

mkdir -p "$home/libs" "$config"
# Test seam (the only one; nothing creates the file on Azure): it may redefine install_kafka, as the simulated-VM tests
# do to copy the jars this machine already has. The checksums below are checked either way.
# shellcheck source=/dev/null
if [ -f "$INSTALL_OVERRIDE_FILE" ]; then . "$INSTALL_OVERRIDE_FILE"; fi
install_kafka
: >"$home/SHA256SUMS"
while read -r sum path; do
  [ -n "$sum" ] || continue
  echo "$sum  libs/$(basename "$path")" >>"$home/SHA256SUMS"
done </etc/rmqbench/kafka.sha256
if ! (cd "$home" && sha256sum --check --strict --quiet SHA256SUMS); then
  rm -f "$home"/libs/*.jar
  echo "rmqbench-kafka-setup: Kafka $KAFKA_VERSION: checksum mismatch, jars removed" >&2
  exit 1
fi

# The data disk (LUN 0, see data_disk), formatted once and mounted at /var/lib/kafka.
disk=''
for _ in $(seq 1 60); do disk="$(data_disk)" && break; sleep 2; done
[ -n "$disk" ] || { echo "rmqbench-kafka-setup: the data disk (LUN 0: /dev/disk/azure/scsi1/lun0 or /dev/disk/azure/data/by-lun/0) did not appear" >&2; exit 1; }
blkid "$disk" >/dev/null || mkfs.xfs -q "$disk"
mkdir -p "$data_mount"
grep -q " $data_mount " /etc/fstab || echo "$(readlink -f "$disk") $data_mount xfs defaults,nofail 0 2" >>/etc/fstab
mountpoint -q "$data_mount" || mount "$data_mount"

id kafka >/dev/null 2>&1 || useradd --system --home-dir "$data_mount" --shell /usr/sbin/nologin kafka
mkdir -p "$log_dir"
server_properties >"$config/server.properties"
cp /etc/rmqbench/kafka-log4j2.properties "$config/log4j2.properties"
java_cmd=(java "-Dlog4j2.configurationFile=$config/log4j2.properties" -cp "$home/libs/*")
# A static quorum: every voter is listed in controller.quorum.voters, so no --standalone or --initial-controllers.
chown -R kafka:kafka "$data_mount"
runuser -u kafka -- "${java_cmd[@]}" kafka.tools.StorageTool format --cluster-id "$(cluster_id)" --config "$config/server.properties" --ignore-formatted

cat >/etc/systemd/system/kafka.service <<UNIT
[Unit]
Description=Apache Kafka $KAFKA_VERSION (KRaft, broker+controller), installed by rmqbench
After=network-online.target local-fs.target
Wants=network-online.target

[Service]
User=kafka
Group=kafka
ExecStart=/usr/bin/java -Xmx1G -Xms1G -XX:+UseG1GC -Dlog4j2.configurationFile=$config/log4j2.properties -cp '$home/libs/*' kafka.Kafka $config/server.properties
Restart=on-failure
RestartSec=10
LimitNOFILE=100000
TimeoutStopSec=120

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now kafka.service

# Formed when the quorum names a leader and every broker as a voter (kafka-metadata-quorum describe --status).
deadline=$((SECONDS + QUORUM_TIMEOUT_SECONDS))
while :; do
  status="$("${java_cmd[@]}" org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "localhost:$CLIENT_PORT" describe --status 2>/dev/null || true)"
  # grep -o finds no voter while the broker does not answer yet: `|| true`, or pipefail would end the setup here.
  voters="$(sed -n 's/^CurrentVoters:[[:space:]]*//p' <<<"$status" | { grep -o '"id":[[:space:]]*[0-9]*' || true; } | wc -l)"
  leader="$(sed -n 's/^LeaderId:[[:space:]]*//p' <<<"$status")"
  if [ -n "$leader" ] && [ "$leader" != "-1" ] && [ "$voters" -eq "$count" ]; then
    echo "rmqbench-kafka-setup: quorum formed: leader $leader, $voters voters" >&2
    exit 0
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "rmqbench-kafka-setup: the quorum did not form within $QUORUM_TIMEOUT_SECONDS s (leader ${leader:-none}, $voters of $count voters)" >&2
    systemctl status kafka.service --no-pager >&2 || true
    journalctl -u kafka.service -n 30 --no-pager >&2 || true
    exit 1
  fi
  sleep 5
done
