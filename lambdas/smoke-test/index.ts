import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { smokeTest } from './logic';

const secrets = new SecretsManagerClient({});

/** Publishes and consumes one message through the cluster's load balancer with the admin credentials from Secrets Manager. */
export const handler = async (event: { readiness: { outputs: Record<string, string> } }) => {
  const outputs = event.readiness.outputs;
  const endpoint = Object.entries(outputs).find(([key]) => key.includes('AmqpEndpoint'))?.[1];
  const secretArn = Object.entries(outputs).find(([key]) => key.includes('AdminSecretArn'))?.[1];
  if (!endpoint || !secretArn) throw new Error('the cluster stack has no AmqpEndpoint / AdminSecretArn output');
  const secret = await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
  const { username, password } = JSON.parse(secret.SecretString ?? '{}') as { username: string; password: string };
  return smokeTest(`amqp://${encodeURIComponent(username)}:${encodeURIComponent(password)}@${endpoint.replace(/^amqps?:\/\//, '')}`);
};
