import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canConnect, freePorts, waitFor } from './ports';
import { ManagedProcess, ProcessRegistry } from './processes';

/** A TCP load balancer in front of the local nodes (round robin, health-checked), like the cloud NLB. */
export class LocalLoadBalancer {
  private constructor(
    readonly amqpPort: number,
    readonly managementPort: number,
    private readonly process: ManagedProcess,
  ) {}

  static async start(
    backends: readonly { name: string; amqpPort: number; managementPort: number }[],
    workDir: string,
    processes: ProcessRegistry,
    haproxyCommand = 'haproxy',
  ): Promise<LocalLoadBalancer> {
    const [amqpPort, managementPort] = (await freePorts(2)) as [number, number];
    const server = (port: (b: (typeof backends)[number]) => number) =>
      backends
        .map((backend, index) => `  server node${index + 1} 127.0.0.1:${port(backend)} check inter 2s`)
        .join('\n');
    const config = `global
  maxconn 4096
defaults
  mode tcp
  timeout connect 5s
  timeout client 3h
  timeout server 3h
frontend amqp
  bind 127.0.0.1:${amqpPort}
  default_backend amqp_nodes
backend amqp_nodes
  balance roundrobin
${server((b) => b.amqpPort)}
frontend management
  bind 127.0.0.1:${managementPort}
  default_backend management_nodes
backend management_nodes
  balance roundrobin
${server((b) => b.managementPort)}
`;
    const configPath = join(workDir, 'haproxy.cfg');
    writeFileSync(configPath, config);
    const process = processes.start('haproxy', haproxyCommand, ['-db', '-f', configPath], {
      logPath: join(workDir, 'haproxy.log'),
    });
    await waitFor(
      async () => {
        if (process.hasExited) throw new Error(`HAProxy exited at start; see ${join(workDir, 'haproxy.log')}`);
        return (await canConnect(amqpPort)) ? true : undefined;
      },
      10_000,
      () => `HAProxy did not listen on 127.0.0.1:${amqpPort} within 10 s; see ${join(workDir, 'haproxy.log')}`,
      100,
    );
    return new LocalLoadBalancer(amqpPort, managementPort, process);
  }

  stop(): Promise<void> {
    return this.process.stop(2000);
  }
}
