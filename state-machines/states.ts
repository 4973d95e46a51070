/** State names: the local runner, fault injection and the tests address states by these names. */
export const STATE = {
  validatePlan: 'ValidatePlan',
  recordRunStart: 'RecordRunStart',
  forEachCluster: 'ForEachCluster',
  launchCluster: 'LaunchCluster',
  checkClusterReady: 'CheckClusterReady',
  isClusterReady: 'IsClusterReady',
  waitForCluster: 'WaitForCluster',
  smokeTest: 'SmokeTest',
  forEachRepetition: 'ForEachRepetition',
  isSettledCheckNeeded: 'IsSettledCheckNeeded',
  checkSettled: 'CheckSettled',
  isSettled: 'IsSettled',
  repetitionSkipped: 'RepetitionSkipped',
  startRepetition: 'StartRepetition',
  isFaultPlanned: 'IsFaultPlanned',
  waitForFault: 'WaitForFault',
  injectFault: 'InjectFault',
  isHealPlanned: 'IsHealPlanned',
  waitForHeal: 'WaitForHeal',
  healFault: 'HealFault',
  waitForRepetition: 'WaitForRepetition',
  checkRepetition: 'CheckRepetition',
  isRepetitionDone: 'IsRepetitionDone',
  ingestRepetition: 'IngestRepetition',
  isPauseNeeded: 'IsPauseNeeded',
  pauseBetweenRepetitions: 'PauseBetweenRepetitions',
  repetitionDone: 'RepetitionDone',
  isMetricsRereadNeeded: 'IsMetricsRereadNeeded',
  waitForLateMetrics: 'WaitForLateMetrics',
  rereadHostMetrics: 'RereadHostMetrics',
  keepBootLogs: 'KeepBootLogs',
  dropBootLogs: 'DropBootLogs',
  teardownCluster: 'TeardownCluster',
  isTeardownDone: 'IsTeardownDone',
  waitForTeardown: 'WaitForTeardown',
  checkTeardown: 'CheckTeardown',
  clusterOutcome: 'ClusterOutcome',
  clusterFailed: 'ClusterFailed',
  clusterSucceeded: 'ClusterSucceeded',
  finishRun: 'FinishRun',
  isRunFailed: 'IsRunFailed',
  recordRunFailure: 'RecordRunFailure',
  runFailed: 'RunFailed',
  runFailedUnrecorded: 'RunFailedUnrecorded',
  runSucceeded: 'RunSucceeded',
} as const;

/**
 * The error name under which a function reports an error worth trying again (a throttled call, a 5xx, a reset
 * connection: lambdas/shared/transient-errors.ts); every Task retries it with back-off.
 */
export const TRANSIENT_ERROR = 'RmqbenchTransientError';

/**
 * The Task states of a run that goes well, in execution order: the states `--fail-at` accepts
 * (InjectFault and HealFault run only in repetitions whose workload has a `fault`).
 * (RecordRunFailure is only reached after a failure; the runner's safety net covers it.)
 */
export const FAULT_INJECTABLE_STATES = [
  STATE.validatePlan,
  STATE.recordRunStart,
  STATE.launchCluster,
  STATE.checkClusterReady,
  STATE.smokeTest,
  STATE.startRepetition,
  STATE.injectFault,
  STATE.healFault,
  STATE.checkRepetition,
  STATE.ingestRepetition,
  STATE.teardownCluster,
  STATE.finishRun,
] as const;

// RereadHostMetrics runs on azure only, CheckTeardown on the cloud targets only (the local target never enters them, so
// --fail-at does not offer them); CheckSettled only in plans with adaptive repetitions.
export type TaskStateName =
  | (typeof FAULT_INJECTABLE_STATES)[number]
  | typeof STATE.checkSettled
  | typeof STATE.recordRunFailure
  | typeof STATE.rereadHostMetrics
  | typeof STATE.checkTeardown;

/**
 * The function each Task state invokes, as a `${...}` placeholder: CloudFormation's
 * DefinitionSubstitutions fill them in the cloud, `resolveResources` in tests and locally.
 */
export const TASK_FUNCTIONS = {
  ValidatePlan: 'ValidatePlanFunctionArn',
  RecordRunStart: 'RunRecordFunctionArn',
  FinishRun: 'RunRecordFunctionArn',
  RecordRunFailure: 'RunRecordFunctionArn',
  LaunchCluster: 'LaunchClusterFunctionArn',
  CheckClusterReady: 'CheckClusterFunctionArn',
  SmokeTest: 'SmokeTestFunctionArn',
  StartRepetition: 'StartRepetitionFunctionArn',
  InjectFault: 'FaultFunctionArn',
  HealFault: 'FaultFunctionArn',
  CheckRepetition: 'CheckRepetitionFunctionArn',
  IngestRepetition: 'IngestRepetitionFunctionArn',
  // IngestRepetition's "settledCheck" action: adaptive repetitions, read from and recorded in the results table.
  CheckSettled: 'IngestRepetitionFunctionArn',
  // IngestRepetition's "metricsOnly" mode.
  RereadHostMetrics: 'IngestRepetitionFunctionArn',
  TeardownCluster: 'TeardownClusterFunctionArn',
  // TeardownCluster's "check" action: is the stack or resource group gone yet?
  CheckTeardown: 'TeardownClusterFunctionArn',
} as const satisfies Record<TaskStateName, string>;

export type FunctionPlaceholder = (typeof TASK_FUNCTIONS)[TaskStateName];
export const FUNCTION_PLACEHOLDERS = [...new Set(Object.values(TASK_FUNCTIONS))] as FunctionPlaceholder[];
