import { AZURE_METRICS_SETTLE_SECONDS } from '../core/metrics/azure-monitor-metrics';
import { TEARDOWN_POLL_SECONDS } from '../core/cloud/workflow-shape';
import { STATE, TASK_FUNCTIONS, TaskStateName, TRANSIENT_ERROR } from './states';

/** An Amazon States Language state (JSONPath flavour), kept loose: the definition is checked by asl-validator. */
export type AslState = Record<string, unknown>;
export type AslStates = Record<string, AslState>;

/** Timings of the polling loops, in seconds. */
export interface WorkflowTimings {
  /** Seconds between two checks of a launching cluster. */
  readonly clusterPollSeconds: number;
}

/**
 * Errors worth trying again, retried with back-off on every task: the Lambda service's own (the set aws-cdk-lib's
 * LambdaInvoke retries, 6 attempts from 2 s doubling:
 * https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html),
 * Lambda.Unknown and Lambda.ClientExecutionTimeoutException (an invocation cut short: every task is safe to run again:
 * reads and polls, idempotent writes, CreateStack with its ClientRequestToken, deterministic Azure deployment names),
 * and TRANSIENT_ERROR, the name a function gives a throttled call, a 5xx or a reset connection that outlived the SDK's
 * own attempts (lambdas/shared/transient-errors.ts). Any other error (a failed stack, a missed deadline, an injected
 * fault) fails the state at once. With full jitter the six attempts wait up to 2 + 4 + … + 64 = 126 s in all.
 */
export const TRANSIENT_RETRY = {
  ErrorEquals: [
    'Lambda.ServiceException',
    'Lambda.AWSLambdaException',
    'Lambda.SdkClientException',
    'Lambda.TooManyRequestsException',
    'Lambda.Unknown',
    'Lambda.ClientExecutionTimeoutException',
    TRANSIENT_ERROR,
  ],
  IntervalSeconds: 2,
  MaxAttempts: 6,
  BackoffRate: 2,
  JitterStrategy: 'FULL',
};

/**
 * The smoke test right after the cluster is ready may meet a load balancer that does not route to it yet: a Network
 * Load Balancer starts routing to a registered target once registration completes and the target passes its initial
 * health checks, which "can take a few minutes"
 * (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-health-checks.html). A failed smoke
 * test (a Lambda function error, whose Step Functions error name is its errorType, "Error" for a thrown Error:
 * https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html) is tried again after 20, 40 and
 * 80 s before the cluster counts as broken. Other error names (e.g. an injected fault) are not retried.
 */
export const SMOKE_TEST_RETRY = { ErrorEquals: ['Error'], IntervalSeconds: 20, MaxAttempts: 3, BackoffRate: 2 };

/**
 * A Lambda Task whose output is the function's own result (no Payload wrapper), so the local handlers return the same
 * shape.
 */
export function task(name: TaskStateName, parameters: Record<string, unknown>, fields: AslState): AslState {
  return {
    Type: 'Task',
    Comment: `${name}: invokes the ${TASK_FUNCTIONS[name].replace(/Arn$/, '')}`,
    Resource: `\${${TASK_FUNCTIONS[name]}}`,
    Parameters: parameters,
    TimeoutSeconds: 900,
    Retry: [TRANSIENT_RETRY],
    ...fields,
  };
}

const catchAll = (next: string, resultPath = '$.error') => [
  { ErrorEquals: ['States.ALL'], ResultPath: resultPath, Next: next },
];

/** Validates the plan and lays the run out; an invalid plan goes to RecordRunFailure and launches nothing. */
export function buildValidatePhase(next: string, onFailure: string): AslStates {
  return {
    [STATE.validatePlan]: task(
      STATE.validatePlan,
      { 'input.$': '$', 'executionName.$': '$$.Execution.Name' },
      // No ResultPath: the schedule replaces the input (aws-local-stepfunctions 3.0.0 mishandles an explicit "$").
      { Next: next, Catch: catchAll(onFailure) },
    ),
  };
}

