import type { AzureClients } from '../shared/azure-cluster';
import { checkRunCommand, startRunCommand, vmNameFromResourceId } from '../shared/azure-cluster';
import { KAFKA_READINESS_SECONDS, kafkaReadinessScript } from '../shared/kafka-load-generator';
import { NATS_SMOKE_TEST_SECONDS, natsSmokeTestScript } from '../shared/nats-load-generator';
import { commandFailureExcerpt } from '../../core/cloud/command-output';

/**
 * The readiness Run Command's resource name on the load generator: fixed, so a poll finds the one an earlier poll
 * started.
 */
export const KAFKA_READINESS_RUN_COMMAND = 'rmqbench-kafka-readiness';

/** What one broker's readiness question from the load generator is: its outputs, its script, its words. */
export interface LoadGeneratorReadiness {
  /** The deployment output naming the nodes (kafkaBootstrapServers, natsServerUrls). */
  readonly endpointOutput: string;
  /** The Run Command's fixed resource name. */
  readonly runCommandName: string;
  readonly script: (endpoint: string, nodes: number) => string;
  readonly timeoutSeconds: number;
  /** "Kafka brokers registering", "NATS servers forming a meta group": what a not-yet-ready cluster is doing. */
  readonly pending: string;
  /** "Kafka", "NATS". */
  readonly broker: string;
}

export const KAFKA_READINESS: LoadGeneratorReadiness = {
  endpointOutput: 'kafkaBootstrapServers',
  runCommandName: KAFKA_READINESS_RUN_COMMAND,
  script: (bootstrapServers, brokers) => kafkaReadinessScript({ bootstrapServers, brokers }),
  timeoutSeconds: KAFKA_READINESS_SECONDS,
  pending: 'Kafka brokers registering',
  broker: 'Kafka',
};

/**
 * A NATS cluster is ready when the smoke test's question passes from the load generator (natsSmokeTestScript: the load
 * client built, a stream with min(3, nodes) replicas placed, 100 messages acknowledged and read back): the client
 * port is the only one the load generator may reach (the monitoring port is the servers' own), and a stream with
 * that many replicas needs the meta group formed with that many servers. The binary it builds stays for the smoke test
 * and the repetitions.
 */
export const NATS_READINESS: LoadGeneratorReadiness = {
  endpointOutput: 'natsServerUrls',
  runCommandName: 'rmqbench-nats-readiness',
  script: (serverUrls, nodes) => natsSmokeTestScript({ serverUrls, nodes }),
  timeoutSeconds: NATS_SMOKE_TEST_SECONDS,
  pending: 'NATS servers forming a meta group',
  broker: 'NATS',
};

/**
 * CheckClusterReady's question to a Kafka or NATS cluster on Azure, once its deployment Succeeded (ARM does not wait
 * for the quorum cloud-init forms afterwards), asked by the broker's script on the load generator as a managed Run
 * Command with a fixed name, so each poll is stateless (the workflow carries nothing between polls): none there (404)
 * → start it, not ready; running → not ready; done → its outcome (checkRunCommand deletes the resource), ready when it
 * succeeded. A failed check is "not yet" until `readyBy`, then an error with the script's stderr.
 */
export async function checkAzureLoadGeneratorReadiness(
  clients: AzureClients,
  launch: { clusterId: string; readyBy: string },
  outputs: Record<string, string>,
  nodes: number,
  readiness: LoadGeneratorReadiness,
  now = new Date(),
): Promise<{ ready: boolean; status: string; outputs?: Record<string, string> }> {
  const endpoint = outputs[readiness.endpointOutput];
  const { loadGeneratorResourceId } = outputs;
  if (!endpoint || !loadGeneratorResourceId) {
    throw new Error(
      `deployment of ${launch.clusterId} lacks the ${readiness.endpointOutput} or loadGeneratorResourceId output: ` +
        `${readiness.broker} readiness is asked from the load generator`,
    );
  }
  const vmName = vmNameFromResourceId(loadGeneratorResourceId);
  const started = { resourceGroup: launch.clusterId, vmName, runCommandName: readiness.runCommandName };
  let state: Awaited<ReturnType<typeof checkRunCommand>> | undefined;
  try {
    state = await checkRunCommand(clients, started);
  } catch (error) {
    // GET of a runCommands resource that does not exist answers 404 (VirtualMachineRunCommands_GetByVirtualMachine; the
    // .NET SDK's VirtualMachineRunCommandCollection.GetIfExists turns exactly that into "none",
    // learn.microsoft.com/dotnet/api/azure.resourcemanager.compute.virtualmachineruncommandcollection.getifexists):
    // none started yet, or the last one deleted.
    if ((error as { statusCode?: number }).statusCode !== 404) throw error;
  }
  let saw: string;
  if (state === undefined) {
    await startRunCommand(clients, launch.clusterId, vmName, {
      name: readiness.runCommandName,
      script: readiness.script(endpoint, nodes),
      protectedParameters: [],
      timeoutInSeconds: readiness.timeoutSeconds,
    });
    saw = `readiness check started on the load generator ${vmName}`;
  } else if (!state.done) {
    saw = `readiness check running on the load generator ${vmName}`;
  } else if (state.succeeded) {
    return {
      ready: true,
      status: `Succeeded; ${state.stdout.trim().slice(-300) || `${nodes} nodes ready`}`,
      outputs,
    };
  } else {
    saw = commandFailureExcerpt(state.stderr, 1500) || 'the readiness check failed without stderr';
  }
  if (now.getTime() > Date.parse(launch.readyBy)) {
    throw new Error(
      `${readiness.broker} cluster ${launch.clusterId} did not form by ${launch.readyBy} (the deployment ` +
        `succeeded); last seen: ${saw}`,
    );
  }
  return { ready: false, status: `deployment succeeded, ${readiness.pending}: ${saw}` };
}

/** checkAzureLoadGeneratorReadiness for a Kafka cluster: every broker registered (kafkaReadinessScript). */
export function checkAzureKafkaReadiness(
  clients: AzureClients,
  launch: { clusterId: string; readyBy: string },
  outputs: Record<string, string>,
  brokers: number,
  now = new Date(),
) {
  return checkAzureLoadGeneratorReadiness(clients, launch, outputs, brokers, KAFKA_READINESS, now);
}
