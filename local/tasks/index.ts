import { STATE, TaskStateName } from '../../state-machines/states';
import { checkClusterReady, launchCluster, smokeTest, teardownCluster } from './cluster-tasks';
import type { LocalRun } from './local-run';
import {
  checkRepetition,
  checkSettledTask,
  faultTask,
  ingestRepetitionTask,
  startRepetition,
} from './repetition-tasks';
import { finishRun, recordRunFailure, recordRunStart, validatePlan } from './run-record-tasks';

export type TaskHandler = (input: never) => Promise<unknown>;

/** Each Task state of the deployed workflow, mapped to its local implementation for this run. */
export function localTaskHandlers(run: LocalRun): Record<TaskStateName, TaskHandler> {
  return {
    [STATE.validatePlan]: validatePlan(),
    [STATE.recordRunStart]: recordRunStart(run),
    [STATE.launchCluster]: launchCluster(run),
    [STATE.checkClusterReady]: checkClusterReady(run),
    [STATE.smokeTest]: smokeTest(run),
    [STATE.checkSettled]: checkSettledTask(run),
    [STATE.startRepetition]: startRepetition(run),
    [STATE.injectFault]: faultTask(run),
    [STATE.healFault]: faultTask(run),
    [STATE.checkRepetition]: checkRepetition(run),
    [STATE.ingestRepetition]: ingestRepetitionTask(run),
    [STATE.teardownCluster]: teardownCluster(run),
    // A local teardown is done when TeardownCluster returns ({ done: true }): the workflow never checks it again.
    [STATE.checkTeardown]: async () => {
      throw new Error(
        'CheckTeardown is entered on the cloud targets only; a local teardown is done when TeardownCluster returns',
      );
    },
    // Azure only (the re-read of Azure Monitor's late minutes): a local run never enters it.
    [STATE.rereadHostMetrics]: async () => {
      throw new Error(
        'RereadHostMetrics is entered on the azure target only; a local repetition stores its own metrics when ' +
          'it is ingested',
      );
    },
    [STATE.finishRun]: finishRun(run),
    [STATE.recordRunFailure]: recordRunFailure(run),
  };
}
