import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { selfSignedCertificate } from '../../core/cloud/self-signed-certificate';
import { managementSmokeTest, smokeTest } from '../../lambdas/smoke-test/logic';
import { freePorts, waitFor } from '../../local/ports';
import { ProcessRegistry } from '../../local/processes';
import { installedRabbitmqVersion, RABBITMQ_SERVER } from '../../local/rabbitmq-cluster';
import { tempDir } from '../local/helpers';

/**
 * The smoke test's TLS path against a real RabbitMQ node (Debian's rabbitmq-server) that serves AMQPS and
 * management over HTTPS with a certificate from core/cloud/self-signed-certificate.ts, as an Azure node does
 * behind the public load balancer. The listener keys are RabbitMQ's documented ones:
 * https://www.rabbitmq.com/docs/ssl (listeners.ssl.default, ssl_options.*) and
 * https://www.rabbitmq.com/docs/management#single-listener-https (management.ssl.*).
 */
jest.setTimeout(180_000);

describe('smoke test over TLS, pinned to the deployment certificate', () => {
  const processes = new ProcessRegistry();
  const work = tempDir('smoke-tls');
  const now = new Date();
  const certificate = selfSignedCertificate({
    commonName: 'rmqbench smoke-test',
    notAfter: new Date(now.getTime() + 86_400_000),
    now,
  });
  const impostor = selfSignedCertificate({
    commonName: 'rmqbench smoke-test',
    notAfter: new Date(now.getTime() + 86_400_000),
    now,
  });
  let amqpsUrl = '';
  let plainUrl = '';
  let managementHttpsUrl = '';

  beforeAll(async () => {
    if (!installedRabbitmqVersion())
      throw new Error('rabbitmq-server is not installed: apt-get install -y rabbitmq-server (scripts/setup.sh does)');
    const [epmdPort, amqpPort, amqpsPort, managementPort, managementHttpsPort, distPort] = await freePorts(6);
    const dir = work.path;
    mkdirSync(join(dir, 'log'), { recursive: true });
    writeFileSync(join(dir, 'certificate.pem'), certificate.certificatePem);
    writeFileSync(join(dir, 'key.pem'), certificate.privateKeyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'rabbitmq-env.conf'), '');
    writeFileSync(join(dir, 'enabled_plugins'), '[rabbitmq_management].\n');
    writeFileSync(join(dir, '.erlang.cookie'), randomBytes(20).toString('hex'), { mode: 0o400 });
    writeFileSync(
      join(dir, 'rabbitmq.conf'),
      [
        `listeners.tcp.1 = 127.0.0.1:${amqpPort}`,
        `listeners.ssl.1 = 127.0.0.1:${amqpsPort}`,
        `ssl_options.certfile = ${join(dir, 'certificate.pem')}`,
        `ssl_options.keyfile = ${join(dir, 'key.pem')}`,
        'ssl_options.verify = verify_none',
        'ssl_options.fail_if_no_peer_cert = false',
        `management.tcp.ip = 127.0.0.1`,
        `management.tcp.port = ${managementPort}`,
        `management.ssl.ip = 127.0.0.1`,
        `management.ssl.port = ${managementHttpsPort}`,
        `management.ssl.certfile = ${join(dir, 'certificate.pem')}`,
        `management.ssl.keyfile = ${join(dir, 'key.pem')}`,
        '',
      ].join('\n'),
    );
    processes.start('epmd', 'epmd', ['-port', String(epmdPort), '-address', '127.0.0.1'], {
      logPath: join(dir, 'epmd.log'),
    });
    const node = processes.start('rabbit-tls', RABBITMQ_SERVER, [], {
      logPath: join(dir, 'stdout.log'),
      env: {
        PATH: process.env.PATH,
        LANG: 'C.UTF-8',
        HOME: dir,
        ERL_EPMD_PORT: String(epmdPort),
        ERL_EPMD_ADDRESS: '127.0.0.1',
        RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
        RABBITMQ_NODENAME: 'rmqbench-tls@localhost',
        RABBITMQ_DIST_PORT: String(distPort),
        RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
        RABBITMQ_LOG_BASE: join(dir, 'log'),
        RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
        RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
        RABBITMQ_PID_FILE: join(dir, 'rabbitmq.pid'),
      },
    });
    plainUrl = `amqp://guest:guest@127.0.0.1:${amqpPort}`;
    amqpsUrl = `amqps://guest:guest@127.0.0.1:${amqpsPort}`;
    managementHttpsUrl = `https://127.0.0.1:${managementHttpsPort}`;
    // Ready once the management listener over HTTPS answers (it starts after the AMQP listeners).
    await waitFor(
      async () => {
        if (node.hasExited) throw new Error(`RabbitMQ exited while starting; see ${join(dir, 'stdout.log')}`);
        return managementSmokeTest(managementHttpsUrl, 'guest', 'guest', certificate.certificatePem, 2000).catch(
          () => undefined,
        );
      },
      120_000,
      () =>
        `RabbitMQ with TLS listeners did not answer on ${managementHttpsUrl} ` +
        `within 120 s; see ${join(dir, 'stdout.log')}`,
    );
  });

  afterAll(async () => {
    await processes.stopAll();
    work.cleanup();
  });

  test('publishes and consumes through AMQPS when the broker presents the pinned certificate', async () => {
    const result = await smokeTest(amqpsUrl, 10_000, certificate.certificatePem);
    expect(result.roundTripMs).toBeGreaterThanOrEqual(0);
  });

  test('reads the management API over HTTPS when the broker presents the pinned certificate', async () => {
    await expect(
      managementSmokeTest(managementHttpsUrl, 'guest', 'guest', certificate.certificatePem, 10_000),
    ).resolves.toEqual({ clusterName: expect.any(String) });
  });

  test('refuses the broker over AMQPS when another certificate is pinned', async () => {
    await expect(smokeTest(amqpsUrl, 10_000, impostor.certificatePem)).rejects.toThrow(/certificate/i);
  });

  test('refuses the management API over HTTPS when another certificate is pinned', async () => {
    await expect(
      managementSmokeTest(managementHttpsUrl, 'guest', 'guest', impostor.certificatePem, 10_000),
    ).rejects.toThrow(/certificate/i);
  });

  test('a wrong password over the pinned connection is a failed smoke test, not a pass', async () => {
    await expect(
      managementSmokeTest(managementHttpsUrl, 'guest', 'wrong', certificate.certificatePem, 10_000),
    ).rejects.toThrow(/answered 401/);
  });

  test(
    'an amqps:// URL without a certificate to pin, or a ' + 'pin on plain amqp://, is refused before connecting',
    async () => {
      await expect(smokeTest(amqpsUrl, 10_000)).rejects.toThrow(/no certificate to pin/);
      await expect(smokeTest(plainUrl, 10_000, certificate.certificatePem)).rejects.toThrow(/not amqps/);
    },
  );
});
