import { createHash } from 'node:crypto';
import { PlanValidationError } from '../core/plan/errors';
import { pathOnTarget, planOnTarget, regionMismatch } from '../core/plan/plan-target';
import { defaultPriceCatalog } from '../core/cost/cost-catalog';
import { groupScenariosByCluster, Plan, plannedSeconds, repetitionsAsWritten, validatePlan } from '../core/plan/plan';
import { assertPlanRunsOnTarget } from '../core/plan/target-rules';
import { repetitionPollSeconds } from '../core/cloud/workflow-shape';

/** Where a workflow execution runs its clusters. */
export type WorkflowTarget = 'aws' | 'azure' | 'local';
export const WORKFLOW_TARGETS: readonly WorkflowTarget[] = ['aws', 'azure', 'local'];

/** One PerfTest repetition as the workflow schedules it (an item of the inner Map state). */
export interface ScheduledRepetition {
  readonly scenarioId: string;
  readonly repetition: number;
  readonly repetitions: number;
  /** 1-based position among all repetitions of the run, in plan order. */
  readonly index: number;
  readonly total: number;
  readonly durationSeconds: number;
  /**
   * Seconds between two checks of the running repetition (WaitForRepetition's SecondsPath): spread over its duration so
   * that a long repetition records as few history events as a short one (core/cloud/workflow-shape.ts).
   */
  readonly pollSeconds: number;
  /** Seconds to wait after this repetition (0 after the last repetition of a scenario). */
  readonly pauseSeconds: number;
  /** Planned seconds left in the run when this repetition starts (for the progress display). */
  readonly remainingPlannedSeconds: number;
  /** Name of the raw output object: `<runDir>/ingest/<rawKey>` locally, `runs/<runId>/ingest/<rawKey>` in S3. */
  readonly rawKey: string;
  /**
   * Adaptive repetitions, on the repetitions after `min`: before this one starts, CheckSettled decides from the
   * scenario's stored repetitions whether it has settled, and records this one SKIPPED if so. Absent for a plain
   * number.
   */
  readonly settledCheck?: SettledCheck;
}

/** The rule CheckSettled applies (core/results/adaptive-repetitions.ts); `max` is the item's `repetitions`. */
export interface SettledCheck {
  readonly min: number;
  readonly ciPercent: number;
}

/** One cluster configuration (an item of the outer Map state). */
export interface ScheduledCluster {
  readonly index: number;
  /** Deterministic name of what is launched: the CloudFormation stack, the Azure resource group, the local cluster. */
  readonly clusterId: string;
  readonly nodes: number;
  readonly topology: string;
  /** The plan cluster's instance type (required by the cloud targets; absent for local runs of plans without one). */
  readonly instanceType?: string;
  readonly repetitions: readonly ScheduledRepetition[];
}

/** What the ValidatePlan state outputs: everything later states need, and nothing they must recompute. */
export interface WorkflowSchedule {
  readonly runId: string;
  readonly target: WorkflowTarget;
  readonly planName: string;
  /** The plan as given (without expanded scenarios): every task validates it again from here. */
  readonly plan: unknown;
  readonly plannedSeconds: number;
  readonly totalRepetitions: number;
  /** Every scenario id in plan order (the run record keeps them; the clusters group them by configuration). */
  readonly scenarioIds: readonly string[];
  readonly clusters: readonly ScheduledCluster[];
}

/** The execution input: a plan (the CLI's YAML/JSON model), the target and optionally a run id. */
export interface WorkflowInput {
  readonly plan: unknown;
  readonly target?: string;
  readonly runId?: string;
}

/** The file name a repetition's raw output is kept under (the same rule as `runPlan`). */
export function rawKeyFor(scenarioId: string, repetition: number): string {
  return `${scenarioId.replace(/[^A-Za-z0-9._=-]+/g, '_')}.rep-${repetition}.json`;
}

/**
 * The longest cluster id: an Azure resource group name has 1 to 90 characters
 * (https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules, Microsoft.Resources
 * "resourcegroups": 1-90), a CloudFormation stack name up to 128.
 */
export const MAX_CLUSTER_ID_LENGTH = 90;

/**
 * A name CloudFormation and Azure both accept: letters, digits and dashes, starting with a letter, at most
 * MAX_CLUSTER_ID_LENGTH characters. A run id too long for it is cut and ends with 8 hex digits of its SHA-256, so that
 * two long run ids that differ only past the cut still name different clusters.
 */
export function clusterIdFor(runId: string, index: number): string {
  const safe = runId.replace(/[^A-Za-z0-9-]+/g, '-').replace(/^[^A-Za-z]+/, '');
  const suffix = `-c${index + 1}`;
  const whole = `rmqbench-${safe}`.replace(/-+$/, '');
  if (whole.length + suffix.length <= MAX_CLUSTER_ID_LENGTH) return whole + suffix;
  const digest = createHash('sha256').update(runId).digest('hex').slice(0, 8);
  const kept = whole.slice(0, MAX_CLUSTER_ID_LENGTH - suffix.length - digest.length - 1).replace(/-+$/, '');
  return `${kept}-${digest}${suffix}`;
}

/** A run id for an execution started without one (e.g. by the scheduler): the plan name and the execution name. */
export function runIdFor(input: WorkflowInput, executionName: string): string {
  if (typeof input.runId === 'string' && input.runId.length > 0) return input.runId;
  const name =
    typeof (input.plan as { name?: unknown } | null)?.name === 'string'
      ? (input.plan as { name: string }).name
      : 'plan';
  return `${name}-${executionName}`;
}

