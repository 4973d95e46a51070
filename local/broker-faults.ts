import type { RawRepetition } from '../core/results/ingest';
import type { FaultSpec } from '../core/plan/plan-schema';
import { LOCAL_PARTITION_REFUSAL } from '../core/plan/target-rules';
import { waitFor } from './ports';
import { ProcessLostMessageVerifier } from './process-verifier';

/** The fault of a running repetition; `nodeName` is filled in when it is applied. */
export interface BrokerFaultState {
  readonly spec: FaultSpec;
  nodeName?: string;
}

/** A started repetition as the workflow's fault steps hold it (its verifier may be RabbitMQ's). */
export interface HeldRepetition {
  readonly verifier?: object;
  readonly fault?: BrokerFaultState;
}

/** What a fault needs of a local Kafka or NATS cluster. */
export interface FaultableCluster<Node> {
  readonly nodes: readonly Node[];
  /** The node's name in events and results (`kafka2`, `nats3`). */
  nameOf(node: Node): string;
  isRunning(node: Node): boolean;
  /** The name of the node leading the verifier's stream or partition now; undefined during an election. */
  leaderOf(resource: string): Promise<string | undefined>;
  killNode(node: Node): Promise<void>;
  stopNode(node: Node): Promise<void>;
  /** Starts it again on its data and waits until it has rejoined. */
  startNode(node: Node): Promise<void>;
}

/** The verifier and fault of a started repetition, or an error saying it has none. */
function heldFault(
  started: HeldRepetition,
  step: string,
): { verifier: ProcessLostMessageVerifier; fault: BrokerFaultState } {
  const { verifier, fault } = started;
  if (!fault || !(verifier instanceof ProcessLostMessageVerifier))
    throw new Error(`this repetition has no fault to ${step}`);
  return { verifier, fault };
}

function nodeNamed<Node>(cluster: FaultableCluster<Node>, name: string): Node {
  const node = cluster.nodes.find((candidate) => cluster.nameOf(candidate) === name);
  if (!node)
    throw new Error(`no node is named ${name} (nodes: ${cluster.nodes.map((n) => cluster.nameOf(n)).join(', ')})`);
  return node;
}

/** The node a fault hits: `leader` leads the verifier's `resource` now, `follower` is another running node. */
async function faultNode<Node>(
  cluster: FaultableCluster<Node>,
  resource: string,
  which: FaultSpec['node'],
): Promise<Node> {
  if (typeof which === 'number') return cluster.nodes[which]!;
  const leader = await waitFor(
    () => cluster.leaderOf(resource),
    10_000,
    () => `the verifier's ${resource} has had no leader for 10 s, so there is no ${which} to fault`,
    200,
  );
  if (which === 'leader') return nodeNamed(cluster, leader);
  const follower = cluster.nodes.find((node) => cluster.nameOf(node) !== leader && cluster.isRunning(node));
  if (!follower) throw new Error(`${resource} is led by ${leader} and no other node runs: no follower to fault`);
  return follower;
}

/** InjectFault on a Kafka or NATS cluster: kill, stop or restart the node; the verifier marks the moment. */
export async function applyBrokerFault<Node>(
  cluster: FaultableCluster<Node>,
  started: HeldRepetition,
): Promise<{ nodeName: string; appliedAtSeconds: number }> {
  const { fault, verifier } = heldFault(started, 'apply');
  if (fault.spec.action === 'partition') throw new Error(LOCAL_PARTITION_REFUSAL);
  const node = await faultNode(cluster, verifier.resource, fault.spec.node);
  const nodeName = cluster.nameOf(node);
  fault.nodeName = nodeName;
  const appliedAtSeconds = verifier.markFault();
  switch (fault.spec.action) {
    case 'kill':
      await cluster.killNode(node);
      break;
    case 'stop':
      await cluster.stopNode(node);
      break;
    case 'restart':
      await cluster.stopNode(node);
      await cluster.startNode(node);
      break;
  }
  return { nodeName, appliedAtSeconds };
}

/** HealFault on a Kafka or NATS cluster: the node starts again on its data and rejoins. */
export async function healBrokerFault<Node>(
  cluster: FaultableCluster<Node>,
  started: HeldRepetition,
): Promise<{ nodeName: string; healedAtSeconds: number }> {
  const { fault, verifier } = heldFault(started, 'heal');
  if (!fault.nodeName) throw new Error('this repetition has no applied fault to heal');
  const node = nodeNamed(cluster, fault.nodeName);
  const healedAtSeconds = verifier.markHeal();
  await cluster.startNode(node);
  return { nodeName: fault.nodeName, healedAtSeconds };
}

/**
 * A repetition's raw output with the verifier's counts joined once the load has ended (the verifier drains and reads
 * once more), after `afterRun` (start the nodes a fault left down, delete what the verifier made); on a failed load
 * the verifier is aborted and `afterRun` still runs, and the load's error is thrown.
 */
export async function withFailover(
  load: Promise<RawRepetition>,
  verifier: ProcessLostMessageVerifier,
  fault: BrokerFaultState,
  afterRun: () => Promise<void>,
): Promise<RawRepetition> {
  let run: RawRepetition;
  try {
    run = await load;
  } catch (error) {
    await verifier.abort();
    await afterRun().catch(() => undefined);
    throw error;
  }
  const counts = await verifier.finish();
  await afterRun();
  const { spec, nodeName } = fault;
  return {
    ...run,
    failover: { counts, fault: { action: spec.action, node: spec.node, ...(nodeName ? { nodeName } : {}) } },
  };
}
