import { parse as parseYaml, YAMLParseError } from 'yaml';
// A namespace import lets esbuild drop what the schemas do not use (about 360 KB less in each Lambda bundle that
// validates plans).
import * as z from 'zod';
import { PlanIssue, PlanValidationError } from './errors';
import { checkKafkaCluster, checkWorkloadBroker } from '../kafka/kafka-plan';
import { checkNatsCluster, checkNatsWorkload } from '../nats/nats-plan';
import { knownFieldsAt, suggestField } from './plan-field-suggestion';
import {
  ClusterSpec,
  clusterSchema,
  ParsedPlan,
  Workload,
  WorkloadField,
  WorkloadInPlan,
  planSchema,
  workloadInPlanSchema,
  workloadSchema,
} from './plan-schema';
import type { Broker } from '../kafka/kafka-plan';
import type { AdaptiveRepetitions } from '../results/adaptive-repetitions';
import { QUEUE_PREFIX } from '../perftest/perftest-args';
import { honoursLazyQueueMode, supportsClassicMirroring } from '../broker/rabbitmq-version';
import { plainInstanceType, plainRabbitmqVersion, versionsOf } from './plan-target';
import { loadGeneratorSplitIssues } from '../loadgen/workload-split';
import {
  capacityDurationSeconds,
  capacityStepCount,
  MAX_CAPACITY_STEPS,
  MIN_MEASURED_STEP_SECONDS,
} from '../capacity/capacity-plan';

/** One cell of the plan's matrix: a cluster configuration and a fully expanded workload. */
export interface Scenario {
  /** Stable identifier, e.g. `three-nodes/small@messageSizeBytes=150`. */
  readonly id: string;
  readonly cluster: ClusterSpec;
  readonly workload: Workload;
  /** The sweep values that produced this workload (empty without sweeps). */
  readonly sweep: Readonly<Partial<Record<WorkloadField, unknown>>>;
}

/**
 * A validated plan. `repetitions` is always a number: the most each scenario runs (`max` of an adaptive plan), which is
 * what the schedule lays out and the estimate counts; `adaptiveRepetitions` carries the stopping rule when the plan
 * gave
 * `repetitions: { min, max, ciPercent }` (a plain number N means exactly N).
 */
export interface Plan extends Omit<ParsedPlan, 'repetitions'> {
  readonly repetitions: number;
  readonly adaptiveRepetitions?: AdaptiveRepetitions;
  readonly scenarios: readonly Scenario[];
}

/** The plan's `repetitions` as written: a number, or the adaptive rule (planData gives it back this way). */
export function repetitionsAsWritten(
  plan: Pick<Plan, 'repetitions' | 'adaptiveRepetitions'>,
): ParsedPlan['repetitions'] {
  return plan.adaptiveRepetitions ?? plan.repetitions;
}

/** The adaptive rule of a plan as stored with a run (plan data, not validated again); undefined for a plain number. */
export function adaptiveRuleOf(planData: unknown): AdaptiveRepetitions | undefined {
  const repetitions = (planData as { repetitions?: unknown } | null | undefined)?.repetitions;
  if (typeof repetitions !== 'object' || repetitions === null) return undefined;
  const { min, max, ciPercent } = repetitions as Partial<AdaptiveRepetitions>;
  return typeof min === 'number' && typeof max === 'number' && typeof ciPercent === 'number'
    ? { min, max, ciPercent }
    : undefined;
}

