import { NATS_SERVER_ROLE } from '../../core/metrics/cloudwatch-host-metrics';
import type { NatsServerTarball } from '../nats-artifacts';
import { shellQuote, writeFileCommand } from '../shell';
import { cloudWatchAgentBootCommands } from './cloudwatch-agent';
import { INSTALL_OVERRIDE_FILE } from './rabbitmq-node';
import { dataVolumeMountCommands, signalledBootPrelude, type SignalledBootSettings } from './node-boot';

/** Here-document delimiters; the tests locate the written files by them. */
export const NATS_CONF_DELIMITER = 'RMQBENCH_NATS_CONF';
export const NATS_UNIT_DELIMITER = 'RMQBENCH_NATS_UNIT';

/** Where the binary goes (a folder of its own: nothing else of the image is replaced). */
export const NATS_HOME = '/opt/nats';
export const NATS_SERVER_BINARY = `${NATS_HOME}/bin/nats-server`;
export const NATS_CONF_PATH = '/etc/nats/nats-server.conf';
export const NATS_UNIT_PATH = '/etc/systemd/system/nats-server.service';
/**
 * Mount point of the data volume and JetStream's store_dir: nats-server keeps its streams in a `jetstream` folder below
 * store_dir.
 */
export const NATS_DATA_MOUNT = '/var/lib/nats';

export interface NatsServerIdentity {
  /** 1..N: the server's place in the cluster. */
  readonly index: number;
  /** server_name, `nats-<index>`: unique in the cluster, as JetStream's meta group requires. */
  readonly serverName: string;
  /** The server's stable DNS name, `nats-<index>.<zone>`. */
  readonly hostName: string;
}

export interface NatsServerConfInput {
  readonly self: NatsServerIdentity;
  /** Every server of the cluster (self included), in index order. */
  readonly all: readonly NatsServerIdentity[];
  readonly clusterName: string;
  readonly clientPort: number;
  readonly clusterPort: number;
  readonly monitoringPort: number;
  /** JetStream's sync_interval: a duration such as "2m" or "10s", or "always" (fsync after every write). */
  readonly syncInterval: string;
}

/**
 * One server's nats-server.conf, key by key as nats-server reads them (nats-io/nats-server server/opts.go, v2.15:
 * "server_name", "listen", "http_port", `jetstream { store_dir, sync_interval }` where sync_interval is a duration
 * string or "always" (`case "sync", "sync_interval"`: `strings.ToLower(v) == "always"` sets SyncAlways, anything else
 * goes through parseDuration), and `cluster { name, listen, routes }`). The default sync_interval is 2 minutes
 * (docs.nats.io, "JetStream: Syncing data to disk": "a configurable sync_interval option, with a default value of 2
 * minutes"). Routes name every server by its stable DNS name, self included (a route to itself is detected and
 * dropped).
 */
export function natsServerConf(input: NatsServerConfInput): string {
  const routes = input.all.map((server) => `    nats-route://${server.hostName}:${input.clusterPort}`);
  return [
    '# Written by rmqbench (NatsCluster on AWS): one server of a JetStream cluster, no authentication inside the VPC.',
    `server_name: ${JSON.stringify(input.self.serverName)}`,
    `listen: "0.0.0.0:${input.clientPort}"`,
    `http_port: ${input.monitoringPort}`,
    'jetstream {',
    `  store_dir: ${JSON.stringify(NATS_DATA_MOUNT)}`,
    `  sync_interval: ${JSON.stringify(input.syncInterval)}`,
    '}',
    'cluster {',
    `  name: ${JSON.stringify(input.clusterName)}`,
    `  listen: "0.0.0.0:${input.clusterPort}"`,
    '  routes: [',
    ...routes,
    '  ]',
    '}',
    '',
  ].join('\n');
}

