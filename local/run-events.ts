import type { Plan } from '../core/plan/plan';
import type { RepetitionRecord, RunStatus } from '../core/results/result-model';
import type { ScheduledRepetition } from '../state-machines/schedule';
import type { ResultsStore } from '../store/results-store';
import type { LocalTarget } from './local-target';
import type { PerfTestProgress } from './perftest-process';

/**
 * What a run reports while it goes (the CLI's progress display listens): a local run, or a cloud run followed by
 * bin/cloud-follow.ts.
 */
export type RunEvent =
  | { readonly type: 'run-started'; readonly runId: string; readonly runDir: string; readonly plannedSeconds: number }
  | {
      readonly type: 'cluster-starting';
      readonly nodes: number;
      readonly topology: string;
      readonly broker?: 'rabbitmq' | 'kafka' | 'nats';
    }
  | { readonly type: 'cluster-ready'; readonly seconds: number }
  | ({ readonly type: 'repetition-started' } & Pick<
      ScheduledRepetition,
      'scenarioId' | 'repetition' | 'repetitions' | 'index' | 'total' | 'durationSeconds' | 'remainingPlannedSeconds'
    >)
  | { readonly type: 'progress'; readonly progress: PerfTestProgress }
  /** A fault applied to (or healed on) a node while the repetition runs. */
  | {
      readonly type: 'fault';
      readonly scenarioId: string;
      readonly action: 'kill' | 'stop' | 'restart' | 'partition' | 'heal';
      readonly nodeName: string;
    }
  /**
   * A cloud run's repetition is running; its samples reach the table only when it is ingested, so only time is known.
   */
  | { readonly type: 'running'; readonly elapsedSeconds: number }
  | { readonly type: 'repetition-finished'; readonly record: RepetitionRecord }
  | { readonly type: 'pause'; readonly seconds: number };

export interface RunPlanOptions {
  readonly plan: Plan;
  readonly target: LocalTarget;
  /** The store, or its start-up: the first cluster boots while the store comes up. */
  readonly store: ResultsStore | Promise<ResultsStore>;
  /** The folder where this run keeps its raw PerfTest output (`<dataDir>/runs/<runId>`). */
  readonly runDir: string;
  readonly runId: string;
  readonly onEvent?: (event: RunEvent) => void;
}

export interface RunOutcome {
  readonly runId: string;
  readonly status: RunStatus;
  readonly records: readonly RepetitionRecord[];
  readonly error?: string;
}
