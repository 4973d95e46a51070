import type { SSMClient } from '@aws-sdk/client-ssm';
import { KAFKA_SMOKE_TEST_SECONDS, kafkaSmokeTestScript } from '../shared/kafka-load-generator';
import { NATS_SMOKE_TEST_SECONDS, natsSmokeTestScript } from '../shared/nats-load-generator';
import { perfTestState, startPerfTest } from '../shared/aws-cluster';
import { commandFailureExcerpt } from '../../core/cloud/command-output';

export interface KafkaSmokeTestOptions {
  /** Milliseconds between GetCommandInvocation polls. @default 3000 */
  readonly pollMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => Date;
}

/**
 * The Kafka cluster's smoke test: kafkaSmokeTestScript run on the load generator with SSM Run Command, polled to its
 * end.
 * On the load generator rather than in this function because that is the client the benchmark uses (its jars, its DNS
 * resolution of the brokers' private names, its security group, which the brokers admit), and because a Kafka client
 * would have to be bundled into the function for no other use. Fails with the script's stderr, which names what failed.
 */
export async function kafkaSmokeTest(
  ssm: SSMClient,
  instanceId: string,
  bootstrapServers: string,
  brokers: number,
  options: KafkaSmokeTestOptions = {},
) {
  const script = kafkaSmokeTestScript({ bootstrapServers, brokers });
  const { status } = await loadGeneratorSmokeTest(ssm, instanceId, 'Kafka', script, KAFKA_SMOKE_TEST_SECONDS, options);
  return { status, brokers };
}

/**
 * The NATS cluster's smoke test: natsSmokeTestScript (lambdas/shared/nats-load-generator.ts) run on the load generator
 * with SSM Run Command, for the same reasons as Kafka's: the load client the benchmark uses is built there, with the
 * load generator's DNS and security group.
 */
export async function natsSmokeTest(
  ssm: SSMClient,
  instanceId: string,
  serverUrls: string,
  nodes: number,
  options: KafkaSmokeTestOptions = {},
) {
  const script = natsSmokeTestScript({ serverUrls, nodes });
  const { status } = await loadGeneratorSmokeTest(ssm, instanceId, 'NATS', script, NATS_SMOKE_TEST_SECONDS, options);
  return { status, nodes };
}

/** A smoke-test script run on the load generator and polled to its end; fails with its stderr or at its deadline. */
async function loadGeneratorSmokeTest(
  ssm: SSMClient,
  instanceId: string,
  broker: string,
  script: string,
  seconds: number,
  options: KafkaSmokeTestOptions,
): Promise<{ status: string }> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? (() => new Date());
  if (!instanceId)
    throw new Error(
      `the cluster stack has no load generator InstanceId output: the ${broker} smoke test runs on the load generator`,
    );
  const startedAt = now();
  const started = await startPerfTest(ssm, instanceId, script, seconds);
  const deadline = startedAt.getTime() + (seconds + 30) * 1000;
  for (;;) {
    const state = await perfTestState(ssm, { ...started, startedAt: startedAt.toISOString() }, now());
    if (state.done) {
      if (state.status !== 'Success')
        throw new Error(
          `${broker} smoke test on the load generator ${instanceId} ended ${state.status} ` +
            `(exit code ${state.exitCode}): ${commandFailureExcerpt(state.stderr, 1500) || 'no stderr'}`,
        );
      return { status: state.status };
    }
    if (now().getTime() > deadline)
      throw new Error(
        `${broker} smoke test on the load generator ${instanceId} did not finish ` +
          `within ${seconds + 30} s (${state.status})`,
      );
    await sleep(options.pollMs ?? 3000);
  }
}
