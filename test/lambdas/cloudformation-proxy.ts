import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A CloudFormation endpoint in front of moto for the real SDK client (AWS Query protocol: form-encoded `Action=...`
 * requests, XML answers), adding the two behaviours of CloudFormation that moto 5.2.5 lacks:
 * - ClientRequestToken on CreateStack: moto ignores it and answers a repeated CreateStack with AlreadyExistsException.
 *   CloudFormation recognises a retried request by its token ("Specify this token if you plan to retry requests so that
 *   CloudFormation knows that you're not attempting to create a stack with the same name",
 *   https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html): the proxy answers a
 *   CreateStack whose token it already forwarded with the StackId moto gave the first one.
 * - DELETE_FAILED: moto deletes a stack at once or raises. A stack in `failDeletes` has its next N DeleteStack calls
 *   answered 200 without reaching moto (DeleteStack is asynchronous: its outcome is the stack's status), after which
 *   DescribeStacks shows it DELETE_FAILED with CloudFormation's reason and DescribeStackEvents lists the resource that
 *   stayed; once N is used up, DeleteStack reaches moto and the stack is gone.
 * `loseFirstCreateResponse` forwards the first CreateStack and then drops the connection: the request was accepted,
 * its answer lost, and the SDK retries it (a connection reset is a transient error for the SDK's standard retry mode).
 */
export interface StuckResource {
  readonly logicalId: string;
  readonly type: string;
  readonly reason: string;
}

export interface CloudFormationProxy {
  readonly endpoint: string;
  /** Every request, form fields decoded, in order. */
  readonly requests: Record<string, string>[];
  /** DeleteStack calls left to fail, by stack name (Infinity: never deleted). */
  readonly failDeletes: Map<string, { remaining: number; resource: StuckResource }>;
  loseFirstCreateResponse: boolean;
  stop(): Promise<void>;
}

const XMLNS = 'http://cloudformation.amazonaws.com/doc/2010-05-15/';

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function startCloudFormationProxy(motoEndpoint: string): Promise<CloudFormationProxy> {
  const requests: Record<string, string>[] = [];
  const failDeletes: CloudFormationProxy['failDeletes'] = new Map();
  const failedStacks = new Map<string, StuckResource>();
  const acceptedTokens = new Map<string, string>();
  let createsSeen = 0;
  const proxy: CloudFormationProxy = {
    endpoint: '',
    requests,
    failDeletes,
    loseFirstCreateResponse: false,
    stop: async () => undefined,
  };

  const forward = async (request: IncomingMessage, body: string) => {
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(request.headers))
      if (typeof value === 'string' && key !== 'host' && key !== 'content-length') headers[key] = value;
    const answer = await fetch(`${motoEndpoint}${request.url ?? '/'}`, { method: request.method, headers, body });
    return { status: answer.status, type: answer.headers.get('content-type') ?? 'text/xml', text: await answer.text() };
  };

  const server: Server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const fields = Object.fromEntries(new URLSearchParams(body));
      requests.push(fields);
      const reply = (status: number, text: string, type = 'text/xml') => {
        response.writeHead(status, { 'content-type': type });
        response.end(text);
      };
      const stackName = fields.StackName ?? '';
      if (fields.Action === 'CreateStack') {
        const token = fields.ClientRequestToken;
        const accepted = token === undefined ? undefined : acceptedTokens.get(`${stackName}/${token}`);
        if (accepted !== undefined)
          return reply(
            200,
            `<CreateStackResponse ` +
              `xmlns="${XMLNS}"><CreateStackResult><StackId>${accepted}</StackId></CreateStackResult>` +
              `<ResponseMetadata><RequestId>retry</RequestId></ResponseMetadata></CreateStackResponse>`,
          );
        const answer = await forward(request, body);
        const stackId = /<StackId>([^<]+)<\/StackId>/.exec(answer.text)?.[1];
        if (answer.status === 200 && token !== undefined && stackId !== undefined)
          acceptedTokens.set(`${stackName}/${token}`, stackId);
        if (createsSeen++ === 0 && proxy.loseFirstCreateResponse) return void request.socket.destroy();
        return reply(answer.status, answer.text, answer.type);
      }
      const failing = failDeletes.get(stackName);
      if (fields.Action === 'DeleteStack' && failing && failing.remaining > 0) {
        failing.remaining -= 1;
        failedStacks.set(stackName, failing.resource);
        return reply(
          200,
          `<DeleteStackResponse ` +
            `xmlns="${XMLNS}"><ResponseMetadata><RequestId>delete-failed` +
            `</RequestId></ResponseMetadata></DeleteStackResponse>`,
        );
      }
      const answer = await forward(request, body);
      const stuck = failedStacks.get(stackName);
      if (fields.Action === 'DeleteStack' && answer.status === 200) failedStacks.delete(stackName);
      if (stuck && answer.status === 200 && fields.Action === 'DescribeStacks') {
        const reason = `The following resource(s) failed to delete: [${stuck.logicalId}].`;
        return reply(
          200,
          answer.text.replace(
            /<StackStatus>[^<]*<\/StackStatus>/,
            `<StackStatus>DELETE_FAILED</StackStatus><StackStatusReason>${escapeXml(reason)}</StackStatusReason>`,
          ),
          answer.type,
        );
      }
      if (stuck && answer.status === 200 && fields.Action === 'DescribeStackEvents') {
        // Newest first, as CloudFormation lists them: the stack's own DELETE_FAILED, then the resource's.
        const event = (logicalId: string, type: string, reason: string, id: string) =>
          `<member><StackId>${stackName}</StackId><EventId>${id}</EventId><StackName>${stackName}<` +
          `/StackName><LogicalResourceId>${logicalId}</LogicalResourceId><ResourceType>${type}<` +
          `/ResourceType><Timestamp>${new Date().toISOString()}</Timestamp><ResourceStatus>DELETE_FAILED` +
          `</ResourceStatus><ResourceStatusReason>${escapeXml(reason)}</ResourceStatusReason></member>`;
        const injected =
          event(
            stackName,
            'AWS::CloudFormation::Stack',
            `The following resource(s) failed to delete: [${stuck.logicalId}].`,
            'f2',
          ) + event(stuck.logicalId, stuck.type, stuck.reason, 'f1');
        return reply(200, answer.text.replace('<StackEvents>', `<StackEvents>${injected}`), answer.type);
      }
      return reply(answer.status, answer.text, answer.type);
    })().catch((error: Error) => {
      response.writeHead(500);
      response.end(error.message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(proxy, {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
