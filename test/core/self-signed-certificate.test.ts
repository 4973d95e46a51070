import { spawnSync } from 'node:child_process';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  certificateFingerprint256,
  keyMatchesCertificate,
  selfSignedCertificate,
} from '../../core/cloud/self-signed-certificate';

const now = new Date('2026-11-22T12:00:00Z');
const notAfter = new Date('2026-11-30T12:00:00Z');

describe('per-deployment self-signed certificate (node:crypto only)', () => {
  const made = selfSignedCertificate({
    commonName: 'rmqbench cluster-1',
    notAfter,
    now,
    dnsNames: ['rmqbench.invalid'],
  });

  test(
    'is an X.509 v3 certificate node parses, self-signed by its ' +
      'own P-256 key, valid from an hour before now to notAfter',
    () => {
      const certificate = new X509Certificate(made.certificatePem);
      expect(certificate.subject).toBe('CN=rmqbench cluster-1');
      expect(certificate.issuer).toBe('CN=rmqbench cluster-1');
      expect(certificate.verify(certificate.publicKey)).toBe(true);
      expect(certificate.ca).toBe(false);
      expect(new Date(certificate.validFrom).toISOString()).toBe('2026-11-22T11:00:00.000Z');
      expect(new Date(certificate.validTo).toISOString()).toBe(notAfter.toISOString());
      expect(certificate.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
      expect(certificate.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
      expect(certificate.subjectAltName).toBe('DNS:rmqbench.invalid');
      expect(certificate.fingerprint256).toBe(made.fingerprint256);
      expect(certificateFingerprint256(made.certificatePem)).toBe(made.fingerprint256);
    },
  );

  test('the private key belongs to the certificate, and another run gets another key and serial', () => {
    expect(keyMatchesCertificate(made.certificatePem, made.privateKeyPem)).toBe(true);
    const other = selfSignedCertificate({ commonName: 'rmqbench cluster-1', notAfter, now });
    expect(keyMatchesCertificate(made.certificatePem, other.privateKeyPem)).toBe(false);
    expect(new X509Certificate(other.certificatePem).serialNumber).not.toBe(
      new X509Certificate(made.certificatePem).serialNumber,
    );
    expect(other.fingerprint256).not.toBe(made.fingerprint256);
    expect(made.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(createPublicKey(made.privateKeyPem).export({ type: 'spki', format: 'der' })).toEqual(
      new X509Certificate(made.certificatePem).publicKey.export({ type: 'spki', format: 'der' }),
    );
  });

  test(
    'openssl reads the extensions and verifies it as a TLS ' + 'server certificate when it is its own trust anchor',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-cert-'));
      try {
        const path = join(dir, 'certificate.pem');
        writeFileSync(path, made.certificatePem);
        const text = spawnSync('openssl', ['x509', '-in', path, '-noout', '-text'], { encoding: 'utf8' });
        expect(text.status).toBe(0);
        expect(text.stdout).toMatch(/Version: 3 \(0x2\)/);
        expect(text.stdout).toMatch(/Signature Algorithm: ecdsa-with-SHA256/);
        expect(text.stdout).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
        expect(text.stdout).toMatch(/X509v3 Key Usage: critical\s+Digital Signature/);
        expect(text.stdout).toMatch(/X509v3 Extended Key Usage:\s+TLS Web Server Authentication/);
        const verify = spawnSync(
          'openssl',
          [
            'verify',
            '-purpose',
            'sslserver',
            '-attime',
            String(Math.floor(now.getTime() / 1000)),
            '-CAfile',
            path,
            path,
          ],
          { encoding: 'utf8' },
        );
        expect(`${verify.stdout}${verify.stderr}`.trim()).toBe(`${path}: OK`);
        const expired = spawnSync(
          'openssl',
          ['verify', '-attime', String(Math.floor(notAfter.getTime() / 1000) + 60), '-CAfile', path, path],
          { encoding: 'utf8' },
        );
        expect(expired.status).not.toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test('a year from 2050 on is written as GeneralizedTime, which node still reads back', () => {
    const late = selfSignedCertificate({ commonName: 'late', notAfter: new Date('2051-01-02T03:04:05Z'), now });
    expect(new Date(new X509Certificate(late.certificatePem).validTo).toISOString()).toBe('2051-01-02T03:04:05.000Z');
  });

  test('refuses a validity that ends before it starts and a common name longer than 64 characters', () => {
    expect(() =>
      selfSignedCertificate({ commonName: 'x', notAfter: new Date(now.getTime() - 3_600_000), now }),
    ).toThrow(/notAfter .* must be after notBefore/);
    expect(() => selfSignedCertificate({ commonName: 'x'.repeat(65), notAfter, now })).toThrow(/1 to 64 characters/);
  });
});