export function natsServerUnit(version: string): string {
  return `[Unit]
Description=NATS Server ${version} (JetStream), installed by rmqbench
After=network-online.target local-fs.target
Wants=network-online.target

[Service]
User=nats
Group=nats
ExecStart=${NATS_SERVER_BINARY} --config ${NATS_CONF_PATH}
Restart=on-failure
RestartSec=5
LimitNOFILE=100000
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
`;
}

export interface NatsNodeBootInput extends NatsServerConfInput, SignalledBootSettings {
  /** The pinned release tarball of the instance's architecture (nats-artifacts.ts). */
  readonly tarball: NatsServerTarball;
  /** Device name of the data volume. */
  readonly dataVolumeDevice: string;
  /** Seconds the boot waits for the cluster (JetStream enabled, a meta leader, every server in the meta group). */
  readonly clusterFormationTimeoutSeconds: number;
}

/**
 * The boot script of one nats-server (Amazon Linux 2023), as user-data lines: the CloudWatch agent, the data volume,
 * the pinned release tarball (a checksum mismatch fails the boot before anything is unpacked), nats-server.conf, a
 * systemd unit, and success only once JetStream is enabled (`/healthz?js-enabled-only=true`) and the meta group has a
 * leader and every server. NatsCluster registers `rmqbench_boot_finished $exitCode` as the exit command, which
 * copies the boot log's tail to CloudWatch Logs and signals SUCCESS or FAILURE to this instance's creation policy. No
 * secret is involved: the servers run without authentication inside the VPC, reachable only as the security group
 * allows.
 */
export function natsNodeBootCommands(input: NatsNodeBootInput): string[] {
  return [
    ...natsBootPrelude(input),
    ...natsDataVolumeCommands(input),
    ...natsInstallCommands(input.tarball),
    ...natsConfigurationCommands(input),
    ...natsStartCommands(input),
  ];
}

function natsBootPrelude(input: NatsNodeBootInput): string[] {
  return [
    ...signalledBootPrelude(input),
    `echo "nats-server ${input.self.index} booting on $INSTANCE_ID"`,
    // After STACK_NAME (the ClusterId of the agent's metrics); never fatal.
    ...cloudWatchAgentBootCommands({ clusterId: '$STACK_NAME', role: NATS_SERVER_ROLE }),
  ];
}

function natsDataVolumeCommands(input: NatsNodeBootInput): string[] {
  return dataVolumeMountCommands(input.dataVolumeDevice, NATS_DATA_MOUNT, "mounted as JetStream's store_dir");
}

/** The release tarball, checked against its pinned SHA-256 before it is unpacked (through the one test seam). */
function natsInstallCommands(tarball: NatsServerTarball): string[] {
  return [
    `# nats-server ${tarball.version} (${tarball.arch}) from its GitHub release, checked against the SHA-256 ` +
      'pinned in cdk/nats-artifacts.ts.',
    'id nats >/dev/null 2>&1 || useradd --system --no-create-home --shell /sbin/nologin nats',
    `NATS_SERVER_URL=${shellQuote(tarball.url)}`,
    `NATS_SERVER_SHA256=${tarball.sha256}`,
    'rmqbench_fetch_nats_server() { curl -fsSL --retry 5 --retry-connrefused -o "$2" "$1"; }',
    `# Test seam (the only one; absent on EC2): ${INSTALL_OVERRIDE_FILE} may redefine rmqbench_fetch_nats_server ` +
      '(<url> <file>) and NATS_SERVER_SHA256 (a tarball of its own).',
    `if [ -f ${INSTALL_OVERRIDE_FILE} ]; then . ${INSTALL_OVERRIDE_FILE}; fi`,
    'nats_work=$(mktemp -d)',
    'rmqbench_fetch_nats_server "$NATS_SERVER_URL" "$nats_work/nats-server.tar.gz"',
    'if ! echo "$NATS_SERVER_SHA256  $nats_work/nats-server.tar.gz" | sha256sum --check --strict --quiet; then ' +
      `echo "the nats-server tarball differs from the pinned one ($NATS_SERVER_SHA256)" >&2; rm -rf "$nats_work"; ` +
      'exit 1; fi',
    'tar -xzf "$nats_work/nats-server.tar.gz" -C "$nats_work"',
    `install -D -m 0755 "$nats_work/${tarball.folder}/nats-server" ${NATS_SERVER_BINARY}`,
    'rm -rf "$nats_work"',
    `${NATS_SERVER_BINARY} --version`,
  ];
}

