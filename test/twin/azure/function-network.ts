/**
 * Where a controller function runs in the Azure twin, and so from which address the Azure side sees it:
 * - a function attached to the VPC (VpcConfig) leaves through the NAT gateway of its subnet, so Azure sees that NAT
 *   gateway's Elastic IP (Amazon VPC User Guide, "NAT gateways": a public NAT gateway replaces the source address
 *   with its Elastic IP, https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html); the address is read
 *   from the
 *   deployed controller template as the route table of the function's first subnet leads to it;
 * - a function outside a VPC reaches the internet from an address of Lambda's own, never the NAT's (Lambda
 *   Developer Guide, "Giving Lambda functions access to resources in an Amazon VPC": a function not attached to a VPC
 *   has internet
 *   access through Lambda's network).
 * Each invocation gets a network namespace with that address, attached to the bridge of the newest live resource
 * group (the "internet" side of its public load balancer), a route to that hub only, its security groups' egress rules
 * as its packet filter when it is in the VPC, and relays from 127.0.0.1:<gateway port>, management.azure.com:443 and
 * login.microsoftonline.com:443 to the twin's endpoints, only if its security groups let HTTPS out (the path through
 * the
 * NAT gateway; outside a VPC always). Invocations with the same address take turns (one interface per address on the
 * bridge).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { FunctionPlacement } from '../aws-gateway';
import type { FunctionConfiguration } from '../lambda-runtime';
import { applyRuleset, describeDrop, droppedPackets, nftRuleset, type SecurityGroupRule } from '../security-groups';
import { allowsHttpsOut, deleteNamespace } from '../vpc-function';
import { AZURE_HOSTS, S3_RELAY_PORT, type AzureCloud } from './azure-cloud';

/** The address of Lambda's own network in the twin (outside every VNet and not a NAT gateway's). */
export const LAMBDA_PUBLIC_ADDRESS = '10.93.0.10';

export interface FunctionNetworkOptions {
  readonly cloud: AzureCloud;
  /** The Elastic IP of the NAT gateway a subnet routes to (TwinContext.natAddress). */
  readonly natAddress: (subnetId: string) => string | undefined;
  readonly gateway: { readonly socket: string; readonly port: number };
  readonly securityGroupRules: (groupIds: readonly string[]) => SecurityGroupRule[];
  readonly log?: (line: string) => void;
}

let placements = 0;
const turns = new Map<string, Promise<void>>();

const run = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });

