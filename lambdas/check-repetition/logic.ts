import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { BROKER_SAMPLES_FILE } from '../../core/broker/broker-samples';
import { notCountedReason } from '../../core/failover/cloud-fault';
import {
  cloudFailoverResult,
  cloudVerifierCounts,
  parseVerifierOutput,
  VERIFIER_OUTPUT_FILE,
  type CloudFaultTimes,
} from '../../core/failover/cloud-verifier';
import { validatePlan } from '../../core/plan/plan';
import type { FaultSpec } from '../../core/plan/plan-schema';
import type { RawRepetition } from '../../core/results/ingest';
import { perfTestExpectations } from '../../core/perftest/perftest-output';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { perfTestState } from '../shared/aws-cluster';
import type { AzureClients } from '../shared/azure-cluster';
import { kafkaExpectations, kafkaLadderOutput, kafkaRawFiles } from '../start-repetition/kafka-script';
import { natsLoadExpectations, natsRunSettings } from '../../core/nats/nats-load-args';
import { NATS_LOAD_LOG_FILE, NATS_LOAD_OUTPUT_FILE, natsOutputWithCrash } from '../../core/nats/nats-load-output';
import { rawPrefix } from '../start-repetition/logic';
import type { StartedGenerator } from '../start-repetition/aws-generators';
import type { AzureStartedGenerator } from '../start-repetition/azure-generators';
import { generatorFolder, STARTED_AT_FILE } from '../start-repetition/generators';
import { loadGeneratorId } from '../../core/loadgen/load-generator-count';
import { generatorExpectations, type RawGeneratorOutput } from '../../core/loadgen/generators-result';
import { splitWorkload } from '../../core/loadgen/workload-split';
import type { Scenario } from '../../core/plan/plan';
import { commandFailureExcerpt } from '../../core/cloud/command-output';

export interface StartedCommon {
  startedAt: string;
  doneBy: string;
  perfTestArgs: string[];
  /**
   * Set by InjectFault / HealFault (state-machines/phases.ts buildFaultPhase) when the repetition's fault was applied.
   */
  faultApplied?: { nodeName: string; appliedAtSeconds: number; appliedAt?: string };
  faultHealed?: { healedAtSeconds: number; healedAt?: string };
}
export interface Started extends StartedCommon {
  commandId: string;
  instanceId: string;
  /** Several load generators (issue 27): every one's command, by index (generator 0's is also the one above). */
  generators?: StartedGenerator[];
  /** How the workload was split over them, for the report. */
  loadGeneratorSplit?: string;
}
export interface AzureStarted extends StartedCommon {
  resourceGroup: string;
  vmName: string;
  runCommandName: string;
  /** Several load generators (issue 27): every one's Run Command, by index (generator 0's is also the one above). */
  generators?: AzureStartedGenerator[];
  /** How the workload was split over them, for the report. */
  loadGeneratorSplit?: string;
}
export interface CheckEvent<S> {
  runId: string;
  plan: unknown;
  item: ScheduledRepetition;
  started: S;
}

/** Polls the SSM command; once done, assembles the RawRepetition (the same shape as locally) under the ingest key. */
export async function checkRepetition(
  ssm: SSMClient,
  s3: S3Client,
  bucket: string,
  event: CheckEvent<Started>,
  now = new Date(),
) {
  const generators = event.started.generators ?? [event.started];
  // Each generator's command counts from the repetition's start (several: the shared start), so that a command not
  // visible yet gets the same grace as one generator's.
  const states = await Promise.all(
    generators.map((generator) => perfTestState(ssm, { ...generator, startedAt: event.started.startedAt }, now)),
  );
  const running = states.find((state) => !state.done);
  if (running) return notDone(event, running.status, now);
  const failures = states.flatMap((state, index) => {
    if (state.status === 'Success') return [];
    const stderr = commandFailureExcerpt(state.stderr);
    const which = event.started.generators
      ? `load generator ${loadGeneratorId(index)} (${generators[index]!.instanceId}): `
      : '';
    return [
      `${which}the SSM command ended ${state.status} (exit code ${state.exitCode})${stderr ? `: ${stderr}` : ''}`,
    ];
  });
  return assembleRepetition(s3, bucket, event, failures.length > 0 ? failures.join('; ') : undefined, now, 'aws');
}

/**
 * Polls the managed Run Command's instance view; once done, assembles the RawRepetition from what the script uploaded.
 */
