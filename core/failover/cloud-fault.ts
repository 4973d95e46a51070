import type { FaultAction, FaultSpec } from '../plan/plan-schema';

/**
 * The fault step on a cloud node (AWS: SSM Run Command on the node's instance): the shell scripts it runs there and
 * the choice of node. Pure, so that the scripts are run for real on simulated EC2 nodes
 * (test/simulated-vm/aws-node.integration.test.ts) and the choice is tested on recorded answers.
 *
 * The node's broker is the `rabbitmq-server` systemd unit of Team RabbitMQ's RPM (cdk/user-data/rabbitmq-node.ts
 * starts it with `systemctl enable --now rabbitmq-server`). That unit has no `Restart=` (it is left commented out in
 * rabbitmq-server packaging/RPMS/Fedora/rabbitmq-server.service), so a killed broker stays down until the heal starts
 * it.
 * The node name is `rabbit@<private IPv4>` (NODENAME in /etc/rabbitmq/rabbitmq-env.conf, written by the same script),
 * which is how a node name is matched to its instance.
 */

/**
 * The fault actions each cloud target applies: all of them. `partition` is a host firewall rule on the partitioned
 * node itself (partitionLines below), not a security-group or NSG change: both keep the distribution connections
 * already open. AWS: "When you change a security group rule, its tracked connections are not immediately interrupted"
 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/security-group-connection-tracking.html), and a network ACL,
 * which would cut them, applies to the whole subnet the other nodes share. Azure: the nodes share their subnet's NSG
 * (bicep/modules/network.bicep), whose rule changes leave open flows alone unless flushConnection re-evaluates them
 * (https://learn.microsoft.com/javascript/api/@azure-rest/arm-network/networksecuritygrouppropertiesformat).
 */
export const CLOUD_FAULT_ACTIONS: Readonly<Record<'aws' | 'azure', readonly FaultAction[]>> = {
  aws: ['kill', 'stop', 'restart', 'partition'],
  azure: ['kill', 'stop', 'restart', 'partition'],
};

/**
 * Lines a fault or heal script prints on the node right before it acts (the kill, the stop, the firewall rules; the
 * start): its wall clock in epoch milliseconds, which the fault step records as `appliedAt` / `healedAt` (scriptTime).
 * The command's own start is no measure: an Azure Run Command takes "about 20 seconds" at least
 * (https://learn.microsoft.com/azure/virtual-machines/linux/run-command, "Restrictions"), and a node's clock is
 * synchronized as the load generator's is (Amazon Time Sync Service; Azure's host time), on whose timeline the
 * verifier places it.
 */
export const STAMP_APPLYING = 'echo "rmqbench: applying at $(date +%s%3N)"';
export const STAMP_HEALING = 'echo "rmqbench: healing at $(date +%s%3N)"';

/** The time a script's STAMP_APPLYING or STAMP_HEALING line printed, if it printed one. */
export function scriptTime(output: string, what: 'applying' | 'healing'): Date | undefined {
  const stamp = new RegExp(`^rmqbench: ${what} at (\\d{13})$`, 'm').exec(output)?.[1];
  return stamp === undefined ? undefined : new Date(Number(stamp));
}

/** The nftables table of rmqbench's own that holds the partition (one name, so the heal deletes exactly it). */
export const PARTITION_TABLE = 'rmqbench_partition';

/**
 * The ports a partition cuts: epmd (4369) and the Erlang distribution listener (25672 = AMQP port + 20000), the
 * inter-node ports of RabbitMQ's networking guide (https://www.rabbitmq.com/docs/networking#ports). AMQP 5672, the
 * management API 15672, and the HTTPS the SSM agent and Azure's VM agent use stay open, so the load generator still
 * reaches the node (and sees it refuse once it pauses) and the heal still reaches it.
 */
