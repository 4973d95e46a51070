import { X509Certificate } from 'node:crypto';
import { keyMatchesCertificate, selfSignedCertificate } from '../../core/cloud/self-signed-certificate';
import { azureLaunchConfig, launchAzureCluster } from '../../lambdas/launch-cluster/azure';
import type { AzureClients, AzureClusterConfig } from '../../lambdas/shared/azure-cluster';
import { pinnedTlsOptions } from '../../lambdas/shared/pinned-tls';
import type { ScheduledCluster } from '../../state-machines/schedule';
import type { FakeArm } from './fake-arm';
import { EMPTY_TEMPLATE, startFakeArm, withFakeArm } from './fake-arm-clients';

const config: AzureClusterConfig = {
  location: 'westeurope',
  template: EMPTY_TEMPLATE,
  // The RabbitMQ secrets a RabbitMQ launch requires (from the service principal secret's `parameters`).
  parameters: {
    adminUsername: 'rmqbench',
    allowedSourceAddressPrefixes: ['198.51.100.0/24'],
    rabbitmqAdminPassword: 'admin-password-1234',
    erlangCookie: 'erlang-cookie-0123456789',
  },
  expiryHours: 12,
  launchTimeoutMinutes: 30,
  controllerEgressAddresses: ['203.0.113.10'],
};
const cluster: ScheduledCluster = {
  index: 0,
  clusterId: 'rmqbench-run-1-c1',
  nodes: 3,
  topology: 'quorum',
  repetitions: [],
};
const NOW = new Date('2025-01-01T00:00:00Z');

describe('LaunchCluster on Azure: world-open prefixes refused, a certificate per deployment', () => {
  let arm: FakeArm;
  let clients: AzureClients;
  beforeEach(async () => {
    ({ arm, clients } = await startFakeArm({ deploymentPolls: 2, operationPolls: 2 }));
  });
  afterEach(async () => arm.stop());

  test(
    'the deployment gets a fresh certificate and its key as parameters; ' +
      'the launch result carries only the fingerprint',
    async () => {
      const launch = await launchAzureCluster(clients, config, 'run-1', cluster, NOW);
      const put = arm.requests.find(
        (request) => request.method === 'PUT' && request.path.endsWith('/deployments/rmqbench-cluster'),
      )!;
      const parameters = (put.body as { properties: { parameters: Record<string, { value: unknown }> } }).properties
        .parameters;
      const certificatePem = parameters.tlsCertificatePem?.value as string;
      const privateKeyPem = parameters.tlsPrivateKeyPem?.value as string;
      expect(keyMatchesCertificate(certificatePem, privateKeyPem)).toBe(true);
      expect(parameters.publicLoadBalancer).toEqual({ value: true });
      const certificate = new X509Certificate(certificatePem);
      expect(certificate.subject).toBe('CN=rmqbench rmqbench-run-1-c1');
      // Valid until a day after the expiry tag (12 h), so the certificate never dies before the cluster is swept.
      expect(new Date(certificate.validTo).toISOString()).toBe('2025-01-02T12:00:00.000Z');
      expect(launch).toEqual({
        clusterId: 'rmqbench-run-1-c1',
        readyBy: '2025-01-01T00:30:00.000Z',
        expiresAt: '2025-01-01T12:00:00.000Z',
        tlsCertificateFingerprint256: certificate.fingerprint256,
      });
      expect(JSON.stringify(launch)).not.toContain('PRIVATE KEY');
    },
  );

  test('two launches get two different key pairs', async () => {
    const a = azureLaunchConfig(config, 'c1', NOW);
    const b = azureLaunchConfig(config, 'c1', NOW);
    expect(a.tlsCertificateFingerprint256).not.toBe(b.tlsCertificateFingerprint256);
    expect(a.config.parameters.tlsPrivateKeyPem).not.toBe(b.config.parameters.tlsPrivateKeyPem);
    // The shared configuration is not modified.
    expect(config.parameters.tlsPrivateKeyPem).toBeUndefined();
  });

  test.each([['0.0.0.0/0'], ['Internet'], ['*'], ['::/0'], ['AzureCloud']])(
    'allowedSourceAddressPrefixes with %s is refused by name before anything is created',
    async (prefix) => {
      const open = {
        ...config,
        parameters: { ...config.parameters, allowedSourceAddressPrefixes: ['198.51.100.0/24', prefix] },
      };
      await expect(launchAzureCluster(clients, open, 'run-1', cluster, NOW)).rejects.toThrow(`refused: ${prefix} (`);
      expect(arm.requests).toEqual([]);
    },
  );

  test('egress addresses must be bare IPv4 addresses, and prefixes must be an array', () => {
    expect(() => azureLaunchConfig({ ...config, controllerEgressAddresses: ['0.0.0.0/0'] }, 'c1', NOW)).toThrow(
      /CONTROLLER_EGRESS_ADDRESSES .* refused: 0\.0\.0\.0\/0/,
    );
    expect(() =>
      azureLaunchConfig(
        { ...config, parameters: { ...config.parameters, allowedSourceAddressPrefixes: '10.0.0.0/8' } },
        'c1',
        NOW,
      ),
    ).toThrow(/must be an array/);
  });

  test(
    'an ARM failure is re-thrown as a message without the ' + 'private key, even when ARM quotes the parameters back',
    async () => {
      const quoting = {
        rejectDeployment: (body: unknown) =>
          `invalid ` +
          `template: ${JSON.stringify((body as { properties: { parameters: unknown } }).properties.parameters)}`,
      };
      await withFakeArm(quoting, async (quotingClients) => {
        const error = (await launchAzureCluster(quotingClients, config, 'run-1', cluster, NOW).catch(
          (caught: unknown) => caught,
        )) as Error;
        expect(error).toBeInstanceOf(Error);
        expect(error.message).toMatch(/^launching resource group rmqbench-run-1-c1 failed: .*invalid template: /);
        // The fake did quote the key (JSON-escaped); the re-thrown message has the placeholder instead.
        expect(error.message).toContain('"tlsPrivateKeyPem":{"value":"<tlsPrivateKeyPem>"}');
        expect(error.message).not.toContain('PRIVATE KEY');
        expect(Object.keys(error)).toEqual([]);
      });
    },
  );
});

describe('pinned TLS options', () => {
  const certificate = selfSignedCertificate({
    commonName: 'pin',
    notAfter: new Date(NOW.getTime() + 86_400_000),
    now: NOW,
  });
  const other = selfSignedCertificate({ commonName: 'pin', notAfter: new Date(NOW.getTime() + 86_400_000), now: NOW });
  const options = pinnedTlsOptions(certificate.certificatePem);

  test('trust exactly the deployment certificate, verify chains, TLS 1.2 or newer', () => {
    expect(options).toMatchObject({ ca: certificate.certificatePem, rejectUnauthorized: true, minVersion: 'TLSv1.2' });
  });

  test('the identity check passes the pinned certificate at any address and refuses another one', () => {
    const check = options.checkServerIdentity!;
    expect(check('20.1.2.3', { fingerprint256: certificate.fingerprint256 } as never)).toBeUndefined();
    expect(check('20.1.2.3', { fingerprint256: other.fingerprint256 } as never)).toEqual(
      new Error(
        `TLS: 20.1.2.3 presented certificate ${other.fingerprint256}, ` +
          `not the deployment's ${certificate.fingerprint256}`,
      ),
    );
  });
});
