import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local endpoint that answers the two AWS APIs the load generator's run script calls (Secrets Manager
 * GetSecretValue, S3 PutObject), for the real AWS CLI pointed at it with AWS_ENDPOINT_URL, and that authorizes every
 * call with an IAM policy as AWS would: an action on a resource is allowed only if an Allow statement matches both
 * (`*` and `?` wildcards), and refused with AWS's AccessDenied error otherwise. Signatures are not checked: every call
 * is the load generator's role.
 */

export interface PolicyStatement {
  readonly Effect: 'Allow' | 'Deny';
  readonly Action: string | readonly string[];
  readonly Resource: string | readonly string[];
}

export interface FakeAws {
  readonly endpoint: string;
  /** Objects written, by `bucket/key`. */
  readonly objects: Map<string, Buffer>;
  /** Every call, with the policy's decision. */
  readonly calls: { action: string; resource: string; allowed: boolean }[];
  stop(): Promise<void>;
}

const wildcard = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );

/**
 * IAM evaluation for identity policies without conditions: an explicit Deny wins, then any Allow, else implicit deny.
 */
export function isAllowed(statements: readonly PolicyStatement[], action: string, resource: string): boolean {
  const matches = (statement: PolicyStatement) =>
    [statement.Action].flat().some((pattern) => wildcard(pattern.toLowerCase()).test(action.toLowerCase())) &&
    [statement.Resource].flat().some((pattern) => wildcard(pattern).test(resource));
  if (statements.some((statement) => statement.Effect === 'Deny' && matches(statement))) return false;
  return statements.some((statement) => statement.Effect === 'Allow' && matches(statement));
}

async function body(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeAws(options: {
  statements: readonly PolicyStatement[];
  secrets: Record<string, string>;
  region: string;
  account: string;
}): Promise<FakeAws> {
  const objects = new Map<string, Buffer>();
  const calls: FakeAws['calls'] = [];
  const authorize = (action: string, resource: string) => {
    const allowed = isAllowed(options.statements, action, resource);
    calls.push({ action, resource, allowed });
    return allowed;
  };
  const server: Server = createServer((request, response) => {
    void (async () => {
      const payload = await body(request);
      const target = request.headers['x-amz-target'];
      if (request.method === 'POST' && target === 'secretsmanager.GetSecretValue') {
        const { SecretId } = JSON.parse(payload.toString('utf8')) as { SecretId: string };
        const arn = Object.keys(options.secrets).find(
          (candidate) => candidate === SecretId || candidate.includes(`:secret:${SecretId}`),
        );
        // IAM authorizes against the secret's ARN
        // (https://docs.aws.amazon.com/secretsmanager/latest/userguide/auth-and-access_resource-policies.html).
        if (
          !authorize(
            'secretsmanager:GetSecretValue',
            arn ?? `arn:aws:secretsmanager:${options.region}:${options.account}:secret:${SecretId}`,
          )
        ) {
          response.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
          response.end(
            JSON.stringify({
              __type: 'AccessDeniedException',
              Message:
                `User: arn:aws:sts::${options.account}:assumed-role/LoadGeneratorRole/i-0 is not ` +
                `authorized to perform: secretsmanager:GetSecretValue on resource: ${SecretId} ` +
                `because no identity-based policy allows the secretsmanager:GetSecretValue action`,
            }),
          );
          return;
        }
        if (arn === undefined) {
          response.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
          response.end(
            JSON.stringify({
              __type: 'ResourceNotFoundException',
              Message: "Secrets Manager can't find the specified secret.",
            }),
          );
          return;
        }
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(
          JSON.stringify({
            ARN: arn,
            Name: arn.split(':secret:')[1],
            SecretString: options.secrets[arn],
            VersionId: 'v1',
            VersionStages: ['AWSCURRENT'],
          }),
        );
        return;
      }
      if (request.method === 'PUT') {
        // Path-style S3 addressing: /bucket/key.
        const url = new URL(request.url ?? '/', 'http://fake');
        const [, bucket, ...key] = decodeURIComponent(url.pathname).split('/');
        const objectKey = key.join('/');
        if (!authorize('s3:PutObject', `arn:aws:s3:::${bucket}/${objectKey}`)) {
          response.writeHead(403, { 'content-type': 'application/xml' });
          response.end(
            '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access ' +
              'Denied</Message></Error>',
          );
          return;
        }
        objects.set(`${bucket}/${objectKey}`, payload);
        response.writeHead(200, { etag: '"fake"' });
        response.end();
        return;
      }
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          __type: 'UnknownOperationException',
          Message: `the fake does not implement ${request.method} ${request.url} ${String(target)}`,
        }),
      );
    })().catch((error: Error) => {
      response.writeHead(500);
      response.end(error.message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    objects,
    calls,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Resolves the CloudFormation intrinsics an IAM policy in a synthesized template uses: Ref, Fn::Join, Fn::GetAtt (Arn).
 */
export function resolveIntrinsics(value: unknown, refs: Readonly<Record<string, string>>): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveIntrinsics(item, refs));
  if (typeof value !== 'object' || value === null) return value;
  const object = value as Record<string, unknown>;
  if ('Ref' in object) {
    const resolved = refs[object.Ref as string];
    if (resolved === undefined) throw new Error(`no value for Ref ${String(object.Ref)}`);
    return resolved;
  }
  if ('Fn::Join' in object) {
    const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
    return parts.map((part) => resolveIntrinsics(part, refs)).join(separator);
  }
  if ('Fn::GetAtt' in object) {
    const [logicalId, attribute] = object['Fn::GetAtt'] as [string, string];
    const resolved = refs[`${logicalId}.${attribute}`];
    if (resolved === undefined) throw new Error(`no value for Fn::GetAtt ${logicalId}.${attribute}`);
    return resolved;
  }
  return Object.fromEntries(Object.entries(object).map(([key, item]) => [key, resolveIntrinsics(item, refs)]));
}