/** Parses and validates a plan from YAML or JSON text; `source` names the file in errors. */
export function parsePlanText(text: string, source: string): Plan {
  let data: unknown;
  try {
    data = parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (error) {
    const message = error instanceof YAMLParseError ? error.message.split('\n')[0] : String(error);
    throw new PlanValidationError(source, [{ path: '', message: `not valid YAML: ${message}` }]);
  }
  return validatePlan(data, source);
}

/** Validates an already parsed plan object (e.g. a Step Functions execution input). */
export function validatePlan(data: unknown, source: string): Plan {
  const parsed = planSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) {
    const issues = parsed.error.issues.flatMap(zodIssueToPlanIssues);
    issues.push(...checkPartsThatParse(data));
    throw new PlanValidationError(source, dedupe(issues));
  }
  const plan = parsed.data;
  const issues = [...checkClusters(plan.clusters), ...checkNamesUnique(plan), ...checkWorkloadClusters(plan)];
  const rawWorkloads = (data as { workloads?: unknown[] }).workloads ?? [];
  const workloads = plan.workloads.map((workload, index) => expandSweep(workload, index, issues, rawWorkloads[index]));
  if (issues.length > 0) throw new PlanValidationError(source, issues);

  const scenarios: Scenario[] = [];
  for (const cluster of plan.clusters) {
    for (const expanded of workloads.flat()) {
      if (!runsOn(plan.workloads[expanded.index]!, cluster.name)) continue;
      const clusterIssues = checkWorkloadOnCluster(cluster, expanded.workload, expanded.path);
      issues.push(...clusterIssues);
      scenarios.push({
        id: scenarioId(cluster.name, expanded.workload.name, expanded.sweep),
        cluster,
        workload: expanded.workload,
        sweep: expanded.sweep,
      });
    }
  }
  if (issues.length > 0) throw new PlanValidationError(source, dedupe(issues));
  const { repetitions, ...rest } = plan;
  return typeof repetitions === 'number'
    ? { ...rest, repetitions, scenarios }
    : { ...rest, repetitions: repetitions.max, adaptiveRepetitions: repetitions, scenarios };
}

/**
 * A sweep value in a scenario id: an object field such as `exchange: { type: fanout }` reads `fanout` (several fields:
 * `key:value+…`).
 */
function sweepValueText(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value);
  const entries = Object.entries(value);
  return entries.length === 1
    ? String(entries[0]![1])
    : entries.map(([key, field]) => `${key}:${String(field)}`).join('+');
}

export function scenarioId(clusterName: string, workloadName: string, sweep: Partial<Record<string, unknown>>): string {
  const entries = Object.entries(sweep);
  const suffix =
    entries.length === 0 ? '' : `@${entries.map(([field, value]) => `${field}=${sweepValueText(value)}`).join(',')}`;
  return `${clusterName}/${workloadName}${suffix}`;
}

function zodIssueToPlanIssues(issue: z.core.$ZodIssue): PlanIssue[] {
  const path = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const known = knownFieldsAt(planSchema, issue.path);
    return issue.keys.map((key) => {
      const suggestion = suggestField(key, known);
      return {
        path: path ? `${path}.${key}` : key,
        message: `unknown field (${
          suggestion === undefined
            ? 'check its spelling against the plan reference, docs/plans.md'
            : `did you mean "${suggestion}"?`
        })`,
      };
    });
  }
  if (issue.code === 'invalid_union' && 'discriminator' in issue) {
    return [{ path, message: issue.message, value: issue.input }];
  }
  // A union whose input has the type of exactly one of its options (`repetitions: { min: 1, … }`) reports that
  // option's own issues, by their fields.
  if (issue.code === 'invalid_union') {
    const sameType = issue.errors.filter(
      (option) => !option.some((inner) => inner.code === 'invalid_type' && inner.path.length === 0),
    );
    if (sameType.length === 1)
      return sameType[0]!.flatMap((inner) => zodIssueToPlanIssues({ ...inner, path: [...issue.path, ...inner.path] }));
  }
  // A required field left out reads as one, not as zod's "Invalid input: expected string, received undefined".
  if (issue.code === 'invalid_type' && issue.input === undefined) {
    return [
      {
        path,
        message: `required field missing (expected ${
          issue.expected === 'array' ? 'a list' : issue.expected === 'object' ? 'a mapping' : `a ${issue.expected}`
        })`,
      },
    ];
  }
  return [{ path, message: issue.message, ...(issue.input === undefined ? {} : { value: issue.input }) }];
}

