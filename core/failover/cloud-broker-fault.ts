import { KAFKA_BROKER_ROLE, NATS_SERVER_ROLE } from '../metrics/cloudwatch-host-metrics';
import type { FaultAction } from '../plan/plan-schema';
import { VERIFIER_QUEUE } from './failover';
import {
  faultScript,
  healScript,
  queueLeader,
  queueLeadersScript,
  QueueNotDeclaredError,
  STAMP_APPLYING,
  STAMP_HEALING,
} from './cloud-fault';

/**
 * The fault step's scripts per broker on a cloud node: where the verifier's resource is led, the fault and its heal.
 * RabbitMQ's are in cloud-fault.ts; Kafka's and NATS JetStream's are here. Pure, so that they run for real on
 * simulated VMs (the twins) and their parsers are tested on captured output.
 *
 * Both brokers are installed alike on AWS (cdk/user-data/kafka-node.ts, cdk/user-data/nats-node.ts) and Azure
 * (bicep/cloud-init/rmqbench-kafka-setup.sh, rmqbench-nats-setup.sh): a systemd unit (`kafka.service` running
 * /opt/kafka/libs with /etc/kafka/server.properties; `nats-server.service` with /etc/nats/nats-server.conf), each with
 * `Restart=on-failure`, and a node identity in that configuration (`node.id=<n>`; `server_name: "nats-<n>"`), which
 * is what a node name is matched against: `kafka-<n>` and `nats-<n>`.
 */

/**
 * On AWS, the rmqbench:component tag of a Kafka broker's and a NATS server's instance, and the tag holding its node
 * name (`kafka-<node.id>`, `nats-<n>` of its server_name); the component is the Role its CloudWatch agent reports.
 * cdk/cluster-templates.ts puts both on each instance, the
 * fault step lists the nodes by them (lambdas/shared/aws-cluster-nodes.ts brokerNodes), and the fault node role may
 * send commands to instances with these components only (cdk/BenchmarkController.ts FaultNodeRole).
 */
export const BROKER_COMPONENTS = { kafka: KAFKA_BROKER_ROLE, nats: NATS_SERVER_ROLE } as const;
export const NODE_NAME_TAG = 'rmqbench:node-name';

/** The brokers the cloud fault step applies faults to. */
export type FaultBroker = 'rabbitmq' | 'kafka' | 'nats';

/** What the fault step runs on a node of one broker. */
export interface BrokerFaultScripts {
  /** The verifier's queue, topic or stream of repetition `index` (ScheduledRepetition.index, unique in a run). */
  resource(index: number): string;
  /** Prints what this node knows of who leads `resource`. */
  leaderScript(resource: string): string;
  /**
   * The node leading `resource` from leaderScript's output; undefined when this node does not know (a NATS stream
   * lives on its replicas only: ask another node). Throws QueueNotDeclaredError when the resource does not exist (yet)
   * and no node can know more.
   */
  leaderOf(output: string, resource: string): string | undefined;
  faultScript(action: FaultAction, nodeName: string): string;
  healScript(nodeName: string, action: FaultAction): string;
}

/**
 * The fault actions each broker takes in the clouds. `partition` is RabbitMQ's only: its firewall rules cut the Erlang
 * distribution ports (cloud-fault.ts); Kafka's and NATS's inter-node traffic shares ports with what the load
 * generator needs, so the same cut is not defined for them (the local target refuses it for every broker).
 */
export const CLOUD_BROKER_FAULT_ACTIONS: Readonly<Record<FaultBroker, readonly FaultAction[]>> = {
  rabbitmq: ['kill', 'stop', 'restart', 'partition'],
  kafka: ['kill', 'stop', 'restart'],
  nats: ['kill', 'stop', 'restart'],
};

/**
 * The Kafka topic and the NATS stream the cloud verifier creates for one repetition: a name per repetition, because a
 * deleted Kafka topic is removed asynchronously and its name may not be free at once for the next repetition. Both
 * allow letters, digits and dashes (Kafka: [a-zA-Z0-9._-]; JetStream: no '.', '*', '>' or whitespace).
 */
