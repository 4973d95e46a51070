import { randomBytes } from 'node:crypto';
import type { AzureClients } from '../shared/azure-cluster';
import { KAFKA_SMOKE_TEST_SECONDS, kafkaSmokeTestScript } from '../shared/kafka-load-generator';

export interface AzureKafkaSmokeTestOptions {
  /** Milliseconds between polls of the Run Command's instance view. @default 3000 */
  readonly pollMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => Date;
  /** Ends the Run Command's resource name and the smoke topic's name. @default 4 random bytes, hex */
  readonly suffix?: string;
}

/**
 * The Kafka cluster's smoke test on Azure: the same script as on AWS (lambdas/shared/kafka-load-generator.ts
 * kafkaSmokeTestScript: a topic with one partition per broker created, described, written with acks=all, deleted), run
 * on
 * the load generator, the client the benchmark uses, as a managed Run Command (lambdas/shared/azure-cluster.ts
 * startRunCommand / checkRunCommand) polled to its end within this invocation. It carries no secret (the brokers'
 * listener
 * is PLAINTEXT inside the VNet), so it needs no protected parameter. Fails with the script's stderr, which names what
 * failed.
 */
export async function azureKafkaSmokeTest(
  clients: AzureClients,
  resourceGroup: string,
  outputs: Record<string, string>,
  brokers: number,
  options: AzureKafkaSmokeTestOptions = {},
) {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? (() => new Date());
  const { kafkaBootstrapServers, loadGeneratorResourceId } = outputs;
  if (!kafkaBootstrapServers || !loadGeneratorResourceId) {
    throw new Error(
      `the deployment in resource group ${resourceGroup} lacks the kafkaBootstrapServers or loadGeneratorResourceId ` +
        `output: the Kafka smoke test runs on the load generator against the brokers`,
    );
  }
  const suffix = options.suffix ?? randomBytes(4).toString('hex');
  const script = kafkaSmokeTestScript({ bootstrapServers: kafkaBootstrapServers, brokers, suffix });
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { checkRunCommand, startRunCommand, vmNameFromResourceId } = await import('../shared/azure-cluster');
  const vmName = vmNameFromResourceId(loadGeneratorResourceId);
  const startedAt = now();
  const started = await startRunCommand(clients, resourceGroup, vmName, {
    name: `rmqbench-kafka-smoke-${suffix}`,
    script,
    protectedParameters: [],
    timeoutInSeconds: KAFKA_SMOKE_TEST_SECONDS,
  });
  const deadline = startedAt.getTime() + (KAFKA_SMOKE_TEST_SECONDS + 30) * 1000;
  for (;;) {
    const state = await checkRunCommand(clients, started);
    if (state.done) {
      if (!state.succeeded)
        throw new Error(
          `Kafka smoke test on the load generator ${vmName} failed: ${state.stderr.trim().slice(-1500) || 'no stderr'}`,
        );
      return { status: 'Success', brokers };
    }
    if (now().getTime() > deadline)
      throw new Error(
        `Kafka smoke test on the load generator ${vmName} did not finish within ${KAFKA_SMOKE_TEST_SECONDS + 30} s`,
      );
    await sleep(options.pollMs ?? 3000);
  }
}