export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((segment, index) =>
      typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`,
    )
    .join('');
}

/**
 * When the plan as a whole does not parse, the clusters and workloads that do parse on their own are
 * still checked, so that one `validate` shows every problem instead of one layer at a time.
 */
function checkPartsThatParse(data: unknown): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const raw = (typeof data === 'object' && data !== null ? data : {}) as { clusters?: unknown; workloads?: unknown };
  if (Array.isArray(raw.clusters)) {
    raw.clusters.forEach((candidate, index) => {
      // Unknown fields are already reported; the rest of the cluster can still be checked.
      const cluster = z.object(clusterSchema.shape).safeParse(candidate);
      if (cluster.success) issues.push(...checkCluster(cluster.data, index));
    });
  }
  if (Array.isArray(raw.workloads)) {
    raw.workloads.forEach((candidate, index) => {
      const workload = z.object(workloadInPlanSchema.shape).safeParse(candidate);
      if (workload.success) expandSweep(workload.data, index, issues);
    });
  }
  return issues;
}

function checkClusters(clusters: readonly ClusterSpec[]): PlanIssue[] {
  return clusters.flatMap((cluster, index) => checkCluster(cluster, index));
}

function checkCluster(cluster: ClusterSpec, index: number): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const at = `clusters[${index}]`;
  const topology = cluster.topology;
  if (topology.type === 'mirrored') {
    for (const version of versionsOf(cluster).filter((asked) => !supportsClassicMirroring(asked))) {
      issues.push({
        path: `${at}.topology.type`,
        message:
          `classic queue mirroring was removed in RabbitMQ 4.0 and this cluster asks for ${version}; ` +
          `use "quorum" or a 3.x rabbitmqVersion`,
        value: topology.type,
      });
    }
    if (typeof topology.mirrorTo === 'number' && topology.mirrorTo > cluster.nodes) {
      issues.push({
        path: `${at}.topology.mirrorTo`,
        message: `cannot keep more copies than the cluster has nodes (${cluster.nodes})`,
        value: topology.mirrorTo,
      });
    }
  }
  if ((topology.type === 'quorum' || topology.type === 'stream') && topology.replicationFactor !== undefined) {
    if (topology.replicationFactor > cluster.nodes) {
      issues.push({
        path: `${at}.topology.replicationFactor`,
        message: `must be at most the number of nodes (${cluster.nodes})`,
        value: topology.replicationFactor,
      });
    }
  }
  issues.push(...checkKafkaCluster(cluster, at), ...checkNatsCluster(cluster, at));
  if (cluster.broker !== 'rabbitmq') return issues;
  if (cluster.connection === 'follower' && cluster.nodes < 2) {
    issues.push({
      path: `${at}.connection`,
      message: 'a single-node cluster has no follower node; use "leader", "direct" or "lb", or nodes >= 2',
      value: cluster.connection,
    });
  }
  return issues;
}

/** Whether a workload runs on a plan cluster: every cluster unless it names its clusters. */
const runsOn = (workload: WorkloadInPlan, clusterName: string) =>
  workload.clusters === undefined || workload.clusters.includes(clusterName);

/**
 * Cluster names a workload lists must exist, and every cluster must run some workload (else it would be launched for
 * nothing).
 */
function checkWorkloadClusters(plan: ParsedPlan): PlanIssue[] {
  const names = plan.clusters.map((cluster) => cluster.name);
  const issues: PlanIssue[] = [];
  plan.workloads.forEach((workload, index) =>
    (workload.clusters ?? []).forEach((name, at) => {
      if (!names.includes(name))
        issues.push({
          path: `workloads[${index}].clusters[${at}]`,
          message: `no plan cluster is named "${name}"; clusters: ${names.join(', ')}`,
          value: name,
        });
    }),
  );
  plan.clusters.forEach((cluster, index) => {
    if (!plan.workloads.some((workload) => runsOn(workload, cluster.name))) {
      issues.push({
        path: `clusters[${index}]`,
        message: `no workload runs on cluster "${cluster.name}": add it to a workload's clusters or remove it`,
        value: cluster.name,
      });
    }
  });
  return issues;
}

