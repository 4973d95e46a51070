/**
 * Microsoft Entra ID for the Azure twin: the client-credentials flow @azure/identity's ClientSecretCredential runs
 * through MSAL (Microsoft identity platform, "OAuth 2.0 client credentials flow",
 * https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow): POST
 * /{tenant}/oauth2/v2.0/token with client_id, client_secret, grant_type=client_credentials and scope, answered with
 * token_type, expires_in and access_token; a wrong secret gets AADSTS7000215 as invalid_client. MSAL's authority
 * metadata (the tenant's openid-configuration and instance discovery) is answered too, in case it asks.
 * The tokens it issues are the ones the fake ARM accepts (`issued`).
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';

export interface ServicePrincipal {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

export class FakeEntra {
  /** Access tokens issued, with the client they were issued to. */
  readonly issued = new Map<string, string>();
  readonly requests: string[] = [];
  private server?: Server;

  constructor(
    private readonly principals: readonly ServicePrincipal[],
    private readonly tls: { certificate: string; privateKey: string },
  ) {}

  /** Listens on a Unix socket (the twin relays login.microsoftonline.com:443 to it). */
  async listen(path: string): Promise<void> {
    this.server = createServer(
      { cert: this.tls.certificate, key: this.tls.privateKey },
      (request, response) => void this.handle(request, response),
    );
    await new Promise<void>((resolve) => this.server!.listen(path, resolve));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? '/', 'https://login.microsoftonline.com');
    this.requests.push(`${request.method} ${url.pathname}`);
    const send = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const host = 'https://login.microsoftonline.com';
    const openid = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(url.pathname);
    if (openid)
      return send(200, {
        token_endpoint: `${host}/${openid[1]}/oauth2/v2.0/token`,
        authorization_endpoint: `${host}/${openid[1]}/oauth2/v2.0/authorize`,
        end_session_endpoint: `${host}/${openid[1]}/oauth2/v2.0/logout`,
        issuer: `${host}/${openid[1]}/v2.0`,
        jwks_uri: `${host}/${openid[1]}/discovery/v2.0/keys`,
      });
    if (url.pathname.endsWith('/discovery/instance'))
      return send(200, {
        tenant_discovery_endpoint: `${host}/common/v2.0/.well-known/openid-configuration`,
        'api-version': '1.1',
        metadata: [
          {
            preferred_network: 'login.microsoftonline.com',
            preferred_cache: 'login.windows.net',
            aliases: ['login.microsoftonline.com'],
          },
        ],
      });
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (!token || request.method !== 'POST')
      return send(400, {
        error: 'invalid_request',
        error_description: `the twin's Entra ID does not answer ${url.pathname}`,
      });
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const principal = this.principals.find(
      (candidate) => candidate.tenantId === token[1] && candidate.clientId === form.get('client_id'),
    );
    if (!principal)
      return send(400, {
        error: 'unauthorized_client',
        error_description:
          `AADSTS700016: Application with identifier '${form.get('client_id')}' was not found in the directory ` +
          `'${token[1]}'.`,
      });
    if (form.get('client_secret') !== principal.clientSecret)
      return send(401, {
        error: 'invalid_client',
        error_description:
          'AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client ' +
          `secret value, not the client secret ID, for a secret added to app '${principal.clientId}'.`,
      });
    const accessToken = `twin-arm.${principal.clientId}.${randomBytes(8).toString('hex')}`;
    this.issued.set(accessToken, principal.clientId);
    return send(200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: accessToken });
  }
}
