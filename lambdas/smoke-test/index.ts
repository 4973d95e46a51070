import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { WorkflowTarget } from '../../state-machines/schedule';
import { smokeTest } from './logic';

// The Azure SDK is loaded only when the target is azure: a chunk of its own in the bundle (scripts/bundle-lambdas.mjs).
const azureTarget = () => import('../shared/azure-target');

const secrets = new SecretsManagerClient({});

const amqpUrl = (username: string, password: string, endpoint: string) => `amqp://${encodeURIComponent(username)}:${encodeURIComponent(password)}@${endpoint.replace(/^amqps?:\/\//, '')}`;

/** Publishes and consumes one message through the cluster's load balancer with the admin credentials (Secrets Manager on AWS, the template parameters on Azure). */
export const handler = async (event: { target?: WorkflowTarget; readiness: { outputs: Record<string, string> } }) => {
  const outputs = event.readiness.outputs;
  if (event.target === 'azure') {
    const { parameters } = await (await azureTarget()).azureClientsFromEnv();
    const password = parameters.rabbitmqAdminPassword;
    if (!outputs.amqpEndpoint || typeof password !== 'string') throw new Error('the Azure deployment has no amqpEndpoint output, or the template parameters lack rabbitmqAdminPassword');
    return smokeTest(amqpUrl(typeof parameters.rabbitmqAdminUsername === 'string' ? parameters.rabbitmqAdminUsername : 'rmqbench-admin', password, outputs.amqpEndpoint));
  }
  const endpoint = Object.entries(outputs).find(([key]) => key.includes('AmqpEndpoint'))?.[1];
  const secretArn = Object.entries(outputs).find(([key]) => key.includes('AdminSecretArn'))?.[1];
  if (!endpoint || !secretArn) throw new Error('the cluster stack has no AmqpEndpoint / AdminSecretArn output');
  const secret = await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
  const { username, password } = JSON.parse(secret.SecretString ?? '{}') as { username: string; password: string };
  return smokeTest(amqpUrl(username, password, endpoint));
};
