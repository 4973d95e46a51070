import type { FaultAction, FaultSpec } from './plan-schema';

/**
 * The fault step on a cloud node (AWS: SSM Run Command on the node's instance): the shell scripts it runs there and
 * the choice of node. Pure, so that the scripts are run for real on simulated EC2 nodes
 * (test/simulated-vm/aws-node.integration.test.ts) and the choice is tested on recorded answers.
 *
 * The node's broker is the `rabbitmq-server` systemd unit of Team RabbitMQ's RPM (cdk/user-data/rabbitmq-node.ts
 * starts it with `systemctl enable --now rabbitmq-server`). That unit has no `Restart=` (it is left commented out in
 * rabbitmq-server packaging/RPMS/Fedora/rabbitmq-server.service), so a killed broker stays down until the heal starts it.
 * The node name is `rabbit@<private IPv4>` (NODENAME in /etc/rabbitmq/rabbitmq-env.conf, written by the same script),
 * which is how a node name is matched to its instance.
 */

/** The fault actions each cloud target applies; the others are refused by field with the reason (core/target-rules.ts). */
export const CLOUD_FAULT_ACTIONS: Readonly<Record<'aws' | 'azure', readonly FaultAction[]>> = { aws: ['kill', 'stop', 'restart'], azure: [] };

/** Why a cloud target does not apply an action. */
export const CLOUD_FAULT_REFUSALS: Readonly<Record<'aws' | 'azure', string>> = {
  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/security-group-connection-tracking.html: "When you change a
  // security group rule, its tracked connections are not immediately interrupted"; network ACLs would cut them, but
  // they apply to a whole subnet, which the cluster's other nodes share.
  aws:
    'partition is not available on aws: a security-group change does not cut the Erlang distribution connections already open (security groups track connections and keep allowing them until they time out), and a network ACL, which would, applies to the whole subnet the other nodes share; use kill, stop or restart',
  azure: 'the Azure fault step (Run Command on the node VM) is not built yet; run fault scenarios on --target local or aws',
};

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** RabbitMQ node names as the boot script writes them (rabbit@ and a private IPv4 address): anything else is refused before it reaches a script. */
const NODE_NAME = /^rabbit@\d{1,3}(\.\d{1,3}){3}$/;

function checkedNodeName(nodeName: string): string {
  if (!NODE_NAME.test(nodeName)) throw new Error(`expected a node name rabbit@<private IPv4 address>, got "${nodeName}"`);
  return nodeName;
}

/** Lines that stop the script unless this instance runs the node the fault is meant for (a wrong instance id must not take another node down). */
function sameNodeLines(nodeName: string): string[] {
  return [
    `EXPECTED=${quote(`NODENAME=${checkedNodeName(nodeName)}`)}`,
    'grep -qxF "$EXPECTED" /etc/rabbitmq/rabbitmq-env.conf || { echo "rmqbench: this instance does not run ${EXPECTED#NODENAME=} (/etc/rabbitmq/rabbitmq-env.conf: $(grep NODENAME /etc/rabbitmq/rabbitmq-env.conf || echo none))" >&2; exit 3; }',
  ];
}

/**
 * Prints, as JSON, every queue of the default virtual host with its type, leader and process id (`rabbitmqctl
 * list_queues` columns, rabbitmqctl(8): `leader` is set for quorum queues; a classic queue's node is in its `pid`).
 * Run as root through SSM, as the boot script runs it: the package's wrapper runs it as the rabbitmq user, with the node name from rabbitmq-env.conf.
 */
export function queueLeadersScript(): string {
  return ['set -euo pipefail', 'rabbitmqctl -q list_queues --formatter json name type leader pid'].join('\n');
}

/**
 * The node leading `queue`, from queueLeadersScript's output. A classic queue's pid prints as
 * `<rabbit@10.0.1.5.1.604.0>`: the node name and three numbers.
 */
export function queueLeader(output: string, queue: string): string {
  let queues: unknown;
  try {
    queues = JSON.parse(output.trim() || 'null');
  } catch {
    throw new Error(`rabbitmqctl list_queues printed no JSON: ${output.slice(0, 300)}`);
  }
  if (!Array.isArray(queues)) throw new Error(`rabbitmqctl list_queues printed no list of queues: ${output.slice(0, 300)}`);
  const found = (queues as { name?: unknown; leader?: unknown; pid?: unknown }[]).find((candidate) => candidate.name === queue);
  if (!found) {
    const names = queues.map((candidate: { name?: unknown }) => String(candidate.name)).join(', ');
    throw new Error(`queue ${queue} does not exist on the cluster (PerfTest declares it when it starts; queues: ${names || 'none'}), so its leader is unknown: is atSeconds before PerfTest has connected?`);
  }
  if (typeof found.leader === 'string' && found.leader !== '') return found.leader;
  const pid = typeof found.pid === 'string' ? /^<(.+)\.\d+\.\d+\.\d+>$/.exec(found.pid) : null;
  if (pid) return pid[1]!;
  throw new Error(`rabbitmqctl gave neither a leader nor a process id for queue ${queue}: ${JSON.stringify(found)}`);
}

