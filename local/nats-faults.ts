import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { RawRepetition } from '../core/results/ingest';
import type { FaultSpec } from '../core/plan/plan-schema';
import { natsRunSettings } from '../core/nats/nats-load-args';
import { natsVerifierArgs } from '../core/nats/nats-verifier-output';
import { LOCAL_PARTITION_REFUSAL } from '../core/plan/target-rules';
import type { BrokerRepetitionOptions } from './broker-repetition';
import type { NatsNode } from './nats-cluster';
import { natsCli, runNatsRepetition, type NatsClusterHandle } from './nats-target';
import { ProcessLostMessageVerifier } from './process-verifier';
import { waitFor } from './ports';

/** The fault of a running repetition; `nodeName` is filled in when it is applied. */
export interface NatsFaultState {
  readonly spec: FaultSpec;
  nodeName?: string;
}

/** A NATS repetition started in the background, with its verifier and fault when the workload has one. */
export interface StartedNatsRepetition {
  readonly raw: Promise<RawRepetition>;
  readonly verifier?: ProcessLostMessageVerifier;
  readonly fault?: NatsFaultState;
}

/** A started repetition as the workflow's fault steps hold it (its verifier may be RabbitMQ's). */
interface HeldRepetition {
  readonly verifier?: object;
  readonly fault?: NatsFaultState;
}

/** The NATS verifier and fault of a started repetition, or an error saying it has none. */
function natsFault(
  started: HeldRepetition,
  step: string,
): { verifier: ProcessLostMessageVerifier; fault: NatsFaultState } {
  const { verifier, fault } = started;
  if (!fault || !(verifier instanceof ProcessLostMessageVerifier))
    throw new Error(`this repetition has no fault to ${step}`);
  return { verifier, fault };
}

/**
 * StartRepetition on a NATS cluster. With a fault: first the lost-message verifier on a stream of its own (the
 * workload's storage, replicas, retention and limits), then the load; once the load client has created its stream,
 * that stream's leadership is moved to the node leading the verifier's (`nats stream cluster step-down --preferred`,
 * https://docs.nats.io/running-a-nats-service/nats_admin/jetstream_admin/administration), so that "kill the leader"
 * hits both, as the RabbitMQ path declares the benchmark queues and the verifier's queue on one leader. When the load
 * ends, the verifier drains and its counts join the raw output; a node the fault left down is started again.
 */
export async function startNatsRepetition(
  options: BrokerRepetitionOptions<NatsClusterHandle>,
): Promise<StartedNatsRepetition> {
  const { handle, scenario } = options;
  const spec = scenario.workload.fault;
  if (!spec) return { raw: runNatsRepetition(options) };
  const suffix = randomBytes(3).toString('hex');
  const stream = `rmqbench-verifier-${suffix}`;
  const outputFile = join(options.outputDir, 'nats-verifier.jsonl');
  const verifier = await ProcessLostMessageVerifier.start({
    broker: 'NATS',
    command: handle.binaries.load,
    args: [
      ...natsVerifierArgs({
        servers: scenario.cluster.connection === 'direct' ? handle.nats.clientUrls.slice(0, 1) : handle.nats.clientUrls,
        stream,
        subject: `rmqbench.verifier.${suffix}`,
        settings: natsRunSettings(scenario.workload, handle.nats.nodes.length),
      }),
      '-output',
      outputFile,
    ],
    outputFile,
    resource: stream,
    control: { kind: 'signals' },
    outputDir: options.outputDir,
    processes: options.processes,
  });
  const fault: NatsFaultState = { spec };
  const raw = runNatsRepetition(options, (loadStream) => void alignLeaders(handle, loadStream, stream)).then(
    async (run) => {
      const counts = await verifier.finish();
      await handle.nats.restartStoppedNodes();
      const outcome = { action: spec.action, node: spec.node, ...(fault.nodeName ? { nodeName: fault.nodeName } : {}) };
      return { ...run, failover: { counts, fault: outcome } };
    },
    async (error: unknown) => {
      await verifier.abort();
      await handle.nats.restartStoppedNodes().catch(() => undefined);
      throw error;
    },
  );
  return { raw, verifier, fault };
}

/**
 * Moves the load stream's leadership to the verifier stream's leader. Best effort: when it fails (a single replica,
 * an election under way), the fault still hits the verifier's leader and the counts stay exact; only the load's
 * rates may then not show the fault.
 */
async function alignLeaders(handle: NatsClusterHandle, loadStream: string, verifierStream: string): Promise<void> {
  try {
    const leader = await handle.nats.streamLeader(verifierStream);
    const loadLeader = await handle.nats.streamLeader(loadStream);
    if (!leader || !loadLeader || leader === loadLeader) return;
    const server = handle.nats.clientUrls[0]!;
    await natsCli(handle, server, ['stream', 'cluster', 'step-down', loadStream, '--preferred', leader], 'align');
  } catch {
    // See above: the counts do not depend on it.
  }
}

/** The node a fault hits: `leader` leads the verifier's stream now, `follower` is another running node. */
async function faultNode(handle: NatsClusterHandle, stream: string, which: FaultSpec['node']): Promise<NatsNode> {
  const { nats } = handle;
  if (typeof which === 'number') return nats.nodes[which]!;
  const leader = await waitFor(
    () => nats.streamLeader(stream),
    10_000,
    () => `the verifier's stream ${stream} has had no leader for 10 s, so there is no ${which} to fault`,
    200,
  );
  if (which === 'leader') return nats.nodeByName(leader);
  const follower = nats.nodes.find((node) => node.name !== leader && nats.isRunning(node));
  if (!follower) throw new Error(`stream ${stream} is led by ${leader} and no other node runs: no follower to fault`);
  return follower;
}

/** InjectFault on a NATS cluster: kill, stop or restart the node; the verifier marks the moment. */
export async function applyNatsFault(
  handle: NatsClusterHandle,
  started: HeldRepetition,
): Promise<{ nodeName: string; appliedAtSeconds: number }> {
  const { fault, verifier } = natsFault(started, 'apply');
  if (fault.spec.action === 'partition') throw new Error(LOCAL_PARTITION_REFUSAL);
  const node = await faultNode(handle, verifier.resource, fault.spec.node);
  fault.nodeName = node.name;
  const appliedAtSeconds = verifier.markFault();
  switch (fault.spec.action) {
    case 'kill':
      await handle.nats.killNode(node);
      break;
    case 'stop':
      await handle.nats.stopNode(node);
      break;
    case 'restart':
      await handle.nats.stopNode(node);
      await handle.nats.startNode(node);
      break;
  }
  return { nodeName: node.name, appliedAtSeconds };
}

/** HealFault on a NATS cluster: the node starts again with its store and catches up (its /healthz is ok). */
export async function healNatsFault(
  handle: NatsClusterHandle,
  started: HeldRepetition,
): Promise<{ nodeName: string; healedAtSeconds: number }> {
  const { fault, verifier } = natsFault(started, 'heal');
  if (!fault.nodeName) throw new Error('this repetition has no applied fault to heal');
  const node = handle.nats.nodeByName(fault.nodeName);
  const healedAtSeconds = verifier.markHeal();
  await handle.nats.startNode(node);
  return { nodeName: node.name, healedAtSeconds };
}
