/**
 * The shape of one execution of the deployed workflow (state-machines/): how often it polls, how many states it enters,
 * how many history events it records and how long each cluster lives. Pure: the estimate, the plan's target rules, the
 * schedule and the launch functions all read these numbers from here, so that what is refused, priced and deployed
 * agrees.
 */

/** Seconds each repetition takes beyond PerfTest's duration (starting it remotely, uploading, ingesting). */
export const REPETITION_OVERHEAD_SECONDS = 45;
/** Seconds between two checks of a launching cluster (state-machines/definition.ts default). */
export const CLUSTER_POLL_SECONDS = 30;
/** Seconds between two checks of a cluster being deleted. */
export const TEARDOWN_POLL_SECONDS = 30;
/** The shortest wait between two checks of a running repetition: what every repetition of up to ~7 minutes gets. */
export const REPETITION_POLL_MIN_SECONDS = 15;
/** The longest: how late the end of a long repetition may be noticed (at most ~3 % of an hour-long repetition). */
export const REPETITION_POLL_MAX_SECONDS = 120;
/** Checks a repetition is spread over, within those bounds: each check records 9 history events. */
export const REPETITION_POLLS_PER_RUN = 30;

/**
 * Step Functions keeps at most 25,000 events in one execution's history; past that the execution fails
 * (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html, "Maximum execution history size").
 */
export const STEP_FUNCTIONS_HISTORY_LIMIT = 25_000;
/**
 * What a plan may use of it: the rest is room for what no estimate sees (retried calls record 3 events each, a slow
 * launch or teardown polls longer, fixed-work repetitions running to their duration cap).
 */
export const HISTORY_EVENTS_BUDGET = 20_000;
/** The definition's TimeoutSeconds (state-machines/definition.ts default): no execution runs longer. */
export const EXECUTION_TIMEOUT_SECONDS = 86_400;

/** Seconds between two checks of a running repetition of `durationSeconds`: about 30 checks, within 15 s to 120 s. */
export function repetitionPollSeconds(durationSeconds: number): number {
  const spread = Math.ceil((durationSeconds + REPETITION_OVERHEAD_SECONDS) / REPETITION_POLLS_PER_RUN);
  return Math.min(REPETITION_POLL_MAX_SECONDS, Math.max(REPETITION_POLL_MIN_SECONDS, spread));
}

/** Checks of a repetition that runs as planned (its duration and the overhead). */
export function repetitionPolls(durationSeconds: number): number {
  return Math.max(
    1,
    Math.ceil((durationSeconds + REPETITION_OVERHEAD_SECONDS) / repetitionPollSeconds(durationSeconds)),
  );
}

export interface RepetitionShape {
  readonly polls: number;
  readonly pause: boolean;
  /** Adaptive repetitions past `min`: CheckSettled and IsSettled run before it (counted as if it then ran). */
  readonly settledCheck?: boolean;
}

export interface ClusterShape {
  /** Checks until the cluster is ready (CheckClusterReady). */
  readonly clusterPolls: number;
  /** Azure: the late host metrics are read again before teardown. */
  readonly rereadsMetrics?: boolean;
  /** Checks until the cluster is deleted (CheckTeardown). */
  readonly teardownPolls: number;
  readonly repetitions: readonly RepetitionShape[];
}

/** The states one execution enters, by kind: each kind records its own number of history events. */
interface StateVisits {
  tasks: number;
  maps: number;
  mapIterations: number;
  /** Choice, Wait, Pass and Succeed states. */
  others: number;
}

/**
 * The states an execution of the deployed definition enters when all goes well:
 * run: ValidatePlan, RecordRunStart, ForEachCluster, FinishRun, IsRunFailed, RunSucceeded;
 * per cluster: LaunchCluster, (CheckClusterReady, IsClusterReady) × polls, WaitForCluster × (polls − 1), SmokeTest,
 * ForEachRepetition, IsMetricsRereadNeeded, on azure WaitForLateMetrics and RereadHostMetrics, DropBootLogs
 * (KeepBootLogs
 * after a failure), TeardownCluster,
 * IsTeardownDone, (WaitForTeardown, CheckTeardown, IsTeardownDone) × teardown polls, ClusterOutcome, ClusterSucceeded;
 * per repetition: IsSettledCheckNeeded, with adaptive repetitions past `min` CheckSettled and IsSettled,
 * StartRepetition,
 * IsFaultPlanned, (WaitForRepetition, CheckRepetition, IsRepetitionDone) × polls, IngestRepetition, IsPauseNeeded,
 * PauseBetweenRepetitions when it pauses, RepetitionDone (fault states are not counted; a skipped repetition would
 * record fewer: the estimate counts every repetition up to `max`).
 */
