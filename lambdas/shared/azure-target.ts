import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { AzureClients, azureClients, azureCredentialFromSecret, AzureClusterConfig } from './azure-cluster';
import { requireEnv } from './env';

let loaded: Promise<{ clients: AzureClients; config: AzureClusterConfig }> | undefined;

/**
 * The Azure clients and cluster configuration, read once per cold start and only when an execution
 * has `target: azure` (an AWS-only controller sets none of these variables):
 * AZURE_CREDENTIALS_SECRET_ARN (service principal JSON), AZURE_TEMPLATE_S3_URI (s3://bucket/key of
 * the compiled ARM JSON of bicep/main.bicep), AZURE_LOCATION, optional AZURE_PARAMETERS_JSON.
 */
export function azureTarget(): Promise<{ clients: AzureClients; config: AzureClusterConfig }> {
  loaded ??= (async () => {
    const secretArn = requireEnv('AZURE_CREDENTIALS_SECRET_ARN');
    const templateUri = requireEnv('AZURE_TEMPLATE_S3_URI');
    const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(templateUri);
    if (!match) throw new Error(`AZURE_TEMPLATE_S3_URI must be s3://<bucket>/<key> (got "${templateUri}")`);
    const object = await new S3Client({}).send(new GetObjectCommand({ Bucket: match[1], Key: match[2] }));
    const template = JSON.parse(await object.Body!.transformToString()) as Record<string, unknown>;
    const { credential, subscriptionId } = await azureCredentialFromSecret(new SecretsManagerClient({}), secretArn);
    const config: AzureClusterConfig = {
      location: requireEnv('AZURE_LOCATION'),
      template,
      parameters: JSON.parse(process.env.AZURE_PARAMETERS_JSON ?? '{}') as Record<string, unknown>,
      expiryHours: Number(requireEnv('EXPIRY_HOURS')),
      launchTimeoutMinutes: Number(requireEnv('LAUNCH_TIMEOUT_MINUTES')),
    };
    return { clients: azureClients(credential, subscriptionId), config };
  })();
  // A failed load (missing variable, unreadable secret) is retried by the next invocation.
  loaded.catch(() => (loaded = undefined));
  return loaded;
}