function checkNamesUnique(plan: ParsedPlan): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const seen = (names: string[], field: string) => {
    const first = new Map<string, number>();
    names.forEach((name, index) => {
      const earlier = first.get(name);
      if (earlier !== undefined) {
        issues.push({
          path: `${field}[${index}].name`,
          message: `duplicate name, already used by ${field}[${earlier}]`,
          value: name,
        });
      } else first.set(name, index);
    });
  };
  seen(
    plan.clusters.map((c) => c.name),
    'clusters',
  );
  seen(
    plan.workloads.map((w) => w.name),
    'workloads',
  );
  return issues;
}

interface ExpandedWorkload {
  readonly workload: Workload;
  readonly sweep: Partial<Record<WorkloadField, unknown>>;
  readonly path: string;
  /** The plan workload it came from. */
  readonly index: number;
}

/** Expands `sweep` into the cartesian product of its values, validating each value as the field it replaces. */
function expandSweep(input: WorkloadInPlan, index: number, issues: PlanIssue[], raw?: unknown): ExpandedWorkload[] {
  const path = `workloads[${index}]`;
  const { sweep, clusters: _clusters, ...base } = input;
  const fields = Object.entries(sweep ?? {}) as [WorkloadField, unknown[]][];
  let combinations: Partial<Record<WorkloadField, unknown>>[] = [{}];
  for (const [field, values] of fields) {
    combinations = combinations.flatMap((combination) => values.map((value) => ({ ...combination, [field]: value })));
  }
  const expanded: ExpandedWorkload[] = [];
  const reported = new Set<string>();
  for (const combination of combinations) {
    const result = workloadSchema.safeParse({ ...base, ...combination }, { reportInput: true });
    if (!result.success) {
      for (const issue of result.error.issues) {
        const field = issue.path[0] as WorkloadField;
        const swept = fields.find(([name]) => name === field);
        const at = swept
          ? `${path}.sweep.${field}[${swept[1].indexOf(combination[field])}]`
          : `${path}${issue.path.length > 0 ? `.${formatPath(issue.path)}` : ''}`;
        if (reported.has(at)) continue;
        reported.add(at);
        issues.push({ path: at, message: issue.message, value: issue.input });
      }
      continue;
    }
    const capacityIssues = checkCapacity(result.data, path, givesDuration(raw, combination));
    issues.push(...capacityIssues);
    // Capacity mode: the repetition lasts as long as its ladder.
    const workload =
      result.data.capacity && capacityIssues.length === 0
        ? { ...result.data, durationSeconds: capacityDurationSeconds(result.data.capacity, result.data.producers) }
        : result.data;
    expanded.push({ workload, sweep: combination, path, index });
    issues.push(...checkWorkload(workload, path), ...checkWarmUp(workload, path));
  }
  return expanded;
}

function checkWorkload(workload: Workload, path: string): PlanIssue[] {
  const issues: PlanIssue[] = [];
  if (workload.producers === 0 && workload.consumers === 0) {
    issues.push({ path: `${path}.producers`, message: 'a workload needs at least one producer or consumer', value: 0 });
  }
  // PerfTest spreads producers and consumers over a queue sequence round-robin (core/perftest/perftest-args.ts): with
  // fewer of
  // them than queues, some queues would get no producer (direct, topic: no messages) or no consumer (they only grow).
  if (workload.queues > 1) {
    const fanout = workload.exchange.type === 'fanout';
    if (!fanout && workload.producers > 0 && workload.producers < workload.queues) {
      issues.push({
        path: `${path}.producers`,
        message:
          `fewer producers than queues (${workload.queues}): with a ${workload.exchange.type} exchange ` +
          `queues ${QUEUE_PREFIX}-${workload.producers + 1}… would get no messages; ` +
          `use at least ${workload.queues} producers or exchange type fanout`,
        value: workload.producers,
      });
    }
    if (workload.consumers > 0 && workload.consumers < workload.queues) {
      issues.push({
        path: `${path}.consumers`,
        message:
          `fewer consumers than queues (${workload.queues}): ` +
          `queues ${QUEUE_PREFIX}-${workload.consumers + 1}… would have no consumer and only grow; ` +
          `use at least ${workload.queues} consumers (or none)`,
        value: workload.consumers,
      });
    }
  }
  if (workload.overflow !== undefined && workload.maxLength === undefined) {
    issues.push({
      path: `${path}.overflow`,
      message: 'needs maxLength: the overflow behaviour applies when a queue reaches its length limit',
      value: workload.overflow,
    });
  }
  if (workload.autoAck && workload.multiAckEvery !== undefined) {
    issues.push({
      path: `${path}.multiAckEvery`,
      message: 'needs autoAck: false (there is nothing to acknowledge with auto-ack)',
      value: workload.multiAckEvery,
    });
  }
  issues.push(...checkFault(workload, path));
  return issues;
}