export const PARTITIONED_PORTS = [4369, 25672] as const;

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * RabbitMQ node names as the boot scripts make them: rabbit@<private IPv4> on AWS, rabbit@<host name> on Azure
 * (rabbit@<hostname -s>, RabbitMQ's default). Anything else is refused before it reaches a script.
 */
const NODE_NAME = /^rabbit@[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/;

function checkedNodeName(nodeName: string): string {
  if (!NODE_NAME.test(nodeName))
    throw new Error(`expected a node name rabbit@<private IPv4 address or host name>, got "${nodeName}"`);
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
    'if [ -f /etc/rabbitmq/rabbitmq-env.conf ]; then ' +
      'THIS_NODE=$(sed -n "s/^NODENAME=//p" /etc/rabbitmq/rabbitmq-env.conf | tail -n 1); fi',
    '[ -n "$THIS_NODE" ] || THIS_NODE="rabbit@$(hostname -s)"',
    '[ "$THIS_NODE" = "$EXPECTED" ] || ' +
      '{ echo "rmqbench: this instance does not run $EXPECTED (it runs $THIS_NODE)" >&2; exit 3; }',
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
 * (epmd, distribution and the CLI range). A node that does not answer is left out of `local`. `local` is asked only
 * when a queue has no leader node in the first view (every queue of a quorum topology has one).
 */
export function queueLeadersScript(): string {
  return [
    'set -euo pipefail',
    "python3 - <<'RMQBENCH_PY'",
    'import json, subprocess',
    'def ctl(*args):',
    '    return json.loads(subprocess.run(["rabbitmqctl", "-q", *args, "--formatter", "json"], ' +
      'check=True, capture_output=True, text=True).stdout)',
    'found = {"queues": ctl("list_queues", "name", "type", "leader"), "local": {}}',
    // Each node's own listing only when a queue has no leader node (a classic queue): every rabbitmqctl call starts an
    // Erlang VM, and a quorum topology's leaders are all known from the first, so the fault comes sooner.
    'if any(not str(queue.get("leader") or "").startswith("rabbit@") for queue in found["queues"]):',
    '    for node in ctl("cluster_status").get("running_nodes", []):',
    '        try:',
    '            found["local"][node] = [q["name"] for q in ctl("-n", node, "list_queues", "--local", "name")]',
    '        except (subprocess.CalledProcessError, ValueError):',
    '            pass',
    'print(json.dumps(found))',
    'RMQBENCH_PY',
  ].join('\n');
}

/** The queue whose leader was asked for is not (yet) on the cluster: its declaration may still be on its way. */
export class QueueNotDeclaredError extends Error {
  override readonly name = 'QueueNotDeclaredError';
}

/**
 * The node leading `queue`, from queueLeadersScript's output: its `leader`, else the one node that hosts it locally.
 */
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
    throw new QueueNotDeclaredError(
      `queue ${queue} does not exist on the cluster (the load generator declares it when PerfTest and the verifier ` +
        `start; queues: ${names || 'none'}), so its leader is unknown: is atSeconds before they have connected?`,
    );
  }
  if (typeof entry.leader === 'string' && entry.leader !== '') return entry.leader;
  const hosts = Object.entries(found.local as Record<string, unknown>)
    .filter(([, names]) => Array.isArray(names) && names.includes(queue))
    .map(([node]) => node);
  if (hosts.length === 1) return hosts[0]!;
  throw new Error(
    `queue ${queue} has no leader column and ` +
      `${hosts.length === 0 ? 'no running node' : `several nodes (${hosts.join(', ')})`} hosts it locally, ` +
      `so its leader is unknown`,
  );
}

/** A cluster node as the cloud fault step sees it. */
export interface CloudNode {
  /** The instance (or VM) id the script is sent to. */
  readonly id: string;
  /** rabbit@<private IPv4>. */
  readonly nodeName: string;
}

/**
 * The node the fault hits: by index (in the order the nodes were listed, by launch time), or the leader of the
 * verifier's queue (rmqbench-verifier, where the lost messages are counted), or the first other node.
 */
export function chooseFaultNode(nodes: readonly CloudNode[], which: FaultSpec['node'], leader?: string): CloudNode {
  if (nodes.length === 0) throw new Error('the cluster has no running node to fault');
  if (typeof which === 'number') {
    const node = nodes[which];
    if (!node)
      throw new Error(
        `fault.node ${which} is not a node of this cluster, which runs ${nodes.length} (0 to ${nodes.length - 1})`,
      );
    return node;
  }
  if (leader === undefined) throw new Error(`fault.node "${which}" needs the leader of the verifier's queue`);
  const leading = nodes.find((node) => node.nodeName === leader);
  if (which === 'leader') {
    if (!leading)
      throw new Error(
        `the verifier's queue is led by ${leader}, which is none of the cluster's running instances ` +
          `(${nodes.map((node) => node.nodeName).join(', ')})`,
      );
    return leading;
  }
  const follower = nodes.find((node) => node.nodeName !== leader);
  if (!follower)
    throw new Error(
      `the verifier's queue is led by ${leader} and no other node runs, so there is no follower to fault`,
    );
  return follower;
}

/**
 * Lines that make sure `nft` is there. Neither image is known to ship it: the AL2023 release notes list nftables
 * (nftables-1.0.4-3.amzn2023.0.3) among the core repository's packages but not among the default AMI's
 * (https://docs.aws.amazon.com/linux/al2023/release-notes/relnotes-2023.12.20260803.html), and Ubuntu packages it for
 * 24.04 (nftables 1.0.9-1build1, https://documentation.ubuntu.com/security/docs/security-features/network/firewall)
 * without saying the server image installs it. So the node boots install it (cdk/user-data/rabbitmq-node.ts,
 * bicep/cloud-init/rmqbench-node-setup.sh), non-fatally, and a node whose boot could not gets it here (the node has
 * NAT egress), seconds later than the fault step's appliedAt.
 */
const ENSURE_NFT_LINES = [
  'if ! command -v nft > /dev/null; then',
  '  echo "rmqbench: nft is missing (the boot installs nftables); installing it now" >&2',
  '  if command -v dnf > /dev/null; then dnf install -y -q nftables; ' +
    'else DEBIAN_FRONTEND=noninteractive apt-get install -y -q nftables; fi',
  'fi',
];

/**
 * The latest a partition is noticed after its rules are in place: RabbitMQ's default net_ticktime of 60 s declares a
 * silent peer down after 45 to 75 s (https://www.rabbitmq.com/docs/nettick). A heal sooner than this may remove the
 * cut before any node paused, and the repetition would measure nothing of it.
 */
export const PARTITION_DETECTION_SECONDS = 75;

/**
 * The partition: a table of rmqbench's own whose input and output chains drop every TCP packet to or from epmd and the
 * distribution port on any interface but loopback (the node's own CLI reaches its broker over loopback, also through
 * its private address). A filter rule sees every packet, those of established connections included (base chains "see
 * packets flowing through your Linux TCP/IP stack"; an accept passes the packet on to the hook's other base chains,
 * while a drop is final: https://wiki.nftables.org/wiki-nftables/index.php/Configuring_chains), so it cuts the Erlang
 * distribution connections already open, which a security-group or NSG change does not. The other nodes then see
 * this node's ticks stop, and after net_ticktime (60 s by default, so 45 to 75 s:
 * https://www.rabbitmq.com/docs/nettick) each side declares the other down; with `cluster_partition_handling =
 * pause_minority` (core/broker/broker-config.ts; https://www.rabbitmq.com/docs/partitions) this node, alone, pauses
 * (its
 * listeners stop) and the majority keeps serving.
 * Deleting the table first makes the script idempotent (a retried step does not stack rules); `delete table` of a
 * table just declared is the form nftables 1.0.4 (AL2023) parses, which lacks the newer `destroy`.
 *
 * A rule that outlives a failed heal cannot outlive the run: the cluster's VMs are per run and destroyed at teardown,
 * and the table is not saved anywhere a reboot would reload it.
 */
function partitionLines(): string[] {
  const ports = `{ ${PARTITIONED_PORTS.join(', ')} }`;
  // The same rules on both hooks; only the interface match differs (iifname on input, oifname on output).
  const chain = (hook: 'input' | 'output') => [
    `  chain ${hook} {`,
    `    type filter hook ${hook} priority -10; policy accept;`,
    `    ${hook === 'input' ? 'iifname' : 'oifname'} "lo" accept`,
    `    tcp dport ${ports} drop`,
    `    tcp sport ${ports} drop`,
    '  }',
  ];
  return [
    ...ENSURE_NFT_LINES,
    "nft -f - <<'RMQBENCH_NFT'",
    `table inet ${PARTITION_TABLE}`,
    `delete table inet ${PARTITION_TABLE}`,
    `table inet ${PARTITION_TABLE} {`,
    ...chain('input'),
    ...chain('output'),
    '}',
    'RMQBENCH_NFT',
  ].flatMap((line) => (line.startsWith('nft -f') ? [STAMP_APPLYING, line] : [line]));
}

/**
 * The script that applies `action` to the broker of the instance it runs on, after checking that the instance runs
 * `nodeName`:
 * - kill: SIGKILL to the node's Erlang VM (the pid it reports), no shutdown at all; the unit stays failed.
 * - stop: `systemctl stop rabbitmq-server`, whose ExecStop is `rabbitmqctl stop` (an orderly shutdown).
 * - restart: stop, then start; `systemctl start` of the Type=notify unit returns once the broker has booted.
 * - partition: the node's own firewall drops its inter-node traffic (partitionLines); the broker keeps running until
 *   the cluster notices, then pauses.
 */
export function faultScript(action: FaultAction, nodeName: string): string {
  const lines = ['set -euo pipefail', ...sameNodeLines(nodeName)];
  switch (action) {
    case 'kill':
      // The node's own Erlang VM, by the pid it reports (os:getpid/0), not by process name: exactly this node's broker.
      lines.push(
        "BROKER_PID=$(rabbitmqctl -q eval 'list_to_integer(os:getpid()).' | tr -dc '0-9')",
        '[ -n "$BROKER_PID" ] || { echo "rmqbench: the broker did not report its pid: is it running?" >&2; exit 4; }',
        STAMP_APPLYING,
        'kill -KILL "$BROKER_PID"',
        'for attempt in $(seq 1 50); do kill -0 "$BROKER_PID" 2> /dev/null || break; sleep 0.1; done',
        'if kill -0 "$BROKER_PID" 2> /dev/null; then ' +
          'echo "rmqbench: the broker (pid $BROKER_PID) still runs 5 s after SIGKILL" >&2; exit 5; fi',
      );
      break;
    case 'stop':
      lines.push(STAMP_APPLYING, 'systemctl stop rabbitmq-server');
      break;
    case 'restart':
      lines.push(
        STAMP_APPLYING,
        'systemctl stop rabbitmq-server',
        'systemctl start rabbitmq-server',
        'rabbitmqctl -q await_startup --timeout 300',
      );
      break;
    case 'partition':
      lines.push(...partitionLines());
      break;
  }
  lines.push(`echo "rmqbench: ${action} applied to $EXPECTED"`);
  return lines.join('\n');
}

/** How long a partition's heal waits for the paused node to resume by itself before it restarts the broker. */
export const HEAL_RESTART_AFTER_SECONDS = 90;

/**
 * The heal of `action` on the node it hit. kill and stop: start the broker again with its data (it rejoins the cluster
 * as it boots). partition: delete the firewall table (when present: a retried heal finds none); the paused node sees
 * the majority again and resumes by itself (pause_minority), or is restarted once when it has not after
 * HEAL_RESTART_AFTER_SECONDS. Either way the script returns once the broker runs
 * (`rabbitmqctl await_startup` also waits for a paused node to resume).
 */
export function healScript(nodeName: string, action: FaultAction): string {
  const lines = ['set -euo pipefail', ...sameNodeLines(nodeName)];
  if (action === 'partition') {
    lines.push(
      STAMP_HEALING,
      `if nft list table inet ${PARTITION_TABLE} > /dev/null 2>&1; then nft delete table inet ${PARTITION_TABLE}; fi`,
      // A node paused by pause_minority starts its rabbit application again by itself once it sees the majority
      // (https://www.rabbitmq.com/docs/partitions, "Pause-minority mode"); until it has begun to, await_startup
      // fails at once with rabbit_is_not_running, so it is asked again until the node runs or 300 s have passed
      // (found on the simulated nodes under load: one attempt raced the node's own restart).
      // A paused node does not always resume by itself (rabbitmq/rabbitmq-server#2175: a node that "did not try to
      // reconnect"; on the simulated nodes once, a start that await_startup saw still running after 300 s): one that
      // has not resumed HEAL_RESTART_AFTER_SECONDS after the heal is restarted once, as the partitions guide's manual
      // recovery restarts the nodes of the untrusted side (https://www.rabbitmq.com/docs/partitions, "Recovering From
      // a Split-Brain"), and the output says so.
      'HEAL_DEADLINE=$((SECONDS + 300))',
      `HEAL_RESTART_AT=$((SECONDS + ${HEAL_RESTART_AFTER_SECONDS}))`,
      'until HEAL_OUTPUT=$(rabbitmqctl -q await_startup --timeout 60 2>&1); do',
      '  if [ "$SECONDS" -ge "$HEAL_DEADLINE" ]; then echo "$HEAL_OUTPUT" >&2; exit 1; fi',
      '  if [ -n "$HEAL_RESTART_AT" ] && [ "$SECONDS" -ge "$HEAL_RESTART_AT" ]; then',
      `    echo "rmqbench: $EXPECTED had not resumed ${HEAL_RESTART_AFTER_SECONDS} s after the heal: restarting it"`,
      '    systemctl restart rabbitmq-server',
      '    HEAL_RESTART_AT=',
      '  fi',
      '  sleep 2',
      'done',
      'echo "rmqbench: partition of $EXPECTED healed"',
    );
  } else {
    lines.push(
      STAMP_HEALING,
      'systemctl start rabbitmq-server',
      'rabbitmqctl -q await_startup --timeout 300',
      'echo "rmqbench: started $EXPECTED again"',
    );
  }
  return lines.join('\n');
}

/**
 * What a cloud target records of a fault it applied whose lost messages it could not count: the lost-message verifier
 * beside PerfTest (lambdas/start-repetition/verifier-lines.ts) left no usable output (`why`: cut short, failed to
 * connect, not uploaded, the fault before its start or after its window); Kafka's and NATS's verifiers alike
 * (lambdas/shared/broker-verifier-lines.ts).
 */
export const notCountedReason = (target: string, why: string) =>
  `lost messages not counted on ${target}: ${why}, so lostMessages, duplicatedMessages, unconfirmedAtFault, ` +
  `recoverySeconds, unavailableSeconds and reconnects were not measured`;

/**
 * The STS session tag the AWS fault step assumes its node role with: the cluster stack's name. The role's SendCommand
 * grant requires the instance's aws:cloudformation:stack-name tag to equal it (cdk/BenchmarkController.ts
 * FaultNodeRole).
 */
export const CLUSTER_STACK_SESSION_TAG = 'rmqbench:cluster-stack';
