import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { TokenCredential } from '@azure/core-auth';
import {
  azureClients,
  azureCredentialFromSecret,
  type AzureClients,
  type CredentialFactory,
} from '../shared/azure-cluster';

/**
 * Which service principal the fault step runs as: the fault-only one, or the controller's (no fault secret configured).
 */
export type FaultPrincipal = 'fault' | 'controller';

export interface AzureFaultClientsOptions {
  readonly secrets: SecretsManagerClient;
  /**
   * FAULT_AZURE_CREDENTIALS_SECRET_ARN (the fault-only principal, set by the construct's azure.faultCredentialsSecret)
   * and AZURE_CREDENTIALS_SECRET_ARN.
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** @default azureClients (the real ARM endpoint) */
  readonly connect?: (credential: TokenCredential, subscriptionId: string) => AzureClients;
  /** @default a ClientSecretCredential */
  readonly credentialFor?: CredentialFactory;
}

/**
 * The ARM clients of the fault step. With a fault-only service principal configured, they are built from its secret
 * alone: that principal holds Virtual Machine Contributor on each run's resource group only (bicep/main.bicep
 * faultPrincipalId), so a fault step can reach no VM outside the run it was started for. Without one, the step keeps
 * the controller's principal, as before.
 */
export async function azureFaultClients(
  options: AzureFaultClientsOptions,
): Promise<{ clients: AzureClients; principal: FaultPrincipal }> {
  const faultSecret = options.env.FAULT_AZURE_CREDENTIALS_SECRET_ARN;
  const secretArn = faultSecret || options.env.AZURE_CREDENTIALS_SECRET_ARN;
  if (!secretArn)
    throw new Error(
      'the Azure fault step needs AZURE_CREDENTIALS_SECRET_ARN (or FAULT_AZURE_CREDENTIALS_SECRET_ARN): ' +
        'the BenchmarkController sets it when its azure prop is given',
    );
  const { credential, subscriptionId } = await azureCredentialFromSecret(
    options.secrets,
    secretArn,
    options.credentialFor,
  );
  return {
    clients: (options.connect ?? azureClients)(credential, subscriptionId),
    principal: faultSecret ? 'fault' : 'controller',
  };
}
