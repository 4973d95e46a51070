/**
 * One resource group of the Azure twin: the evaluated resources of a deployment of bicep/main.bicep
 * (bicep-evaluator.ts) made as ARM would make them, on a simulated-VM hub (test/simulated-vm/harness.ts):
 * - the scale set's instances and the load generator VM start as simulated VMs and run their template's customData as
 *   cloud-init would (write_files, then runcmd in order, as root);
 * - the user-assigned identities, the role assignments and the vault's secrets and firewall go into the hub's fake
 *   (fake-azure.py), which then answers IMDS, ARM and Key Vault only as RBAC and the firewall allow;
 * - the subnets' network security group becomes each VM's packet filter (network-security-group.ts), and each load
 *   balancer a forwarding process on its frontend's address (fake-nlb.py) that probes its backends and applies their
 *   group to the client's address;
 * - managed Run Command runs a script on a VM as the agent does (bash, as root, its parameters as environment).
 * Addresses: the hub is 10.91.S.0/24; `twinAddressPlan` gives the VNet 10.91.S.0/25 (cluster subnet .0/26, load
 * generator subnet .64/26) and public IPs sit above it (.200 and up), outside the VNet, as the internet's addresses
 * are.
 * Package installation goes through the scripts' seams only: Debian's rabbitmq-server through the node script's
 * install-override.sh, an apt-get stand-in that "installs" what this machine has, nats-server's and Go's release
 * tarballs packed from this machine's builds (handed over by install-override.sh with their SHA-256, which the scripts
 * check), and Maven Central and the Go module proxy served from this machine's caches (fake_downloads.py). A VM with a
 * data disk (a Kafka broker or NATS server) gets it at /dev/disk/azure/scsi1/lun0, the name Azure's udev rules give
 * LUN 0, and private layers over /etc, /opt and /var/lib, where its boot installs and mounts.
 */
import type { RoleAssignment } from './arm-authorization';
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { DOWNLOAD_MIRROR_HOSTS, downloadMirrorState } from '../../simulated-vm/download-mirrors';
import { goTarballOfThisMachine, natsServerTarballOfThisMachine } from '../../simulated-vm/local-tarballs';
import { SimulatedHub, type CommandResult, type SimulatedVm } from '../../simulated-vm/harness';
import { describeDrop, droppedPackets, applyRuleset } from '../security-groups';
import { evaluateDeployment, type EvaluatedDeployment, type EvaluatedResource } from './bicep-evaluator';
import { AZURE_LOAD_BALANCER_ADDRESS, cidrHas, nsgNftRuleset, nsgRules, type NsgRule } from './network-security-group';
import { loadBalancerLog, startLoadBalancer, type LoadBalancerListener } from './load-balancer';
import { S3_RELAY_PORT, type S3Relay } from './azure-cloud';
import { azureVmMemoryBytes } from '../../../core/cost/azure-vm-sizes';
import { PlatformMetricsRecorder, type MetricEntry } from './platform-metrics';

/** The VNet and subnets of a twin resource group on hub 10.91.S.0/24, as main.bicep's parameters take them. */
export function twinAddressPlan(subnet: number): Record<string, string> {
  return {
    vnetAddressPrefix: `10.91.${subnet}.0/25`,
    clusterSubnetPrefix: `10.91.${subnet}.0/26`,
    loadGeneratorSubnetPrefix: `10.91.${subnet}.64/26`,
  };
}

/** First host number of the public IPs in the hub's /24 (outside the VNet's /25). */
const FIRST_PUBLIC_HOST = 200;

/** The stand-in apt-get on a load generator: the packages the setup asks for, if this machine has them. */
const APT_GET_STAND_IN = `#!/bin/sh
# apt-get (twin): no package repository here; "installs" Java, curl and jq only when this machine has them.
case "$1" in
  update) exit 0 ;;
  install) command -v java >/dev/null && command -v curl >/dev/null && command -v jq >/dev/null ;;
  *) echo "apt-get (twin): not simulated: $*" >&2; exit 1 ;;
esac
`;