export async function checkAzureRepetition(
  clients: AzureClients,
  s3: S3Client,
  bucket: string,
  event: CheckEvent<AzureStarted>,
  now = new Date(),
) {
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { checkRunCommand, deleteRunCommand } = await import('../shared/azure-cluster');
  const several = event.started.generators;
  if (!several) {
    const state = await checkRunCommand(clients, event.started);
    if (!state.done) return notDone(event, 'Run Command still running', now);
    return assembleRepetition(
      s3,
      bucket,
      event,
      state.succeeded
        ? undefined
        : `the Run Command on ${event.started.vmName} failed: ` +
            `${commandFailureExcerpt(state.stderr, 500) || 'no stderr'}`,
      now,
      'azure',
    );
  }
  // Every generator's Run Command is kept until the last is done, so that each answers every poll.
  const states = await Promise.all(several.map((generator) => checkRunCommand(clients, generator, false)));
  if (states.some((state) => !state.done)) return notDone(event, 'Run Command still running', now);
  await Promise.all(several.map((generator) => deleteRunCommand(clients, generator)));
  const failures = states.flatMap((state, index) =>
    !state.done || state.succeeded
      ? []
      : [
          `load generator ${loadGeneratorId(index)} (${several[index]!.vmName}): the Run Command failed: ` +
            `${commandFailureExcerpt(state.stderr, 500) || 'no stderr'}`,
        ],
  );
  return assembleRepetition(s3, bucket, event, failures.length > 0 ? failures.join('; ') : undefined, now, 'azure');
}

function notDone(event: CheckEvent<StartedCommon>, status: string, now: Date): { done: false } {
  if (now.getTime() > Date.parse(event.started.doneBy))
    throw new Error(
      `PerfTest for ${event.item.scenarioId} #${event.item.repetition} did not finish by ` +
        `${event.started.doneBy} (${status})`,
    );
  return { done: false };
}

/**
 * The fault of a cloud repetition as counted by the lost-message verifier beside PerfTest (its output file, placed on
 * the fault step's timeline by core/failover/cloud-verifier.ts): `failover`, as the local target records it. Output
 * that is
 * missing, cut short or unusable keeps the repetition's PerfTest result and records the fault as applied but not
 * counted,
 * with the reason, so that a report never shows zeros that were never measured. A fault that was never applied (the
 * workflow failed before) leaves nothing.
 */
function countedFault(
  spec: FaultSpec | undefined,
  started: StartedCommon,
  target: string,
  verifierOutput: string,
): Pick<RawRepetition, 'failover' | 'uncountedFault'> {
  if (!spec || !started.faultApplied) return {};
  const healed = started.faultHealed?.healedAtSeconds;
  const uncounted = (why: string): Pick<RawRepetition, 'uncountedFault'> => ({
    uncountedFault: {
      fault: {
        action: spec.action,
        node: spec.node,
        nodeName: started.faultApplied!.nodeName,
        appliedAtSeconds: started.faultApplied!.appliedAtSeconds,
        ...(healed === undefined ? {} : { healedAtSeconds: healed }),
      },
      reason: notCountedReason(target, why),
    },
  });
  if (!started.faultApplied.appliedAt)
    return uncounted(
      "the fault step recorded no wall-clock time (appliedAt) to place the fault on the verifier's timeline",
    );
  const fault: CloudFaultTimes = {
    action: spec.action,
    node: spec.node,
    nodeName: started.faultApplied.nodeName,
    appliedAt: started.faultApplied.appliedAt,
    ...(started.faultHealed?.healedAt ? { healedAt: started.faultHealed.healedAt } : {}),
  };
  try {
    // Measured here first, so that output the ingest could not measure becomes an uncounted fault, not a failed
    // repetition.
    cloudFailoverResult(verifierOutput, fault);
    return {
      failover: {
        counts: cloudVerifierCounts(parseVerifierOutput(verifierOutput), fault),
        fault: { action: fault.action, node: fault.node, nodeName: fault.nodeName },
      },
    };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return uncounted(
      verifierOutput.trim() === ''
        ? `the lost-message verifier left no ${VERIFIER_OUTPUT_FILE} (not uploaded, or it never ran)`
        : `the lost-message verifier's output is unusable: ${detail}`,
    );
  }
}