/**
 * Whether the plan's own text sets durationSeconds for this workload (directly or by a sweep), as opposed to the
 * default.
 */
function givesDuration(raw: unknown, combination: Partial<Record<WorkloadField, unknown>>): boolean {
  return 'durationSeconds' in combination || (typeof raw === 'object' && raw !== null && 'durationSeconds' in raw);
}

/**
 * A capacity workload: a ladder within the bound, the rate left to the ladder, nothing that disturbs the latency
 * verdict.
 */
function checkCapacity(workload: Workload, path: string, durationGiven: boolean): PlanIssue[] {
  const capacity = workload.capacity;
  if (!capacity) return [];
  const issues: PlanIssue[] = [];
  const add = (field: string, message: string, value: unknown) =>
    issues.push({ path: `${path}.${field}`, message, value });
  const why = 'capacity mode sets the publish rate itself, step by step';
  if (workload.producers === 0 || workload.consumers === 0) {
    add(
      workload.producers === 0 ? 'producers' : 'consumers',
      'capacity mode needs producers and consumers: it measures how fast messages get through within a latency bound',
      0,
    );
  }
  if (workload.publishRateLimit !== undefined) add('publishRateLimit', `remove it: ${why}`, workload.publishRateLimit);
  if (workload.messageCount !== undefined)
    add('messageCount', `remove it: ${why}, for as long as its ladder lasts`, workload.messageCount);
  if (workload.totalBytes !== undefined)
    add('totalBytes', `remove it: ${why}, for as long as its ladder lasts`, workload.totalBytes);
  if (workload.fault !== undefined)
    add(
      'fault',
      'a fault in a capacity search would fail the step it hits for reasons that are not the rate; ' +
        'measure failover in a workload of its own',
      workload.fault.action,
    );
  if (workload.warmUpSeconds !== undefined)
    add('warmUpSeconds', 'capacity steps have their own warm-up: use capacity.warmUpSeconds', workload.warmUpSeconds);
  if (capacity.minRate > capacity.maxRate)
    add('capacity.maxRate', `must be at least minRate (${capacity.minRate})`, capacity.maxRate);
  else if (capacityStepCount(capacity, workload.producers) === undefined) {
    add(
      'capacity.stepFactor',
      `the ladder from ${capacity.minRate} to ${capacity.maxRate} msg/s would have more than ` +
        `${MAX_CAPACITY_STEPS} steps; raise stepFactor or narrow the rates`,
      capacity.stepFactor,
    );
  }
  if (capacity.warmUpSeconds > capacity.stepSeconds - MIN_MEASURED_STEP_SECONDS) {
    add(
      'capacity.warmUpSeconds',
      `must leave at least ${MIN_MEASURED_STEP_SECONDS} measured seconds of each ${capacity.stepSeconds} s step`,
      capacity.warmUpSeconds,
    );
  }
  if (durationGiven && issues.length === 0) {
    const seconds = capacityDurationSeconds(capacity, workload.producers);
    add(
      'durationSeconds',
      `remove it: a capacity workload lasts as long as its ladder ` +
        `(${seconds / capacity.stepSeconds} steps × ${capacity.stepSeconds} s = ${seconds} s)`,
      workload.durationSeconds,
    );
  }
  return issues;
}