export const cloudVerifierResource = (index: number): string => {
  if (!Number.isInteger(index) || index < 1) throw new Error(`a repetition index is a positive integer, got ${index}`);
  return `rmqbench-verifier-${index}`;
};

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** Node names of these brokers, as the fault step makes them from tags (AWS) or VM names (Azure). */
const NODE_NAMES: Readonly<Record<'kafka' | 'nats', RegExp>> = { kafka: /^kafka-\d{1,2}$/, nats: /^nats-\d{1,2}$/ };

function checkedNodeName(broker: 'kafka' | 'nats', nodeName: string): string {
  if (!NODE_NAMES[broker].test(nodeName))
    throw new Error(`expected a ${broker === 'kafka' ? 'Kafka' : 'NATS'} node name ${broker}-<n>, got "${nodeName}"`);
  return nodeName;
}

const checkedResource = (resource: string) => {
  if (!/^[A-Za-z0-9-]{1,200}$/.test(resource))
    throw new Error(`a verifier topic or stream name is letters, digits and dashes, got "${resource}"`);
  return resource;
};

/** The systemd unit, configuration file and identity line of each broker (see the module comment). */
const BROKER_FILES = {
  kafka: {
    unit: 'kafka.service',
    config: '/etc/kafka/server.properties',
    // node.id=<n> → kafka-<n>
    thisNode: `THIS_NODE="kafka-$(sed -n 's/^node\\.id=//p' /etc/kafka/server.properties | tail -n 1)"`,
  },
  nats: {
    unit: 'nats-server.service',
    config: '/etc/nats/nats-server.conf',
    // server_name: "nats-<n>" → nats-<n>
    thisNode:
      `THIS_NODE="$(sed -n 's/^server_name: *"\\{0,1\\}\\([^"]*\\)"\\{0,1\\}$/\\1/p' ` +
      `/etc/nats/nats-server.conf | tail -n 1)"`,
  },
} as const;

/** Lines that stop the script unless this VM runs `nodeName` (read from the broker's configuration, not asked). */
function sameNodeLines(broker: 'kafka' | 'nats', nodeName: string): string[] {
  const files = BROKER_FILES[broker];
  return [
    `EXPECTED=${quote(checkedNodeName(broker, nodeName))}`,
    `[ -f ${files.config} ] || ` +
      `{ echo "rmqbench: ${files.config} is missing: this VM runs no ${broker} node" >&2; exit 3; }`,
    files.thisNode,
    '[ "$THIS_NODE" = "$EXPECTED" ] || ' +
      '{ echo "rmqbench: this VM does not run $EXPECTED (it runs $THIS_NODE)" >&2; exit 3; }',
  ];
}

/** The port of the broker's client listener (Kafka) or monitoring endpoint (NATS), read from its configuration. */
const PORT_LINES = {
  kafka: [
    "PORT=$(sed -n 's/^listeners=.*PLAINTEXT:\\/\\/[^:,]*:\\([0-9]*\\).*/\\1/p' " +
      '/etc/kafka/server.properties | tail -n 1)',
    '[ -n "$PORT" ] || { echo "rmqbench: no PLAINTEXT listener in /etc/kafka/server.properties" >&2; exit 4; }',
  ],
  nats: [
    "PORT=$(sed -n 's/^http_port: *\\([0-9]*\\).*/\\1/p' /etc/nats/nats-server.conf | tail -n 1)",
    '[ -n "$PORT" ] || { echo "rmqbench: no http_port in /etc/nats/nats-server.conf" >&2; exit 4; }',
  ],
} as const;

/**
 * kill: SIGKILL to the unit's main process (`systemctl show --property=MainPID --value`, systemctl(1)), no shutdown at
 * all; then `systemctl stop`, which keeps the unit down. With `Restart=on-failure` systemd starts a service "terminated
 * by a signal" again after RestartSec (systemd.service(5), Restart=); until then the unit waits in its auto-restart
 * state, and a stop there moves it to dead without the restart (systemd src/core/service.c service_stop(): "When
 * service_stop() handles a service in the SERVICE_AUTO_RESTART state, it [...] transition[s] it to the SERVICE_DEAD
 * state", commit f0c7b229 "service: fix auto-restart handling in service_stop()"). So the broker stays down until the
 * heal, as a RabbitMQ node (whose unit has no Restart=) and the local target's brokers do.
 */
