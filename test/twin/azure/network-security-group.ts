/**
 * A network security group of an evaluated deployment, as Azure applies it (Azure Virtual Network documentation,
 * "Network security groups", https://learn.microsoft.com/azure/virtual-network/network-security-groups-overview):
 * - rules are processed in priority order, lowest number first, and processing stops at the first rule that matches;
 * - the default rules come last: inbound AllowVnetInBound (65000), AllowAzureLoadBalancerInBound (65001) and
 *   DenyAllInBound (65500); outbound AllowVnetOutBound (65000), AllowInternetOutBound (65001), DenyAllOutBound (65500)
 *   ("Default security rules" on that page);
 * - security rules are stateful: the answer to an allowed flow passes;
 * - service tags: VirtualNetwork is the VNet's address space, AzureLoadBalancer the platform's probe source
 *   168.63.129.16 ("Azure platform considerations" on that page), Internet everything outside the VNet.
 * The twin applies a subnet's group twice: as an nftables table in each VM's network namespace (what reaches the VM
 * directly), and in the simulated load balancer, which evaluates the rules for the client's own address before it
 * forwards a connection (an Azure load balancer keeps the client's address, so the backend's NSG sees it).
 */
import { TABLE_HEADER } from '../security-groups';

/** The platform address Azure's load balancer probes come from. */
export const AZURE_LOAD_BALANCER_ADDRESS = '168.63.129.16';

export interface NsgRule {
  readonly name: string;
  readonly priority: number;
  readonly direction: 'Inbound' | 'Outbound';
  readonly access: 'Allow' | 'Deny';
  readonly protocol: 'Tcp' | 'Udp' | 'Icmp' | '*';
  /** CIDRs (service tags expanded); '0.0.0.0/0' for '*'. */
  readonly sources: readonly string[];
  readonly destinations: readonly string[];
  /** Port ranges [from, to]; [0, 65535] for '*'. */
  readonly ports: readonly (readonly [number, number])[];
}

/** What a service tag or prefix of a rule stands for in the twin. */
export interface NsgTags {
  /** The VNet's address space (VirtualNetwork). */
  readonly virtualNetwork: readonly string[];
  /** Where the simulated load balancer's probes and forwarded connections come from (AzureLoadBalancer). */
  readonly azureLoadBalancer: readonly string[];
}

interface SecurityRuleBody {
  name: string;
  properties: {
    priority: number;
    direction: 'Inbound' | 'Outbound';
    access: 'Allow' | 'Deny';
    protocol: string;
    sourceAddressPrefix?: string;
    sourceAddressPrefixes?: string[];
    destinationAddressPrefix?: string;
    destinationAddressPrefixes?: string[];
    destinationPortRange?: string;
    destinationPortRanges?: string[];
  };
}

const DEFAULT_RULES: readonly SecurityRuleBody[] = [
  ['AllowVnetInBound', 65000, 'Inbound', 'Allow', 'VirtualNetwork', 'VirtualNetwork'],
  ['AllowAzureLoadBalancerInBound', 65001, 'Inbound', 'Allow', 'AzureLoadBalancer', '*'],
  ['DenyAllInBound', 65500, 'Inbound', 'Deny', '*', '*'],
  ['AllowVnetOutBound', 65000, 'Outbound', 'Allow', 'VirtualNetwork', 'VirtualNetwork'],
  ['AllowInternetOutBound', 65001, 'Outbound', 'Allow', '*', 'Internet'],
  ['DenyAllOutBound', 65500, 'Outbound', 'Deny', '*', '*'],
].map(([name, priority, direction, access, source, destination]) => ({
  name: name as string,
  properties: {
    priority: priority as number,
    direction: direction as 'Inbound' | 'Outbound',
    access: access as 'Allow' | 'Deny',
    protocol: '*',
    sourceAddressPrefix: source as string,
    destinationAddressPrefix: destination as string,
    destinationPortRange: '*',
  },
}));

function prefixes(single: string | undefined, many: readonly string[] | undefined, tags: NsgTags): string[] {
  const given = many && many.length > 0 ? many : single === undefined ? [] : [single];
  return given.flatMap((prefix) => {
    if (prefix === '*' || prefix === 'Internet') return ['0.0.0.0/0'];
    if (prefix === 'VirtualNetwork') return [...tags.virtualNetwork];
    if (prefix === 'AzureLoadBalancer') return [...tags.azureLoadBalancer];
    if (!/^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(prefix))
      throw new Error(`the twin does not know the NSG address prefix or service tag "${prefix}"`);
    return [prefix.includes('/') ? prefix : `${prefix}/32`];
  });
}

function portRanges(single: string | undefined, many: readonly string[] | undefined): [number, number][] {
  const given = many && many.length > 0 ? many : [single ?? '*'];
  return given.map((range) => {
    if (range === '*') return [0, 65535];
    const [from, to] = range.split('-').map(Number);
    return [from!, to ?? from!];
  });
}

