import type { AzureClients } from '../shared/azure-cluster';
import { checkRunCommand, startRunCommand, vmNameFromResourceId } from '../shared/azure-cluster';
import { KAFKA_READINESS_SECONDS, kafkaReadinessScript } from '../shared/kafka-load-generator';

/**
 * The readiness Run Command's resource name on the load generator: fixed, so a poll finds the one an earlier poll
 * started.
 */
export const KAFKA_READINESS_RUN_COMMAND = 'rmqbench-kafka-readiness';

/**
 * CheckClusterReady's question to a Kafka cluster on Azure, once its deployment Succeeded (ARM does not wait for the
 * KRaft quorum cloud-init forms afterwards): has every broker registered? Asked by kafkaReadinessScript on the load
 * generator as a managed Run Command with a fixed name, so each poll is stateless (the workflow carries nothing between
 * polls): none there (404) → start it, not ready; running → not ready; done → its outcome (checkRunCommand deletes the
 * resource), ready when it succeeded. A failed check is "not yet" until `readyBy`, then an error with the script's
 * stderr.
 */
export async function checkAzureKafkaReadiness(
  clients: AzureClients,
  launch: { clusterId: string; readyBy: string },
  outputs: Record<string, string>,
  brokers: number,
  now = new Date(),
): Promise<{ ready: boolean; status: string; outputs?: Record<string, string> }> {
  const { kafkaBootstrapServers, loadGeneratorResourceId } = outputs;
  if (!kafkaBootstrapServers || !loadGeneratorResourceId) {
    throw new Error(
      `deployment of ${launch.clusterId} lacks the kafkaBootstrapServers or loadGeneratorResourceId output: ` +
        `Kafka readiness is asked from the load generator`,
    );
  }
  const vmName = vmNameFromResourceId(loadGeneratorResourceId);
  const started = { resourceGroup: launch.clusterId, vmName, runCommandName: KAFKA_READINESS_RUN_COMMAND };
  let state: Awaited<ReturnType<typeof checkRunCommand>> | undefined;
  try {
    state = await checkRunCommand(clients, started);
  } catch (error) {
    // GET of a runCommands resource that does not exist answers 404 (VirtualMachineRunCommands_GetByVirtualMachine; the
    // .NET
    // SDK's VirtualMachineRunCommandCollection.GetIfExists turns exactly that into "none",
    // learn.microsoft.com/dotnet/api/
    // azure.resourcemanager.compute.virtualmachineruncommandcollection.getifexists): none started yet, or the last one
    // deleted.
    if ((error as { statusCode?: number }).statusCode !== 404) throw error;
  }
  let saw: string;
  if (state === undefined) {
    await startRunCommand(clients, launch.clusterId, vmName, {
      name: KAFKA_READINESS_RUN_COMMAND,
      script: kafkaReadinessScript({ bootstrapServers: kafkaBootstrapServers, brokers }),
      protectedParameters: [],
      timeoutInSeconds: KAFKA_READINESS_SECONDS,
    });
    saw = `readiness check started on the load generator ${vmName}`;
  } else if (!state.done) {
    saw = `readiness check running on the load generator ${vmName}`;
  } else if (state.succeeded) {
    return {
      ready: true,
      status: `Succeeded; ${state.stdout.trim().slice(-300) || `${brokers} brokers registered`}`,
      outputs,
    };
  } else {
    saw = state.stderr.trim().slice(-1500) || 'the readiness check failed without stderr';
  }
  if (now.getTime() > Date.parse(launch.readyBy)) {
    throw new Error(
      `Kafka cluster ${launch.clusterId} did not form by ${launch.readyBy} (the deployment succeeded); ` +
        `last seen: ${saw}`,
    );
  }
  return { ready: false, status: `deployment succeeded, Kafka brokers registering: ${saw}` };
}