function killLines(unit: string): string[] {
  return [
    `BROKER_PID=$(systemctl show --property=MainPID --value ${unit})`,
    `[ -n "$BROKER_PID" ] && [ "$BROKER_PID" != 0 ] || ` +
      `{ echo "rmqbench: ${unit} has no main process: is it running?" >&2; exit 4; }`,
    STAMP_APPLYING,
    'kill -KILL "$BROKER_PID"',
    'for attempt in $(seq 1 50); do kill -0 "$BROKER_PID" 2> /dev/null || break; sleep 0.1; done',
    'if kill -0 "$BROKER_PID" 2> /dev/null; then ' +
      'echo "rmqbench: the broker (pid $BROKER_PID) still runs 5 s after SIGKILL" >&2; exit 5; fi',
    `systemctl stop ${unit}`,
  ];
}

/**
 * Lines that wait (300 s at most) until the broker serves again: Kafka's client listener accepts connections (bash's
 * /dev/tcp), NATS's `/healthz?js-enabled-only=true` answers ok (the check the boot waits for).
 */
function readyLines(broker: 'kafka' | 'nats'): string[] {
  const ready =
    broker === 'kafka'
      ? '(exec 3<> "/dev/tcp/127.0.0.1/$PORT") 2> /dev/null'
      : "python3 -c 'import json,sys,urllib.request; " +
        'sys.exit(json.load(urllib.request.urlopen(sys.argv[1], timeout=5)).get("status") != "ok")\' ' +
        '"http://127.0.0.1:$PORT/healthz?js-enabled-only=true" 2> /dev/null';
  return [
    ...PORT_LINES[broker],
    // Within the fault function's 5 minutes, a restart's stop (Kafka's TimeoutStopSec=120) included.
    'READY_DEADLINE=$((SECONDS + 150))',
    `until ${ready}; do`,
    '  if [ "$SECONDS" -ge "$READY_DEADLINE" ]; then ' +
      'echo "rmqbench: $EXPECTED did not serve again within 150 s" >&2; exit 1; fi',
    '  sleep 1',
    'done',
  ];
}

function brokerFaultScript(broker: 'kafka' | 'nats', action: FaultAction, nodeName: string): string {
  const { unit } = BROKER_FILES[broker];
  const lines = ['set -euo pipefail', ...sameNodeLines(broker, nodeName)];
  switch (action) {
    case 'kill':
      lines.push(...killLines(unit));
      break;
    case 'stop':
      lines.push(STAMP_APPLYING, `systemctl stop ${unit}`);
      break;
    case 'restart':
      lines.push(STAMP_APPLYING, `systemctl stop ${unit}`, `systemctl start ${unit}`, ...readyLines(broker));
      break;
    case 'partition':
      throw new Error(`a partition is not applied to a ${broker} node (only kill, stop and restart)`);
  }
  lines.push(`echo "rmqbench: ${action} applied to $EXPECTED"`);
  return lines.join('\n');
}

function brokerHealScript(broker: 'kafka' | 'nats', nodeName: string): string {
  return [
    'set -euo pipefail',
    ...sameNodeLines(broker, nodeName),
    STAMP_HEALING,
    `systemctl start ${BROKER_FILES[broker].unit}`,
    ...readyLines(broker),
    'echo "rmqbench: started $EXPECTED again"',
  ].join('\n');
}

/**
 * Kafka: TopicCommand (the kafka-tools jar the broker's own /opt/kafka/libs holds, cdk/kafka-artifacts.ts) asked of
 * this broker's listener; its `--describe` prints one line per partition, "Partition: 0\tLeader: <id>\t..." (no
 * leader: "Leader: none" or -1), and a missing topic fails with "Topic '<name>' does not exist" (the output the smoke
 * test reads, lambdas/shared/kafka-load-generator.ts). Kafka's metadata is the whole cluster's, so one broker knows.
 */
function kafkaLeaderScript(topic: string): string {
  return [
    'set -uo pipefail',
    ...PORT_LINES.kafka,
    `/usr/bin/java -Xmx256m -cp '/opt/kafka/libs/*' org.apache.kafka.tools.TopicCommand ` +
      `--bootstrap-server "127.0.0.1:$PORT" --describe --topic ${quote(checkedResource(topic))} 2>&1 | ` +
      "grep -v '^SLF4J' || true",
  ].join('\n');
}