function executionVisits(clusters: readonly ClusterShape[]): StateVisits {
  const visits: StateVisits = { tasks: 3, maps: 1, mapIterations: 0, others: 2 };
  for (const cluster of clusters) {
    const reread = cluster.rereadsMetrics ? 1 : 0;
    visits.mapIterations += 1 + cluster.repetitions.length;
    visits.maps += 1;
    visits.tasks += 3 + cluster.clusterPolls + reread + cluster.teardownPolls;
    visits.others += 2 * cluster.clusterPolls - 1 + 5 + reread + 2 * cluster.teardownPolls;
    for (const repetition of cluster.repetitions) {
      const checked = repetition.settledCheck ? 1 : 0;
      visits.tasks += 2 + repetition.polls + checked;
      visits.others += 4 + 2 * repetition.polls + (repetition.pause ? 1 : 0) + checked;
    }
  }
  return visits;
}

/**
 * State transitions (what Step Functions bills): every state entered. test/state-machines checks it against executions.
 */
export function stateTransitions(clusters: readonly ClusterShape[]): number {
  const visits = executionVisits(clusters);
  return visits.tasks + visits.maps + visits.others;
}

/** Lambda invocations: the Task states among those transitions. */
export function lambdaInvocations(clusters: readonly ClusterShape[]): number {
  return executionVisits(clusters).tasks;
}

/**
 * History events of the same execution
 * (https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html):
 * ExecutionStarted and ExecutionSucceeded; a Lambda Task TaskStateEntered, LambdaFunctionScheduled,
 * LambdaFunctionStarted,
 * LambdaFunctionSucceeded and TaskStateExited; a Map state MapStateEntered, MapStateStarted, MapStateSucceeded and
 * MapStateExited, and each iteration MapIterationStarted and MapIterationSucceeded; a Choice, Wait, Pass or Succeed
 * state
 * its Entered and Exited events. An inline Map's iterations record into the one execution's history.
 */
export function historyEvents(clusters: readonly ClusterShape[]): number {
  const visits = executionVisits(clusters);
  return 2 + 5 * visits.tasks + 4 * visits.maps + 2 * visits.mapIterations + 2 * visits.others;
}

/** What the safety nets need to know of a cluster's life: from launch to the end of its teardown, with a margin. */
export interface ClusterLifetimeInput {
  /** Seconds of PerfTest, overhead and pauses of the cluster's repetitions. */
  readonly repetitionSeconds: number;
  /** The launch function's deadline for a ready cluster. */
  readonly launchTimeoutMinutes: number;
  /** Seconds the workflow waits before teardown (azure: late host metrics). */
  readonly extraSeconds?: number;
}

/** The margin a cluster's expiry keeps beyond its planned life: a quarter more, and at least an hour. */
export function clusterLifetimeHours(input: ClusterLifetimeInput): number {
  const plannedSeconds =
    input.launchTimeoutMinutes * 60 + input.repetitionSeconds + (input.extraSeconds ?? 0) + 30 * 60;
  return Math.max(plannedSeconds * 1.25, plannedSeconds + 3600) / 3600;
}

/** Seconds one cluster's repetitions take as planned: PerfTest's duration, the overhead and the pauses. */
export function repetitionSeconds(repetitions: readonly { durationSeconds: number; pauseSeconds: number }[]): number {
  return repetitions.reduce(
    (sum, repetition) => sum + repetition.durationSeconds + REPETITION_OVERHEAD_SECONDS + repetition.pauseSeconds,
    0,
  );
}

/**
 * The hours a launched cluster is tagged to live (its rmqbench:expires-at): the controller's `expiryHours`, or longer
 * when the cluster's own repetitions need it (clusterLifetimeHours), so that the sweeper never reaches a cluster that
 * is running as planned. The target rules refuse a cluster whose life would outlast the execution's timeout.
 */
export function clusterExpiryHours(
  expiryHours: number,
  cluster: { readonly repetitions: readonly { durationSeconds: number; pauseSeconds: number }[] },
  launchTimeoutMinutes: number,
  extraSeconds = 0,
): number {
  return Math.max(
    expiryHours,
    clusterLifetimeHours({
      repetitionSeconds: repetitionSeconds(cluster.repetitions),
      launchTimeoutMinutes,
      extraSeconds,
    }),
  );
}
