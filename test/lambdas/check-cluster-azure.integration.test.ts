import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { selfSignedCertificate } from '../../core/cloud/self-signed-certificate';
import { checkAzureCluster, clusterFormed } from '../../lambdas/check-cluster/azure';
import { type AzureClients, launchResourceGroup } from '../../lambdas/shared/azure-cluster';
import { ProcessRegistry } from '../../local/processes';
import { LocalRabbitCluster } from '../../local/rabbitmq-cluster';
import type { ScheduledCluster } from '../../state-machines/schedule';
import { tempDir } from '../local/helpers';
import type { FakeArm } from './fake-arm';
import { startFakeArm } from './fake-arm-clients';

/**
 * CheckClusterReady on Azure against a real 3-node RabbitMQ cluster (Debian's rabbitmq-server, local/) behind an
 * HTTPS "load balancer" on this machine that presents the deployment's certificate and hands each request to the
 * next node's management listener in turn, as Azure's load balancer spreads connections. The deployment's state
 * and outputs come from the real Azure SDK client against the fake ARM endpoint.
 */
jest.setTimeout(240_000);

const NOW = new Date();
const certificate = selfSignedCertificate({
  commonName: 'rmqbench check-cluster',
  notAfter: new Date(NOW.getTime() + 86_400_000),
  now: NOW,
});
const impostor = selfSignedCertificate({
  commonName: 'rmqbench check-cluster',
  notAfter: new Date(NOW.getTime() + 86_400_000),
  now: NOW,
});
// The local nodes' default user, accepted on loopback (the proxy connects from 127.0.0.1).
const credentials = { username: 'guest', password: 'guest' };