/** Stores the run record (RUNNING) before anything is launched. */
export function buildRecordStartPhase(next: string, onFailure: string): AslStates {
  return {
    [STATE.recordRunStart]: task(
      STATE.recordRunStart,
      { action: 'start', 'state.$': '$', 'executionName.$': '$$.Execution.Name' },
      { ResultPath: null, Next: next, Catch: catchAll(onFailure) },
    ),
  };
}

/** Launch, then poll until the cluster is ready (the task fails once its deadline has passed), then a smoke test. */
export function buildLaunchPhase(next: string, onFailure: string, timings: WorkflowTimings): AslStates {
  const common = { 'runId.$': '$.runId', 'target.$': '$.target', 'plan.$': '$.plan', 'cluster.$': '$.cluster' };
  return {
    [STATE.launchCluster]: task(STATE.launchCluster, common, {
      ResultPath: '$.launch',
      Next: STATE.checkClusterReady,
      Catch: catchAll(onFailure),
    }),
    [STATE.checkClusterReady]: task(
      STATE.checkClusterReady,
      { ...common, 'launch.$': '$.launch' },
      { ResultPath: '$.readiness', Next: STATE.isClusterReady, Catch: catchAll(onFailure) },
    ),
    [STATE.isClusterReady]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.readiness.ready', BooleanEquals: true, Next: STATE.smokeTest }],
      Default: STATE.waitForCluster,
    },
    [STATE.waitForCluster]: { Type: 'Wait', Seconds: timings.clusterPollSeconds, Next: STATE.checkClusterReady },
    [STATE.smokeTest]: task(
      STATE.smokeTest,
      { ...common, 'launch.$': '$.launch', 'readiness.$': '$.readiness' },
      { ResultPath: null, Next: next, Retry: [TRANSIENT_RETRY, SMOKE_TEST_RETRY], Catch: catchAll(onFailure) },
    ),
  };
}

/**
 * The fault of a repetition whose workload has one, beside the running PerfTest: StartRepetition returns when
 * the fault and its healing are due (`started.fault.at`, `started.fault.healAt`, timestamps); the workflow waits
 * until then, applies it, waits, heals it, and goes on polling the repetition. Without a fault it goes straight on.
 */
export function buildFaultPhase(next: string): AslStates {
  const common = {
    'runId.$': '$.runId',
    'target.$': '$.target',
    'plan.$': '$.plan',
    'launch.$': '$.launch',
    'readiness.$': '$.readiness',
    'item.$': '$.item',
    'started.$': '$.started',
  };
  return {
    [STATE.isFaultPlanned]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.started.fault', IsPresent: true, Next: STATE.waitForFault }],
      Default: next,
    },
    [STATE.waitForFault]: { Type: 'Wait', TimestampPath: '$.started.fault.at', Next: STATE.injectFault },
    // The outcome goes into `started`, which CheckRepetition receives: a cloud repetition records the fault it applied
    // from there.
    [STATE.injectFault]: task(
      STATE.injectFault,
      { action: 'inject', ...common },
      { ResultPath: '$.started.faultApplied', Next: STATE.isHealPlanned },
    ),
    [STATE.isHealPlanned]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.started.fault.healAt', IsPresent: true, Next: STATE.waitForHeal }],
      Default: next,
    },
    [STATE.waitForHeal]: { Type: 'Wait', TimestampPath: '$.started.fault.healAt', Next: STATE.healFault },
    [STATE.healFault]: task(
      STATE.healFault,
      { action: 'heal', ...common, 'applied.$': '$.started.faultApplied' },
      { ResultPath: '$.started.faultHealed', Next: next },
    ),
  };
}

/**
 * One repetition: start PerfTest, apply its fault if it has one, poll until its output is complete (or the task's
 * deadline passed), ingest, pause.
 */