/** The security rules of an evaluated Microsoft.Network/networkSecurityGroups body, the default rules after them. */
export function nsgRules(body: Record<string, unknown>, tags: NsgTags): NsgRule[] {
  const properties = body['properties'] as { securityRules?: SecurityRuleBody[] } | undefined;
  return [...(properties?.securityRules ?? []), ...DEFAULT_RULES]
    .map((rule) => {
      const p = rule.properties;
      const internet = p.destinationAddressPrefix === 'Internet';
      return {
        name: rule.name,
        priority: p.priority,
        direction: p.direction,
        access: p.access,
        protocol: (p.protocol[0]!.toUpperCase() + p.protocol.slice(1).toLowerCase()) as NsgRule['protocol'],
        sources: prefixes(p.sourceAddressPrefix, p.sourceAddressPrefixes, tags),
        destinations: internet
          ? ['0.0.0.0/0']
          : prefixes(p.destinationAddressPrefix, p.destinationAddressPrefixes, tags),
        ports: portRanges(p.destinationPortRange, p.destinationPortRanges),
      };
    })
    .sort((a, b) => (a.direction === b.direction ? a.priority - b.priority : a.direction < b.direction ? -1 : 1));
}

function toNumber(ip: string): number {
  return ip.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

export function cidrHas(cidr: string, ip: string): boolean {
  const [network, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits ?? 32));
  return Math.floor(toNumber(ip) / size) === Math.floor(toNumber(network!) / size);
}

/** The first rule that matches an inbound TCP connection (the default DenyAllInBound when nothing else does). */
export function inboundDecision(rules: readonly NsgRule[], source: string, destination: string, port: number): NsgRule {
  return rules.find(
    (rule) =>
      rule.direction === 'Inbound' &&
      (rule.protocol === '*' || rule.protocol === 'Tcp') &&
      rule.sources.some((cidr) => cidrHas(cidr, source)) &&
      rule.destinations.some((cidr) => cidrHas(cidr, destination)) &&
      rule.ports.some(([from, to]) => port >= from && port <= to),
  )!;
}

/**
 * The group's inbound rules as an nftables table for a VM's namespace (the table and dropped-packet set names of
 * security-groups.ts, so that `droppedPackets` reads them): rules in priority order, each accept or drop named by its
 * rule; traffic to and from IMDS (169.254.169.254) and the VM's traffic to itself are not filtered. Outbound rules are
 * not applied: the template's group has none beyond the defaults, which allow the VNet and the internet.
 * `forwarders`: the simulated load balancers' addresses, accepted first: they judged the client's own address by these
 * rules before forwarding (an Azure load balancer does not change it).
 */
export function nsgNftRuleset(
  rules: readonly NsgRule[],
  ownAddress: string,
  forwarders: readonly string[] = [],
): string {
  const proto = (rule: NsgRule) => (rule.protocol === 'Tcp' ? 'tcp ' : rule.protocol === 'Udp' ? 'udp ' : '');
  const lines = rules
    .filter((rule) => rule.direction === 'Inbound')
    .flatMap((rule) => {
      const sources = rule.sources.includes('0.0.0.0/0') ? '' : `ip saddr { ${rule.sources.join(', ')} } `;
      const destinations = rule.destinations.includes('0.0.0.0/0')
        ? ''
        : `ip daddr { ${rule.destinations.join(', ')} } `;
      const allPorts = rule.ports.some(([from, to]) => from === 0 && to === 65535);
      const ports = rule.ports.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(', ');
      const match = `${sources}${destinations}`;
      const comment = `comment ${JSON.stringify(`NSG rule ${rule.name}`)}`;
      const verdict =
        rule.access === 'Allow' ? 'accept' : 'add @dropped_in { ip saddr . meta l4proto . th dport } drop';
      if (allPorts && !proto(rule)) return [`    ${match}${verdict} ${comment}`];
      const protocols = proto(rule) ? [proto(rule)] : ['tcp ', 'udp '];
      return protocols.map((protocol) =>
        allPorts
          ? `    ${match}${protocol}${verdict} ${comment}`
          : `    ${match}${protocol}dport { ${ports} } ${verdict} ${comment}`,
      );
    });
  return [
    ...TABLE_HEADER,
    '  chain input {',
    '    type filter hook input priority 0; policy drop;',
    '    ct state established,related accept',
    '    iif lo accept',
    '    ip saddr 169.254.169.254 accept',
    `    ip saddr ${ownAddress} accept`,
    '    ip protocol icmp accept',
    ...(forwarders.length > 0
      ? [
          `    ip saddr { ${forwarders.join(', ')} } accept ` +
            'comment "forwarded by a load balancer that applied this group"',
        ]
      : []),
    ...lines,
    '  }',
    '}',
    '',
  ].join('\n');
}
