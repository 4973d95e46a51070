import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';

/**
 * A fresh key pair and self-signed X.509 v3 certificate for one deployment's TLS listeners, made with
 * node:crypto alone (no dependency to bundle). node:crypto can generate and sign but not build a
 * certificate, so the DER of the certificate (RFC 5280 section 4.1) is written here: a few fixed
 * structures, checked in test/core against `openssl x509`, node's X509Certificate and a real TLS
 * handshake with RabbitMQ. Clients do not trust it through a CA: they pin it (see `pinnedTlsOptions`
 * in lambdas/smoke-test/logic.ts), so it needs no name that matches the address.
 */

export interface SelfSignedCertificate {
  /** The certificate, PEM. Public: it goes into the deployment's outputs for pinning. */
  readonly certificatePem: string;
  /** The PKCS#8 private key, PEM. Secret: only ever a @secure() deployment parameter. */
  readonly privateKeyPem: string;
  /** SHA-256 of the certificate's DER, as colon-separated upper-case hex (node's `fingerprint256` form). */
  readonly fingerprint256: string;
}

export interface SelfSignedCertificateOptions {
  /**
   * The subject and issuer common name, e.g. `rmqbench <cluster id>` (at most 64 characters, RFC 5280 ub-common-name).
   */
  readonly commonName: string;
  /**
   * First instant of validity. @default one hour before `now` (clock skew between the controller and the nodes'
   * clients)
   */
  readonly notBefore?: Date;
  /** Last instant of validity. */
  readonly notAfter: Date;
  /** DNS names for the subjectAltName extension. @default none */
  readonly dnsNames?: readonly string[];
  /** @default new Date() */
  readonly now?: Date;
}

// ASN.1 DER, just what a certificate needs (X.690 section 8 and 10).
const tlv = (tag: number, content: Buffer): Buffer => {
  const length = content.length;
  if (length < 0x80) return Buffer.concat([Buffer.from([tag, length]), content]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), content]);
};
const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const explicit = (tagNumber: number, content: Buffer): Buffer => tlv(0xa0 + tagNumber, content);
const octetString = (content: Buffer): Buffer => tlv(0x04, content);
const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), content]));
const booleanTrue = (): Buffer => Buffer.from([0x01, 0x01, 0xff]);
const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));

/** A positive INTEGER from big-endian bytes (a leading 0x00 keeps the sign bit clear). */
const unsignedInteger = (bytes: Buffer): Buffer => {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
};

const objectIdentifier = (dotted: string): Buffer => {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const encoded: number[] = [40 * first! + second!];
  for (const arc of rest) {
    const base128: number[] = [];
    for (let value = arc; ; value = Math.floor(value / 128)) {
      base128.unshift((value % 128) | (base128.length > 0 ? 0x80 : 0));
      if (value < 128) break;
    }
    encoded.push(...base128);
  }
  return tlv(0x06, Buffer.from(encoded));
};

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 section 4.1.2.5), always in seconds and Z. */
const time = (date: Date): Buffer => {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
};

// Object identifiers (RFC 5280 section 4.2.1, RFC 5758 section 3.2, X.520).
const OID = {
  commonName: '2.5.4.3',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extendedKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

const extension = (oid: string, critical: boolean, value: Buffer): Buffer =>
  sequence(objectIdentifier(oid), ...(critical ? [booleanTrue()] : []), octetString(value));

/**
 * Makes an ECDSA P-256 key and a certificate signed with it (ecdsa-with-SHA256): end entity
 * (basicConstraints CA:FALSE), digitalSignature, serverAuth. P-256 because every client here speaks it
 * (Node's OpenSSL, Erlang's ssl in RabbitMQ, Java's JSSE in PerfTest) and generating it takes
 * milliseconds in a Lambda, unlike RSA.
 */
export function selfSignedCertificate(options: SelfSignedCertificateOptions): SelfSignedCertificate {
  const now = options.now ?? new Date();
  const notBefore = options.notBefore ?? new Date(now.getTime() - 3_600_000);
  if (!(options.notAfter.getTime() > notBefore.getTime())) {
    throw new Error(
      `certificate notAfter (${options.notAfter.toISOString()}) must be after notBefore (${notBefore.toISOString()})`,
    );
  }
  if (options.commonName.length < 1 || options.commonName.length > 64) {
    throw new Error(
      `certificate commonName must have 1 to 64 characters (RFC 5280 ub-common-name), got ${options.commonName.length}`,
    );
  }
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const name = sequence(set(sequence(objectIdentifier(OID.commonName), utf8String(options.commonName))));
  const signatureAlgorithm = sequence(objectIdentifier(OID.ecdsaWithSha256));
  // 16 random bytes with the top bit cleared: positive and at most 20 octets (RFC 5280 section 4.1.2.2).
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const dnsNames = options.dnsNames ?? [];
  const extensions = [
    extension(OID.basicConstraints, true, sequence()),
    // digitalSignature is bit 0: one byte 0x80 with 7 unused bits.
    extension(OID.keyUsage, true, Buffer.from([0x03, 0x02, 0x07, 0x80])),
    extension(OID.extendedKeyUsage, false, sequence(objectIdentifier(OID.serverAuth))),
    ...(dnsNames.length > 0
      ? [extension(OID.subjectAltName, false, sequence(...dnsNames.map((dns) => tlv(0x82, Buffer.from(dns, 'ascii')))))]
      : []),
  ];
  const tbsCertificate = sequence(
    explicit(0, tlv(0x02, Buffer.from([2]))), // version v3
    unsignedInteger(serial),
    signatureAlgorithm,
    name,
    sequence(time(notBefore), time(options.notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
  // node:crypto signs EC keys with a DER-encoded ECDSA-Sig-Value, the form X.509 carries.
  const signature = sign('sha256', tbsCertificate, privateKey);
  const der = sequence(tbsCertificate, signatureAlgorithm, bitString(signature));
  const certificatePem = `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END CERTIFICATE-----\n`;
  return {
    certificatePem,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    fingerprint256: certificateFingerprint256(certificatePem),
  };
}

/**
 * SHA-256 of a PEM certificate's DER in node's `fingerprint256` form (AA:BB:...); throws on anything that is not one
 * certificate.
 */
export function certificateFingerprint256(certificatePem: string): string {
  const certificate = new X509Certificate(certificatePem);
  const digest = createHash('sha256').update(certificate.raw).digest('hex').toUpperCase();
  return digest.match(/.{2}/g)!.join(':');
}

/** Whether `privateKeyPem` is the private key of `certificatePem`. */
export function keyMatchesCertificate(certificatePem: string, privateKeyPem: string): boolean {
  return new X509Certificate(certificatePem).checkPrivateKey(createPrivateKey(privateKeyPem));
}
