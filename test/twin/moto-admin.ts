/**
 * The twin's own calls to moto, as the account's administrator: reading what CloudFormation deployed (roles and their
 * policies, instance tags, secrets, stacks). Raw protocol requests with an unsigned SigV4-shaped Authorization header:
 * moto routes by the credential scope's service and checks no signature.
 */
import type { NamedPolicy, PolicyDocument } from './iam-policy';
import { TWIN_REGION } from './aws-requests';

export const ADMIN_ACCESS_KEY = 'twinadmin';

const authorization = (service: string) =>
  `AWS4-HMAC-SHA256 Credential=${ADMIN_ACCESS_KEY}/20260101/${TWIN_REGION}/${service}/aws4_request, ` +
  'SignedHeaders=host, Signature=0';

export class MotoAdmin {
  constructor(readonly endpoint: string) {}

  /** A query-protocol call (IAM, CloudFormation, EC2, Auto Scaling); the XML answer, or an error naming moto's. */
  async query(service: string, action: string, params: Record<string, string>, version: string): Promise<string> {
    const body = new URLSearchParams({ Action: action, Version: version, ...params }).toString();
    const response = await fetch(`${this.endpoint}/`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: authorization(service) },
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`moto ${service}:${action} answered ${response.status}: ${text.slice(0, 400)}`);
    return text;
  }

  /** A REST GET (S3 objects, Lambda's GetFunction). */
  get(service: string, path: string): Promise<Response> {
    return fetch(`${this.endpoint}${path}`, { headers: { authorization: authorization(service) } });
  }

  /** A JSON-protocol call (X-Amz-Target). */
  async json<T>(service: string, target: string, payload: unknown): Promise<T> {
    const response = await fetch(`${this.endpoint}/`, {
      method: 'POST',
      body: JSON.stringify(payload),
      headers: {
        'content-type': 'application/x-amz-json-1.1',
        'x-amz-target': target,
        authorization: authorization(service),
      },
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`moto ${target} answered ${response.status}: ${text.slice(0, 400)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /**
   * Every identity policy of a role: its inline policies and the managed ones attached (moto ships AWS's managed
   * policies).
   */
  async rolePolicies(roleName: string): Promise<NamedPolicy[]> {
    const iam = (action: string, params: Record<string, string>) => this.query('iam', action, params, '2010-05-08');
    const inlineNames = xmlValues(await iam('ListRolePolicies', { RoleName: roleName }), 'member');
    const inline = await Promise.all(
      inlineNames.map(async (name) => ({
        name: `inline policy ${name}`,
        document: decodePolicy(
          xmlValues(await iam('GetRolePolicy', { RoleName: roleName, PolicyName: name }), 'PolicyDocument')[0]!,
        ),
      })),
    );
    const attachedArns = xmlValues(await iam('ListAttachedRolePolicies', { RoleName: roleName }), 'PolicyArn');
    const attached = await Promise.all(
      attachedArns.map(async (policyArn) => {
        const versionId = xmlValues(await iam('GetPolicy', { PolicyArn: policyArn }), 'DefaultVersionId')[0]!;
        const document = xmlValues(
          await iam('GetPolicyVersion', { PolicyArn: policyArn, VersionId: versionId }),
          'Document',
        )[0]!;
        return { name: `managed policy ${policyArn.split('/').pop()}`, document: decodePolicy(document) };
      }),
    );
    return [...inline, ...attached];
  }

  async roleTrustPolicy(roleName: string): Promise<PolicyDocument> {
    const answer = await this.query('iam', 'GetRole', { RoleName: roleName }, '2010-05-08');
    return decodePolicy(xmlValues(answer, 'AssumeRolePolicyDocument')[0]!);
  }
}

/** Text of every <tag>…</tag> in an XML answer (moto's answers have no CDATA or attributes on these). */
export function xmlValues(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((match) => unescapeXml(match[1]!));
}

export function unescapeXml(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#x?([0-9a-fA-F]+);/g, (_m, code: string) => String.fromCodePoint(parseInt(code, 10)))
    .replace(/&amp;/g, '&');
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * IAM returns policy documents URL-encoded (IAM API reference, GetRolePolicy: "URL-encoded compliant with RFC 3986").
 */
function decodePolicy(text: string): PolicyDocument {
  const trimmed = text.trim();
  return JSON.parse(trimmed.startsWith('{') ? trimmed : decodeURIComponent(trimmed)) as PolicyDocument;
}