/**
 * Warm-up must leave measured seconds, and has no meaning for a fixed amount of work (measured by its completion time).
 */
function checkWarmUp(workload: Workload, path: string): PlanIssue[] {
  const warmUp = workload.warmUpSeconds;
  if (warmUp === undefined || warmUp === 0) return [];
  if (workload.messageCount !== undefined || workload.totalBytes !== undefined) {
    return [
      {
        path: `${path}.warmUpSeconds`,
        message:
          'a fixed amount of work is measured by the time it takes in full; ' +
          'remove warmUpSeconds or messageCount/totalBytes',
        value: warmUp,
      },
    ];
  }
  if (warmUp > workload.durationSeconds - MIN_MEASURED_STEP_SECONDS) {
    return [
      {
        path: `${path}.warmUpSeconds`,
        message:
          `must leave at least ${MIN_MEASURED_STEP_SECONDS} measured seconds ` +
          `of the ${workload.durationSeconds} s duration`,
        value: warmUp,
      },
    ];
  }
  return [];
}

/** The fault's times must fall inside the repetition, in order; a restart heals itself. */
function checkFault(workload: Workload, path: string): PlanIssue[] {
  const fault = workload.fault;
  if (!fault) return [];
  const issues: PlanIssue[] = [];
  const at = `${path}.fault`;
  if (fault.atSeconds >= workload.durationSeconds) {
    issues.push({
      path: `${at}.atSeconds`,
      message:
        `must be less than durationSeconds (${workload.durationSeconds}): ` +
        `the fault has to happen while PerfTest runs`,
      value: fault.atSeconds,
    });
  }
  if (fault.healAtSeconds !== undefined) {
    if (fault.action === 'restart') {
      issues.push({
        path: `${at}.healAtSeconds`,
        message:
          'a restart starts the node again by itself; remove healAtSeconds, ' +
          'or use action "stop" or "kill" to choose when it comes back',
        value: fault.healAtSeconds,
      });
    } else if (fault.healAtSeconds <= fault.atSeconds) {
      issues.push({
        path: `${at}.healAtSeconds`,
        message: `must be greater than atSeconds (${fault.atSeconds})`,
        value: fault.healAtSeconds,
      });
    } else if (fault.healAtSeconds >= workload.durationSeconds) {
      issues.push({
        path: `${at}.healAtSeconds`,
        message: `must be less than durationSeconds (${workload.durationSeconds}), so that the recovery is measured`,
        value: fault.healAtSeconds,
      });
    }
  }
  return issues;
}

