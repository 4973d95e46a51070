import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { ScheduledCluster, WorkflowTarget } from '../../state-machines/schedule';
import { checkStack } from '../shared/aws-cluster';
import { withTransientErrors } from '../shared/transient-errors';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');
const azureCheck = () => import('./azure');

const cfn = new CloudFormationClient({});
const ssm = new SSMClient({});

/**
 * Azure: the deployment, then the cluster itself: RabbitMQ through the load balancer's pinned management API, Kafka
 * from the load generator (lambdas/check-cluster/azure.ts, azure-load-generator.ts).
 */
async function checkAzure(event: {
  launch: { clusterId: string; readyBy: string; tlsCertificateFingerprint256?: string; loadGenerators?: number };
  cluster: ScheduledCluster;
}) {
  const { clients, parameters } = await (await azureTarget()).azureClientsFromEnv();
  // Read only for a RabbitMQ cluster: a Kafka deployment (kafkaBootstrapServers output) is checked from the load
  // generator.
  const credentials = () => {
    const password = parameters.rabbitmqAdminPassword;
    if (typeof password !== 'string')
      throw new Error(
        'the Azure template parameters lack rabbitmqAdminPassword ' +
          "(the credentials secret's `parameters` or AZURE_PARAMETERS_JSON)",
      );
    const username =
      typeof parameters.rabbitmqAdminUsername === 'string' ? parameters.rabbitmqAdminUsername : 'rmqbench-admin';
    return { username, password };
  };
  return (await azureCheck()).checkAzureCluster(clients, event.launch, event.cluster.nodes, credentials);
}

export const handler = withTransientErrors(
  async (event: {
    target: WorkflowTarget;
    launch: { clusterId: string; readyBy: string; tlsCertificateFingerprint256?: string; loadGenerators?: number };
    cluster: ScheduledCluster;
  }) => (event.target === 'azure' ? checkAzure(event) : checkStack(cfn, event.launch, new Date(), ssm)),
);