export function buildRepetitionPhase(): AslStates {
  const common = {
    'runId.$': '$.runId',
    'target.$': '$.target',
    'plan.$': '$.plan',
    'launch.$': '$.launch',
    'readiness.$': '$.readiness',
    'item.$': '$.item',
  };
  return {
    [STATE.startRepetition]: task(STATE.startRepetition, common, {
      ResultPath: '$.started',
      Next: STATE.isFaultPlanned,
    }),
    ...buildFaultPhase(STATE.waitForRepetition),
    // Each repetition's own interval (state-machines/schedule.ts pollSeconds): an hour-long repetition is checked ~30
    // times, not 240.
    [STATE.waitForRepetition]: { Type: 'Wait', SecondsPath: '$.item.pollSeconds', Next: STATE.checkRepetition },
    [STATE.checkRepetition]: task(
      STATE.checkRepetition,
      { ...common, 'started.$': '$.started' },
      { ResultPath: '$.check', Next: STATE.isRepetitionDone },
    ),
    [STATE.isRepetitionDone]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.check.done', BooleanEquals: true, Next: STATE.ingestRepetition }],
      Default: STATE.waitForRepetition,
    },
    [STATE.ingestRepetition]: task(
      STATE.ingestRepetition,
      // launch and readiness: the host metrics are read from CloudWatch by the cluster stack's name (launch.clusterId),
      // from Azure Monitor by the deployment's resource ids (readiness.outputs).
      {
        'runId.$': '$.runId',
        'target.$': '$.target',
        'launch.$': '$.launch',
        'readiness.$': '$.readiness',
        'item.$': '$.item',
        'check.$': '$.check',
      },
      { ResultPath: '$.ingested', Next: STATE.isPauseNeeded },
    ),
    [STATE.isPauseNeeded]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.item.pauseSeconds', NumericGreaterThan: 0, Next: STATE.pauseBetweenRepetitions }],
      Default: STATE.repetitionDone,
    },
    [STATE.pauseBetweenRepetitions]: { Type: 'Wait', SecondsPath: '$.item.pauseSeconds', Next: STATE.repetitionDone },
    [STATE.repetitionDone]: { Type: 'Pass', OutputPath: '$.ingested', End: true },
  };
}

/**
 * Adaptive repetitions: an item after its scenario's `min` (`item.settledCheck`) first has CheckSettled decide, from
 * the
 * scenario's repetitions already stored, whether the scenario has settled; if so CheckSettled records this repetition
 * SKIPPED with the reason and the iteration ends without starting PerfTest. Other items go straight to StartRepetition
 * (a plain `repetitions` number passes this Choice only). The repetitions Map runs one item at a time in plan order, so
 * a scenario's earlier repetitions are stored before its next one is checked.
 */
export function buildSettledCheckPhase(next: string): AslStates {
  return {
    [STATE.isSettledCheckNeeded]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.item.settledCheck', IsPresent: true, Next: STATE.checkSettled }],
      Default: next,
    },
    [STATE.checkSettled]: task(
      STATE.checkSettled,
      { action: 'settledCheck', 'runId.$': '$.runId', 'target.$': '$.target', 'item.$': '$.item' },
      { ResultPath: '$.settled', Next: STATE.isSettled },
    ),
    [STATE.isSettled]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.settled.skip', BooleanEquals: true, Next: STATE.repetitionSkipped }],
      Default: next,
    },
    // The same shape as RepetitionDone's output (IngestRepetition's result).
    [STATE.repetitionSkipped]: {
      Type: 'Pass',
      Parameters: {
        'scenarioId.$': '$.item.scenarioId',
        'repetition.$': '$.item.repetition',
        status: 'SKIPPED',
        'reason.$': '$.settled.reason',
      },
      End: true,
    },
  };
}

/** Every scenario × repetition of one cluster, one at a time (they share the cluster). */
export function buildRunPhase(next: string, onFailure: string): AslStates {
  return {
    [STATE.forEachRepetition]: {
      Type: 'Map',
      ItemsPath: '$.cluster.repetitions',
      MaxConcurrency: 1,
      ItemSelector: {
        'runId.$': '$.runId',
        'target.$': '$.target',
        'plan.$': '$.plan',
        'launch.$': '$.launch',
        'readiness.$': '$.readiness',
        'item.$': '$$.Map.Item.Value',
      },
      ItemProcessor: {
        ProcessorConfig: { Mode: 'INLINE' },
        StartAt: STATE.isSettledCheckNeeded,
        States: { ...buildSettledCheckPhase(STATE.startRepetition), ...buildRepetitionPhase() },
      },
      ResultPath: '$.repetitionResults',
      Next: next,
      Catch: catchAll(onFailure),
    },
  };
}

