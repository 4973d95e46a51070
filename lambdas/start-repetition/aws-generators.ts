import type { SSMClient } from '@aws-sdk/client-ssm';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { loadGeneratorInstanceIds, startPerfTest, type SendRetry } from '../shared/aws-cluster';
import { repetitionGenerators, sharedStartDelaySeconds } from './generators';
import { faultSchedule, PERF_TEST_READY_WAIT_SECONDS, perfTestScript } from './logic';

export interface AwsRepetitionEvent {
  readonly runId: string;
  readonly plan: unknown;
  readonly item: ScheduledRepetition;
  readonly readiness: { readonly outputs: Record<string, string> };
}

/** The started command of one of several load generators (check-repetition waits for each). */
export interface StartedGenerator {
  readonly commandId: string;
  readonly instanceId: string;
  readonly perfTestArgs: string[];
}

/**
 * Starts a RabbitMQ repetition on the cluster stack's load generators over SSM: one command with the whole workload
 * (as before issue 27), or one per load generator with its share (lambdas/start-repetition/generators.ts), sent one
 * after the other, all waiting for one shared start SHARED_START_DELAY_SECONDS ahead. With several, `startedAt` is that
 * shared start (the fault is scheduled from it), `commandId`/`instanceId`/`perfTestArgs` are generator 0's and
 * `generators` lists every one by index.
 */
export async function startAwsRabbitMqRepetition(
  ssm: SSMClient,
  bucket: string,
  event: AwsRepetitionEvent,
  retry: SendRetry,
  now: () => Date = () => new Date(),
) {
  const output = (part: string) =>
    Object.entries(event.readiness.outputs).find(([key]) => key.includes(part))?.[1] ?? '';
  const common = {
    plan: event.plan,
    runId: event.runId,
    item: event.item,
    endpoint: output('AmqpEndpoint'),
    managementUrl: output('ManagementUrl'),
    secretArn: output('AdminSecretArn'),
    bucket,
  };
  const instanceIds = loadGeneratorInstanceIds(event.readiness.outputs);
  // The script may first wait for the boot to have installed PerfTest (perfTestReadyLines).
  const timeoutSeconds = event.item.durationSeconds + 120 + PERF_TEST_READY_WAIT_SECONDS;
  const startDelaySeconds = sharedStartDelaySeconds();
  const startAt = new Date(now().getTime() + startDelaySeconds * 1000);
  const generators = repetitionGenerators(event.plan, event.item, startAt.getTime());
  if (!generators) {
    const { script, redactedArgs } = perfTestScript(common);
    const started = await startPerfTest(ssm, instanceIds[0] ?? '', script, timeoutSeconds, retry);
    const startedAt = now();
    return {
      ...started,
      startedAt: startedAt.toISOString(),
      ...faultSchedule(event.plan, event.item, startedAt),
      perfTestArgs: redactedArgs,
      doneBy: new Date(
        startedAt.getTime() + (event.item.durationSeconds + 180 + PERF_TEST_READY_WAIT_SECONDS) * 1000,
      ).toISOString(),
    };
  }
  if (instanceIds.length < generators.runs.length)
    throw new Error(
      `the cluster stack lists ${instanceIds.length} load generator(s) (its InstanceIds output) but the plan ` +
        `cluster has loadGenerators: ${generators.runs.length}; launch it from the current cluster template`,
    );
  const started: StartedGenerator[] = [];
  for (const run of generators.runs) {
    const { script, redactedArgs } = perfTestScript({ ...common, generator: run });
    const instanceId = instanceIds[run.index]!;
    // Each generator's command may wait for the shared start as well as run.
    const sent = await startPerfTest(ssm, instanceId, script, timeoutSeconds + startDelaySeconds, retry);
    started.push({ ...sent, perfTestArgs: redactedArgs });
  }
  const first = started[0]!;
  return {
    commandId: first.commandId,
    instanceId: first.instanceId,
    startedAt: startAt.toISOString(),
    ...faultSchedule(event.plan, event.item, startAt),
    perfTestArgs: first.perfTestArgs,
    doneBy: new Date(
      startAt.getTime() + (event.item.durationSeconds + 180 + PERF_TEST_READY_WAIT_SECONDS) * 1000,
    ).toISOString(),
    generators: started,
    loadGeneratorSplit: generators.split,
  };
}
