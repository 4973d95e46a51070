import { request } from 'node:https';
import type { ConnectionOptions, PeerCertificate } from 'node:tls';
import { certificateFingerprint256 } from '../../core/cloud/self-signed-certificate';

/**
 * TLS options that trust exactly one certificate: the per-deployment self-signed certificate LaunchCluster
 * made (core/cloud/self-signed-certificate.ts) and the template echoes as its `tlsCertificatePem` output.
 *
 * - `ca` is that certificate alone, so OpenSSL's chain check (signature, validity period) passes only for
 *   it: no public CA, no other self-signed certificate.
 * - The host-name check is replaced by a pin: the load balancer's public IP is allocated during the
 *   deployment, after the certificate was made, so no name or IP in the certificate can match it. What a
 *   careful client does instead is compare the presented certificate with the one it expects, byte for
 *   byte (its SHA-256), which is stricter than any name check: only the holder of that private key passes.
 */
export function pinnedTlsOptions(certificatePem: string): ConnectionOptions {
  const expected = certificateFingerprint256(certificatePem);
  return {
    ca: certificatePem,
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
    checkServerIdentity: (host: string, presented: PeerCertificate) =>
      presented.fingerprint256 === expected
        ? undefined
        : new Error(`TLS: ${host} presented certificate ${presented.fingerprint256}, not the deployment's ${expected}`),
  };
}

/**
 * GET `url` (https) with basic credentials over a pinned connection; resolves with the status and body.
 * The credentials travel in the Authorization header, never in the URL or a log line.
 */
export function pinnedHttpsGet(
  url: string,
  certificatePem: string,
  username: string,
  password: string,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    if (target.protocol !== 'https:') {
      reject(new Error(`expected an https:// URL, got ${target.protocol}//${target.host}`));
      return;
    }
    const call = request(
      target,
      {
        ...pinnedTlsOptions(certificatePem),
        method: 'GET',
        agent: false,
        headers: {
          authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
          accept: 'application/json',
        },
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    call.on('timeout', () =>
      call.destroy(new Error(`GET ${target.origin}${target.pathname} did not answer within ${timeoutMs / 1000} s`)),
    );
    call.on('error', reject);
    call.end();
  });
}