async function assembleRepetition(
  s3: S3Client,
  bucket: string,
  event: CheckEvent<StartedCommon>,
  targetError: string | undefined,
  now: Date,
  target: 'aws' | 'azure',
) {
  const prefix = rawPrefix(event.runId, event.item);
  const read = async (name: string) => {
    try {
      const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}/${name}` }));
      return await object.Body!.transformToString();
    } catch {
      return '';
    }
  };
  const scenario = validatePlan(event.plan, 'the execution input').scenarios.find(
    (candidate) => candidate.id === event.item.scenarioId,
  )!;
  const isKafka = scenario.cluster.broker === 'kafka';
  const ownTools = isKafka || scenario.cluster.broker === 'nats';
  const several = 'generators' in event.started ? (event.started as Started | AzureStarted) : undefined;
  const loadGenerators = several?.generators
    ? { split: several.loadGeneratorSplit ?? '', outputs: await generatorOutputs(scenario, several.generators, read) }
    : undefined;
  const raw: RawRepetition = {
    runId: event.runId,
    scenarioId: event.item.scenarioId,
    repetition: event.item.repetition,
    startedAt: event.started.startedAt,
    finishedAt: now.toISOString(),
    perfTestArgs: event.started.perfTestArgs,
    expectations: perfTestExpectations(scenario.workload),
    stdout: ownTools || loadGenerators ? '' : await read('stdout.txt'),
    csv: ownTools || loadGenerators ? '' : await read('perftest.csv'),
    ...(loadGenerators ? { loadGenerators } : {}),
    ...(await brokerOutput(scenario, read)),
    ...(targetError === undefined ? {} : { targetError }),
    ...countedFault(
      scenario.workload.fault,
      event.started,
      target,
      scenario.workload.fault ? await read(VERIFIER_OUTPUT_FILE) : '',
    ),
  };
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: `runs/${event.runId}/ingest/${event.item.rawKey}`,
      Body: JSON.stringify(raw),
    }),
  );
  return { done: true, rawKey: event.item.rawKey };
}

/**
 * What the broker's own tools left: a Kafka repetition's console output of each tool, as the run script uploaded it
 * (lambdas/start-repetition/kafka-script.ts); a NATS repetition's load client JSON lines and console
 * (lambdas/start-repetition/nats-script.ts); beside PerfTest, the management API sampler's lines
 * (lambdas/start-repetition/broker-sampler.ts).
 */
async function brokerOutput(
  scenario: Scenario,
  read: (name: string) => Promise<string>,
): Promise<Pick<RawRepetition, 'kafka' | 'nats' | 'brokerSamples'>> {
  if (scenario.cluster.broker === 'kafka') {
    const expectations = kafkaExpectations(scenario);
    const files = kafkaRawFiles(expectations.producers, expectations.consumers, expectations.capacity?.steps.length);
    return {
      kafka: {
        output: {
          producers: await Promise.all(files.producers.map(read)),
          consumers: await Promise.all(files.consumers.map(read)),
          ...(files.steps ? { steps: await kafkaLadderOutput(files, read) } : {}),
        },
        expectations,
      },
    };
  }
  if (scenario.cluster.broker === 'nats')
    return {
      nats: {
        output: natsOutputWithCrash(await read(NATS_LOAD_OUTPUT_FILE), await read(NATS_LOAD_LOG_FILE)),
        expectations: natsLoadExpectations(
          scenario.workload,
          natsRunSettings(scenario.workload, scenario.cluster.nodes),
        ),
      },
    };
  return { brokerSamples: await read(BROKER_SAMPLES_FILE) };
}

/**
 * Each load generator's output as the run scripts uploaded it under generator-<index>/ (lambdas/start-repetition/
 * generators.ts), with its share of the workload split again from the plan as the start function split it.
 */
async function generatorOutputs(
  scenario: Scenario,
  started: readonly Pick<StartedGenerator, 'perfTestArgs'>[],
  read: (name: string) => Promise<string>,
): Promise<RawGeneratorOutput[]> {
  const split = splitWorkload(scenario.workload, started.length);
  return Promise.all(
    split.generators.map(async (share, index) => {
      const file = (name: string) => read(`${generatorFolder(index)}/${name}`);
      return {
        id: share.id,
        producers: share.producers,
        consumers: share.consumers,
        queues: share.queues.names,
        startedAtMs: Number((await file(STARTED_AT_FILE)).trim()) || 0,
        perfTestArgs: started[index]!.perfTestArgs,
        expectations: generatorExpectations(scenario.workload, share),
        stdout: await file('stdout.txt'),
        csv: await file('perftest.csv'),
      };
    }),
  );
}
