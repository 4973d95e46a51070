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
export const CLOUD_FAULT_ACTIONS: Readonly<Record<'aws' | 'azure', readonly FaultAction[]>> = { aws: ['kill', 'stop', 'restart'], azure: ['kill', 'stop', 'restart'] };

/** Why a cloud target does not apply an action. */
export const CLOUD_FAULT_REFUSALS: Readonly<Record<'aws' | 'azure', string>> = {
  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/security-group-connection-tracking.html: "When you change a
  // security group rule, its tracked connections are not immediately interrupted"; network ACLs would cut them, but
  // they apply to a whole subnet, which the cluster's other nodes share.
  aws:
    'partition is not available on aws: a security-group change does not cut the Erlang distribution connections already open (security groups track connections and keep allowing them until they time out), and a network ACL, which would, applies to the whole subnet the other nodes share; use kill, stop or restart',
  // The nodes share their subnet's network security group (bicep/modules/network.bicep); a rule change there leaves
  // open flows alone unless the NSG's flushConnection re-evaluates them
  // (https://learn.microsoft.com/javascript/api/@azure-rest/arm-network/networksecuritygrouppropertiesformat).
  azure:
    'partition is not available on azure: the nodes share their subnet\'s network security group, and a rule change there does not cut the Erlang distribution connections already open (unless the group re-evaluates its flows, which rmqbench does not set up); use kill, stop or restart',
};

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * RabbitMQ node names as the boot scripts make them: rabbit@<private IPv4> on AWS, rabbit@<host name> on Azure
 * (rabbit@<hostname -s>, RabbitMQ's default). Anything else is refused before it reaches a script.
 */
const NODE_NAME = /^rabbit@[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/;

function checkedNodeName(nodeName: string): string {
  if (!NODE_NAME.test(nodeName)) throw new Error(`expected a node name rabbit@<private IPv4 address or host name>, got "${nodeName}"`);
  return nodeName;
}

/**
 * Lines that stop the script unless this instance runs the node the fault is meant for (a wrong instance id must not
 * take another node down). The node's name is NODENAME in /etc/rabbitmq/rabbitmq-env.conf where the boot script
 * wrote one (AWS), else RabbitMQ's default rabbit@<hostname -s> (Azure): it is read from files, not asked of the
 * broker, which may be down (the heal).
 */
function sameNodeLines(nodeName: string): string[] {
  return [
    `EXPECTED=${quote(checkedNodeName(nodeName))}`,
    // The file is absent on Azure nodes: sed's failure there must not end the script (set -e with pipefail).
    "THIS_NODE=''",
    'if [ -f /etc/rabbitmq/rabbitmq-env.conf ]; then THIS_NODE=$(sed -n "s/^NODENAME=//p" /etc/rabbitmq/rabbitmq-env.conf | tail -n 1); fi',
    '[ -n "$THIS_NODE" ] || THIS_NODE="rabbit@$(hostname -s)"',
    '[ "$THIS_NODE" = "$EXPECTED" ] || { echo "rmqbench: this instance does not run $EXPECTED (it runs $THIS_NODE)" >&2; exit 3; }',
  ];
}

/**
 * Prints, as one JSON object, where the queues of the default virtual host are led, from two views (rabbitmqctl(8)):
 * `queues`, `rabbitmqctl list_queues name type leader` (`leader` is set for quorum queues; for classic queues 3.10
 * leaves it empty, and its JSON formatter prints a classic queue's pid without the node, e.g. "#PID<12755.1448.0>",
 * as seen on the simulated Azure nodes), and `local`, per running node, `list_queues --local` asked of that node
 * ("only return queues hosted on the target node": a classic queue's master, a quorum queue's leader). Run as root
 * through SSM or Run Command, as the boot scripts run rabbitmqctl (the package's wrapper switches to the rabbitmq
 * user); other nodes are reached with `-n` over the inter-node ports the cluster already opens to its members
 * (epmd, distribution and the CLI range). A node that does not answer is left out of `local`.
 */
export function queueLeadersScript(): string {
  return [
    'set -euo pipefail',
    "python3 - <<'RMQBENCH_PY'",
    'import json, subprocess',
    'def ctl(*args):',
    '    return json.loads(subprocess.run(["rabbitmqctl", "-q", *args, "--formatter", "json"], check=True, capture_output=True, text=True).stdout)',
    'found = {"queues": ctl("list_queues", "name", "type", "leader"), "local": {}}',
    'for node in ctl("cluster_status").get("running_nodes", []):',
    '    try:',
    '        found["local"][node] = [queue["name"] for queue in ctl("-n", node, "list_queues", "--local", "name")]',
    '    except (subprocess.CalledProcessError, ValueError):',
    '        pass',
    'print(json.dumps(found))',
    'RMQBENCH_PY',
  ].join('\n');
}

/** The node leading `queue`, from queueLeadersScript's output: its `leader`, else the one node that hosts it locally. */
export function queueLeader(output: string, queue: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(output.trim() || 'null');
  } catch {
    throw new Error(`the queue listing printed no JSON: ${output.slice(0, 300)}`);
  }
  const found = parsed as { queues?: unknown; local?: unknown } | null;
  if (!found || !Array.isArray(found.queues) || typeof found.local !== 'object' || found.local === null) {
    throw new Error(`the queue listing printed no queues and hosts: ${output.slice(0, 300)}`);
  }
  const queues = found.queues as { name?: unknown; leader?: unknown }[];
  const entry = queues.find((candidate) => candidate.name === queue);
  if (!entry) {
    const names = queues.map((candidate) => String(candidate.name)).join(', ');
    throw new Error(`queue ${queue} does not exist on the cluster (the load generator declares it when PerfTest and the verifier start; queues: ${names || 'none'}), so its leader is unknown: is atSeconds before they have connected?`);
  }
  if (typeof entry.leader === 'string' && entry.leader !== '') return entry.leader;
  const hosts = Object.entries(found.local as Record<string, unknown>).filter(([, names]) => Array.isArray(names) && names.includes(queue)).map(([node]) => node);
  if (hosts.length === 1) return hosts[0]!;
  throw new Error(`queue ${queue} has no leader column and ${hosts.length === 0 ? 'no running node' : `several nodes (${hosts.join(', ')})`} hosts it locally, so its leader is unknown`);
}

/** A cluster node as the cloud fault step sees it. */
export interface CloudNode {
  /** The instance (or VM) id the script is sent to. */
  readonly id: string;
  /** rabbit@<private IPv4>. */
  readonly nodeName: string;
}

/** The node the fault hits: by index (in the order the nodes were listed, by launch time), or the leader of the verifier's queue (rmqbench-verifier, where the lost messages are counted), or the first other node. */
export function chooseFaultNode(nodes: readonly CloudNode[], which: FaultSpec['node'], leader?: string): CloudNode {
  if (nodes.length === 0) throw new Error('the cluster has no running node to fault');
  if (typeof which === 'number') {
    const node = nodes[which];
    if (!node) throw new Error(`fault.node ${which} is not a node of this cluster, which runs ${nodes.length} (0 to ${nodes.length - 1})`);
    return node;
  }
  if (leader === undefined) throw new Error(`fault.node "${which}" needs the leader of the verifier's queue`);
  const leading = nodes.find((node) => node.nodeName === leader);
  if (which === 'leader') {
    if (!leading) throw new Error(`the verifier's queue is led by ${leader}, which is none of the cluster's running instances (${nodes.map((node) => node.nodeName).join(', ')})`);
    return leading;
  }
  const follower = nodes.find((node) => node.nodeName !== leader);
  if (!follower) throw new Error(`the verifier's queue is led by ${leader} and no other node runs, so there is no follower to fault`);
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
  lines.push(`echo "rmqbench: ${action} applied to $EXPECTED"`);
  return lines.join('\n');
}

/** The heal: starts the broker again with its data (it rejoins the cluster as it boots) and waits until it runs. */
export function healScript(nodeName: string): string {
  return [
    'set -euo pipefail',
    ...sameNodeLines(nodeName),
    'systemctl start rabbitmq-server',
    'rabbitmqctl -q await_startup --timeout 300',
    'echo "rmqbench: started $EXPECTED again"',
  ].join('\n');
}

/**
 * What a cloud target records of a fault it applied whose lost messages it could not count: the lost-message verifier
 * beside PerfTest (lambdas/start-repetition/verifier-lines.ts) left no usable output (`why`: cut short, failed to
 * connect, not uploaded, the fault before its start), or none ran (Kafka).
 */
export const notCountedReason = (target: string, why: string) =>
  `lost messages not counted on ${target}: ${why}, so lostMessages, duplicatedMessages, unconfirmedAtFault, recoverySeconds, unavailableSeconds and reconnects were not measured`;

/**
 * The STS session tag the AWS fault step assumes its node role with: the cluster stack's name. The role's SendCommand
 * grant requires the instance's aws:cloudformation:stack-name tag to equal it (cdk/BenchmarkController.ts FaultNodeRole).
 */
export const CLUSTER_STACK_SESSION_TAG = 'rmqbench:cluster-stack';