function kafkaLeaderOf(output: string, topic: string): string {
  const led = /Partition:\s*0\s+Leader:\s*(-?\d+|none)/.exec(output);
  if (led && /^\d+$/.test(led[1]!)) return `kafka-${led[1]}`;
  // Not there, or not everywhere yet: a missing topic; one just created, whose partition this broker does not host
  // yet (UnknownTopicOrPartitionException, "This server does not host this topic-partition"); an admin call that
  // timed out while leadership moves.
  if (led || /does not exist|UnknownTopicOrPartition|does not host this topic-partition|TimeoutException/.test(output))
    throw new QueueNotDeclaredError(
      `topic ${topic} ${led ? 'has no leader yet' : 'is not (yet) known to the cluster'} (the load generator's ` +
        'verifier creates it when it starts and deletes it when its durationSeconds end), so its leader is unknown: ' +
        'is atSeconds before the verifier has started, or too close to the end for the fault step to find it?',
    );
  throw new Error(`TopicCommand --describe ${topic} printed no partition leader: ${output.trim().slice(-300)}`);
}

/**
 * NATS: the server's monitoring endpoint `/jsz?streams=true` (https://docs.nats.io/running-a-nats-service/nats_admin/
 * monitoring#jetstream-information), whose `account_details[].stream_detail[]` lists the streams this server holds a
 * replica of, each with `cluster.leader` (a server_name). A stream with fewer replicas than servers is not on every
 * server: a server without it answers `{"hosted": false}` and the fault step asks the next.
 */
function natsLeaderScript(stream: string): string {
  return [
    'set -euo pipefail',
    ...PORT_LINES.nats,
    'python3 - "http://127.0.0.1:$PORT/jsz?streams=true" ' + `${quote(checkedResource(stream))} <<'RMQBENCH_PY'`,
    'import json, sys, urllib.request',
    'jsz = json.load(urllib.request.urlopen(sys.argv[1], timeout=10))',
    'found = {"hosted": False}',
    'for account in jsz.get("account_details") or []:',
    '    for detail in account.get("stream_detail") or []:',
    '        if detail.get("name") == sys.argv[2]:',
    '            found = {"hosted": True, "leader": (detail.get("cluster") or {}).get("leader") or ""}',
    'print(json.dumps(found))',
    'RMQBENCH_PY',
  ].join('\n');
}

function natsLeaderOf(output: string, stream: string): string | undefined {
  let found: { hosted?: unknown; leader?: unknown };
  try {
    found = JSON.parse(output.trim().split('\n').at(-1) ?? '') as typeof found;
  } catch {
    throw new Error(`the /jsz listing printed no JSON: ${output.slice(0, 300)}`);
  }
  if (found.hosted !== true) return undefined;
  if (typeof found.leader === 'string' && NODE_NAMES.nats.test(found.leader)) return found.leader;
  throw new QueueNotDeclaredError(
    `stream ${stream} has no leader yet (${JSON.stringify(found.leader ?? null)}): an election may be under way`,
  );
}

const RABBITMQ: BrokerFaultScripts = {
  resource: () => VERIFIER_QUEUE,
  leaderScript: () => queueLeadersScript(),
  leaderOf: (output, queue) => queueLeader(output, queue),
  faultScript,
  healScript,
};

/** A broker of systemd units (Kafka, NATS): its own leader lookup, the shared fault and heal scripts. */
const unitBroker = (
  broker: 'kafka' | 'nats',
  leaderScript: BrokerFaultScripts['leaderScript'],
  leaderOf: BrokerFaultScripts['leaderOf'],
): BrokerFaultScripts => ({
  resource: cloudVerifierResource,
  leaderScript,
  leaderOf,
  faultScript: (action, nodeName) => brokerFaultScript(broker, action, nodeName),
  healScript: (nodeName) => brokerHealScript(broker, nodeName),
});

const KAFKA = unitBroker('kafka', kafkaLeaderScript, kafkaLeaderOf);
const NATS = unitBroker('nats', natsLeaderScript, natsLeaderOf);

/** The fault step's scripts for `broker`. */
export function brokerFaultScripts(broker: FaultBroker): BrokerFaultScripts {
  return broker === 'kafka' ? KAFKA : broker === 'nats' ? NATS : RABBITMQ;
}
