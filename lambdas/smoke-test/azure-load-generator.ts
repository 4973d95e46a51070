import { randomBytes } from 'node:crypto';
import type { AzureClients } from '../shared/azure-cluster';
import { KAFKA_SMOKE_TEST_SECONDS, kafkaSmokeTestScript } from '../shared/kafka-load-generator';
import { NATS_SMOKE_TEST_SECONDS, natsSmokeTestScript } from '../shared/nats-load-generator';
import { commandFailureExcerpt } from '../../core/cloud/command-output';

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
 * on the load generator, the client the benchmark uses, as a managed Run Command (lambdas/shared/azure-cluster.ts
 * startRunCommand / checkRunCommand) polled to its end within this invocation. It carries no secret (the brokers'
 * listener is PLAINTEXT inside the VNet), so it needs no protected parameter. Fails with the script's stderr, which
 * names what failed.
 */
export async function azureKafkaSmokeTest(
  clients: AzureClients,
  resourceGroup: string,
  outputs: Record<string, string>,
  brokers: number,
  options: AzureKafkaSmokeTestOptions = {},
) {
  const suffix = options.suffix ?? randomBytes(4).toString('hex');
  await azureLoadGeneratorSmokeTest(clients, resourceGroup, outputs, options, {
    broker: 'Kafka',
    endpointOutput: 'kafkaBootstrapServers',
    runCommandName: `rmqbench-kafka-smoke-${suffix}`,
    script: (bootstrapServers) => kafkaSmokeTestScript({ bootstrapServers, brokers, suffix }),
    timeoutSeconds: KAFKA_SMOKE_TEST_SECONDS,
  });
  return { status: 'Success', brokers };
}

/**
 * The NATS cluster's smoke test on Azure: the same script as on AWS (lambdas/shared/nats-load-generator.ts
 * natsSmokeTestScript: the load client built on the load generator, 100 messages acknowledged by min(3, nodes)
 * replicas and read back), as a managed Run Command; no secret (the servers take clients without authentication inside
 * the VNet).
 */
export async function azureNatsSmokeTest(
  clients: AzureClients,
  resourceGroup: string,
  outputs: Record<string, string>,
  nodes: number,
  options: AzureKafkaSmokeTestOptions = {},
) {
  const suffix = options.suffix ?? randomBytes(4).toString('hex');
  await azureLoadGeneratorSmokeTest(clients, resourceGroup, outputs, options, {
    broker: 'NATS',
    endpointOutput: 'natsServerUrls',
    runCommandName: `rmqbench-nats-smoke-${suffix}`,
    script: (serverUrls) => natsSmokeTestScript({ serverUrls, nodes, suffix }),
    timeoutSeconds: NATS_SMOKE_TEST_SECONDS,
  });
  return { status: 'Success', nodes };
}

/** A smoke-test script run on the load generator as a managed Run Command, polled to its end. */
async function azureLoadGeneratorSmokeTest(
  clients: AzureClients,
  resourceGroup: string,
  outputs: Record<string, string>,
  options: AzureKafkaSmokeTestOptions,
  test: {
    readonly broker: string;
    readonly endpointOutput: string;
    readonly runCommandName: string;
    readonly script: (endpoint: string) => string;
    readonly timeoutSeconds: number;
  },
): Promise<void> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? (() => new Date());
  const endpoint = outputs[test.endpointOutput];
  const { loadGeneratorResourceId } = outputs;
  if (!endpoint || !loadGeneratorResourceId) {
    throw new Error(
      `the deployment in resource group ${resourceGroup} lacks the ${test.endpointOutput} or ` +
        `loadGeneratorResourceId output: the ${test.broker} smoke test runs on the load generator against the cluster`,
    );
  }
  const script = test.script(endpoint);
  // Loaded here only: the Azure SDK stays out of what an AWS invocation loads (scripts/bundle-lambdas.mjs).
  const { checkRunCommand, startRunCommand, vmNameFromResourceId } = await import('../shared/azure-cluster');
  const vmName = vmNameFromResourceId(loadGeneratorResourceId);
  const startedAt = now();
  const started = await startRunCommand(clients, resourceGroup, vmName, {
    name: test.runCommandName,
    script,
    protectedParameters: [],
    timeoutInSeconds: test.timeoutSeconds,
  });
  const deadline = startedAt.getTime() + (test.timeoutSeconds + 30) * 1000;
  for (;;) {
    const state = await checkRunCommand(clients, started);
    if (state.done) {
      if (!state.succeeded)
        throw new Error(
          `${test.broker} smoke test on the load generator ${vmName} failed: ` +
            `${commandFailureExcerpt(state.stderr, 1500) || 'no stderr'}`,
        );
      return;
    }
    if (now().getTime() > deadline)
      throw new Error(
        `${test.broker} smoke test on the load generator ${vmName} did not finish within ${test.timeoutSeconds + 30} s`,
      );
    await sleep(options.pollMs ?? 3000);
  }
}
