/**
 * The Azure twin: the AWS twin's controller (moto behind the IAM gateway, the definition in aws-local-stepfunctions,
 * each function's bundle in a process of its own) deployed with Azure on, as a user deploys it:
 * 1. the service principal's secret is created first (Secrets Manager JSON with tenantId, clientId, clientSecret,
 *    subscriptionId and the template's secret parameters, BenchmarkAzureProps.credentialsSecret), and the fault-only
 *    principal's (faultCredentialsSecret), then examples/controller is synthesized with their ARNs, the fault
 *    principal's object id, the location and a template file as context;
 * 2. the functions reach Azure where they run (function-network.ts): ARM and Entra ID of azure-cloud.ts, the resource
 *    groups' public load balancers from the NAT gateway's Elastic IP (in the VPC) or Lambda's own address (outside);
 * 3. ARM deploys bicep/main.bicep, evaluated (bicep-evaluator.ts), into simulated VMs per resource group.
 * The template file the controller uploads is a stand-in: no Bicep compiler can be installed here, so the twin's ARM
 * evaluates main.bicep itself with the parameters the launch sends; the stand-in says so in its metadata.
 * One resource group at a time: every group takes the same address plan (the controller's parameters are shared), so
 * the twin's controller runs a plan's clusters one after the other (runOneClusterAtATime); Azure runs them at once.
 */
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAwsTwin, type AwsTwin, type TwinContext } from '../aws-twin';
import { AzureCloud } from './azure-cloud';
import { placeFunction } from './function-network';
import { removeTwinTempFolder, twinTempFolder } from '../temp-folders';
import { twinAddressPlan } from './resource-group';

/** The hub of every twin resource group (10.91.52.0/24). */
export const AZURE_TWIN_SUBNET = 52;

export const TWIN_PRINCIPAL = {
  tenantId: '00000000-0000-0000-0000-0000000000aa',
  clientId: '00000000-0000-0000-0000-0000000000c1',
  clientSecret: 'twin-client-secret-value',
};
export const TWIN_SUBSCRIPTION = '00000000-0000-0000-0000-000000000052';
/**
 * The fault-only service principal (BenchmarkAzureProps.faultCredentialsSecret): no role of its own, Virtual Machine
 * Contributor on each run's resource group from the deployment (arm-authorization.ts).
 */
export const TWIN_FAULT_PRINCIPAL = {
  tenantId: TWIN_PRINCIPAL.tenantId,
  clientId: '00000000-0000-0000-0000-0000000000f1',
  clientSecret: 'twin-fault-client-secret-value',
  objectId: '00000000-0000-0000-0000-0000000000f0',
};

export interface AzureTwinOptions {
  /** Synthesizes the controller app with this CDK context into a fresh folder; returns the folder. */
  readonly synthesize: (context: Record<string, string>) => string;
  /** Changes the synthesized assembly before it is deployed (a reviewer's or a test's one change). */
  readonly changeAssembly?: (cdkOut: string) => void;
  readonly log?: (line: string) => void;
}

export interface AzureTwin {
  readonly aws: AwsTwin;
  readonly cloud: AzureCloud;
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * The twin's one change to the assembly it deploys, named: the state machine's Map of clusters runs one at a time
 * (MaxConcurrency 1 instead of BenchmarkController's maxConcurrency, 4 by default), as the twin's ARM deploys one
 * resource group at a time (azure-cloud.ts).
 */
export function runOneClusterAtATime(cdkOut: string): void {
  let maps = 0;
  for (const file of readdirSync(cdkOut).filter((name) => name.endsWith('.template.json'))) {
    const text = readFileSync(join(cdkOut, file), 'utf8');
    const changed = text.replace(/\\"MaxConcurrency\\":\d+/g, () => {
      maps++;
      return '\\"MaxConcurrency\\":1';
    });
    if (changed !== text) writeFileSync(join(cdkOut, file), changed);
  }
  if (maps === 0) throw new Error(`the Azure twin found no state machine Map's MaxConcurrency in ${cdkOut}`);
}

export async function startAzureTwin(options: AzureTwinOptions): Promise<AzureTwin> {
  const workDir = twinTempFolder('rmqbench-azure-twin-');
  const log = options.log ?? (() => undefined);
  const cloud = new AzureCloud({
    workDir,
    subscriptionId: TWIN_SUBSCRIPTION,
    principal: TWIN_PRINCIPAL,
    faultPrincipal: TWIN_FAULT_PRINCIPAL,
    subnet: AZURE_TWIN_SUBNET,
    log,
  });
  await cloud.start();
  let cdkOut: string | undefined;
  const makeAssembly = async (context: TwinContext): Promise<string> => {
    cloud.setGateway(context.gateway);
    const secrets = new SecretsManagerClient(context.adminClientConfig);
    const created = await secrets.send(
      new CreateSecretCommand({
        Name: 'rmqbench/azure-service-principal',
        SecretString: JSON.stringify({
          ...TWIN_PRINCIPAL,
          subscriptionId: TWIN_SUBSCRIPTION,
          parameters: {
            adminSshPublicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHR3aW4gdGVzdCBrZXkgb25seQ twin',
            rabbitmqAdminPassword: 'twin-admin-password-0123',
            erlangCookie: 'TWINERLANGCOOKIE0123456789',
            allowedSourceAddressPrefixes: [],
            ...twinAddressPlan(AZURE_TWIN_SUBNET),
          },
        }),
      }),
    );
    const { objectId, ...faultCredentials } = TWIN_FAULT_PRINCIPAL;
    const fault = await secrets.send(
      new CreateSecretCommand({
        Name: 'rmqbench/azure-fault-principal',
        SecretString: JSON.stringify({ ...faultCredentials, subscriptionId: TWIN_SUBSCRIPTION }),
      }),
    );
    secrets.destroy();
    const templateFile = join(workDir, 'main.json');
    writeFileSync(
      templateFile,
      JSON.stringify({
        $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
        contentVersion: '1.0.0.0',
        metadata: { rmqbenchTwin: 'a stand-in: the twin evaluates bicep/main.bicep with the parameters given' },
        parameters: {},
        resources: [],
      }),
    );
    log(`[azure twin] service principal secret ${created.ARN}; synthesizing examples/controller with Azure`);
    cdkOut = options.synthesize({
      azureCredentialsSecretArn: created.ARN!,
      azureLocation: 'westeurope',
      azureTemplateFile: templateFile,
      azureFaultCredentialsSecretArn: fault.ARN!,
      azureFaultPrincipalId: objectId,
    });
    options.changeAssembly?.(cdkOut);
    runOneClusterAtATime(cdkOut);
    return cdkOut;
  };
  try {
    const aws = await startAwsTwin({
      cdkOut: makeAssembly,
      placeFunction: (config, context) =>
        placeFunction(config, {
          cloud,
          natAddress: context.natAddress,
          gateway: context.gateway,
          securityGroupRules: context.securityGroupRules,
          log,
        }),
      log,
    });
    return {
      aws,
      cloud,
      env: aws.env,
      stop: async () => {
        await aws.stop();
        await cloud.stop();
        if (cdkOut) rmSync(cdkOut, { recursive: true, force: true });
        removeTwinTempFolder(workDir);
      },
    };
  } catch (error) {
    await cloud.stop();
    if (cdkOut) rmSync(cdkOut, { recursive: true, force: true });
    removeTwinTempFolder(workDir);
    throw error;
  }
}