/** A cluster node as the cloud fault step sees it. */
export interface CloudNode {
  /** The instance (or VM) id the script is sent to. */
  readonly id: string;
  /** rabbit@<private IPv4>. */
  readonly nodeName: string;
}

/** The node the fault hits: by index (in the order the nodes were listed, by launch time), or the leader of the benchmark queue, or the first other node. */
export function chooseFaultNode(nodes: readonly CloudNode[], which: FaultSpec['node'], leader?: string): CloudNode {
  if (nodes.length === 0) throw new Error('the cluster has no running node to fault');
  if (typeof which === 'number') {
    const node = nodes[which];
    if (!node) throw new Error(`fault.node ${which} is not a node of this cluster, which runs ${nodes.length} (0 to ${nodes.length - 1})`);
    return node;
  }
  if (leader === undefined) throw new Error(`fault.node "${which}" needs the leader of the benchmark queue`);
  const leading = nodes.find((node) => node.nodeName === leader);
  if (which === 'leader') {
    if (!leading) throw new Error(`the benchmark queue is led by ${leader}, which is none of the cluster's running instances (${nodes.map((node) => node.nodeName).join(', ')})`);
    return leading;
  }
  const follower = nodes.find((node) => node.nodeName !== leader);
  if (!follower) throw new Error(`the benchmark queue is led by ${leader} and no other node runs, so there is no follower to fault`);
  return follower;
}

/**
 * The script that applies `action` to the broker of the instance it runs on, after checking that the instance runs
 * `nodeName`:
 * - kill: SIGKILL to the node's Erlang VM (the pid it reports), no shutdown at all; the unit stays failed.
 * - stop: `systemctl stop rabbitmq-server`, whose ExecStop is `rabbitmqctl stop` (an orderly shutdown).
 * - restart: stop, then start; `systemctl start` of the Type=notify unit returns once the broker has booted.
 */
export function faultScript(action: Exclude<FaultAction, 'partition'>, nodeName: string): string {
  const lines = ['set -euo pipefail', ...sameNodeLines(nodeName)];
  switch (action) {
    case 'kill':
      // The node's own Erlang VM, by the pid it reports (os:getpid/0), not by process name: exactly this node's broker.
      lines.push(
        "BROKER_PID=$(rabbitmqctl -q eval 'list_to_integer(os:getpid()).' | tr -dc '0-9')",
        '[ -n "$BROKER_PID" ] || { echo "rmqbench: the broker did not report its pid: is it running?" >&2; exit 4; }',
        'kill -KILL "$BROKER_PID"',
        'for attempt in $(seq 1 50); do kill -0 "$BROKER_PID" 2> /dev/null || break; sleep 0.1; done',
        'if kill -0 "$BROKER_PID" 2> /dev/null; then echo "rmqbench: the broker (pid $BROKER_PID) still runs 5 s after SIGKILL" >&2; exit 5; fi',
      );
      break;
    case 'stop':
      lines.push('systemctl stop rabbitmq-server');
      break;
    case 'restart':
      lines.push('systemctl stop rabbitmq-server', 'systemctl start rabbitmq-server', 'rabbitmqctl -q await_startup --timeout 300');
      break;
  }
  lines.push(`echo "rmqbench: ${action} applied to \${EXPECTED#NODENAME=}"`);
  return lines.join('\n');
}

/** The heal: starts the broker again with its data (it rejoins the cluster as it boots) and waits until it runs. */
export function healScript(nodeName: string): string {
  return [
    'set -euo pipefail',
    ...sameNodeLines(nodeName),
    'systemctl start rabbitmq-server',
    'rabbitmqctl -q await_startup --timeout 300',
    'echo "rmqbench: started ${EXPECTED#NODENAME=} again"',
  ].join('\n');
}

/** What a cloud target records of a fault it applied without a lost-message verifier beside PerfTest. */
export const notCountedReason = (target: string) =>
  `lost messages not counted on ${target}: the lost-message verifier runs on the local target only (the load generator has no Node.js to run it), so lostMessages, duplicatedMessages, unconfirmedAtFault, recoverySeconds, unavailableSeconds and reconnects were not measured`;