/**
 * Azure only, after the cluster's last repetition and before its teardown: Azure Monitor has a repetition's last
 * minutes
 * only a while after it ended (core/metrics/azure-monitor-metrics.ts, AZURE_METRICS_SETTLE_SECONDS), and the metrics of
 * a deleted VM
 * cannot be relied on. The workflow waits that long (the Wait costs nothing; the VMs bill those minutes more) and has
 * IngestRepetition read the host metrics of the cluster's repetitions recorded as read too early again ("metricsOnly").
 * Its failure is recorded in `$.metricsRereadError` and goes on to teardown: the stored results stay as they were, and
 * the
 * cluster does not count as failed. Other targets (AWS's agent flushes every 10 s) go straight to teardown.
 */
export function buildMetricsRereadPhase(next: string): AslStates {
  return {
    [STATE.isMetricsRereadNeeded]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.target', StringEquals: 'azure', Next: STATE.waitForLateMetrics }],
      Default: next,
    },
    [STATE.waitForLateMetrics]: { Type: 'Wait', Seconds: AZURE_METRICS_SETTLE_SECONDS, Next: STATE.rereadHostMetrics },
    [STATE.rereadHostMetrics]: task(
      STATE.rereadHostMetrics,
      {
        action: 'metricsOnly',
        'runId.$': '$.runId',
        'target.$': '$.target',
        'launch.$': '$.launch',
        'readiness.$': '$.readiness',
        'cluster.$': '$.cluster',
      },
      { ResultPath: '$.metricsReread', Next: next, Catch: catchAll(next, '$.metricsRereadError') },
    ),
  };
}

/**
 * Deletes what was launched, whatever happened before (retried; it deletes by the deterministic cluster id, so it also
 * cleans up after a launch that failed half-way), waits until the stack or resource group is gone (CheckTeardown polls;
 * it deletes a stack left DELETE_FAILED again and fails, naming the stack and the reason, once the deletion's deadline
 * has passed), then reports the cluster's outcome: a cluster whose deletion failed counts as failed, so that the run's
 * record says which and why. A cluster iteration never fails: a failed iteration would cancel its siblings before their
 * teardown. The local target's teardown is done when it returns ({ done: true }) and never polls.
 */
export function buildTeardownPhase(): AslStates {
  const common = { 'runId.$': '$.runId', 'target.$': '$.target', 'cluster.$': '$.cluster' };
  // A failed cluster's boot log group outlives its stack, for the failure's reason; a cluster that ran has it deleted
  // with the stack (TeardownCluster reads `bootLogs.keep`; a Parameters path must exist, so both ways set it). An
  // object,
  // not a bare boolean: aws-local-stepfunctions 3.0 takes a Pass state's `Result: false` for no Result at all.
  const bootLogs = (keep: boolean): AslState => ({
    Type: 'Pass',
    Result: { keep },
    ResultPath: '$.bootLogs',
    Next: STATE.teardownCluster,
  });
  const done = (path: string) => ({
    And: [
      { Variable: path, IsPresent: true },
      { Variable: path, BooleanEquals: true },
    ],
  });
  return {
    [STATE.keepBootLogs]: bootLogs(true),
    [STATE.dropBootLogs]: bootLogs(false),
    [STATE.teardownCluster]: task(
      STATE.teardownCluster,
      { ...common, 'keepBootLogs.$': '$.bootLogs.keep' },
      {
        ResultPath: '$.teardown',
        Next: STATE.isTeardownDone,
        Retry: [TRANSIENT_RETRY, { ErrorEquals: ['States.ALL'], IntervalSeconds: 10, MaxAttempts: 3, BackoffRate: 2 }],
        Catch: catchAll(STATE.clusterOutcome, '$.teardownError'),
      },
    ),
    [STATE.isTeardownDone]: {
      Type: 'Choice',
      Choices: [{ Or: [done('$.teardown.done'), done('$.teardownCheck.done')], Next: STATE.clusterOutcome }],
      Default: STATE.waitForTeardown,
    },
    [STATE.waitForTeardown]: { Type: 'Wait', Seconds: TEARDOWN_POLL_SECONDS, Next: STATE.checkTeardown },
    [STATE.checkTeardown]: task(
      STATE.checkTeardown,
      { action: 'check', ...common, 'teardown.$': '$.teardown' },
      {
        ResultPath: '$.teardownCheck',
        Next: STATE.isTeardownDone,
        Catch: catchAll(STATE.clusterOutcome, '$.teardownError'),
      },
    ),
    [STATE.clusterOutcome]: {
      Type: 'Choice',
      Choices: [
        { Variable: '$.error', IsPresent: true, Next: STATE.clusterFailed },
        { Variable: '$.teardownError', IsPresent: true, Next: STATE.clusterFailed },
      ],
      Default: STATE.clusterSucceeded,
    },
    [STATE.clusterFailed]: {
      Type: 'Pass',
      Parameters: { 'clusterId.$': '$.cluster.clusterId', failed: true, 'state.$': '$' },
      End: true,
    },
    [STATE.clusterSucceeded]: {
      Type: 'Pass',
      Parameters: { 'clusterId.$': '$.cluster.clusterId', failed: false },
      End: true,
    },
  };
}