/**
 * The RabbitMQ boot's steps, each wrapped to print how long it took (`rmqbench-twin-step: start_broker 3140 ms`): the
 * seam is sourced inside boot(), after every function is defined and before the first step runs, and its lines reach
 * the twin's log as they are printed, so that a slow boot names its slow step. The wrapper keeps `set -e`: a failing
 * step still ends the boot (and prints no timing).
 */
const STEP_TIMINGS = [
  'for __twin_step in install_rabbitmq install_nftables install_configuration install_tls start_broker \\',
  '    form_or_join configure_users_and_policies scale_set_members key_vault_secret imds_token; do',
  '  declare -F "$__twin_step" >/dev/null || continue',
  '  eval "$(declare -f "$__twin_step" | sed "1s/^$__twin_step /__twin_$__twin_step /")"',
  '  eval "$__twin_step() { local started=\\$(date +%s%N) status; __twin_$__twin_step \\"\\$@\\"; ' +
    'status=\\$?; echo \\"rmqbench-twin-step: $__twin_step \\$(( (\\$(date +%s%N) - started) / 1000000 )) ms\\" >&2; ' +
    'return \\$status; }"',
  'done',
  '',
].join('\n');

/** The node script's seam: Debian's rabbitmq-server (installed on this machine) stands in for the apt install. */
const INSTALL_OVERRIDE =
  'install_rabbitmq() { command -v rabbitmq-server >/dev/null && command -v jq >/dev/null && ' +
  'command -v curl >/dev/null; }\n' +
  // A joining node looks for a formed peer every 3 s instead of 10 (the twins shorten polling waits only).
  'JOIN_POLL_SECONDS=3\n' +
  STEP_TIMINGS;

export interface ResourceGroupOptions {
  /** Third octet of the hub 10.91.S.0/24. */
  readonly subnet: number;
  readonly subscriptionId: string;
  readonly tenantId: string;
  readonly name: string;
  readonly location: string;
  /** Host names whose pre-signed PUT uploads the hub keeps (e.g. a storage account's blob host). */
  readonly uploadHosts?: readonly string[];
  /**
   * The AWS twin's gateway, relayed over TLS into every VM at https://127.0.0.1:S3_RELAY_PORT: the address the
   * functions' pre-signed S3 URLs name (azure-cloud.ts), as https://<bucket>.s3.<region>.amazonaws.com would be reached
   * through the NAT gateway in Azure. Its CA joins the VMs' trusted certificates.
   */
  readonly s3Relay?: S3Relay;
  readonly log?: (line: string) => void;
}

export interface TwinVm {
  readonly vm: SimulatedVm;
  readonly id: string;
  /** The scale set it belongs to, if any. */
  readonly scaleSet?: string;
  /** Its size (the scale set's sku.name, a VM's hardwareProfile.vmSize). */
  readonly vmSize?: string;
  /** The boot's result once cloud-init's runcmd ended. */
  boot?: Promise<CommandResult>;
}

interface CloudConfig {
  write_files?: { path: string; encoding?: string; permissions?: string; content: string }[];
  runcmd?: (string[] | string)[];
}

