/**
 * A function attached to the VPC (its VpcConfig's subnets and security groups) runs where Lambda puts it: behind a
 * network interface in those subnets (Lambda Developer Guide, "Giving Lambda functions access to resources in an Amazon
 * VPC"). Here: a network namespace of its own for the invocation, with an address on the cluster hub's bridge (the
 * private subnets the cluster stack's instances are in), its security groups' rules as its packet filter, its address a
 * member of those groups in the cluster's filters (so that a node or load balancer rule naming the function's group
 * admits it), and the load balancer's name in its /etc/hosts (the VPC's resolver answers it). Its AWS API calls leave
 * through the NAT gateway in AWS: here the namespace's 127.0.0.1:<gateway port> is relayed to the gateway's Unix
 * socket, only if the function's security groups allow HTTPS out to 0.0.0.0/0 (the route through the NAT gateway);
 * without that rule the calls are refused, as they would time out in AWS.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { ClusterStack } from './cluster-stack';
import { applyRuleset, describeDrop, droppedPackets, nftRuleset, type SecurityGroupRule } from './security-groups';

/** Host numbers of function interfaces in the hub's /24. */
const FIRST_FUNCTION_HOST = 60;

export interface VpcAttachment {
  /** The command prefix that runs a process in the function's namespace. */
  readonly prefix: readonly string[];
  readonly ip: string;
  /** Whether the security groups let the function reach the AWS APIs (HTTPS to 0.0.0.0/0). */
  readonly apisReachable: boolean;
  readonly stack: ClusterStack;
  /** What the function's own security groups dropped, named. */
  dropped(): string[];
  release(): void;
}

let attachments = 0;

/** Ends every process of a named network namespace, deletes it and its /etc/netns folder (each may be gone already). */
export function deleteNamespace(namespace: string): void {
  try {
    for (const pid of execFileSync('ip', ['netns', 'pids', namespace], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean))
      process.kill(Number(pid), 'SIGKILL');
  } catch {
    // nothing left
  }
  try {
    execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' });
  } catch {
    // already gone with the hub
  }
  rmSync(`/etc/netns/${namespace}`, { recursive: true, force: true });
}

/** HTTPS to any address allowed by an egress rule of `groupIds` (the path through the NAT gateway to the AWS APIs). */
export function allowsHttpsOut(groupIds: readonly string[], rules: readonly SecurityGroupRule[]): boolean {
  return rules.some(
    (rule) =>
      rule.direction === 'egress' &&
      groupIds.includes(rule.groupId) &&
      'cidr' in rule.peer &&
      rule.peer.cidr === '0.0.0.0/0' &&
      (rule.protocol === 'all' || (rule.protocol === 'tcp' && rule.fromPort <= 443 && rule.toPort >= 443)),
  );
}

export function attachToVpc(
  stack: ClusterStack,
  groupIds: readonly string[],
  rules: readonly SecurityGroupRule[],
  gateway: { socket: string; port: number },
): VpcAttachment {
  const hub = stack.simulatedHub!;
  const index = attachments++;
  const namespace = `rmqtwinfn-${process.pid}-${index}`;
  const subnet = stack.subnet;
  const ip = `10.91.${subnet}.${FIRST_FUNCTION_HOST + (index % 150)}`;
  const hubEnd = `rf${subnet}x${index % 1000}`;
  const run = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  run('ip', 'netns', 'add', namespace);
  run('ip', 'link', 'add', hubEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace);
  run('ip', 'link', 'set', hubEnd, 'netns', hub.hubNetns);
  run('ip', 'netns', 'exec', hub.hubNetns, 'ip', 'link', 'set', hubEnd, 'master', 'br0', 'up');
  run('ip', 'netns', 'exec', namespace, 'ip', 'link', 'set', 'lo', 'up');
  run('ip', 'netns', 'exec', namespace, 'ip', 'addr', 'add', `${ip}/24`, 'dev', 'eth0');
  run('ip', 'netns', 'exec', namespace, 'ip', 'link', 'set', 'eth0', 'up');
  // `ip netns exec` bind-mounts /etc/netns/<name>/* over /etc (ip-netns(8)): the VPC resolver's answers.
  const etc = `/etc/netns/${namespace}`;
  mkdirSync(etc, { recursive: true });
  writeFileSync(`${etc}/hosts`, `127.0.0.1 localhost\n${stack.hostEntries().join('\n')}\n`);
  const members = stack.addInterface({ ip, groupIds });
  applyRuleset(
    namespace,
    nftRuleset(
      groupIds,
      rules.map((rule) => stack.mapRuleCidr(rule)),
      members,
    ),
  );
  const apisReachable = allowsHttpsOut(groupIds, rules);
  let relay: ChildProcess | undefined;
  if (apisReachable) {
    relay = spawn(
      'ip',
      [
        'netns',
        'exec',
        namespace,
        'socat',
        `TCP-LISTEN:${gateway.port},bind=127.0.0.1,fork,reuseaddr`,
        `UNIX-CONNECT:${gateway.socket}`,
      ],
      { stdio: 'ignore' },
    );
    // socat binds at once; a call made before it listens is retried by the SDK.
    execFileSync('sleep', ['0.2']);
  }
  return {
    prefix: ['ip', 'netns', 'exec', namespace],
    ip,
    apisReachable,
    stack,
    dropped: () => droppedPackets(namespace).map((packet) => describeDrop(groupIds, `the function at ${ip}`, packet)),
    release: () => {
      relay?.kill('SIGKILL');
      stack.removeInterface(ip);
      deleteNamespace(namespace);
    },
  };
}
