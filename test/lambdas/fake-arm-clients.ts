import type { TokenCredential } from '@azure/core-auth';
import { azureClients, type AzureClients, type AzureClusterConfig } from '../../lambdas/shared/azure-cluster';
import { FakeArm, type FakeArmOptions } from './fake-arm';

// How the Azure tests reach the fake ARM endpoint (./fake-arm.ts) with the Lambdas' real @azure/arm-* clients, in one
// place.

/**
 * The one faked piece of the client side: a token without Entra ID. Every ARM call goes over HTTPS to the fake
 * endpoint.
 */
export const fakeCredential: TokenCredential = {
  getToken: async () => ({ token: 'fake-token', expiresOnTimestamp: Date.now() + 3_600_000 }),
};

/** The smallest deployment template ARM accepts: no resources, no outputs (the fake deploys nothing anyway). */
export const EMPTY_TEMPLATE = {
  $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
  contentVersion: '1.0.0.0',
  resources: [],
};

/**
 * A cluster configuration for launchResourceGroup: `template` in westeurope, no shared parameters, 12 h expiry, 30 min
 * to launch.
 */
export function fakeClusterConfig(template: Record<string, unknown> = EMPTY_TEMPLATE): AzureClusterConfig {
  return { location: 'westeurope', template, parameters: {}, expiryHours: 12, launchTimeoutMinutes: 30 };
}

/** The Lambdas' clients for subscription sub-1, pointed at `arm` and trusting its throw-away certificate. */
export function fakeArmClients(arm: FakeArm): AzureClients {
  return azureClients(fakeCredential, 'sub-1', { endpoint: arm.endpoint, tlsOptions: { ca: arm.ca } });
}

/** Starts a fake ARM endpoint with `options`, and clients pointed at it; the caller stops it. */
export async function startFakeArm(options?: FakeArmOptions): Promise<{ arm: FakeArm; clients: AzureClients }> {
  const arm = new FakeArm(options);
  await arm.start();
  return { arm, clients: fakeArmClients(arm) };
}

/** Runs `use` against a fake ARM endpoint of its own (with `options`), stopped afterwards whatever `use` did. */
export async function withFakeArm<T>(
  options: FakeArmOptions,
  use: (clients: AzureClients, arm: FakeArm) => Promise<T>,
): Promise<T> {
  const { arm, clients } = await startFakeArm(options);
  try {
    return await use(clients, arm);
  } finally {
    await arm.stop();
  }
}

/** The scripts the fake ARM endpoint was asked to run as managed Run Commands, per VM, in order. */
export function runCommandScripts(arm: FakeArm): { vm: string; script: string }[] {
  return arm.requests
    .filter((request) => request.method === 'PUT' && request.path.includes('/runCommands/'))
    .map((request) => ({
      vm: /virtualMachines\/([^/]+)\/runCommands/.exec(request.path)![1]!,
      script: (request.body as { properties: { source: { script: string } } }).properties.source.script,
    }));
}