/**
 * The cluster configurations, in parallel up to `maxConcurrency`; each iteration launches, runs and tears down its own
 * cluster.
 */
export function buildClustersPhase(
  next: string,
  onFailure: string,
  maxConcurrency: number,
  timings: WorkflowTimings,
): AslStates {
  return {
    [STATE.forEachCluster]: {
      Type: 'Map',
      ItemsPath: '$.clusters',
      MaxConcurrency: maxConcurrency,
      ItemSelector: {
        'runId.$': '$.runId',
        'target.$': '$.target',
        'plan.$': '$.plan',
        'cluster.$': '$$.Map.Item.Value',
      },
      ItemProcessor: {
        ProcessorConfig: { Mode: 'INLINE' },
        StartAt: STATE.launchCluster,
        States: {
          ...buildLaunchPhase(STATE.forEachRepetition, STATE.keepBootLogs, timings),
          // A failed run phase goes straight to teardown: its repetitions' metrics are not read again.
          ...buildRunPhase(STATE.isMetricsRereadNeeded, STATE.keepBootLogs),
          ...buildMetricsRereadPhase(STATE.dropBootLogs),
          ...buildTeardownPhase(),
        },
      },
      ResultPath: '$.clusterResults',
      Next: next,
      Catch: catchAll(onFailure),
    },
  };
}

/** Computes the run's status from what was stored, records it, and fails the execution when the run failed. */
export function buildFinishPhase(): AslStates {
  const record = { 'state.$': '$', 'executionName.$': '$$.Execution.Name' };
  return {
    [STATE.finishRun]: task(
      STATE.finishRun,
      { action: 'finish', ...record },
      { ResultPath: '$.finish', Next: STATE.isRunFailed, Catch: catchAll(STATE.recordRunFailure) },
    ),
    [STATE.isRunFailed]: {
      Type: 'Choice',
      Choices: [{ Variable: '$.finish.status', StringEquals: 'FAILED', Next: STATE.runFailed }],
      Default: STATE.runSucceeded,
    },
    [STATE.recordRunFailure]: task(
      STATE.recordRunFailure,
      { action: 'fail', ...record },
      {
        ResultPath: '$.finish',
        Next: STATE.runFailed,
        // Without a record of the failure the execution still fails; the failure rule records it then.
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.recordError', Next: STATE.runFailedUnrecorded }],
      },
    ),
    [STATE.runFailed]: { Type: 'Fail', Error: 'RunFailed', CausePath: '$.finish.error' },
    [STATE.runFailedUnrecorded]: {
      Type: 'Fail',
      Error: 'RunFailed',
      Cause: 'the run failed and its failure could not be recorded; the failure rule records it from this execution',
    },
    [STATE.runSucceeded]: { Type: 'Succeed' },
  };
}
