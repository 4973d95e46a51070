/**
 * Security groups as packet filters on simulated instances. Each instance's network namespace gets one nftables table
 * built from the rules of the groups its template gives it, as EC2 applies them (EC2 User Guide, "Security group
 * rules", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/security-group-rules.html):
 * - stateful: the answer to an allowed request passes both ways ("Security groups are stateful");
 * - allow rules only, the union of every group of the interface; what no rule allows is dropped;
 * - a source (or destination) security group means the private addresses of the interfaces in that group;
 * - traffic to and from link-local addresses (169.254.0.0/16, the instance metadata service) is not filtered
 *   ("Security groups ... do not filter traffic destined to and from ... Amazon EC2 instance metadata service",
 *   same page), nor an instance's traffic to itself (it never leaves the instance).
 * What a filter drops is recorded per (peer address, port) in a dynamic set of the table, so that the twin can name
 * the hop a failed run could not make.
 */
import { execFileSync } from 'node:child_process';
import type { TemplateEvaluator, StackTemplate } from './cfn-template';

export const SECURITY_GROUP_TABLE = 'rmqbench_twin_sg';

/** The first lines of a ruleset: the table replaced whole, with the sets of dropped packets droppedPackets reads. */
export const TABLE_HEADER = [
  `table inet ${SECURITY_GROUP_TABLE}`,
  `delete table inet ${SECURITY_GROUP_TABLE}`,
  `table inet ${SECURITY_GROUP_TABLE} {`,
  '  set dropped_in { type ipv4_addr . inet_proto . inet_service; flags dynamic; size 4096; }',
  '  set dropped_out { type ipv4_addr . inet_proto . inet_service; flags dynamic; size 4096; }',
] as const;

export interface SecurityGroupRule {
  readonly direction: 'ingress' | 'egress';
  /** The group the rule belongs to. */
  readonly groupId: string;
  /** tcp, udp, icmp or all. */
  readonly protocol: 'tcp' | 'udp' | 'icmp' | 'all';
  readonly fromPort: number;
  readonly toPort: number;
  /** The other side: a security group's members or a CIDR. */
  readonly peer: { readonly groupId: string } | { readonly cidr: string };
  /** Where the rule comes from (logical id, and its description). */
  readonly origin: string;
}

const PROTOCOLS: Record<string, SecurityGroupRule['protocol']> = {
  tcp: 'tcp',
  '6': 'tcp',
  udp: 'udp',
  '17': 'udp',
  icmp: 'icmp',
  '1': 'icmp',
  '-1': 'all',
};

function ruleFrom(
  direction: SecurityGroupRule['direction'],
  groupId: string,
  raw: Record<string, unknown>,
  origin: string,
): SecurityGroupRule {
  const protocol = PROTOCOLS[String(raw['IpProtocol'])];
  if (!protocol) throw new Error(`${origin}: the twin does not filter IpProtocol ${String(raw['IpProtocol'])}`);
  const peerGroup = raw[direction === 'ingress' ? 'SourceSecurityGroupId' : 'DestinationSecurityGroupId'];
  const cidr = raw['CidrIp'];
  if (typeof peerGroup !== 'string' && typeof cidr !== 'string')
    throw new Error(`${origin}: a rule with neither a security group nor an IPv4 CIDR (the twin filters IPv4 only)`);
  const all = protocol === 'all' || raw['FromPort'] === undefined || Number(raw['FromPort']) === -1;
  return {
    direction,
    groupId,
    protocol,
    fromPort: all ? 0 : Number(raw['FromPort']),
    toPort: all ? 65535 : Number(raw['ToPort'] ?? raw['FromPort']),
    peer: typeof peerGroup === 'string' ? { groupId: peerGroup } : { cidr: String(cidr) },
    origin: raw['Description'] ? `${origin} (${String(raw['Description'])})` : origin,
  };
}