function natsConfigurationCommands(input: NatsNodeBootInput): string[] {
  return [
    '# Configuration: server name, routes to every server by its stable name, JetStream on the data volume.',
    `install -d ${NATS_CONF_PATH.slice(0, NATS_CONF_PATH.lastIndexOf('/'))}`,
    writeFileCommand(NATS_CONF_PATH, natsServerConf(input), NATS_CONF_DELIMITER),
    `chown -R nats:nats ${NATS_DATA_MOUNT}`,
    // Read back from the file rather than written out again: each repetition of the zone name (a token in a
    // controller's template) counts against EC2's 16 KB of user data.
    `route_hosts=$(sed -n 's|^ *nats-route://\\([^:]*\\):.*|\\1|p' ${NATS_CONF_PATH})`,
    'echo "routes:" $route_hosts',
    // The records exist before the instance (NatsCluster makes the instance depend on them); a new private zone can
    // still take a moment to answer inside the VPC.
    '# Wait until every server name resolves.',
    'for host in $route_hosts; do for attempt in $(seq 1 60); do getent hosts "$host" >/dev/null && break; [ ' +
      '"$attempt" -lt 60 ] || { echo "$host does not resolve" >&2; exit 1; }; sleep 5; done; done',
  ];
}

/**
 * The systemd unit, then waiting for the cluster: JetStream enabled on this server (`/healthz?js-enabled-only=true`,
 * nats-io/nats-server server/monitor.go HandleHealthz), and `/jsz` showing a meta leader and every server in the meta
 * group (JSInfo.meta_cluster: "leader", "cluster_size"; the local target checks the same).
 */
function natsStartCommands(input: NatsNodeBootInput): string[] {
  const monitor = `http://127.0.0.1:${input.monitoringPort}`;
  const count = input.all.length;
  return [
    writeFileCommand(NATS_UNIT_PATH, natsServerUnit(input.tarball.version), NATS_UNIT_DELIMITER),
    'systemctl daemon-reload && systemctl enable --now nats-server.service',
    `# Wait for the cluster: JetStream enabled, a meta leader, ${count} servers in the meta group.`,
    `deadline=$(( $(date +%s) + ${input.clusterFormationTimeoutSeconds} ))`,
    'while true; do',
    '  leader=""; size=0',
    `  if curl -fsS "${monitor}/healthz?js-enabled-only=true" >/dev/null 2>&1; then`,
    `    read -r leader size < <(curl -fsS ${monitor}/jsz 2>/dev/null | python3 -c 'import json,sys; ` +
      `m=json.load(sys.stdin).get("meta_cluster") or {}; print(m.get("leader") or "-", m.get("cluster_size", 0))' ` +
      `2>/dev/null || echo "- 0")`,
    '  fi',
    `  if [ -n "$leader" ] && [ "$leader" != "-" ] && [ "$size" -eq ${count} ]; then echo "JetStream cluster ` +
      `formed: meta leader $leader, $size servers"; break; fi`,
    `  if [ "$(date +%s)" -ge "$deadline" ]; then echo "the JetStream cluster did not form within ` +
      `${input.clusterFormationTimeoutSeconds} s (meta leader '\${leader}', \${size} of ${count} servers)" >&2; ` +
      'systemctl status nats-server.service --no-pager || true; journalctl -u nats-server.service -n 50 --no-pager ' +
      '|| true; exit 1; fi',
    '  sleep 5',
    'done',
  ];
}
