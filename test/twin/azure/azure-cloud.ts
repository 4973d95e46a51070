/**
 * The Azure twin's cloud: ARM (test/lambdas/fake-arm.ts, HTTPS) with a backend that deploys each resource group's
 * main.bicep into simulated VMs (resource-group.ts), runs managed Run Commands on them and deletes them with their
 * group; Entra ID (fake-entra.ts) issuing the service principal's tokens, the only ones ARM accepts. Both listen on
 * Unix sockets: the functions reach them as management.azure.com and login.microsoftonline.com through relays in their
 * own network namespaces (function-network.ts), with certificates the twin's CA signs.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeArm, type ArmBackend, type BackendDeploymentState, type FakeVm } from '../../lambdas/fake-arm';
import type { RunCommandOutcome } from '../../lambdas/fake-arm';
import { faultPrincipalRefusal } from './arm-authorization';
import { FakeEntra, type ServicePrincipal } from './fake-entra';
import { SimulatedResourceGroup } from './resource-group';

export const AZURE_HOSTS = { arm: 'management.azure.com', entra: 'login.microsoftonline.com' } as const;

/**
 * Where S3 is reached over HTTPS in the functions' and the VMs' namespaces: https://127.0.0.1:4443, a TLS relay to the
 * twin's gateway (the functions' S3 client is pointed there with AWS_ENDPOINT_URL_S3, so that the pre-signed URLs it
 * makes are https, as Amazon S3's are, and the load generator's rmqbench-upload accepts them).
 */
export const S3_RELAY_PORT = 4443;

/** What a TLS relay to the gateway needs: its certificate for 127.0.0.1 and the CA that signed it. */
export interface S3Relay {
  readonly socket: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

export interface AzureCloudOptions {
  readonly workDir: string;
  readonly subscriptionId: string;
  readonly principal: ServicePrincipal;
  /**
   * A fault-only service principal (BenchmarkAzureProps.faultCredentialsSecret), with its object id: ARM allows it only
   * what its role assignments in a resource group allow (arm-authorization.ts).
   */
  readonly faultPrincipal?: ServicePrincipal & { readonly objectId: string };
  /** Third octet of the resource groups' hub (one group at a time: they share the controller's address plan). */
  readonly subnet: number;
  /** Host names whose pre-signed uploads the groups' hubs keep (besides the twin gateway's relay). */
  readonly uploadHosts?: readonly string[];
  /** The AWS twin's gateway, relayed into every VM at 127.0.0.1:<port> (pre-signed S3 URLs name that address). */
  readonly log?: (line: string) => void;
}

/** The last lines of a text, as the Run Command instance view keeps only the end of a long output. */
const tail = (text: string, characters = 4096) => text.slice(-characters);
/** The boot's last own line (its log or a twin step timing), which names the step a long error tail comes from. */
const lastStep = (stderr: string) => {
  const line = stderr.match(/^rmqbench-(?:node-setup|twin-step): .*$/gm)?.pop();
  return line ? ` after "${line}"` : '';
};

export class AzureCloud implements ArmBackend {
  readonly arm: FakeArm;
  readonly entra: FakeEntra;
  readonly groups = new Map<string, SimulatedResourceGroup>();
  /** What the deleted groups' hubs served (their request logs, kept at deletion). */
  readonly requestsOfDeletedGroups: string[] = [];
  private readonly states = new Map<string, BackendDeploymentState>();
  private gateway?: { readonly socket: string; readonly port: number };
  private readonly relayFiles: { certFile: string; keyFile: string };
  readonly caFile: string;
  readonly armSocket: string;
  readonly entraSocket: string;

  constructor(private readonly options: AzureCloudOptions) {
    const tls = issueCertificates(options.workDir, [AZURE_HOSTS.arm, AZURE_HOSTS.entra]);
    this.caFile = tls.caFile;
    this.relayFiles = { certFile: tls.relayCertFile, keyFile: tls.relayKeyFile };
    this.entra = new FakeEntra([options.principal, ...(options.faultPrincipal ? [options.faultPrincipal] : [])], tls);
    this.arm = new FakeArm({
      backend: this,
      tls,
      acceptToken: (token) => this.entra.issued.has(token),
      refuseAuthorization: (method, path, authorization) => this.refusal(method, path, authorization),
      operationPolls: 1,
    });
    this.armSocket = join(options.workDir, 'arm.sock');
    this.entraSocket = join(options.workDir, 'entra.sock');
  }