const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/** A GUID derived from a text (the twin's runtime values: identities' client and principal ids). */
export function derivedGuid(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export class SimulatedResourceGroup {
  private hubValue?: SimulatedHub;
  /** The deployment's role assignments (ARM authorizes the fault-only principal by them: arm-authorization.ts). */
  roleAssignments: RoleAssignment[] = [];
  readonly vms: TwinVm[] = [];
  private deployment?: EvaluatedDeployment;
  private readonly privateIps = new Map<string, string>();
  private readonly publicIps = new Map<string, string>();
  private nextPrivateHost = new Map<string, number>();
  private nextPublicHost = FIRST_PUBLIC_HOST;
  private readonly stops: (() => void)[] = [];
  private vnetPrefixes: string[] = [];
  private subnetPrefixes = new Map<string, string>();
  private started = false;

  constructor(private readonly options: ResourceGroupOptions) {}

  get hub(): SimulatedHub {
    if (!this.hubValue) throw new Error(`resource group ${this.options.name} has no hub yet`);
    return this.hubValue;
  }

  /** Whether the group's hub (its VNet and the internet side of its public IPs) exists. */
  /**
   * Records the VMs' platform metrics every 5 s (platform-metrics.ts) into `sink`, by resource (a scale set's VMs under
   * the scale set), until the group is stopped.
   */
  recordPlatformMetrics(sink: (resourceId: string, entries: MetricEntry[]) => void): void {
    const recorder = new PlatformMetricsRecorder(
      () =>
        this.vms.map((twinVm) => {
          const memoryBytes = twinVm.vmSize === undefined ? undefined : azureVmMemoryBytes(twinVm.vmSize);
          return {
            resourceId: twinVm.scaleSet
              ? `${this.id}/providers/Microsoft.Compute/virtualMachineScaleSets/${twinVm.scaleSet}`
              : twinVm.id,
            ...(twinVm.scaleSet ? { vmName: twinVm.vm.name } : {}),
            pid: twinVm.vm.pid,
            ...(memoryBytes === undefined ? {} : { memoryBytes }),
          };
        }),
      sink,
    );
    recorder.sample();
    const timer = setInterval(() => recorder.sample(), 5000);
    timer.unref();
    this.stops.push(() => clearInterval(timer));
  }

  get hubStarted(): boolean {
    return this.hubValue !== undefined && !this.deleted;
  }

  private deleted = false;

  get id(): string {
    return `/subscriptions/${this.options.subscriptionId}/resourceGroups/${this.options.name}`;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  /**
   * A runtime value of a resource: the identities' ids, private IPs allocated in their subnet in creation order
   * (Azure's first usable host is .4, https://learn.microsoft.com/azure/virtual-network/virtual-networks-faq "Are there
   * any restrictions on using IP addresses within these subnets?"), public IPs above the VNet.
   */
  private runtime = (resource: EvaluatedResource, path: readonly string[]): unknown => {
    const last = path[path.length - 1];
    if (
      resource.type === 'Microsoft.ManagedIdentity/userAssignedIdentities' &&
      (last === 'clientId' || last === 'principalId')
    )
      return derivedGuid(`${resource.id}/${last}`);
    if (resource.type === 'Microsoft.Network/publicIPAddresses' && last === 'ipAddress')
      return this.publicIp(resource.id);
    if (last === 'privateIPAddress') {
      const key = `${resource.id}/${path.join('/')}`;
      const configuration = this.ipConfiguration(resource, path);
      const subnetId = configuration?.subnet?.id;
      const stat = configuration?.privateIPAllocationMethod === 'Static' ? configuration.privateIPAddress : undefined;
      if (typeof stat === 'string') return stat;
      if (!subnetId) return undefined;
      return this.privateIp(key, subnetId);
    }
    return undefined;
  };

  private ipConfiguration(
    resource: EvaluatedResource,
    path: readonly string[],
  ): { subnet?: { id?: string }; privateIPAllocationMethod?: string; privateIPAddress?: unknown } | undefined {
    let node: unknown = resource.body;
    for (const part of path.slice(0, -1)) node = (node as Record<string, unknown> | undefined)?.[part];
    return node as ReturnType<SimulatedResourceGroup['ipConfiguration']>;
  }

  private publicIp(id: string): string {
    let ip = this.publicIps.get(id);
    if (!ip) {
      ip = `10.91.${this.options.subnet}.${this.nextPublicHost++}`;
      this.publicIps.set(id, ip);
    }
    return ip;
  }

  /** The next free address of a subnet (by its resource id's prefix in twinAddressPlan order). */
  private privateIp(key: string, subnetId: string): string {
    const known = this.privateIps.get(key);
    if (known) return known;
    const base = subnetId.toLowerCase().endsWith('/subnets/loadgen') ? 64 : 0;
    const next = this.nextPrivateHost.get(subnetId) ?? base + 4;
    this.nextPrivateHost.set(subnetId, next + 1);
    const ip = `10.91.${this.options.subnet}.${next}`;
    this.privateIps.set(key, ip);
    return ip;
  }

  /** Evaluates main.bicep with these parameters and makes its resources; resolves when every VM has booted. */
  async deploy(parameters: Readonly<Record<string, unknown>>, deploymentName: string): Promise<EvaluatedDeployment> {
    if (this.started) throw new Error(`the twin deploys once into resource group ${this.options.name}`);
    this.started = true;
    const deployment = await evaluateDeployment(
      parameters,
      {
        subscriptionId: this.options.subscriptionId,
        tenantId: this.options.tenantId,
        resourceGroup: this.options.name,
        location: this.options.location,
        deploymentName,
      },
      { runtime: this.runtime },
    );
    this.deployment = deployment;
    await this.startHub();
    await this.createVms();
    await this.startLoadBalancers();
    return deployment;
  }

  private of(type: string): EvaluatedResource[] {
    return (this.deployment?.resources ?? []).filter((resource) => resource.type === type && !resource.existing);
  }

  private async startHub(): Promise<void> {
    const vault = this.of('Microsoft.KeyVault/vaults')[0];
    const vnet = this.of('Microsoft.Network/virtualNetworks')[0];
    const vnetProperties = vnet?.body['properties'] as
      | {
          addressSpace: { addressPrefixes: string[] };
          subnets: { name: string; properties: { addressPrefix: string } }[];
        }
      | undefined;
    this.vnetPrefixes = vnetProperties?.addressSpace.addressPrefixes ?? [];
    for (const subnet of vnetProperties?.subnets ?? [])
      this.subnetPrefixes.set(`${vnet!.id}/subnets/${subnet.name}`.toLowerCase(), subnet.properties.addressPrefix);
    const acls = (vault?.body['properties'] as { networkAcls?: Record<string, unknown> } | undefined)?.networkAcls;
    const allowedSubnets = ((acls?.['virtualNetworkRules'] as { id: string }[] | undefined) ?? []).map(
      (rule) => this.subnetPrefixes.get(rule.id.toLowerCase()) ?? `unknown subnet ${rule.id}`,
    );
    const identities = this.of('Microsoft.ManagedIdentity/userAssignedIdentities');
    const assignments = this.of('Microsoft.Authorization/roleAssignments').map((assignment) => {
      const properties = assignment.body['properties'] as { principalId: string; roleDefinitionId: string };
      return {
        principalId: properties.principalId,
        roleDefinitionId: properties.roleDefinitionId,
        scope: assignment.scope ?? this.id,
      };
    });
    this.roleAssignments = assignments;
    const secrets = Object.fromEntries(
      this.of('Microsoft.KeyVault/vaults/secrets').map((secret) => [
        secret.name.split('/').pop()!,
        (secret.body['properties'] as { value: string }).value,
      ]),
    );
    const vaultName = vault?.name ?? 'no-vault';
    this.hubValue = new SimulatedHub({
      subnet: this.options.subnet,
      fakeScript: 'fake-azure.py',
      httpsNames: [
        'management.azure.com',
        `${vaultName}.vault.azure.net`,
        ...DOWNLOAD_MIRROR_HOSTS,
        ...(this.options.uploadHosts ?? []),
      ],
      state: {
        subscriptionId: this.options.subscriptionId,
        resourceGroup: this.options.name,
        scaleSetName: this.of('Microsoft.Compute/virtualMachineScaleSets')[0]?.name ?? '',
        vaultName,
        vaultResourceId: vault?.id ?? '',
        secrets,
        identities: identities.map((identity) => ({
          clientId: derivedGuid(`${identity.id}/clientId`),
          principalId: derivedGuid(`${identity.id}/principalId`),
          vms: [],
        })),
        roleAssignments: assignments,
        ...(acls?.['defaultAction'] === 'Deny' ? { vaultAllowedPrefixes: allowedSubnets } : {}),
        ...downloadMirrorState(),
        uploadHosts: this.options.uploadHosts ?? [],
      },
    });
    await this.hub.start();
    // The VMs trust the hub's CA (mounted as their CA bundle); the S3 relay's CA joins it.
    if (this.options.s3Relay) appendFileSync(join(this.hub.dir, 'ca.pem'), readFileSync(this.options.s3Relay.caFile));
    this.log(
      `[azure twin] ${this.options.name}: vault ${vaultName} (${Object.keys(secrets).length} secrets), ` +
        `${identities.length} identities, ${assignments.length} role assignments`,
    );
  }

  /** The NSG rules of the subnet a resource id names, with the twin's service tags. */
  private subnetRules(subnetId: string): NsgRule[] {
    const vnet = this.of('Microsoft.Network/virtualNetworks')[0]!;
    const subnets = (vnet.body['properties'] as { subnets: { name: string; properties: Record<string, unknown> }[] })
      .subnets;
    const subnet = subnets.find(
      (candidate) => `${vnet.id}/subnets/${candidate.name}`.toLowerCase() === subnetId.toLowerCase(),
    );
    const nsgId = (subnet?.properties['networkSecurityGroup'] as { id?: string } | undefined)?.id;
    const nsg = this.of('Microsoft.Network/networkSecurityGroups').find(
      (group) => group.id.toLowerCase() === nsgId?.toLowerCase(),
    );
    if (!nsg) return [];
    return nsgRules(nsg.body, { virtualNetwork: this.vnetPrefixes, azureLoadBalancer: [AZURE_LOAD_BALANCER_ADDRESS] });
  }

  private async createVms(): Promise<void> {
    for (const scaleSet of this.of('Microsoft.Compute/virtualMachineScaleSets')) {
      const sku = scaleSet.body['sku'] as { capacity: number; name?: string };
      const vmProfile = (scaleSet.body['properties'] as { virtualMachineProfile: VmProfile }).virtualMachineProfile;
      const nic = vmProfile.networkProfile.networkInterfaceConfigurations?.[0];
      const subnetId = nic?.properties.ipConfigurations[0]?.properties.subnet.id ?? '';
      for (let index = 0; index < sku.capacity; index += 1) {
        // Flexible orchestration names its VMs {scale-set-name}_{8 hex} and their hosts {computerNamePrefix}{6 chars}
        // (https://learn.microsoft.com/azure/virtual-machine-scale-sets/
        // virtual-machine-scale-sets-orchestration-modes).
        const name = `${scaleSet.name}_${randomBytes(4).toString('hex')}`;
        const computerName = `${vmProfile.osProfile.computerNamePrefix}${randomBytes(3).toString('hex')}`;
        const ip = this.privateIp(`${scaleSet.id}/${index}`, subnetId);
        this.startVm(
          name,
          computerName,
          ip,
          vmProfile.osProfile.customData,
          subnetId,
          identityIds(scaleSet),
          scaleSet.name,
          undefined,
          sku.name,
        );
      }
    }
    for (const machine of this.of('Microsoft.Compute/virtualMachines')) {
      const properties = machine.body['properties'] as VmProfile;
      const nicId = properties.networkProfile.networkInterfaces?.[0]?.id ?? '';
      const nic = this.of('Microsoft.Network/networkInterfaces').find(
        (candidate) => candidate.id.toLowerCase() === nicId.toLowerCase(),
      );
      const configuration = (
        nic?.body['properties'] as { ipConfigurations: { properties: IpConfiguration }[] } | undefined
      )?.ipConfigurations[0]?.properties;
      const subnetId = configuration?.subnet.id ?? '';
      const ip =
        configuration?.privateIPAllocationMethod === 'Static'
          ? configuration.privateIPAddress!
          : (this.runtime(nic!, ['properties', 'ipConfigurations', '0', 'properties', 'privateIPAddress']) as string);
      this.startVm(
        machine.name,
        properties.osProfile.computerName ?? machine.name,
        ip,
        properties.osProfile.customData,
        subnetId,
        identityIds(machine),
        undefined,
        properties.storageProfile?.dataDisks?.find((disk) => disk.lun === 0)?.diskSizeGB,
        properties.hardwareProfile?.vmSize,
      );
    }
  }

  private startVm(
    name: string,
    computerName: string,
    ip: string,
    customData: string | undefined,
    subnetId: string,
    identities: readonly string[],
    scaleSet?: string,
    dataDiskGiB?: number,
    vmSize?: string,
  ): void {
    const hostNumber = Number(ip.split('.').pop());
    const vm = this.hub.createVm(
      name,
      computerName,
      {},
      {
        hostNumber,
        ...(dataDiskGiB === undefined
          ? { overlays: ['/opt', '/usr/local/bin', '/usr/local/lib', '/home'], privateProc: true }
          : {
              overlays: ['/etc', '/opt', '/var/lib', '/usr/local/bin', '/usr/local/lib'],
              blockDevice: AZURE_DATA_DISK_LUN0,
              blockDeviceGiB: dataDiskGiB,
            }),
        state: { scaleSetName: scaleSet ?? '' },
      },
    );
    this.hub.updateState((state) => {
      for (const identity of state['identities'] as { clientId: string; vms: string[] }[]) {
        if (identities.some((id) => derivedGuid(`${id}/clientId`) === identity.clientId)) identity.vms.push(name);
      }
    });
    const rules = this.subnetRules(subnetId);
    applyRuleset(vm.pid, nsgNftRuleset(rules, ip, this.loadBalancerAddresses()));
    if (this.options.s3Relay) {
      const { socket, certFile, keyFile } = this.options.s3Relay;
      const listen =
        `OPENSSL-LISTEN:${S3_RELAY_PORT},bind=127.0.0.1,cert=${certFile},key=${keyFile},` + 'verify=0,fork,reuseaddr';
      const relay = spawn('nsenter', ['-t', String(vm.pid), '-n', 'socat', listen, `UNIX-CONNECT:${socket}`], {
        stdio: 'ignore',
      });
      this.stops.push(() => relay.kill('SIGKILL'));
    }
    const twinVm: TwinVm = {
      vm,
      id: `${this.id}/providers/Microsoft.Compute/virtualMachines/${name}`,
      ...(scaleSet ? { scaleSet } : {}),
      ...(vmSize ? { vmSize } : {}),
    };
    this.vms.push(twinVm);
    twinVm.boot = this.runCloudInit(vm, customData);
  }

  /** write_files, then runcmd in order (as root), as cloud-init runs them; the seams' files first. */
  private async runCloudInit(vm: SimulatedVm, customData: string | undefined): Promise<CommandResult> {
    if (!customData) return { status: 0, stdout: '', stderr: '' };
    const config = parseYaml(Buffer.from(customData, 'base64').toString('utf8')) as CloudConfig;
    const files = [
      ...(config.write_files ?? []).map((file) => ({
        path: file.path,
        mode: file.permissions ?? '0644',
        base64: file.encoding === 'b64' ? file.content : Buffer.from(file.content, 'utf8').toString('base64'),
      })),
      {
        path: '/etc/rmqbench/install-override.sh',
        mode: '0644',
        base64: Buffer.from(INSTALL_OVERRIDE + this.releaseSeam(config)).toString('base64'),
      },
      { path: '/usr/local/bin/apt-get', mode: '0755', base64: Buffer.from(APT_GET_STAND_IN).toString('base64') },
    ];
    const write = files
      .map(
        (file) =>
          `mkdir -p "$(dirname ${shellQuote(file.path)})" && ` +
          `printf %s ${shellQuote(file.base64)} | base64 -d >${shellQuote(file.path)} && ` +
          `chmod ${file.mode} ${shellQuote(file.path)}`,
      )
      .join('\n');
    const written = await this.hub.exec(vm, `set -e\n${write}`);
    if (written.status !== 0) return written;
    let last: CommandResult = written;
    for (const command of config.runcmd ?? []) {
      const line = Array.isArray(command) ? command.map(shellQuote).join(' ') : command;
      last = await this.hub.exec(vm, line, {
        env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root' },
        timeoutMs: 900_000,
        // The boot scripts' own lines (`rmqbench-node-setup: ...`, the step timings) as they are printed.
        onStderrLine: (stderrLine) => {
          if (/^(rmqbench-|curl: )/.test(stderrLine)) this.log(`[azure twin] ${vm.name}: ${stderrLine.slice(0, 200)}`);
        },
      });
      this.log(`[azure twin] ${vm.name}: ${line.slice(0, 80)} → ${last.status}`);
      if (last.status !== 0) return last;
    }
    return last;
  }

  /**
   * The install seam's lines for a boot that downloads a release tarball: nats-server on a NATS server
   * (rmqbench-nats-setup's install_nats_server and NATS_SERVER_SHA256), Go on a load generator that sets it up
   * (rmqbench-go-setup's rmqbench_fetch_go and GO_SHA256, when its runcmd names a version rather than `none`).
   */
  private releaseSeam(config: CloudConfig): string {
    const paths = (config.write_files ?? []).map((file) => file.path);
    const lines: string[] = [];
    if (paths.includes('/usr/local/sbin/rmqbench-nats-setup')) {
      const { tarball, sha256 } = natsServerTarballOfThisMachine(this.hub.dir);
      lines.push(`install_nats_server() { cp ${shellQuote(tarball)} "$2"; }`, `NATS_SERVER_SHA256=${sha256}`);
    }
    const goSetup = (config.runcmd ?? []).find(
      (command) => Array.isArray(command) && command[0] === '/usr/local/sbin/rmqbench-go-setup',
    );
    if (Array.isArray(goSetup) && goSetup[1] !== 'none') {
      const { tarball, sha256 } = goTarballOfThisMachine(this.hub.dir);
      lines.push(`rmqbench_fetch_go() { cp ${shellQuote(tarball)} "$2"; }`, `GO_SHA256=${sha256}`);
    }
    return lines.map((line) => `${line}\n`).join('');
  }

  /** The frontends' addresses of every load balancer (the sources of the connections they forward). */
  private loadBalancerAddresses(): string[] {
    return this.of('Microsoft.Network/loadBalancers').map((balancer) => this.frontendAddress(balancer));
  }

  private frontendAddress(balancer: EvaluatedResource): string {
    const frontend = (
      balancer.body['properties'] as {
        frontendIPConfigurations: { properties: IpConfiguration & { publicIPAddress?: { id: string } } }[];
      }
    ).frontendIPConfigurations[0]!.properties;
    if (frontend.publicIPAddress) return this.publicIp(frontend.publicIPAddress.id);
    return this.runtime(balancer, [
      'properties',
      'frontendIPConfigurations',
      '0',
      'properties',
      'privateIPAddress',
    ]) as string;
  }

  private async startLoadBalancers(): Promise<void> {
    for (const balancer of this.of('Microsoft.Network/loadBalancers')) {
      const properties = balancer.body['properties'] as LoadBalancerProperties;
      const pool = `${balancer.id}/backendAddressPools/${properties.backendAddressPools[0]!.name}`.toLowerCase();
      const members = this.vms.filter((vm) => vm.scaleSet && this.inPool(vm.scaleSet, pool)).map((vm) => vm.vm.ip);
      const address = this.frontendAddress(balancer);
      const listeners: LoadBalancerListener[] = properties.loadBalancingRules.map((rule) => {
        const probeName = rule.properties.probe.id.split('/').pop();
        const probe = properties.probes.find((candidate) => candidate.name === probeName)?.properties;
        return {
          port: rule.properties.frontendPort,
          targetPort: rule.properties.backendPort,
          targets: members,
          ...(probe
            ? {
                probe: {
                  port: probe.port,
                  path: probe.requestPath ?? '/',
                  intervalSeconds: probe.intervalInSeconds ?? 5,
                  threshold: probe.probeThreshold ?? 1,
                },
              }
            : {}),
          inbound: this.subnetRulesOfTargets(members),
        };
      });
      this.stops.push(await startLoadBalancer(this.hub, balancer.name, address, listeners));
      this.log(
        `[azure twin] load balancer ${balancer.name} on ${address}: ` +
          `ports ${listeners.map((l) => l.port).join(', ')} → ${members.join(', ')}`,
      );
    }
  }

  private inPool(scaleSetName: string, pool: string): boolean {
    const scaleSet = this.of('Microsoft.Compute/virtualMachineScaleSets').find(
      (candidate) => candidate.name === scaleSetName,
    )!;
    const text = JSON.stringify(scaleSet.body).toLowerCase();
    return text.includes(pool);
  }

  private subnetRulesOfTargets(targets: readonly string[]): NsgRule[] {
    const subnetId = [...this.subnetPrefixes].find(([, prefix]) => targets.some((ip) => cidrHas(prefix, ip)))?.[0];
    return subnetId ? this.subnetRules(subnetId) : [];
  }

  /** Managed Run Command on a VM: bash as root, the parameters as environment variables. */
  async runCommand(
    vmName: string,
    script: string,
    parameters: Readonly<Record<string, string>>,
    timeoutMs: number,
  ): Promise<CommandResult> {
    const target = this.vms.find((vm) => vm.vm.name === vmName);
    if (!target) throw new Error(`no VM ${vmName} in resource group ${this.options.name}`);
    return this.hub.exec(target.vm, script, {
      env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', ...parameters },
      timeoutMs,
    });
  }

  /** What the VMs' network security group dropped, named. */
  dropped(): string[] {
    return this.vms.flatMap((twinVm) =>
      droppedPackets(twinVm.vm.pid).map((packet) =>
        describeDrop(['(the subnet NSG)'], `${twinVm.vm.name} (${twinVm.vm.ip})`, packet),
      ),
    );
  }

  /** Resolves once every load balancer's probe has marked each backend up (or rejects after `timeoutMs`). */
  async backendsHealthy(timeoutMs = 120_000): Promise<void> {
    const balancers = this.of('Microsoft.Network/loadBalancers').map((balancer) => balancer.name);
    const nodes = this.vms.filter((vm) => vm.scaleSet).map((vm) => vm.vm.ip);
    const up = (name: string) => loadBalancerLog(this.hub, name).filter((line) => / up$/.test(line));
    const deadline = Date.now() + timeoutMs;
    while (!balancers.every((name) => nodes.every((ip) => up(name).some((line) => line.includes(` ${ip}:`))))) {
      if (Date.now() > deadline) throw new Error(`the load balancers' probes did not mark ${nodes.join(', ')} up`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  /** The connections the load balancers refused by an NSG rule ("load balancer X refused A -> port: ... rule R"). */
  refusedConnections(): string[] {
    if (!this.hubValue) return [];
    return this.of('Microsoft.Network/loadBalancers').flatMap((balancer) =>
      [...new Set(loadBalancerLog(this.hub, balancer.name).filter((line) => line.includes('denied by NSG rule')))].map(
        (line) => `load balancer ${balancer.name} refused ${line}`,
      ),
    );
  }

  /** The requests the group's hub fake served (IMDS, ARM, Key Vault, the download mirrors), kept at its deletion. */
  requestsAtDeletion: string[] = [];

  /** Deletes everything (the resource group's deletion). */
  delete(): void {
    for (const stop of this.stops.splice(0)) stop();
    this.deleted = true;
    this.requestsAtDeletion = this.hubValue?.requestLog() ?? [];
    this.hubValue?.cleanup();
  }
}

interface IpConfiguration {
  subnet: { id: string };
  privateIPAllocationMethod?: string;
  privateIPAddress?: string;
}

/** The data disk at LUN 0 by the name Azure's udev rules give it (rmqbench-kafka-setup.sh's data_disk). */
const AZURE_DATA_DISK_LUN0 = '/dev/disk/azure/scsi1/lun0';

interface VmProfile {
  osProfile: { computerNamePrefix?: string; computerName?: string; customData?: string };
  hardwareProfile?: { vmSize?: string };
  storageProfile?: { dataDisks?: { lun: number; diskSizeGB?: number }[] };
  networkProfile: {
    networkInterfaceConfigurations?: { properties: { ipConfigurations: { properties: IpConfiguration }[] } }[];
    networkInterfaces?: { id: string }[];
  };
}

interface LoadBalancerProperties {
  backendAddressPools: { name: string }[];
  probes: {
    name: string;
    properties: { port: number; requestPath?: string; intervalInSeconds?: number; probeThreshold?: number };
  }[];
  loadBalancingRules: { properties: { frontendPort: number; backendPort: number; probe: { id: string } } }[];
}

function identityIds(resource: EvaluatedResource): string[] {
  const identity = resource.body['identity'] as { userAssignedIdentities?: Record<string, unknown> } | undefined;
  return Object.keys(identity?.userAssignedIdentities ?? {});
}
