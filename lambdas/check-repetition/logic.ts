import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { validatePlan } from '../../core/plan';
import type { RawRepetition } from '../../core/ingest';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { perfTestState } from '../shared/aws-cluster';

interface Started { commandId: string; instanceId: string; startedAt: string; doneBy: string; perfTestArgs: string[] }

/** Polls the SSM command; once done, assembles the RawRepetition (the same shape as locally) under the ingest key. */
export async function checkRepetition(ssm: SSMClient, s3: S3Client, bucket: string, event: { runId: string; plan: unknown; item: ScheduledRepetition; started: Started }, now = new Date()) {
  const state = await perfTestState(ssm, event.started);
  if (!state.done) {
    if (now.getTime() > Date.parse(event.started.doneBy)) throw new Error(`PerfTest for ${event.item.scenarioId} #${event.item.repetition} did not finish by ${event.started.doneBy} (${state.status})`);
    return { done: false };
  }
  const prefix = `runs/${event.runId}/raw/${event.item.rawKey.replace(/\.json$/, '')}`;
  const read = async (name: string) => {
    try {
      const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}/${name}` }));
      return await object.Body!.transformToString();
    } catch {
      return '';
    }
  };
  const scenario = validatePlan(event.plan, 'the execution input').scenarios.find((candidate) => candidate.id === event.item.scenarioId)!;
  const raw: RawRepetition = {
    runId: event.runId,
    scenarioId: event.item.scenarioId,
    repetition: event.item.repetition,
    startedAt: event.started.startedAt,
    finishedAt: now.toISOString(),
    perfTestArgs: event.started.perfTestArgs,
    expectations: { durationSeconds: scenario.workload.durationSeconds, producers: scenario.workload.producers, consumers: scenario.workload.consumers, confirms: scenario.workload.confirmWindow !== undefined },
    stdout: await read('stdout.txt'),
    csv: await read('perftest.csv'),
    ...(state.status === 'Success' ? {} : { targetError: `the SSM command ended ${state.status} (exit code ${state.exitCode})` }),
  };
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `runs/${event.runId}/ingest/${event.item.rawKey}`, Body: JSON.stringify(raw) }));
  return { done: true, rawKey: event.item.rawKey };
}
