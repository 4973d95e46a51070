import { smokeTest as publishAndConsume } from '../../lambdas/smoke-test/logic';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { smokeTestKafka } from '../kafka-target';
import { smokeTestNats } from '../nats-target';
import type { LocalRun } from './local-run';

/** LaunchCluster: local nodes (the first cluster was prelaunched while the store came up). */
export const launchCluster = (run: LocalRun) => async (input: { cluster: ScheduledCluster }) => {
  const group = run.groups[input.cluster.index]!;
  run.emit({ type: 'cluster-starting', nodes: group.nodes, topology: group.topology.type, broker: group.broker });
  const prelaunched = input.cluster.index === 0 ? run.prelaunch.take() : undefined;
  // The prelaunched cluster began booting before the store was up: count from then.
  const started = prelaunched ? run.prelaunch.startedAt : Date.now();
  run.handles.set(input.cluster.clusterId, await (prelaunched ?? run.target.launch(group, input.cluster.index)));
  run.emit({ type: 'cluster-ready', seconds: (Date.now() - started) / 1000 });
  return { clusterId: input.cluster.clusterId, readyBy: new Date(Date.now() + 600_000).toISOString() };
};

/** CheckClusterReady: the local launch returns once the cluster has formed, so the first poll finds it ready. */
export const checkClusterReady = (run: LocalRun) => async (input: { launch: { clusterId: string } }) => {
  if (!run.handles.has(input.launch.clusterId)) throw new Error(`cluster ${input.launch.clusterId} is not running`);
  return { ready: true };
};

/**
 * SmokeTest: the cloud's check (one message published and consumed back), through the first node; for Kafka, the
 * brokers' registration; for NATS, a message published to a replicated stream and read back with the NATS CLI.
 */
export const smokeTest = (run: LocalRun) => async (input: { launch: { clusterId: string } }) => {
  const handle = run.handleOf(input.launch.clusterId);
  if (handle.broker === 'kafka') return smokeTestKafka(handle);
  if (handle.broker === 'nats') return smokeTestNats(handle);
  return publishAndConsume(handle.cluster.amqpUri(handle.cluster.nodes[0]!));
};

/**
 * TeardownCluster: PerfTest still running ends, the nodes stop, their data goes; done when it returns (no
 * CheckTeardown).
 */
export const teardownCluster = (run: LocalRun) => async (input: { cluster: ScheduledCluster }) => {
  await run.teardown(input.cluster.clusterId);
  return { done: true };
};