function checkWorkloadOnCluster(cluster: ClusterSpec, workload: Workload, path: string): PlanIssue[] {
  const faultIssues = checkFaultOnCluster(cluster, workload, path);
  if (faultIssues.length > 0) return faultIssues;
  const brokerIssues = [...checkWorkloadBroker(cluster, workload, path), ...checkNatsWorkload(cluster, workload, path)];
  if (brokerIssues.length > 0 || cluster.broker !== 'rabbitmq') return brokerIssues;
  const issues: PlanIssue[] = [];
  const topology = cluster.topology.type;
  if (topology === 'stream' && (workload.autoAck || workload.prefetch === undefined)) {
    issues.push({
      path: `${path}.autoAck`,
      message: `cluster "${cluster.name}" uses streams, whose consumers need autoAck: false and a prefetch`,
      value: workload.autoAck,
    });
  }
  if (workload.queueMode === 'lazy') {
    // rabbitmq-website docs/lazy-queues.md: lazy mode is a classic queue mode, ignored from RabbitMQ 3.12 on;
    // docs/quorum-queues/index.md "Lazy Mode": the lazy mode configuration does not apply to quorum queues.
    if (topology === 'quorum' || topology === 'stream') {
      issues.push({
        path: `${path}.queueMode`,
        message:
          `cluster "${cluster.name}" uses ${topology} queues; lazy is a classic queue mode ` +
          `(quorum queues keep message bodies on disk anyway)`,
        value: 'lazy',
      });
    } else if (versionsOf(cluster).some((version) => !honoursLazyQueueMode(version))) {
      issues.push({
        path: `${path}.queueMode`,
        message:
          `RabbitMQ ignores the lazy queue mode from 3.12 on and cluster "${cluster.name}" ` +
          `asks for ${versionsOf(cluster).join(' / ')}; use a 3.11 or older rabbitmqVersion or drop queueMode`,
        value: 'lazy',
      });
    }
  }
  // docs/streams.md: streams are limited by size and age (x-max-length-bytes, x-max-age), not by a message count.
  if (workload.maxLength !== undefined && topology === 'stream') {
    issues.push({
      path: `${path}.maxLength`,
      message:
        `cluster "${cluster.name}" uses streams, ` + `which have no message-count limit (retention is by size or age)`,
      value: workload.maxLength,
    });
  }
  issues.push(...checkFixedWork(workload, path));
  // Several load generators split the workload by queue (core/loadgen/workload-split.ts), refused where they cannot.
  issues.push(
    ...loadGeneratorSplitIssues(workload, cluster.loadGenerators, path).map((issue) => ({
      ...issue,
      message: `cluster "${cluster.name}" has loadGenerators: ${cluster.loadGenerators}; ${issue.message}`,
    })),
  );
  // docs/quorum-queues/index.md "Length Limit": drop-head and reject-publish, not reject-publish-dlx.
  if (workload.overflow === 'reject-publish-dlx' && topology === 'quorum') {
    issues.push({
      path: `${path}.overflow`,
      message:
        `cluster "${cluster.name}" uses quorum queues, ` +
        `which support drop-head and reject-publish but not reject-publish-dlx`,
      value: workload.overflow,
    });
  }
  return issues;
}

/**
 * A workload's fault on this cluster (RabbitMQ, Kafka or NATS: each has its lost-message verifier): a node the
 * cluster has, and queues the verifier can use.
 */
function checkFaultOnCluster(cluster: ClusterSpec, workload: Workload, path: string): PlanIssue[] {
  const fault = workload.fault;
  if (fault && typeof fault.node === 'number' && fault.node >= cluster.nodes) {
    return [
      {
        path: `${path}.fault.node`,
        message: `cluster "${cluster.name}" has ${cluster.nodes} node(s), numbered from 0 to ${cluster.nodes - 1}`,
        value: fault.node,
      },
    ];
  }
  if (fault && fault.node === 'follower' && cluster.nodes < 2) {
    return [
      {
        path: `${path}.fault.node`,
        message: `cluster "${cluster.name}" has one node, so no follower; use "leader" or 0`,
        value: fault.node,
      },
    ];
  }
  if (fault && cluster.topology.type === 'stream') {
    return [
      {
        path: `${path}.fault`,
        message:
          `cluster "${cluster.name}" uses streams; the lost-message verifier consumes with acknowledgements ` +
          `from a queue, so faults need classic, mirrored or quorum queues`,
        value: fault.action,
      },
    ];
  }
  return [];
}

/**
 * A RabbitMQ workload with a fixed amount of work must end by itself: PerfTest counts consumed messages per consumer
 * (--cmessages), so each queue has one consumer and receives a known number of messages.
 */
function checkFixedWork(workload: Workload, path: string): PlanIssue[] {
  if (workload.messageCount === undefined && workload.totalBytes === undefined) return [];
  const issues: PlanIssue[] = [];
  const add = (field: string, message: string, value: unknown) =>
    issues.push({ path: `${path}.${field}`, message, value });
  if (workload.messageCount !== undefined && workload.totalBytes !== undefined)
    add('totalBytes', 'give either messageCount or totalBytes, not both', workload.totalBytes);
  if (workload.totalBytes !== undefined && workload.messageSizeBytes === 0)
    add('totalBytes', 'needs a messageSizeBytes above 0 to become a message count', workload.totalBytes);
  if (workload.producers === 0) add('producers', 'a fixed amount of work needs at least one producer to send it', 0);
  else if (workload.messageCount !== undefined && workload.messageCount % workload.producers !== 0)
    add(
      'messageCount',
      `must be a multiple of producers (${workload.producers}): each producer sends the same share`,
      workload.messageCount,
    );
  if (workload.consumers > 0 && workload.consumers !== workload.queues) {
    add(
      'consumers',
      `with a fixed amount of work each queue needs exactly one consumer (consumers = queues = ${workload.queues}): ` +
        `PerfTest counts consumed messages per consumer, and competing consumers share a queue unevenly`,
      workload.consumers,
    );
  }
  if (
    workload.exchange.type !== 'fanout' &&
    workload.queues > 1 &&
    workload.producers > 0 &&
    workload.producers % workload.queues !== 0
  ) {
    add(
      'producers',
      `with a fixed amount of work over ${workload.queues} queues, ` +
        `producers must be a multiple of queues so that every queue receives the same count`,
      workload.producers,
    );
  }
  return issues;
}