/**
 * Every rule of the template: the groups' inline SecurityGroupIngress/SecurityGroupEgress and the standalone
 * AWS::EC2::SecurityGroupIngress/Egress resources (which add to the group named by GroupId). A group without
 * SecurityGroupEgress allows all outbound traffic (AWS::EC2::SecurityGroup, SecurityGroupEgress: "by default, ... a
 * rule that allows all outbound traffic"); CDK writes that rule explicitly or its "disallow" placeholder.
 */
export function securityGroupRules(template: StackTemplate, evaluator: TemplateEvaluator): SecurityGroupRule[] {
  const rules: SecurityGroupRule[] = [];
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    const properties = resource.Properties ?? {};
    if (resource.Type === 'AWS::EC2::SecurityGroup') {
      const groupId = evaluator.string({ 'Fn::GetAtt': [logicalId, 'GroupId'] });
      for (const raw of (evaluator.resolve(properties['SecurityGroupIngress'] ?? []) as Record<string, unknown>[]) ??
        [])
        rules.push(ruleFrom('ingress', groupId, raw, logicalId));
      const egress = properties['SecurityGroupEgress'];
      if (egress === undefined)
        rules.push({
          direction: 'egress',
          groupId,
          protocol: 'all',
          fromPort: 0,
          toPort: 65535,
          peer: { cidr: '0.0.0.0/0' },
          origin: `${logicalId} (default egress)`,
        });
      for (const raw of (evaluator.resolve(egress ?? []) as Record<string, unknown>[]) ?? [])
        rules.push(ruleFrom('egress', groupId, raw, logicalId));
    }
    if (resource.Type === 'AWS::EC2::SecurityGroupIngress' || resource.Type === 'AWS::EC2::SecurityGroupEgress') {
      const raw = evaluator.resolve(properties) as Record<string, unknown>;
      rules.push(
        ruleFrom(resource.Type.endsWith('Ingress') ? 'ingress' : 'egress', String(raw['GroupId']), raw, logicalId),
      );
    }
  }
  return rules;
}

/** The addresses of each security group's members (instances and function interfaces), kept by the twin. */
export type GroupMembers = ReadonlyMap<string, readonly string[]>;

function peerMatch(rule: SecurityGroupRule, members: GroupMembers, direction: 'saddr' | 'daddr'): string | undefined {
  if ('cidr' in rule.peer) return rule.peer.cidr === '0.0.0.0/0' ? '' : `ip ${direction} ${rule.peer.cidr} `;
  const addresses = members.get(rule.peer.groupId) ?? [];
  // A group with no member yet matches nothing (nft refuses an empty anonymous set).
  return addresses.length === 0 ? undefined : `ip ${direction} { ${addresses.join(', ')} } `;
}

function portMatch(rule: SecurityGroupRule): string {
  if (rule.protocol === 'all') return '';
  if (rule.protocol === 'icmp') return 'meta l4proto icmp ';
  const ports = rule.fromPort === rule.toPort ? String(rule.fromPort) : `${rule.fromPort}-${rule.toPort}`;
  return rule.fromPort === 0 && rule.toPort === 65535
    ? `meta l4proto ${rule.protocol} `
    : `${rule.protocol} dport ${ports} `;
}