  /** The TLS relay to the gateway's socket (once setGateway has run). */
  get s3Relay(): S3Relay | undefined {
    return this.gateway ? { socket: this.gateway.socket, ...this.relayFiles, caFile: this.caFile } : undefined;
  }

  /** The AWS twin's gateway, relayed into every VM (set once the gateway listens). */
  setGateway(gateway: { readonly socket: string; readonly port: number }): void {
    this.gateway = gateway;
  }

  async start(): Promise<void> {
    await this.arm.start(this.armSocket);
    await this.entra.listen(this.entraSocket);
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  deploy(group: string, name: string, _template: unknown, parameters: Record<string, unknown>): void {
    const live = [...this.groups.values()].find((candidate) => candidate.hubStarted);
    if (live) {
      // A twin limit, named as one: every group takes the controller's one address plan.
      this.states.set(group, {
        state: 'Failed',
        error: { code: 'TwinLimit', message: 'the Azure twin runs one resource group at a time' },
      });
      return;
    }
    const subnet = this.options.subnet;
    const resourceGroup = new SimulatedResourceGroup({
      subnet,
      subscriptionId: this.options.subscriptionId,
      tenantId: this.options.principal.tenantId,
      name: group,
      location: this.arm.groups.get(group)?.location ?? 'westeurope',
      ...(this.options.uploadHosts ? { uploadHosts: this.options.uploadHosts } : {}),
      ...(this.s3Relay ? { s3Relay: this.s3Relay } : {}),
      ...(this.options.log ? { log: this.options.log } : {}),
    });
    this.groups.set(group, resourceGroup);
    this.states.set(group, { state: 'Running' });
    this.log(`[azure twin] deploying main.bicep into ${group} (hub 10.91.${subnet}.0/24)`);
    void (async () => {
      try {
        const deployment = await resourceGroup.deploy(parameters, name);
        // Azure Monitor records every VM's platform metrics from its creation on, served by the twin's ARM.
        resourceGroup.recordPlatformMetrics((resourceId, entries) =>
          this.arm.metricValues.set(resourceId.toLowerCase(), entries),
        );
        const boots = await Promise.all(resourceGroup.vms.map(async (vm) => ({ vm, result: await vm.boot! })));
        const failed = boots.filter((boot) => boot.result.status !== 0);
        if (failed.length > 0) {
          const dropped = resourceGroup.dropped();
          const message = failed
            .map((boot) => {
              const { stderr } = boot.result;
              return `VM ${boot.vm.vm.name}'s cloud-init failed${lastStep(stderr)}: ${tail(stderr.trim(), 600)}`;
            })
            .join('; ');
          // A scale set whose VMs' extensions fail leaves the deployment Failed (VMExtensionProvisioningError); the
          // twin names what the NSG dropped, the hop the boot may have needed.
          this.states.set(group, {
            state: 'Failed',
            error: {
              code: 'DeploymentFailed',
              message: `${message}${dropped.length > 0 ? `. The twin saw: ${dropped.join('; ')}` : ''}`,
            },
          });
          return;
        }
        const outputs = Object.fromEntries(
          Object.entries(deployment.outputs).map(([key, value]) => [
            key,
            {
              type:
                typeof value === 'object'
                  ? Array.isArray(value)
                    ? 'Array'
                    : 'Object'
                  : typeof value === 'number'
                    ? 'Int'
                    : typeof value === 'boolean'
                      ? 'Bool'
                      : 'String',
              value,
            },
          ]),
        );
        this.log(`[azure twin] ${group}: deployment Succeeded (${resourceGroup.vms.length} VMs booted)`);
        this.states.set(group, { state: 'Succeeded', outputs });
      } catch (error) {
        // A template error (a fail() or a refused parameter) is ARM's InvalidTemplate / a deployment error.
        this.log(`[azure twin] ${group}: deployment failed: ${(error as Error).message}`);
        this.states.set(group, {
          state: 'Failed',
          error: { code: (error as { code?: string }).code ?? 'InvalidTemplate', message: (error as Error).message },
        });
      }
    })();
  }

  deploymentState(group: string): BackendDeploymentState | undefined {
    return this.states.get(group);
  }

  vms(group: string): FakeVm[] {
    return (this.groups.get(group)?.vms ?? []).map((vm, index) => ({
      name: vm.vm.name,
      computerName: vm.vm.computerName,
      timeCreated: new Date(Date.UTC(2026, 10, 26, 8, 0, index)).toISOString(),
      ...(vm.scaleSet ? { scaleSet: vm.scaleSet } : {}),
    }));
  }

  async runCommand(
    group: string,
    vm: string,
    script: string,
    environment: Record<string, string>,
    timeoutSeconds: number,
  ): Promise<RunCommandOutcome> {
    const resourceGroup = this.groups.get(group);
    if (!resourceGroup) throw new Error(`no resource group ${group}`);
    this.log(`[azure twin] Run Command on ${vm} (${script.length} characters of script)`);
    const result = await resourceGroup.runCommand(vm, script, environment, timeoutSeconds * 1000);
    return {
      executionState: result.status === 0 ? 'Succeeded' : 'Failed',
      exitCode: result.status,
      output: tail(result.stdout),
      error: tail(result.stderr),
    };
  }

  async deleteGroup(group: string): Promise<void> {
    const resourceGroup = this.groups.get(group);
    // What the group's load balancers refused, named by the NSG rule: the hop a failed run could not make.
    for (const line of resourceGroup?.refusedConnections() ?? []) this.log(`[azure twin] ${line}`);
    this.log(`[azure twin] deleting resource group ${group}`);
    resourceGroup?.delete();
    this.requestsOfDeletedGroups.push(...(resourceGroup?.requestsAtDeletion ?? []));
    this.groups.delete(group);
    this.states.delete(group);
  }

  /** ARM's refusal of a request by the fault-only principal that its role assignments do not allow. */
  private refusal(method: string, path: string, authorization: string | undefined): string | undefined {
    const fault = this.options.faultPrincipal;
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (!fault || !token || this.entra.issued.get(token) !== fault.clientId) return undefined;
    // The long-running operations' status URLs belong to the request that started them.
    if (/\/providers\/Microsoft\.Fake\/operations\//.test(path)) return undefined;
    const group = /^\/subscriptions\/[^/]+\/resourcegroups\/([^/]+)/i.exec(path)?.[1];
    const assignments = group ? (this.groups.get(decodeURIComponent(group))?.roleAssignments ?? []) : [];
    const refused = faultPrincipalRefusal(fault, method, path, assignments);
    if (refused) this.log(`[azure twin] ARM refused the fault principal: ${refused}`);
    return refused;
  }

  /** Whatever is still running (every group deleted by then). */
  async stop(): Promise<void> {
    for (const group of this.groups.values()) group.delete();
    this.groups.clear();
    await this.arm.stop();
    await this.entra.stop();
  }
}

/**
 * A twin CA, one certificate for the Azure hosts and one for the S3 relay at 127.0.0.1, in workDir (azure-ca.pem is
 * what the functions and the VMs trust).
 */
function issueCertificates(
  workDir: string,
  names: readonly string[],
): { caFile: string; certificate: string; privateKey: string; relayCertFile: string; relayKeyFile: string } {
  const at = (file: string) => join(workDir, file);
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  run(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=rmqbench Azure twin CA'].concat([
      '-keyout',
      at('azure-ca.key'),
      '-out',
      at('azure-ca.pem'),
    ]),
  );
  const issue = (name: string, commonName: string, altNames: string) => {
    run(
      ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${commonName}`, '-keyout', at(`${name}.key`)].concat([
        '-out',
        at(`${name}.csr`),
      ]),
    );
    writeFileSync(at(`${name}.ext`), `subjectAltName=${altNames}\n`);
    run(
      ['x509', '-req', '-in', at(`${name}.csr`), '-CA', at('azure-ca.pem'), '-CAkey', at('azure-ca.key')].concat([
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        at(`${name}.ext`),
        '-out',
        at(`${name}.pem`),
      ]),
    );
  };
  issue('azure', names[0]!, names.map((name) => `DNS:${name}`).join(','));
  issue('relay', '127.0.0.1', 'IP:127.0.0.1');
  return {
    relayCertFile: at('relay.pem'),
    relayKeyFile: at('relay.key'),
    caFile: at('azure-ca.pem'),
    certificate: readFileSync(at('azure.pem'), 'utf8'),
    privateKey: readFileSync(at('azure.key'), 'utf8'),
  };
}