/**
 * The input of a BenchmarkController execution for a plan: what `execution-input` prints and `run --target aws|azure`
 * starts.
 */
export function executionInput(plan: Plan, target: 'aws' | 'azure', runId?: string): WorkflowInput {
  return { plan: planData(plan), target, ...(runId ? { runId } : {}) };
}

/**
 * The plan as the schema accepts it back: without the expanded scenarios, and without the durationSeconds a capacity
 * workload was given by default (its duration is its ladder's, and a durationSeconds beside `capacity` is refused).
 */
export function planData(plan: Plan): unknown {
  const { scenarios: _scenarios, adaptiveRepetitions: _rule, ...plain } = plan;
  const rest = { ...plain, repetitions: repetitionsAsWritten(plan) };
  const workloads = rest.workloads.map((workload) => {
    if (workload.capacity === undefined) return workload;
    const { durationSeconds: _derived, ...withoutDuration } = workload;
    return withoutDuration;
  });
  return { ...rest, workloads };
}

/**
 * Where this controller launches clusters: its own AWS region (Lambda's AWS_REGION) and the Azure location it was
 * given (AZURE_LOCATION).
 */
export interface ControllerRegions {
  readonly aws?: string;
  readonly azure?: string;
}

/**
 * A plan that names its region on this target runs only there: the controller launches every cluster in its own region
 * (CloudFormation stacks of its account and region) or its configured Azure location, so a plan priced and chosen for
 * eu-west-1 is refused by a controller in us-east-1 rather than run and reported where it was not meant to.
 */
function assertRegionMatches(plan: Plan, target: WorkflowTarget, controllerRegions: ControllerRegions): void {
  if (target === 'local') return;
  const actual = controllerRegions[target];
  const planned = regionMismatch(plan, target, actual);
  if (planned === undefined) return;
  throw new PlanValidationError('the execution input', [
    {
      path: pathOnTarget('region', plan.region, target),
      message:
        `the plan runs its clusters in ${planned}, but this controller launches them in ${actual}: ` +
        "run it on a controller deployed there, or change the plan's region",
      value: planned,
    },
  ]);
}

export function checkTarget(target: unknown): WorkflowTarget {
  if (typeof target === 'string' && (WORKFLOW_TARGETS as readonly string[]).includes(target))
    return target as WorkflowTarget;
  throw new Error(`target must be one of ${WORKFLOW_TARGETS.join(', ')} (got ${JSON.stringify(target)})`);
}

/** An adaptive plan's repetitions after `min` are checked before they start (absent otherwise). */
function settledCheckOf(plan: Plan, repetition: number): { settledCheck?: SettledCheck } {
  const rule = plan.adaptiveRepetitions;
  if (!rule || repetition <= rule.min) return {};
  return { settledCheck: { min: rule.min, ciPercent: rule.ciPercent } };
}

/**
 * Validates the execution input and lays the run out: one item per cluster configuration, each
 * with its scenario × repetition items in plan order. Throws PlanValidationError for an invalid plan.
 */
export function buildSchedule(
  input: WorkflowInput,
  executionName: string,
  controllerRegions: ControllerRegions = {},
): WorkflowSchedule {
  const target = checkTarget(input.target ?? 'aws');
  const given = validatePlan(input.plan, 'the execution input');
  assertRegionMatches(given, target, controllerRegions);
  // A cloud run must be priceable: the instance types are checked against the shipped catalog before anything is
  // created.
  assertPlanRunsOnTarget(given, target, defaultPriceCatalog, 'the execution input');
  // From here on the plan is the one that runs on this target: every later step, the stored run and its reports see
  // one instance type per cluster and one region (core/plan/plan-target.ts).
  const plan = planOnTarget(given, target);
  const runId = runIdFor(input, executionName);
  const total = plan.scenarios.length * plan.repetitions;
  let index = 0;
  let remaining = plannedSeconds(plan);
  const clusters = groupScenariosByCluster(plan).map((group, groupIndex): ScheduledCluster => {
    const repetitions: ScheduledRepetition[] = [];
    for (const scenario of group.scenarios) {
      for (let repetition = 1; repetition <= plan.repetitions; repetition++) {
        const pauseSeconds = repetition < plan.repetitions ? plan.pauseSecondsBetweenRepetitions : 0;
        repetitions.push({
          scenarioId: scenario.id,
          repetition,
          repetitions: plan.repetitions,
          index: ++index,
          total,
          durationSeconds: scenario.workload.durationSeconds,
          pollSeconds: repetitionPollSeconds(scenario.workload.durationSeconds),
          pauseSeconds,
          remainingPlannedSeconds: remaining,
          rawKey: rawKeyFor(scenario.id, repetition),
          ...settledCheckOf(plan, repetition),
        });
        remaining -= scenario.workload.durationSeconds + pauseSeconds;
      }
    }
    return {
      index: groupIndex,
      clusterId: clusterIdFor(runId, groupIndex),
      nodes: group.nodes,
      topology: group.topology.type,
      ...(group.instanceType === undefined ? {} : { instanceType: group.instanceType }),
      repetitions,
    };
  });
  return {
    runId,
    target,
    planName: plan.name,
    plan: planData(plan),
    plannedSeconds: plannedSeconds(plan),
    totalRepetitions: total,
    scenarioIds: plan.scenarios.map((scenario) => scenario.id),
    clusters,
  };
}
