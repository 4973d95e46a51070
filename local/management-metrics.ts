import { BENCHMARK_QUEUE_PATTERN } from '../core/broker/broker-config';

/**
 * What one poll of the RabbitMQ management API says per node, at one moment.
 * Why these sources: the local nodes share the loopback interface, so /proc/net/dev cannot tell their traffic
 * apart; the broker itself counts each node's client connections (recv_oct/send_oct of /api/connections) and its
 * links to the other nodes (cluster_links[].recv_bytes/send_bytes of /api/nodes), which together are that node's
 * network traffic (loopback ports of HAProxy excepted, which is not a broker).
 */
export interface BrokerReading {
  readonly tSeconds: number;
  /** 1 while the node's memory alarm is raised; only nodes that run. */
  readonly memoryAlarm: ReadonlyMap<string, 0 | 1>;
  /**
   * Messages (ready + unacknowledged) in the benchmark queues led by each running node; 0 for a node that leads none.
   */
  readonly queueDepth: ReadonlyMap<string, number>;
  /** Per node, cumulative bytes (in + out) of each connection and inter-node link, keyed by connection or link. */
  readonly networkCounters: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** The management API paths one poll reads (columns trimmed to what is used: the answers stay small). */
export const BROKER_METRICS_PATHS = {
  nodes: '/api/nodes?columns=name,running,cluster_links',
  /**
   * 200 {"status":"ok"}, or 503 with {"status":"failed","alarms":[{"resource":"memory","node":...}]}: read at every
   * poll, unlike /api/nodes' mem_alarm, which appears only with a node's first statistics emission (absent for the
   * first seconds after a node starts). Source: deps/rabbitmq_management/src/rabbit_mgmt_wm_health_check_alarms.erl and
   * rabbit_alarm:format_as_map/1 (https://github.com/rabbitmq/rabbitmq-server);
   * https://www.rabbitmq.com/docs/monitoring#health-checks.
   */
  alarms: '/api/health/checks/alarms',
  connections: '/api/connections?columns=name,node,recv_oct,send_oct',
  queues: '/api/queues/%2F?columns=name,node,messages',
} as const;

interface ApiNode {
  readonly name: string;
  readonly running?: boolean;
  readonly cluster_links?: readonly {
    readonly name: string;
    readonly sock_port?: number;
    readonly recv_bytes?: number;
    readonly send_bytes?: number;
  }[];
}
interface ApiConnection {
  readonly name: string;
  readonly node: string;
  readonly recv_oct?: number;
  readonly send_oct?: number;
}
interface ApiQueue {
  readonly name: string;
  readonly node?: string;
  readonly messages?: number;
}

/**
 * One poll's answers to BROKER_METRICS_PATHS (`alarms`: the health check's body, 200 or 503), reduced to per-node
 * numbers.
 */
export function brokerReading(
  tSeconds: number,
  answers: { nodes: unknown; alarms: unknown; connections: unknown; queues: unknown },
): BrokerReading {
  const nodes = asArray<ApiNode>(answers.nodes, 'nodes').filter((node) => node.running !== false);
  const alarms = answers.alarms as
    { status?: string; alarms?: readonly { resource?: string; node?: string }[] } | undefined;
  if (alarms?.status !== 'ok' && !Array.isArray(alarms?.alarms))
    throw new Error(`management API: the alarms health check answered ${JSON.stringify(alarms)?.slice(0, 80)}`);
  const inMemoryAlarm = new Set(
    (alarms.alarms ?? []).filter((alarm) => alarm.resource === 'memory').map((alarm) => alarm.node),
  );
  const memoryAlarm = new Map<string, 0 | 1>();
  const queueDepth = new Map<string, number>();
  const networkCounters = new Map<string, Map<string, number>>();
  for (const node of nodes) {
    memoryAlarm.set(node.name, inMemoryAlarm.has(node.name) ? 1 : 0);
    queueDepth.set(node.name, 0);
    const counters = new Map<string, number>();
    // A link that reconnects gets a new local port: a new key, so its fresh counter is not read as a reset.
    for (const link of node.cluster_links ?? [])
      counters.set(`link ${link.name}:${link.sock_port ?? ''}`, (link.recv_bytes ?? 0) + (link.send_bytes ?? 0));
    networkCounters.set(node.name, counters);
  }
  for (const connection of asArray<ApiConnection>(answers.connections, 'connections')) {
    // Connection octets appear with the first statistics emission; before that the connection carries no number.
    if (connection.recv_oct === undefined && connection.send_oct === undefined) continue;
    networkCounters
      .get(connection.node)
      ?.set(`connection ${connection.name}`, (connection.recv_oct ?? 0) + (connection.send_oct ?? 0));
  }
  const benchmarkQueue = new RegExp(BENCHMARK_QUEUE_PATTERN);
  for (const queue of asArray<ApiQueue>(answers.queues, 'queues')) {
    if (!benchmarkQueue.test(queue.name) || queue.node === undefined || typeof queue.messages !== 'number') continue;
    queueDepth.set(queue.node, (queueDepth.get(queue.node) ?? 0) + queue.messages);
  }
  return { tSeconds, memoryAlarm, queueDepth, networkCounters };
}

function asArray<T>(value: unknown, what: string): T[] {
  if (!Array.isArray(value))
    throw new Error(`management API: ${what} is not a list (got ${JSON.stringify(value)?.slice(0, 80)})`);
  return value as T[];
}