/** The nftables ruleset for an interface in `groupIds`: one transaction that replaces the table whole. */
export function nftRuleset(
  groupIds: readonly string[],
  rules: readonly SecurityGroupRule[],
  members: GroupMembers,
  scope?: string,
): string {
  // Scoped to one address (a load balancer's in the hub, whose other traffic is the fake endpoints'): only packets to
  // or from that address are filtered.
  const toScope = scope ? `ip daddr ${scope} ` : '';
  const fromScope = scope ? `ip saddr ${scope} ` : '';
  const policy = scope ? 'accept' : 'drop';
  const lines = (direction: SecurityGroupRule['direction']) =>
    rules
      .filter((rule) => rule.direction === direction && groupIds.includes(rule.groupId))
      .map((rule) => {
        const peer = peerMatch(rule, members, direction === 'ingress' ? 'saddr' : 'daddr');
        const within = direction === 'ingress' ? toScope : fromScope;
        return peer === undefined
          ? `    # ${rule.origin}: source group ${JSON.stringify(rule.peer)} has no member`
          : `    ${within}${peer}${portMatch(rule)}accept comment ${JSON.stringify(rule.origin.slice(0, 120))}`;
      });
  return [
    ...TABLE_HEADER,
    '  chain input {',
    `    type filter hook input priority 0; policy ${policy};`,
    '    ct state established,related accept',
    '    iif lo accept',
    '    ip saddr 169.254.0.0/16 accept',
    ...lines('ingress'),
    `    ${toScope}meta l4proto { tcp, udp } add @dropped_in { ip saddr . meta l4proto . th dport }`,
    ...(scope ? [`    ${toScope}drop`] : []),
    '  }',
    '  chain output {',
    `    type filter hook output priority 0; policy ${policy};`,
    '    ct state established,related accept',
    '    oif lo accept',
    '    ip daddr 169.254.0.0/16 accept',
    ...lines('egress'),
    `    ${fromScope}meta l4proto { tcp, udp } add @dropped_out { ip daddr . meta l4proto . th dport }`,
    ...(scope ? [`    ${fromScope}drop`] : []),
    '  }',
    '}',
    '',
  ].join('\n');
}

/** A network namespace: an instance's (the PID of its namespace holder) or a named one (a hub's). */
export type Namespace = number | string;
const inNamespace = (namespace: Namespace, args: string[]) =>
  (typeof namespace === 'number'
    ? ['nsenter', [`--net=/proc/${namespace}/ns/net`, ...args]]
    : ['ip', ['netns', 'exec', namespace, ...args]]) as [string, string[]];

/** Applies the ruleset in the network namespace. */
export function applyRuleset(namespace: Namespace, ruleset: string): void {
  execFileSync(...inNamespace(namespace, ['nft', '-f', '-']), { input: ruleset, stdio: ['pipe', 'pipe', 'pipe'] });
}

export interface DroppedPacket {
  readonly direction: 'in' | 'out';
  /** The peer: the source of a dropped inbound packet, the destination of an outbound one. */
  readonly peer: string;
  readonly protocol: string;
  readonly port: number;
}

/**
 * The sentence that names a dropped packet, the one the twin's failures quote: whose security groups, the packet's
 * direction, peer and port, and the rule that is missing. `who` names the peer (an instance id and its address).
 */
export function describeDrop(
  groupIds: readonly string[],
  owner: string,
  packet: DroppedPacket,
  who = packet.peer,
): string {
  const dropped = `security groups ${groupIds.join(', ')} of ${owner} dropped ${packet.protocol}`;
  return packet.direction === 'in'
    ? `${dropped} from ${who} to port ${packet.port}: no ingress rule allows it`
    : `${dropped} to ${who} port ${packet.port}: no egress rule allows it`;
}

/** What the instance's filter dropped so far (each peer, protocol and port once). */
export function droppedPackets(namespace: Namespace): DroppedPacket[] {
  const dropped: DroppedPacket[] = [];
  for (const direction of ['in', 'out'] as const) {
    let listing = '';
    try {
      listing = execFileSync(
        ...inNamespace(namespace, ['nft', '-nn', 'list', 'set', 'inet', SECURITY_GROUP_TABLE, `dropped_${direction}`]),
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
    } catch {
      continue;
    }
    // -nn prints protocols and ports as numbers (6 is tcp, 17 udp: IANA protocol numbers).
    for (const match of listing.matchAll(/(\d+\.\d+\.\d+\.\d+) \. (\d+) \. (\d+)/g))
      dropped.push({
        direction,
        peer: match[1]!,
        protocol: { '6': 'tcp', '17': 'udp' }[match[2]!] ?? match[2]!,
        port: Number(match[3]),
      });
  }
  return dropped;
}
