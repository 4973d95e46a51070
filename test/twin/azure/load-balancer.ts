/**
 * An Azure load balancer of the twin: fake-nlb.py on the frontend's address in the hub, with each rule's HTTP probe and
 * the backends' network security group (which it applies to the client's address, see fake-nlb.py).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SimulatedHub } from '../../simulated-vm/harness';
import type { NsgRule } from './network-security-group';

/** fake-nlb.py's folder, from the sources or from the twin's bundle in dist/twin. */
const TWIN_DIR = existsSync(join(__dirname, '..', 'fake-nlb.py'))
  ? join(__dirname, '..')
  : join(__dirname, '../../test/twin');

export interface LoadBalancerListener {
  readonly port: number;
  readonly targetPort: number;
  readonly targets: readonly string[];
  readonly probe?: {
    readonly port: number;
    readonly path: string;
    readonly intervalSeconds: number;
    readonly threshold: number;
  };
  readonly inbound?: readonly NsgRule[];
}

/** Starts the balancer; resolves once every listener is bound, with a function that stops it. */
export async function startLoadBalancer(
  hub: SimulatedHub,
  name: string,
  address: string,
  listeners: readonly LoadBalancerListener[],
): Promise<() => void> {
  hub.addHubAddress(address, []);
  const config = join(hub.dir, `lb-${name}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      address,
      listeners: listeners.map((listener) => ({
        ...listener,
        inbound: (listener.inbound ?? [])
          .filter((rule) => rule.direction === 'Inbound' && (rule.protocol === '*' || rule.protocol === 'Tcp'))
          .map(({ name: ruleName, access, sources, destinations, ports }) => ({
            name: ruleName,
            access,
            sources,
            destinations,
            ports,
          })),
      })),
    }),
  );
  const proxy = hub.spawnInHub('python3', [join(TWIN_DIR, 'fake-nlb.py'), config, join(hub.dir, `lb-${name}.log`)]);
  let errors = '';
  proxy.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    proxy.once('exit', (code) => reject(new Error(`the load balancer ${name} exited with ${code}: ${errors.trim()}`)));
    proxy.stdout!.once('data', () => resolve());
  });
  proxy.removeAllListeners('exit');
  return () => proxy.kill('SIGKILL');
}

/** The balancer's connection log: "client -> port -> target:port" lines, denials named by their NSG rule. */
export function loadBalancerLog(hub: SimulatedHub, name: string): string[] {
  return hub.fileTail(`lb-${name}.log`, 200);
}