/** An HTTPS front with `tls` that forwards each request to the next of `ports` (plain HTTP on 127.0.0.1). */
async function startLoadBalancer(
  tls: { certificatePem: string; privateKeyPem: string },
  ports: () => readonly number[],
): Promise<{ url: string; server: Server; hits: Map<number, number> }> {
  let next = 0;
  const hits = new Map<number, number>();
  const server = createServer({ cert: tls.certificatePem, key: tls.privateKeyPem }, (incoming, outgoing) => {
    const targets = ports();
    const port = targets[next++ % targets.length]!;
    hits.set(port, (hits.get(port) ?? 0) + 1);
    const forward = httpRequest(
      { host: '127.0.0.1', port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forward.on('error', (error) => {
      outgoing.writeHead(502);
      outgoing.end(`backend ${port}: ${error.message}`);
    });
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, server, hits };
}

describe('CheckClusterReady on Azure asks the cluster itself, through the pinned load balancer', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('check-azure');
  let rabbit: LocalRabbitCluster;
  let arm: FakeArm;
  let clients: AzureClients;
  const servers: Server[] = [];
  let lbUrl = '';
  let lbHits = new Map<number, number>();
  let impostorUrl = '';

  /** A deployment whose outputs point at `managementHttpsUrl` with `outputCertificate`, Succeeded at the first GET. */
  async function deploy(
    clusterId: string,
    managementHttpsUrl: string,
    outputCertificate = certificate.certificatePem,
    readyByMinutes = 30,
  ) {
    const template = {
      $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#',
      contentVersion: '1.0.0.0',
      resources: [],
      outputs: {
        managementHttpsUrl: { type: 'string', value: managementHttpsUrl },
        tlsCertificatePem: { type: 'string', value: outputCertificate },
      },
    };
    const cluster: ScheduledCluster = { index: 0, clusterId, nodes: 3, topology: 'quorum', repetitions: [] };
    const launch = await launchResourceGroup(
      clients,
      { location: 'westeurope', template, parameters: {}, expiryHours: 1, launchTimeoutMinutes: readyByMinutes },
      'run-1',
      cluster,
      NOW,
    );
    return { ...launch, tlsCertificateFingerprint256: certificate.fingerprint256 };
  }

  beforeAll(async () => {
    rabbit = await LocalRabbitCluster.start({
      nodes: 3,
      topology: { type: 'quorum' },
      workDir: join(work.path, 'cluster'),
      processes,
    });
    const ports = () => rabbit.nodes.map((node) => node.managementPort);
    const front = await startLoadBalancer(certificate, ports);
    const fake = await startLoadBalancer(impostor, ports);
    servers.push(front.server, fake.server);
    lbUrl = front.url;
    lbHits = front.hits;
    impostorUrl = fake.url;
    ({ arm, clients } = await startFakeArm({ deploymentPolls: 0, operationPolls: 0 }));
  });

  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    await arm?.stop();
    await rabbit?.stop().catch(() => undefined);
    await processes.stopAll();
    work.cleanup();
  });

  test(
    'ready when every expected node runs in one cluster, ' + 'asked through whichever node the load balancer picks',
    async () => {
      const launch = await deploy('rmqbench-run-1-c1', lbUrl);
      lbHits.clear();
      // Three checks: the load balancer's round robin sends each to another node, and each lists all three.
      for (let check = 0; check < 3; check++) {
        const result = await checkAzureCluster(clients, launch, 3, credentials, NOW);
        expect(result.ready).toBe(true);
        expect(result.status).toMatch(/^Succeeded; 3 of 3 expected node\(s\) running/);
        expect(result.outputs?.managementHttpsUrl).toBe(lbUrl);
      }
      expect([...lbHits.keys()].sort()).toEqual(rabbit.nodes.map((member) => member.managementPort).sort());
    },
  );

  test(
    'not ready while fewer nodes than planned run in the ' + 'cluster; past the deadline it fails with what it saw',
    async () => {
      const launch = await deploy('rmqbench-run-1-c2', lbUrl);
      const waiting = await checkAzureCluster(clients, launch, 4, credentials, NOW);
      const names = rabbit.nodes
        .map((member) => member.name)
        .sort()
        .join(', ');
      expect(waiting).toEqual({
        ready: false,
        status:
          `deployment succeeded, cluster forming: 3 of 4 expected ` +
          `node(s) running in the cluster that answered (${names})`,
      });
      const late = new Date(Date.parse(launch.readyBy) + 1000);
      await expect(checkAzureCluster(clients, launch, 4, credentials, late)).rejects.toThrow(
        new RegExp(
          `^cluster rmqbench-run-1-c2 did not form by ${launch.readyBy.replace(/[.]/g, '\\.')} \\(the ` +
            `deployment succeeded\\); last seen: 3 of 4 expected node\\(s\\) running`,
        ),
      );
    },
  );

  test(
    'a load balancer presenting another certificate is never asked for the cluster: ' +
      'the pinned connection fails, and past the deadline so does the check',
    async () => {
      const launch = await deploy('rmqbench-run-1-c3', impostorUrl);
      const waiting = await checkAzureCluster(clients, launch, 3, credentials, NOW);
      expect(waiting.ready).toBe(false);
      expect(waiting.status).toMatch(
        new RegExp(
          String.raw`cluster forming: GET https:\/\/127\.0\.0\.1:\d+\/api\/nodes failed: TLS: 127\.0\.0\.1 ` +
            String.raw`presented certificate|self.signed|certificate`,
          'i',
        ),
      );
      await expect(
        checkAzureCluster(clients, launch, 3, credentials, new Date(Date.parse(launch.readyBy) + 1000)),
      ).rejects.toThrow(/did not form by .*last seen: GET .* failed/);
    },
  );

  test('wrong credentials are not readiness: the 401 is what it saw', async () => {
    const launch = await deploy('rmqbench-run-1-c4', lbUrl);
    const result = await checkAzureCluster(clients, launch, 3, { username: 'guest', password: 'wrong' }, NOW);
    expect(result).toEqual({
      ready: false,
      status: expect.stringMatching(/cluster forming: GET .*\/api\/nodes answered 401/),
    });
  });

  test(
    'a deployment whose certificate output is not the one ' +
      'LaunchCluster made is refused before any request to the cluster',
    async () => {
      const launch = await deploy('rmqbench-run-1-c5', lbUrl, impostor.certificatePem);
      await expect(checkAzureCluster(clients, launch, 3, credentials, NOW)).rejects.toThrow(
        `outputs certificate ${impostor.fingerprint256}, not the one ` +
          `LaunchCluster made for it (${certificate.fingerprint256})`,
      );
    },
  );
});

describe('clusterFormed reads /api/nodes', () => {
  const node = (name: string, running: boolean) => ({ name, running });
  test('formed only with exactly the expected number of nodes, all running', () => {
    expect(clusterFormed(JSON.stringify([node('rabbit@B', true), node('rabbit@A', true)]), 2)).toEqual({
      formed: true,
      saw: '2 of 2 expected node(s) running in the cluster that answered (rabbit@A, rabbit@B)',
    });
    expect(clusterFormed(JSON.stringify([node('rabbit@A', true), node('rabbit@B', false)]), 2)).toEqual({
      formed: false,
      saw: '1 of 2 expected node(s) running in the cluster that answered (rabbit@A), not running: rabbit@B',
    });
    expect(clusterFormed(JSON.stringify([node('rabbit@A', true)]), 3).formed).toBe(false);
    expect(
      clusterFormed(JSON.stringify([node('a', true), node('b', true), node('c', true), node('d', true)]), 3).formed,
    ).toBe(false);
  });

  test('an answer that is not a list of nodes is reported, not trusted', () => {
    expect(clusterFormed('<html>', 3)).toEqual({
      formed: false,
      saw: '/api/nodes answered something that is not JSON: <html>',
    });
    expect(clusterFormed('{"error":"x"}', 3)).toEqual({
      formed: false,
      saw: '/api/nodes answered {"error":"x"} instead of a list of nodes',
    });
  });
});