function dedupe(issues: PlanIssue[]): PlanIssue[] {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = `${issue.path}|${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Scenarios that can share one running cluster (same node count, topology and version), in plan order. */
export interface ClusterGroup {
  readonly key: string;
  readonly broker: Broker;
  readonly nodes: number;
  readonly topology: ClusterSpec['topology'];
  readonly rabbitmqVersion?: string;
  /** The plan cluster's instanceType (cloud targets). */
  readonly instanceType?: string;
  /** The plan cluster's loadGenerators when above 1 (issue 27); absent: one. */
  readonly loadGenerators?: number;
  /** A NATS cluster's jetstream.sync_interval when the plan sets one (a server setting: a cluster of its own). */
  readonly syncInterval?: string;
  readonly scenarios: readonly Scenario[];
}

export function groupScenariosByCluster(plan: Plan): ClusterGroup[] {
  const groups = new Map<
    string,
    {
      key: string;
      broker: Broker;
      nodes: number;
      topology: ClusterSpec['topology'];
      rabbitmqVersion?: string;
      instanceType?: string;
      loadGenerators?: number;
      syncInterval?: string;
      scenarios: Scenario[];
    }
  >();
  for (const scenario of plan.scenarios) {
    const { broker, nodes, topology } = scenario.cluster;
    // A plan resolved for its target (core/plan/plan-target.ts) carries one instance type and version per cluster.
    const instanceType = plainInstanceType(scenario.cluster);
    const rabbitmqVersion = plainRabbitmqVersion(scenario.cluster);
    const { syncInterval } = scenario.cluster;
    // The broker leads the key only for Kafka and NATS, so that RabbitMQ groups keep the keys stored runs have.
    const key = JSON.stringify({
      ...(broker === 'rabbitmq' ? {} : { broker }),
      ...(syncInterval === undefined ? {} : { syncInterval }),
      nodes,
      topology,
      rabbitmqVersion: rabbitmqVersion ?? null,
      instanceType: instanceType ?? null,
      // Several load generators are launched with the cluster in the clouds (issue 27); 1 keeps stored keys.
      ...(scenario.cluster.loadGenerators > 1 ? { loadGenerators: scenario.cluster.loadGenerators } : {}),
    });
    const group = groups.get(key) ?? {
      key,
      broker,
      nodes,
      topology,
      ...(rabbitmqVersion ? { rabbitmqVersion } : {}),
      ...(instanceType ? { instanceType } : {}),
      ...(scenario.cluster.loadGenerators > 1 ? { loadGenerators: scenario.cluster.loadGenerators } : {}),
      ...(syncInterval === undefined ? {} : { syncInterval }),
      scenarios: [],
    };
    group.scenarios.push(scenario);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** Seconds of PerfTest time plus pauses the plan needs, for progress estimates. */
export function plannedSeconds(plan: Plan): number {
  const perfTest = plan.scenarios.reduce(
    (sum, scenario) => sum + scenario.workload.durationSeconds * plan.repetitions,
    0,
  );
  const pauses = plan.scenarios.length * Math.max(0, plan.repetitions - 1) * plan.pauseSecondsBetweenRepetitions;
  return perfTest + pauses;
}
