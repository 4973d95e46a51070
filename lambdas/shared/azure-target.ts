import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { AzureClients, azureClients, azureCredentialFromSecret, AzureClusterConfig } from './azure-cluster';
import { requireEnv } from './env';

const SET_BY = 'the BenchmarkController sets it when its azure prop is given';

/** Whether this controller was deployed with Azure (the safety nets then also look for resource groups). */
export const azureConfigured = (): boolean => Boolean(process.env.AZURE_CREDENTIALS_SECRET_ARN);

let clientsLoaded: Promise<{ clients: AzureClients; parameters: Record<string, unknown> }> | undefined;
let targetLoaded: Promise<{ clients: AzureClients; config: AzureClusterConfig }> | undefined;

/**
 * The ARM clients and the template parameter values (AZURE_PARAMETERS_JSON overlaid with the secret's
 * `parameters`), read once per cold start and only when needed: an AWS-only controller sets none of
 * the AZURE_* variables. AZURE_CREDENTIALS_SECRET_ARN names the service principal JSON.
 */
export function azureClientsFromEnv(): Promise<{ clients: AzureClients; parameters: Record<string, unknown> }> {
  clientsLoaded ??= (async () => {
    const secretArn = requireEnv('AZURE_CREDENTIALS_SECRET_ARN', SET_BY);
    const { credential, subscriptionId, parameters } = await azureCredentialFromSecret(
      new SecretsManagerClient({}),
      secretArn,
    );
    return {
      clients: azureClients(credential, subscriptionId),
      parameters: {
        ...(JSON.parse(process.env.AZURE_PARAMETERS_JSON ?? '{}') as Record<string, unknown>),
        ...parameters,
      },
    };
  })();
  // A failed load (missing variable, unreadable secret) is retried by the next invocation.
  clientsLoaded.catch(() => (clientsLoaded = undefined));
  return clientsLoaded;
}

/**
 * The clients and the whole cluster configuration for launching: also AZURE_TEMPLATE_S3_URI (s3://bucket/key of the
 * compiled ARM JSON) and AZURE_LOCATION.
 */
export function azureTarget(): Promise<{ clients: AzureClients; config: AzureClusterConfig }> {
  targetLoaded ??= (async () => {
    const templateUri = requireEnv('AZURE_TEMPLATE_S3_URI', SET_BY);
    const location = requireEnv('AZURE_LOCATION', SET_BY);
    const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(templateUri);
    if (!match) throw new Error(`AZURE_TEMPLATE_S3_URI must be s3://<bucket>/<key> (got "${templateUri}")`);
    const { clients, parameters } = await azureClientsFromEnv();
    const object = await new S3Client({}).send(new GetObjectCommand({ Bucket: match[1], Key: match[2] }));
    const template = JSON.parse(await object.Body!.transformToString()) as Record<string, unknown>;
    const config: AzureClusterConfig = {
      location,
      template,
      parameters,
      expiryHours: Number(requireEnv('EXPIRY_HOURS')),
      launchTimeoutMinutes: Number(requireEnv('LAUNCH_TIMEOUT_MINUTES')),
    };
    return { clients, config };
  })();
  targetLoaded.catch(() => (targetLoaded = undefined));
  return targetLoaded;
}
