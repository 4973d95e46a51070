/**
 * One nats-server's configuration file as text (https://docs.nats.io/running-a-nats-service/configuration): its
 * name, client listener, monitoring port, JetStream with its store directory and sync interval, and, in a cluster of
 * more than one node, the cluster block with a route to every other node. Pure, so that any target can write it
 * (the local target writes one per node; a cloud node's boot script may too).
 */

/** One node as the configuration names it. */
export interface NatsServerNode {
  /** server_name, unique in the cluster (JetStream's Raft groups name their peers by it). */
  readonly name: string;
  /** The address every listener binds and that the routes use, e.g. "127.0.0.1". */
  readonly host: string;
  readonly clientPort: number;
  /** The cluster (route) port. */
  readonly clusterPort: number;
  /** The monitoring HTTP port (/healthz, /jsz, /varz). */
  readonly monitorPort: number;
}

export interface NatsServerConfigOptions {
  readonly node: NatsServerNode;
  /** Every node of the cluster, this one included (routes go to the others). */
  readonly cluster: readonly NatsServerNode[];
  /** The cluster's name (cluster.name), the same on every node. */
  readonly clusterName: string;
  /** jetstream.store_dir: where file-storage streams and the Raft logs live. */
  readonly storeDir: string;
  /**
   * jetstream.sync_interval: how often file storage is fsynced ("2m", nats-server's default, or "always": an fsync
   * after every write). @default - the server's default (2m)
   */
  readonly syncInterval?: string;
}

/** nats-server's configuration accepts quoted strings everywhere; quotes keep paths with spaces whole. */
const quoted = (value: string) => JSON.stringify(value);

export function natsServerConfig(options: NatsServerConfigOptions): string {
  const { node } = options;
  const others = options.cluster.filter((other) => other.name !== node.name);
  const lines = [
    '# Written by rmqbench: one node of a NATS JetStream cluster.',
    `server_name: ${quoted(node.name)}`,
    `listen: ${quoted(`${node.host}:${node.clientPort}`)}`,
    `http: ${quoted(`${node.host}:${node.monitorPort}`)}`,
    'jetstream {',
    `  store_dir: ${quoted(options.storeDir)}`,
    // "always" is a keyword of its own (server/opts.go: sync_interval "always" sets SyncAlways), anything else a
    // duration.
    ...(options.syncInterval === undefined ? [] : [`  sync_interval: ${quoted(options.syncInterval)}`]),
    '}',
  ];
  // A single node runs JetStream standalone: a cluster block without routes would wait for peers that never come.
  if (options.cluster.length > 1) {
    lines.push(
      'cluster {',
      `  name: ${quoted(options.clusterName)}`,
      `  listen: ${quoted(`${node.host}:${node.clusterPort}`)}`,
      '  routes: [',
      ...others.map((other) => `    ${quoted(`nats-route://${other.host}:${other.clusterPort}`)}`),
      '  ]',
      '}',
    );
  }
  return `${lines.join('\n')}\n`;
}
