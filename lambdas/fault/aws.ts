import type { EC2Client } from '@aws-sdk/client-ec2';
import { GetCommandInvocationCommand, SendCommandCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { chooseFaultNode, QueueNotDeclaredError, scriptTime, type CloudNode } from '../../core/failover/cloud-fault';
import { brokerFaultScripts, type BrokerFaultScripts, type FaultBroker } from '../../core/failover/cloud-broker-fault';
import type { FaultSpec } from '../../core/plan/plan-schema';
import { validatePlan } from '../../core/plan/plan';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { brokerNodes } from '../shared/aws-cluster-nodes';
import { commandFailureExcerpt } from '../../core/cloud/command-output';
import { clockOf } from './clock';

// The node listing lives in lambdas/shared (IngestRepetition uses it too, without this module's plan validation).
export { brokerNodes, clusterNodes, NODE_COMPONENT } from '../shared/aws-cluster-nodes';

/**
 * InjectFault / HealFault on AWS: the fault runs on the node's own instance through SSM Run Command
 * (AWS-RunShellScript),
 * the way StartRepetition runs PerfTest on the load generator. The node is chosen here: by index, or as the leader of
 * the lost-message verifier's queue (VERIFIER_QUEUE, which the verifier beside PerfTest declares through the load
 * balancer in every cloud repetition with a fault: lambdas/start-repetition/verifier-lines.ts), as the local target
 * chooses it (local/local-target.ts), so that the fault hits the queue whose messages are counted; that leader is
 * what `rabbitmqctl list_queues` on a node reports (chosen over the management API, which the
 * controller reaches only from the smoke test's VPC-attached function and with the admin secret: over SSM the fault
 * function needs neither, and the node answers with its own view of the cluster). On a Kafka or NATS cluster the
 * same steps use that broker's scripts (core/failover/cloud-broker-fault.ts): its brokers or servers, the leader of
 * the verifier's topic or stream (lambdas/shared/broker-verifier-lines.ts), its systemd unit.
 *
 * Each command is awaited within the invocation (GetCommandInvocation every 2 s): a kill or stop takes seconds, a
 * restart or heal the broker's boot (under a minute on the node types rmqbench launches), well inside the fault
 * function's 5-minute timeout (cdk/BenchmarkController.ts); the states around it (WaitForHeal, WaitForRepetition) are
 * the polling loops.
 */

/** What the workflow hands InjectFault and HealFault on AWS. */
export interface AwsFaultEvent {
  readonly action: 'inject' | 'heal';
  readonly runId: string;
  readonly plan: unknown;
  readonly item: ScheduledRepetition;
  readonly launch: { readonly clusterId: string };
  /** What StartRepetition returned: on AWS the PerfTest command's id and the load generator it runs on. */
  readonly started: { readonly startedAt: string; readonly commandId?: string; readonly instanceId?: string };
  /** HealFault only: what InjectFault returned. */
  readonly applied?: AppliedFault;
}

export interface HealedAwsFault {
  readonly nodeName: string;
  readonly healedAt: string;
  readonly healedAtSeconds: number;
}

export interface FaultClients {
  readonly ec2: EC2Client;
  readonly ssm: SSMClient;
}

export interface FaultTiming {
  /** Commands still unfinished at this time fail the state (the invocation's own end, less a margin). */
  readonly deadline: Date;
  readonly pollMs?: number;
  readonly now?: () => Date;
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Azure: the wait between calls refused with AuthorizationFailed (lambdas/fault/azure.ts whileUnauthorized). @default
   * 15 s
   */
  readonly authorizationRetryMs?: number;
}

const errorName = (error: unknown) => (error as { name?: string } | undefined)?.name ?? '';
const TERMINAL = ['Success', 'Failed', 'Cancelled', 'TimedOut'];

/**
 * Runs `script` on one instance and waits for it. GetCommandInvocation answers InvocationDoesNotExist until the
 * invocation appears, and Pending / InProgress / Delayed until it ends; StandardOutputContent and StandardErrorContent
 * hold the first 24,000 / 8,000 characters
 * (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetCommandInvocation.html).
 */
export async function runOnInstance(
  ssm: SSMClient,
  instanceId: string,
  script: string,
  timing: FaultTiming,
): Promise<string> {
  const { now, sleep } = clockOf(timing);
  const executionSeconds = Math.max(30, Math.floor((timing.deadline.getTime() - now().getTime()) / 1000));
  const sent = await ssm.send(
    new SendCommandCommand({
      InstanceIds: [instanceId],
      DocumentName: 'AWS-RunShellScript',
      Parameters: { commands: [script], executionTimeout: [String(executionSeconds)] },
      TimeoutSeconds: 60,
      Comment: 'rmqbench fault step',
    }),
  );
  const commandId = sent.Command?.CommandId;
  if (!commandId) throw new Error(`SendCommand to ${instanceId} returned no command id`);
  for (;;) {
    try {
      const invocation = await ssm.send(
        new GetCommandInvocationCommand({ CommandId: commandId, InstanceId: instanceId }),
      );
      const status = invocation.Status ?? 'Pending';
      if (status === 'Success') return invocation.StandardOutputContent ?? '';
      if (TERMINAL.includes(status)) throw new Error(`the fault ${endedInvocation(commandId, instanceId, invocation)}`);
    } catch (error) {
      if (errorName(error) !== 'InvocationDoesNotExist') throw error;
    }
    if (now().getTime() + (timing.pollMs ?? 2_000) > timing.deadline.getTime()) {
      throw new Error(
        `the fault command ${commandId} on ${instanceId} had not finished by ${timing.deadline.toISOString()}`,
      );
    }
    await sleep(timing.pollMs ?? 2_000);
  }
}

/** Where a fault runs: the cluster's running nodes, and a way to run a script on one and get its output. */
export interface FaultTarget {
  /** The target's name, for messages. */
  readonly target: 'aws' | 'azure';
  /** What the run's cluster is called there (stack, resource group). */
  readonly clusterId: string;
  /** The running nodes of the cluster's broker (RabbitMQ nodes, Kafka brokers or NATS servers). */
  nodes(broker: FaultBroker): Promise<CloudNode[]>;
  run(node: CloudNode, script: string): Promise<string>;
  /**
   * How the repetition's own PerfTest command ended, when it has already ended otherwise than in success (undefined
   * while it runs, or when the target cannot tell): a fault whose leader cannot be found then names the repetition's
   * failure, not the missing queue it caused.
   */
  repetitionEnded?(): Promise<string | undefined>;
  /** The step's clock and deadline: with it, a verifier queue not declared yet is waited for (else: asked once). */
  readonly timing?: FaultTiming;
}

/** The scenario's fault and its cluster's broker, from the plan the execution carries. */
function faultOf(plan: unknown, item: ScheduledRepetition): { spec: FaultSpec; broker: FaultBroker } {
  const scenario = validatePlan(plan, 'the execution input').scenarios.find(
    (candidate) => candidate.id === item.scenarioId,
  );
  if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in the plan`);
  if (!scenario.workload.fault) throw new Error(`scenario ${item.scenarioId} has no fault to apply`);
  return { spec: scenario.workload.fault, broker: scenario.cluster.broker ?? 'rabbitmq' };
}

const BROKER_NODES: Readonly<Record<FaultBroker, string>> = {
  rabbitmq: 'RabbitMQ node',
  kafka: 'Kafka broker',
  nats: 'NATS server',
};

/**
 * How long InjectFault waits for the verifier's queue to appear when it is not there yet at the fault's time, asking
 * again every VERIFIER_QUEUE_POLL_MS: the verifier declares it only once its JVM has compiled and started
 * (lambdas/start-repetition/verifier-lines.ts, Java source-file mode) after the per-run user was created, which on a
 * small or cold load generator can take longer than an early `atSeconds`. The fault's real time is what is recorded
 * (`appliedAtSeconds`), so a late fault is reported as late, never as on time.
 */
export const VERIFIER_QUEUE_WAIT_MS = 60_000;
export const VERIFIER_QUEUE_POLL_MS = 3_000;

/** What the leader lookup needs: the broker's scripts and the verifier's queue, topic or stream. */
interface LeaderLookup {
  readonly scripts: BrokerFaultScripts;
  readonly resource: string;
}

/**
 * The leader of the verifier's resource, asked of the first node that answers and knows it (a NATS stream is known to
 * its replicas only: the next node is asked).
 */
async function verifierQueueLeader(
  target: FaultTarget,
  nodes: readonly CloudNode[],
  { scripts, resource }: LeaderLookup,
): Promise<string> {
  const failures: string[] = [];
  const unaware: string[] = [];
  for (const node of nodes) {
    let output: string;
    try {
      output = await target.run(node, scripts.leaderScript(resource));
    } catch (error) {
      failures.push(`${node.id}: ${(error as Error).message}`);
      continue;
    }
    // An answer that names no leader ends the lookup (the brokers' views are the cluster's: asking another node would
    // not help); one that says the resource is not there yet is waited out by the caller.
    const leader = scripts.leaderOf(output, resource);
    if (leader !== undefined) return leader;
    unaware.push(node.nodeName);
  }
  if (unaware.length > 0)
    throw new QueueNotDeclaredError(
      `no node that answered (${unaware.join(', ')}) holds ${resource} (the load generator's verifier creates it ` +
        'when it starts), so its leader is unknown: is atSeconds before the verifier has started?' +
        `${failures.length > 0 ? ` Others failed: ${failures.join('; ')}` : ''}`,
    );
  throw new Error(`no node could be asked for the leader of ${resource}: ${failures.join('; ')}`);
}

/**
 * The verifier queue's leader, asked again while the queue is not declared yet (for VERIFIER_QUEUE_WAIT_MS, within
 * the step's deadline, while the repetition's command has not ended) when the target gives its timing; without it, one
 * answer.
 */
async function verifierQueueLeaderOnceDeclared(
  target: FaultTarget,
  nodes: readonly CloudNode[],
  lookup: LeaderLookup,
): Promise<string> {
  const timing = target.timing;
  if (!timing) return verifierQueueLeader(target, nodes, lookup);
  const { now, sleep } = clockOf(timing);
  const giveUpAt = Math.min(now().getTime() + VERIFIER_QUEUE_WAIT_MS, timing.deadline.getTime());
  for (;;) {
    try {
      return await verifierQueueLeader(target, nodes, lookup);
    } catch (error) {
      if (!(error instanceof QueueNotDeclaredError)) throw error;
      if (now().getTime() + VERIFIER_QUEUE_POLL_MS > giveUpAt) throw error;
      if ((await target.repetitionEnded?.().catch(() => undefined)) !== undefined) throw error;
      await sleep(VERIFIER_QUEUE_POLL_MS);
    }
  }
}

/**
 * The verifier queue's leader; when it cannot be found because the repetition's PerfTest command already failed (it
 * declares that queue when it starts), the error names that failure: no fault was injected into a repetition that was
 * not running.
 */
async function leaderOrRepetitionFailure(
  target: FaultTarget,
  nodes: readonly CloudNode[],
  lookup: LeaderLookup,
): Promise<string> {
  try {
    return await verifierQueueLeaderOnceDeclared(target, nodes, lookup);
  } catch (error) {
    const ended = await target.repetitionEnded?.().catch(() => undefined);
    if (ended === undefined) throw error;
    throw new Error(`no fault was injected: the repetition's PerfTest command had already ended: ${ended}`);
  }
}

const secondsSince = (start: string, at: Date) => Math.round((at.getTime() - Date.parse(start)) / 10) / 100;

/** What InjectFault returns on a cloud target (kept in the execution state as `started.faultApplied`). */
export interface AppliedFault {
  readonly nodeName: string;
  /** The instance id (AWS) or VM name (Azure) the fault hit. */
  readonly instanceId: string;
  readonly appliedAt: string;
  /** Seconds after StartRepetition sent PerfTest's command. */
  readonly appliedAtSeconds: number;
}

/** InjectFault on a cloud target: finds the node and applies the plan's action to it. */
export async function applyFault(
  target: FaultTarget,
  event: AwsFaultEvent,
  now: () => Date = () => new Date(),
): Promise<AppliedFault> {
  const { spec, broker } = faultOf(event.plan, event.item);
  const scripts = brokerFaultScripts(broker);
  const nodes = await target.nodes(broker);
  if (nodes.length === 0)
    throw new Error(`cluster ${target.clusterId} has no running ${BROKER_NODES[broker]} on ${target.target}`);
  const leader =
    typeof spec.node === 'number'
      ? undefined
      : await leaderOrRepetitionFailure(target, nodes, { scripts, resource: scripts.resource(event.item.index) });
  const node = chooseFaultNode(nodes, spec.node, leader);
  const sentAt = now();
  // The node's own clock right before it acted (STAMP_APPLYING), else the command's sending.
  const output = await target.run(node, scripts.faultScript(spec.action, node.nodeName));
  const appliedAt = scriptTime(output, 'applying') ?? sentAt;
  return {
    nodeName: node.nodeName,
    instanceId: node.id,
    appliedAt: appliedAt.toISOString(),
    appliedAtSeconds: secondsSince(event.started.startedAt, appliedAt),
  };
}

/**
 * HealFault on a cloud target, on the instance InjectFault hit: starts the broker it took down, or (partition) deletes
 * the firewall table it added; the action is the scenario's, from the plan the execution carries.
 */
export async function healFault(
  target: FaultTarget,
  event: AwsFaultEvent,
  now: () => Date = () => new Date(),
): Promise<HealedAwsFault> {
  const { applied } = event;
  if (!applied) throw new Error('HealFault needs what InjectFault applied (started.faultApplied)');
  const { spec, broker } = faultOf(event.plan, event.item);
  // The instance must still be one of the cluster's nodes (an id from the execution state is not trusted blindly).
  const node = (await target.nodes(broker)).find(
    (candidate) => candidate.id === applied.instanceId && candidate.nodeName === applied.nodeName,
  );
  if (!node)
    throw new Error(
      `${applied.nodeName} (${applied.instanceId}) is no longer a running node of cluster ${target.clusterId}, ` +
        `so it cannot be healed`,
    );
  await waitForHealDue(target, applied, spec);
  const sentAt = now();
  const output = await target.run(node, brokerFaultScripts(broker).healScript(node.nodeName, spec.action));
  const healedAt = scriptTime(output, 'healing') ?? sentAt;
  return {
    nodeName: node.nodeName,
    healedAt: healedAt.toISOString(),
    healedAtSeconds: secondsSince(event.started.startedAt, healedAt),
  };
}

/** The longest HealFault waits for a heal due after the fault came late (within the function's 5 minutes). */
export const MAX_HEAL_DELAY_MS = 120_000;

/**
 * Waits until the fault has lasted what the plan asked (healAtSeconds - atSeconds, from when it was applied): the
 * workflow heals at the repetition's start + healAtSeconds, and a fault applied late (the leader lookup and the
 * command take seconds over SSM and tens of seconds over Azure Run Command) would otherwise be healed sooner than
 * planned, maybe before the brokers noticed it. At most MAX_HEAL_DELAY_MS, and leaving the heal 150 s of the step.
 */
async function waitForHealDue(target: FaultTarget, applied: AppliedFault, spec: FaultSpec): Promise<void> {
  const timing = target.timing;
  if (!timing || spec.healAtSeconds === undefined) return;
  const { now: clock, sleep } = clockOf(timing);
  const now = clock().getTime();
  const due = Date.parse(applied.appliedAt) + (spec.healAtSeconds - spec.atSeconds) * 1000;
  const wait = Math.min(due - now, MAX_HEAL_DELAY_MS, timing.deadline.getTime() - now - 150_000);
  if (wait > 0) await sleep(wait);
}

/**
 * How the repetition's PerfTest command (StartRepetition's `commandId` on the load generator `instanceId`) ended, if it
 * ended otherwise than in success; GetCommandInvocation has no resource-level permission, so the fault's role may read
 * it (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssystemsmanager.html).
 */
export async function awsCommandEnded(ssm: SSMClient, started: AwsFaultEvent['started']): Promise<string | undefined> {
  if (!started.commandId || !started.instanceId) return undefined;
  const invocation = await ssm.send(
    new GetCommandInvocationCommand({ CommandId: started.commandId, InstanceId: started.instanceId }),
  );
  const status = invocation.Status ?? 'Pending';
  if (status === 'Success' || !TERMINAL.includes(status)) return undefined;
  return endedInvocation(started.commandId, started.instanceId, invocation);
}

/** `command <id> on <instance> ended <status> (exit code N): <the end of its stderr>`, for a finished invocation. */
function endedInvocation(
  commandId: string,
  instanceId: string,
  invocation: { Status?: string; ResponseCode?: number; StandardErrorContent?: string },
): string {
  const stderr = commandFailureExcerpt(invocation.StandardErrorContent);
  const ended =
    `command ${commandId} on ${instanceId} ended ${invocation.Status} ` +
    `(exit code ${invocation.ResponseCode ?? 'unknown'})`;
  return stderr ? `${ended}: ${stderr}` : ended;
}

/** The run's cluster on AWS: its stack's node instances, scripts through SSM Run Command. */
export function awsFaultTarget(
  clients: FaultClients,
  clusterId: string,
  timing: FaultTiming,
  started?: AwsFaultEvent['started'],
): FaultTarget {
  return {
    target: 'aws',
    clusterId: `stack ${clusterId}`,
    nodes: (broker) => brokerNodes(clients.ec2, clusterId, broker),
    run: (node, script) => runOnInstance(clients.ssm, node.id, script, timing),
    timing,
    ...(started ? { repetitionEnded: () => awsCommandEnded(clients.ssm, started) } : {}),
  };
}

export const applyAwsFault = (clients: FaultClients, event: AwsFaultEvent, timing: FaultTiming) =>
  applyFault(awsFaultTarget(clients, event.launch.clusterId, timing, event.started), event, timing.now);
export const healAwsFault = (clients: FaultClients, event: AwsFaultEvent, timing: FaultTiming) =>
  healFault(awsFaultTarget(clients, event.launch.clusterId, timing), event, timing.now);
