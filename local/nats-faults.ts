import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { RawRepetition } from '../core/results/ingest';
import { natsRunSettings } from '../core/nats/nats-load-args';
import { natsVerifierArgs } from '../core/nats/nats-verifier-output';
import type { BrokerRepetitionOptions } from './broker-repetition';
import {
  applyBrokerFault,
  withFailover,
  healBrokerFault,
  type BrokerFaultState,
  type FaultableCluster,
  type HeldRepetition,
} from './broker-faults';
import type { NatsNode } from './nats-cluster';
import { natsCli, runNatsRepetition, type NatsClusterHandle } from './nats-target';
import { ProcessLostMessageVerifier } from './process-verifier';

/** A NATS repetition started in the background, with its verifier and fault when the workload has one. */
export interface StartedNatsRepetition {
  readonly raw: Promise<RawRepetition>;
  readonly verifier?: ProcessLostMessageVerifier;
  readonly fault?: BrokerFaultState;
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
  const fault: BrokerFaultState = { spec };
  const load = runNatsRepetition(options, (loadStream) => void alignLeaders(handle, loadStream, stream));
  const raw = withFailover(load, verifier, fault, () => handle.nats.restartStoppedNodes());
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

/** The NATS cluster as the shared fault steps see it (local/broker-faults.ts). */
function faultable(handle: NatsClusterHandle): FaultableCluster<NatsNode> {
  const { nats } = handle;
  return {
    nodes: nats.nodes,
    nameOf: (node) => node.name,
    isRunning: (node) => nats.isRunning(node),
    leaderOf: (stream) => nats.streamLeader(stream),
    killNode: (node) => nats.killNode(node),
    stopNode: (node) => nats.stopNode(node),
    startNode: (node) => nats.startNode(node),
  };
}

/** InjectFault on a NATS cluster: `leader` is the node leading the verifier's stream. */
export const applyNatsFault = (handle: NatsClusterHandle, started: HeldRepetition) =>
  applyBrokerFault(faultable(handle), started);

/** HealFault on a NATS cluster: the node starts again with its store and catches up (its /healthz is ok). */
export const healNatsFault = (handle: NatsClusterHandle, started: HeldRepetition) =>
  healBrokerFault(faultable(handle), started);
