import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { settledCheck } from '../../core/results/adaptive-repetitions';
import { ingestRepetition, RawRepetition } from '../../core/results/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import type { LocalRun, PendingRepetition } from './local-run';
import { settledOrAfter } from '../ports';

interface RepetitionInput {
  readonly launch: { clusterId: string };
  readonly item: ScheduledRepetition;
}

/** StartRepetition: PerfTest starts in the background; CheckRepetition polls it. */
export const startRepetition = (run: LocalRun) => async (input: RepetitionInput) => {
  const { item } = input;
  const handle = run.handleOf(input.launch.clusterId);
  const scenario = run.plan.scenarios.find((candidate) => candidate.id === item.scenarioId);
  if (!scenario) throw new Error(`scenario ${item.scenarioId} is not in plan ${run.plan.name}`);
  run.emit({
    type: 'repetition-started',
    scenarioId: item.scenarioId,
    repetition: item.repetition,
    repetitions: item.repetitions,
    index: item.index,
    total: item.total,
    durationSeconds: item.durationSeconds,
    remainingPlannedSeconds: item.remainingPlannedSeconds,
  });
  const started = await run.target.startRepetition(handle, run.runId, scenario, item.repetition, (progress) =>
    run.emit({ type: 'progress', progress }),
  );
  const startedAt = Date.now();
  const entry: PendingRepetition = { promise: started.raw, started };
  entry.promise.then(
    (raw) => (entry.settled = { raw }),
    (error: unknown) => (entry.settled = { error }),
  );
  run.pending.set(`${input.launch.clusterId}/${item.rawKey}`, entry);
  const fault = scenario.workload.fault;
  // When the fault and its healing are due, counted from the verifier's start (just before PerfTest's): the workflow
  // waits for these timestamps.
  const due = (seconds: number) => new Date(startedAt + seconds * 1000).toISOString();
  return {
    startedAt: new Date(startedAt).toISOString(),
    ...(fault
      ? {
          fault: {
            at: due(fault.atSeconds),
            ...(fault.healAtSeconds === undefined ? {} : { healAt: due(fault.healAtSeconds) }),
          },
        }
      : {}),
  };
};

/** InjectFault / HealFault: the fault on the real node beside the running PerfTest. */
export const faultTask = (run: LocalRun) => async (input: RepetitionInput & { action: 'inject' | 'heal' }) => {
  const entry = run.pending.get(`${input.launch.clusterId}/${input.item.rawKey}`);
  if (!entry?.started)
    throw new Error(
      `no repetition of ${input.item.scenarioId} #${input.item.repetition} is running to ${input.action} a fault in`,
    );
  const handle = run.handleOf(input.launch.clusterId);
  if (input.action === 'inject') {
    const applied = await run.target.applyFault(handle, entry.started);
    run.emit({
      type: 'fault',
      scenarioId: input.item.scenarioId,
      action: entry.started.fault!.spec.action,
      nodeName: applied.nodeName,
    });
    return applied;
  }
  const healed = await run.target.healFault(handle, entry.started);
  run.emit({ type: 'fault', scenarioId: input.item.scenarioId, action: 'heal', nodeName: healed.nodeName });
  return healed;
};

/**
 * How long the local CheckRepetition waits for the repetition to end before it answers "not done". The cloud's task
 * answers at once and WaitForRepetition paces the polls; here the end is a promise, so the check answers the moment
 * PerfTest has ended instead of up to one poll interval later (four times per quickstart).
 */
export const CHECK_WAITS_MS = 2000;

/** CheckRepetition: done once PerfTest has ended; its raw output goes where the cloud's S3 object would. */
export const checkRepetition = (run: LocalRun) => async (input: RepetitionInput) => {
  const key = `${input.launch.clusterId}/${input.item.rawKey}`;
  const entry = run.pending.get(key);
  if (!entry) throw new Error(`no PerfTest was started for ${input.item.scenarioId} #${input.item.repetition}`);
  // entry.settled is set by a reaction registered on the promise before this one, so it is set when this wait ends.
  if (!entry.settled) await settledOrAfter(entry.promise, CHECK_WAITS_MS);
  if (!entry.settled) return { done: false };
  run.pending.delete(key);
  if (entry.settled.error !== undefined) throw entry.settled.error;
  const dir = join(run.runDir, 'ingest');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, input.item.rawKey), JSON.stringify(entry.settled.raw));
  return { done: true, rawKey: input.item.rawKey };
};

/** IngestRepetition: the shared ingest (parse, statistics) into the store. */
export const ingestRepetitionTask =
  (run: LocalRun) => async (input: { item: ScheduledRepetition; check: { rawKey: string } }) => {
    const raw = JSON.parse(readFileSync(join(run.runDir, 'ingest', input.check.rawKey), 'utf8')) as RawRepetition;
    const record = ingestRepetition(raw);
    await run.store.putRepetition(record);
    run.records.push(record);
    run.emit({ type: 'repetition-finished', record });
    if (input.item.pauseSeconds > 0) run.emit({ type: 'pause', seconds: input.item.pauseSeconds });
    return { scenarioId: record.scenarioId, repetition: record.repetition, status: record.status };
  };

/**
 * CheckSettled (adaptive repetitions): the same rule as the cloud's IngestRepetition "settledCheck", on the scenario's
 * repetitions stored so far; a skipped repetition is stored SKIPPED with the reason and reported like a finished one.
 */
export const checkSettledTask = (run: LocalRun) => async (input: { item: ScheduledRepetition }) => {
  const { item } = input;
  if (!item.settledCheck)
    throw new Error(`CheckSettled needs item.settledCheck (${item.scenarioId} #${item.repetition})`);
  const stored = await run.store.getRun(run.runId);
  const rule = { ...item.settledCheck, max: item.repetitions };
  const outcome = settledCheck(
    rule,
    { runId: run.runId, ...item },
    stored?.repetitions ?? [],
    new Date().toISOString(),
  );
  if (!outcome.skip) return { skip: false, reason: outcome.reason };
  await run.store.putRepetition(outcome.record);
  run.records.push(outcome.record);
  run.emit({ type: 'repetition-finished', record: outcome.record });
  return { skip: true, reason: outcome.reason };
};