/** Places one invocation (see the file's comment); the caller releases it when the process has ended. */
export async function placeFunction(
  config: FunctionConfiguration,
  options: FunctionNetworkOptions,
): Promise<FunctionPlacement> {
  const inVpc = config.subnetIds.length > 0;
  const address = inVpc ? options.natAddress(config.subnetIds[0]!) : LAMBDA_PUBLIC_ADDRESS;
  if (!address) throw new Error(`the twin found no NAT gateway on the route table of subnet ${config.subnetIds[0]}`);
  const previous = turns.get(address) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((resolve) => (done = resolve));
  turns.set(
    address,
    previous.then(() => mine),
  );
  await previous;
  const index = placements++;
  const namespace = `rmqtwinaz-${process.pid}-${index}`;
  const rules = inVpc ? options.securityGroupRules(config.securityGroupIds) : [];
  const apisReachable = !inVpc || allowsHttpsOut(config.securityGroupIds, rules);
  run('ip', 'netns', 'add', namespace);
  const inNs = (...args: string[]) => run('ip', 'netns', 'exec', namespace, ...args);
  inNs('ip', 'link', 'set', 'lo', 'up');
  inNs('ip', 'addr', 'add', '127.0.0.2/8', 'dev', 'lo');
  inNs('ip', 'addr', 'add', '127.0.0.3/8', 'dev', 'lo');
  const hub = [...options.cloud.groups.values()].reverse().find((group) => group.hubStarted)?.hub;
  const hubEnd = `ra${index % 100000}`;
  if (hub) {
    run('ip', 'link', 'add', hubEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace);
    run('ip', 'link', 'set', hubEnd, 'netns', hub.hubNetns);
    run('ip', 'netns', 'exec', hub.hubNetns, 'ip', 'link', 'set', hubEnd, 'master', 'br0', 'up');
    run('ip', 'netns', 'exec', hub.hubNetns, 'ip', 'route', 'replace', `${address}/32`, 'dev', 'br0');
    // moto 5.2.5 gives Elastic IPs addresses in 127.0.0.0/8 (its random_ip()): loopback addresses are martians on
    // any other device unless route_localnet is set on it (ip-sysctl.rst, "route_localnet"); set in these two
    // namespaces only.
    for (const [prefix, device] of [
      [['ip', 'netns', 'exec', hub.hubNetns], 'br0'],
      [['ip', 'netns', 'exec', namespace], 'eth0'],
    ] as const)
      run(
        ...prefix,
        'sysctl',
        '-q',
        '-w',
        'net.ipv4.conf.all.route_localnet=1',
        `net.ipv4.conf.${device}.route_localnet=1`,
      );
    inNs('ip', 'addr', 'add', `${address}/32`, 'dev', 'eth0');
    inNs('ip', 'link', 'set', 'eth0', 'up');
    inNs('ip', 'route', 'add', `${hub.hubAddress.replace(/\.1$/, '.0')}/24`, 'dev', 'eth0', 'src', address);
  }
  if (inVpc) applyRuleset(namespace, nftRuleset(config.securityGroupIds, rules, new Map()));
  // `ip netns exec` bind-mounts /etc/netns/<name>/* over /etc (ip-netns(8)): the names the relays answer.
  const etc = `/etc/netns/${namespace}`;
  mkdirSync(etc, { recursive: true });
  writeFileSync(`${etc}/hosts`, `127.0.0.1 localhost\n127.0.0.2 ${AZURE_HOSTS.arm}\n127.0.0.3 ${AZURE_HOSTS.entra}\n`);
  const relays: ChildProcess[] = [];
  if (apisReachable) {
    for (const [listen, socket] of [
      [`TCP-LISTEN:${options.gateway.port},bind=127.0.0.1`, options.gateway.socket],
      ['TCP-LISTEN:443,bind=127.0.0.2', options.cloud.armSocket],
      [
        `OPENSSL-LISTEN:${S3_RELAY_PORT},bind=127.0.0.1,cert=${options.cloud.s3Relay!.certFile},` +
          `key=${options.cloud.s3Relay!.keyFile},verify=0`,
        options.gateway.socket,
      ],
      ['TCP-LISTEN:443,bind=127.0.0.3', options.cloud.entraSocket],
    ] as const)
      relays.push(
        spawn('ip', ['netns', 'exec', namespace, 'socat', `${listen},fork,reuseaddr`, `UNIX-CONNECT:${socket}`], {
          stdio: 'ignore',
        }),
      );
    execFileSync('sleep', ['0.2']);
  }
  options.log?.(
    `[azure twin] ${config.functionName} runs ` +
      (inVpc ? `in the VPC, leaving through the NAT gateway's ${address}` : `outside a VPC, from Lambda's ${address}`) +
      (apisReachable ? '' : ': no egress rule allows HTTPS out, so it reaches no AWS or Azure API'),
  );
  return {
    prefix: ['ip', 'netns', 'exec', namespace],
    // The S3 client's own endpoint setting (AWS_ENDPOINT_URL_<SERVICE>,
    // https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html): S3 over HTTPS, see S3_RELAY_PORT.
    environment: {
      NODE_EXTRA_CA_CERTS: options.cloud.caFile,
      AWS_ENDPOINT_URL_S3: `https://127.0.0.1:${S3_RELAY_PORT}`,
    },
    dropped: () =>
      inVpc
        ? droppedPackets(namespace).map((packet) =>
            describeDrop(config.securityGroupIds, `${config.functionName}`, packet),
          )
        : [],
    release: () => {
      for (const relay of relays) relay.kill('SIGKILL');
      deleteNamespace(namespace);
      done();
    },
  };
}
