import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A request the fake ARM endpoint received (method, path without query, api-version, parsed body). */
export interface ArmRequest {
  readonly method: string;
  readonly path: string;
  readonly apiVersion: string | null;
  readonly body: unknown;
  readonly authorization: string | undefined;
}

export interface FakeArmOptions {
  /** GETs of a deployment that still answer Running. @default 2 */
  readonly deploymentPolls?: number;
  /** Polls of a Run Command / resource group deletion that still answer 202. @default 2 */
  readonly operationPolls?: number;
  /**
   * When set, a deployment PUT is refused with 400 InvalidTemplate and this message, built from the request body (ARM
   * may quote parameters back).
   */
  readonly rejectDeployment?: (body: unknown) => string;
  /** GETs of a managed Run Command that still answer executionState Running. @default 2 */
  readonly runCommandPolls?: number;
  /**
   * What a managed Run Command's script did, given the script and the environment the VM agent gives it (its named
   * parameters and protected parameters). @default Succeeded with exit code 0 and output `ran: <script>`
   */
  readonly runCommandOutcome?: (script: string, environment: Record<string, string>, vm: string) => RunCommandOutcome;
  /**
   * When set, a request whose method and path it returns true (or a message) for is refused as ARM refuses a principal
   * without the role or whose role assignment has not taken effect yet: 403 AuthorizationFailed (the message format of
   * https://learn.microsoft.com/azure/role-based-access-control/troubleshooting; a returned string is the message).
   */
  readonly refuseAuthorization?: (
    method: string,
    path: string,
    authorization: string | undefined,
  ) => boolean | string | undefined;
  /**
   * Resource group deletions that fail as ARM's do when a resource cannot be deleted: the operation ends with 409
   * ResourceGroupDeletionBlocked and the group's provisioning state is rolled back (it stays). @default 0
   */
  readonly failGroupDeletions?: number;
  /**
   * What a deployment, the VM list, a Run Command and a group deletion really do (the cloud twin's resource groups,
   * test/twin/azure/azure-cloud.ts). Without it the fake deploys nothing and answers from its options.
   */
  readonly backend?: ArmBackend;
  /** The certificate and key to serve (one a test CA signed); @default a throw-away self-signed one for 127.0.0.1. */
  readonly tls?: { readonly certificate: string; readonly privateKey: string };
  /** The bearer tokens it accepts (Authorization: Bearer <token>); @default any. */
  readonly acceptToken?: (token: string) => boolean;
}

/** A deployment's state as the backend sees it. */
export type BackendDeploymentState =
  | { readonly state: 'Running' }
  | { readonly state: 'Succeeded'; readonly outputs: Record<string, { type: string; value: unknown }> }
  | { readonly state: 'Failed'; readonly error: { readonly code: string; readonly message: string } };

/** The cloud behind the fake ARM endpoint (see FakeArmOptions.backend). */
export interface ArmBackend {
  /** Starts a deployment of the template with these parameter values; its progress is read with deploymentState. */
  deploy(group: string, name: string, template: unknown, parameters: Record<string, unknown>): void;
  deploymentState(group: string): BackendDeploymentState | undefined;
  vms(group: string): FakeVm[];
  /** Runs a managed Run Command's script on a VM with its environment; resolves with the instance view's result. */
  runCommand(
    group: string,
    vm: string,
    script: string,
    environment: Record<string, string>,
    timeoutSeconds: number,
  ): Promise<RunCommandOutcome>;
  deleteGroup(group: string): Promise<void>;
}

/**
 * A VM as Virtual Machines - List shows it: a scale-set member has `scaleSet`
 * (https://learn.microsoft.com/rest/api/compute/virtual-machines/list).
 */
export interface FakeVm {
  readonly name: string;
  readonly computerName: string;
  readonly timeCreated: string;
  readonly scaleSet?: string;
  readonly provisioningState?: string;
}

/** A managed Run Command's result as its instance view reports it. */
export interface RunCommandOutcome {
  readonly executionState: 'Succeeded' | 'Failed' | 'TimedOut' | 'Canceled';
  readonly exitCode: number;
  readonly output: string;
  readonly error: string;
}

/**
 * A managed Run Command resource as the fake holds it: the PUT body's properties, how often it was read, whether it was
 * deleted.
 */
export interface FakeRunCommand {
  readonly location: string;
  readonly properties: {
    source?: { script?: string };
    parameters?: { name: string; value: string }[];
    protectedParameters?: { name: string; value: string }[];
    asyncExecution?: boolean;
    timeoutInSeconds?: number;
  };
  gets: number;
  outcome?: RunCommandOutcome;
  /** The VM it runs on. */
  readonly vm?: string;
}

/**
 * Answers like Azure Resource Manager for exactly the calls the Azure Lambdas make: resource group
 * list (with a tag $filter), PUT / DELETE (202 + Location polling), Microsoft.Resources/deployments PUT (201 +
 * Azure-AsyncOperation)
 * and GET, virtualMachines GET and List, managed Run Commands (virtualMachines/runCommands PUT / GET with
 * $expand=instanceView / DELETE), and Azure Monitor metrics of VMs and scale sets (from `metricValues`).
 * Anything else gets a 400 with the request in the message, so an unexpected call fails the test.
 * HTTPS with a throw-away self-signed certificate: the SDK's bearer-token policy refuses plain http.
 */
export class FakeArm {
  readonly requests: ArmRequest[] = [];
  readonly groups = new Map<string, { location: string; tags: Record<string, string> }>();
  readonly deployments = new Map<
    string,
    { body: { properties: { template: unknown; parameters: Record<string, { value: unknown }> } }; gets: number }
  >();
  /** Managed Run Commands by `<resource group>/<vm>/<name>` (deleted ones are removed). */
  readonly runCommands = new Map<string, FakeRunCommand>();
  /**
   * Azure Monitor platform metric values by resource id (lower case): what the platform would have recorded, one value
   * per metric, minute and VM (`vmName` for a scale set's instances, absent for a single VM).
   */
  readonly metricValues = new Map<string, { metric: string; vmName?: string; timeStamp: string; value: number }[]>();
  /** The query of every metrics request, in arrival order (metricnames, aggregation, $filter, ...). */
  readonly metricsQueries: URLSearchParams[] = [];
  /** VMs a resource group's Virtual Machines - List returns (the test puts them there: the fake deploys nothing). */
  readonly vms = new Map<string, FakeVm[]>();
  /** Resource groups whose deletion is under way (GET answers provisioningState Deleting). */
  readonly deletingGroups = new Set<string>();
  private groupDeletionFailures = 0;
  private readonly operations = new Map<
    string,
    { polls: number; done: () => { status: number; body?: unknown; retry?: boolean } }
  >();
  private readonly deletedGroups = new Set<string>();
  private server?: Server;
  private next = 0;
  endpoint = '';
  ca = '';

  constructor(private readonly options: FakeArmOptions = {}) {
    this.groupDeletionFailures = options.failGroupDeletions ?? 0;
  }

  /**
   * `socket`: listen on this Unix socket instead, as https://management.azure.com (the twin relays that name to it; its
   * certificate is options.tls).
   */
  async start(socket?: string): Promise<void> {
    if (this.options.tls) {
      this.ca = this.options.tls.certificate;
      this.server = createServer(
        { key: this.options.tls.privateKey, cert: this.options.tls.certificate },
        (request, response) => void this.handle(request, response),
      );
      if (socket) {
        await new Promise<void>((resolve) => this.server!.listen(socket, resolve));
        this.endpoint = 'https://management.azure.com';
        return;
      }
      await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
      this.endpoint = `https://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-fake-arm-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      this.ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
      this.server = createServer(
        { key: readFileSync(join(dir, 'key.pem')), cert: this.ca },
        (request, response) => void this.handle(request, response),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.endpoint = `https://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(request.url ?? '/', this.endpoint);
    // The generic resources client puts an empty parent resource path in as "//".
    const path = url.pathname.replace(/\/{2,}/g, '/');
    const body = text ? (JSON.parse(text) as unknown) : undefined;
    this.requests.push({
      method: request.method ?? '',
      path,
      apiVersion: url.searchParams.get('api-version'),
      body,
      authorization: request.headers.authorization,
    });
    const send = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, {
        'content-type': 'application/json',
        'x-ms-request-id': `req-${this.requests.length}`,
        ...headers,
      });
      response.end(payload === undefined ? '' : JSON.stringify(payload));
    };
    const operation = (done: () => { status: number; body?: unknown; retry?: boolean }) => {
      const id = `op-${++this.next}`;
      this.operations.set(id, { polls: this.options.operationPolls ?? 2, done });
      return `${this.endpoint}/subscriptions/sub/providers/Microsoft.Fake/operations/${id}?api-version=2024-03-01`;
    };

    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (this.options.acceptToken && !(token && this.options.acceptToken(token)))
      return send(401, {
        error: {
          code: 'InvalidAuthenticationToken',
          message: 'The access token is invalid (the twin issued no such token).',
        },
      });
    const refusal = this.options.refuseAuthorization?.(request.method ?? '', path, request.headers.authorization);
    if (refusal) {
      return send(403, {
        error: {
          code: 'AuthorizationFailed',
          message:
            typeof refusal === 'string'
              ? refusal
              : `The client 'fake-client' with object id 'fake-object' does not have authorization to ` +
                `perform action 'Microsoft.Compute/virtualMachines/*' over scope '${path}' or the ` +
                `scope is invalid. If access was recently granted, please refresh your credentials.`,
        },
      });
    }

    let match: RegExpExecArray | null;
    if (/^\/subscriptions\/[^/]+\/resourcegroups$/i.test(path) && request.method === 'GET') {
      // ARM's tag filter: "tagName eq '<name>'" optionally "and tagValue eq '<value>'" (quotes doubled inside).
      const filter = url.searchParams.get('$filter') ?? '';
      const tag = /^tagName eq '((?:[^']|'')*)'(?: and tagValue eq '((?:[^']|'')*)')?$/.exec(filter);
      if (filter && !tag)
        return send(400, {
          error: { code: 'InvalidFilter', message: `the fake ARM endpoint does not understand $filter=${filter}` },
        });
      const unquote = (text: string | undefined) => text?.replace(/''/g, "'");
      const [tagName, tagValue] = [unquote(tag?.[1]), unquote(tag?.[2])];
      const value = [...this.groups]
        .filter(
          ([, group]) =>
            !tagName || (tagName in group.tags && (tagValue === undefined || group.tags[tagName] === tagValue)),
        )
        .map(([name, group]) => ({
          id: `/subscriptions/sub/resourceGroups/${name}`,
          name,
          location: group.location,
          tags: group.tags,
          properties: { provisioningState: 'Succeeded' },
        }));
      return send(200, { value });
    }
    if ((match = /^\/subscriptions\/[^/]+\/resourcegroups\/([^/]+)$/i.exec(path))) {
      const name = decodeURIComponent(match[1]!);
      if (request.method === 'PUT') {
        const { location, tags } = body as { location: string; tags: Record<string, string> };
        this.groups.set(name, { location, tags });
        return send(201, {
          id: `/subscriptions/sub/resourceGroups/${name}`,
          name,
          location,
          tags,
          properties: { provisioningState: 'Succeeded' },
        });
      }
      if (request.method === 'GET') {
        const group = this.groups.get(name);
        if (!group)
          return send(404, {
            error: { code: 'ResourceGroupNotFound', message: `Resource group '${name}' could not be found.` },
          });
        const provisioningState = this.deletingGroups.has(name) ? 'Deleting' : 'Succeeded';
        return send(200, {
          id: `/subscriptions/sub/resourceGroups/${name}`,
          name,
          location: group.location,
          tags: group.tags,
          properties: { provisioningState },
        });
      }
      if (request.method === 'DELETE') {
        if (!this.groups.has(name))
          return send(404, {
            error: { code: 'ResourceGroupNotFound', message: `Resource group '${name}' could not be found.` },
          });
        this.deletingGroups.add(name);
        const deleting = this.options.backend?.deleteGroup(name);
        return send(202, undefined, {
          location: operation(() => {
            this.deletingGroups.delete(name);
            if (this.groupDeletionFailures > 0) {
              this.groupDeletionFailures -= 1;
              // ARM's words (its ResourceGroupDeletionBlocked error, as ARM returns it for a resource that would not
              // go).
              const message =
                `Deletion of resource group '${name}' failed as resources with ` +
                `identifiers 'Microsoft.Network/networkInterfaces/nic-0' could not be ` +
                `deleted. The provisioning state of the resource group will be rolled back.`;
              return { status: 409, body: { error: { code: 'ResourceGroupDeletionBlocked', message } } };
            }
            if (deleting && !this.deletedGroups.has(name)) {
              // Still deleting: the operation answers 202 again until the backend has removed everything.
              void deleting.then(() => this.deletedGroups.add(name));
              this.deletingGroups.add(name);
              return { status: 202, retry: true };
            }
            this.deletedGroups.delete(name);
            this.groups.delete(name);
            this.deployments.delete(name);
            return { status: 200 };
          }),
        });
      }
    }
    if (
      (match = new RegExp(
        String.raw`^\/subscriptions\/[^/]+\/resourcegroups\/([^/]+)\/providers\/Microsoft\.Resources` +
          String.raw`\/deployments\/([^/]+)$`,
        'i',
      ).exec(path))
    ) {
      const group = decodeURIComponent(match[1]!);
      if (!this.groups.has(group))
        return send(404, {
          error: { code: 'ResourceGroupNotFound', message: `Resource group '${group}' could not be found.` },
        });
      if (request.method === 'PUT') {
        if (this.options.rejectDeployment)
          return send(400, { error: { code: 'InvalidTemplate', message: this.options.rejectDeployment(body) } });
        this.deployments.set(group, { body: body as never, gets: 0 });
        if (this.options.backend) {
          const properties = (
            body as { properties: { template: unknown; parameters?: Record<string, { value: unknown }> } }
          ).properties;
          const values = Object.fromEntries(
            Object.entries(properties.parameters ?? {}).map(([name, parameter]) => [name, parameter.value]),
          );
          this.options.backend.deploy(group, match[2]!, properties.template, values);
        }
        const asyncOperation = operation(() => ({ status: 200, body: { status: 'Succeeded' } }));
        return send(
          201,
          { id: path, name: match[2], properties: { provisioningState: 'Accepted' } },
          { 'azure-asyncoperation': asyncOperation },
        );
      }
      if (request.method === 'GET') {
        const deployment = this.deployments.get(group);
        if (!deployment)
          return send(404, {
            error: { code: 'DeploymentNotFound', message: `Deployment '${match[2]}' could not be found.` },
          });
        deployment.gets++;
        const state = this.options.backend?.deploymentState(group);
        if (state) {
          const properties =
            state.state === 'Running'
              ? { provisioningState: 'Running' }
              : state.state === 'Succeeded'
                ? { provisioningState: 'Succeeded', outputs: state.outputs }
                : { provisioningState: 'Failed', error: state.error };
          return send(200, { id: path, name: match[2], properties });
        }
        const template = deployment.body.properties.template as {
          outputs?: Record<string, { type: string; value: unknown }>;
          variables?: { fail?: string };
        };
        const done = deployment.gets > (this.options.deploymentPolls ?? 2);
        if (done && template.variables?.fail) {
          return send(200, {
            id: path,
            name: match[2],
            properties: {
              provisioningState: 'Failed',
              error: failedDeploymentError(template.variables.fail),
            },
          });
        }
        // Outputs as ARM evaluates them: here the template's literal values, and the instance count it was given.
        const outputs = Object.fromEntries(
          Object.entries(template.outputs ?? {}).map(([key, output]) => [
            key,
            {
              type: output.type,
              value:
                output.value === "[parameters('instanceCount')]"
                  ? deployment.body.properties.parameters.instanceCount!.value
                  : output.value,
            },
          ]),
        );
        return send(200, {
          id: path,
          name: match[2],
          properties: done ? { provisioningState: 'Succeeded', outputs } : { provisioningState: 'Running' },
        });
      }
    }
    if (
      (match =
        /^\/subscriptions\/([^/]+)\/resourcegroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines$/i.exec(
          path,
        )) &&
      request.method === 'GET'
    ) {
      const group = decodeURIComponent(match[2]!);
      if (!this.groups.has(group))
        return send(404, {
          error: { code: 'ResourceGroupNotFound', message: `Resource group '${group}' could not be found.` },
        });
      const scaleSetId = (name: string) =>
        `/subscriptions/${match![1]}/resourceGroups/${group}/providers` +
        `/Microsoft.Compute/virtualMachineScaleSets/${name}`;
      return send(200, {
        value: (this.options.backend?.vms(group) ?? this.vms.get(group) ?? []).map((vm) => ({
          id: `${path}/${vm.name}`,
          name: vm.name,
          type: 'Microsoft.Compute/virtualMachines',
          location: this.groups.get(group)!.location,
          properties: {
            provisioningState: vm.provisioningState ?? 'Succeeded',
            timeCreated: vm.timeCreated,
            osProfile: { computerName: vm.computerName },
            ...(vm.scaleSet ? { virtualMachineScaleSet: { id: scaleSetId(vm.scaleSet) } } : {}),
          },
        })),
      });
    }
    if (
      (match = new RegExp(
        String.raw`^\/subscriptions\/[^/]+\/resourcegroups\/([^/]+)\/providers\/Microsoft\.Compute` +
          String.raw`\/virtualMachines\/([^/]+)$`,
        'i',
      ).exec(path)) &&
      request.method === 'GET'
    ) {
      const group = this.groups.get(decodeURIComponent(match[1]!));
      if (!group)
        return send(404, {
          error: { code: 'ResourceGroupNotFound', message: `Resource group '${match[1]}' could not be found.` },
        });
      return send(200, {
        id: path,
        name: decodeURIComponent(match[2]!),
        type: 'Microsoft.Compute/virtualMachines',
        location: group.location,
        properties: { provisioningState: 'Succeeded' },
      });
    }
    if (
      (match = new RegExp(
        String.raw`^\/subscriptions\/[^/]+\/resourcegroups\/([^/]+)\/providers\/Microsoft\.Compute` +
          String.raw`\/virtualMachines\/([^/]+)\/runCommands\/([^/]+)$`,
        'i',
      ).exec(path))
    ) {
      const group = decodeURIComponent(match[1]!);
      if (!this.groups.has(group))
        return send(404, {
          error: { code: 'ResourceGroupNotFound', message: `Resource group '${group}' could not be found.` },
        });
      const key = `${group}/${decodeURIComponent(match[2]!)}/${decodeURIComponent(match[3]!)}`;
      const name = decodeURIComponent(match[3]!);
      // Like the REST spec's examples (VirtualMachineRunCommand_CreateOrUpdate.json, 2025-04-01), a response echoes the
      // named parameters but no secret: protectedParameters and runAsPassword are left out.
      const view = (command: FakeRunCommand, instanceView?: unknown) => {
        const { protectedParameters: _secret, ...visible } = command.properties;
        return {
          id: path,
          name,
          type: 'Microsoft.Compute/virtualMachines/runCommands',
          location: command.location,
          properties: { ...visible, provisioningState: 'Succeeded', ...(instanceView ? { instanceView } : {}) },
        };
      };
      if (request.method === 'PUT') {
        const { location, properties } = (body ?? {}) as {
          location?: string;
          properties?: FakeRunCommand['properties'];
        };
        if (!location)
          return send(400, {
            error: { code: 'LocationRequired', message: 'The location property is required for this definition.' },
          });
        if (typeof properties?.source?.script !== 'string')
          return send(400, {
            error: { code: 'InvalidParameter', message: 'the fake ARM endpoint expects properties.source.script' },
          });
        const command: FakeRunCommand = { location, properties, gets: 0, vm: decodeURIComponent(match[2]!) };
        this.runCommands.set(key, command);
        if (this.options.backend) {
          const { script, environment } = this.scriptOf(command);
          void this.options.backend
            .runCommand(group, decodeURIComponent(match[2]!), script, environment, properties.timeoutInSeconds ?? 5400)
            .then(
              (outcome) => (command.outcome = outcome),
              (error: Error) =>
                (command.outcome = { executionState: 'Failed', exitCode: -1, output: '', error: error.message }),
            );
        }
        const asyncOperation = operation(() => ({ status: 200, body: { status: 'Succeeded' } }));
        return send(201, view(command), { 'azure-asyncoperation': asyncOperation });
      }
      const command = this.runCommands.get(key);
      if (!command)
        return send(404, {
          error: {
            code: 'ResourceNotFound',
            message:
              `The Resource 'Microsoft.Compute/virtualMachines/runCommands/${name}' ` +
              `under resource group '${group}' was not found.`,
          },
        });
      if (request.method === 'GET') {
        command.gets++;
        if (url.searchParams.get('$expand') !== 'instanceView') return send(200, view(command));
        if (this.options.backend ? !command.outcome : command.gets <= (this.options.runCommandPolls ?? 2))
          return send(200, view(command, { executionState: 'Running', startTime: new Date().toISOString() }));
        command.outcome ??= this.outcome(command);
        return send(
          200,
          view(command, { ...command.outcome, startTime: new Date().toISOString(), endTime: new Date().toISOString() }),
        );
      }
      if (request.method === 'DELETE') {
        this.runCommands.delete(key);
        return send(200);
      }
    }
    if (
      (match = new RegExp(
        String.raw`^(\/subscriptions\/[^/]+\/resourcegroups\/[^/]+\/providers\/Microsoft\.Compute` +
          String.raw`\/(?:virtualMachines|virtualMachineScaleSets)\/[^/]+)\/providers\/Microsoft\.Insights` +
          String.raw`\/metrics$`,
        'i',
      ).exec(path)) &&
      request.method === 'GET'
    ) {
      return this.metrics(decodeURIComponent(match[1]!), url.searchParams, send);
    }
    if (
      (match = /^\/subscriptions\/[^/]+\/providers\/Microsoft\.Fake\/operations\/([^/]+)$/.exec(path)) &&
      request.method === 'GET'
    ) {
      const state = this.operations.get(match[1]!);
      if (!state) return send(404, { error: { code: 'NotFound', message: `operation ${match[1]} not found` } });
      if (state.polls-- > 0) return send(202, undefined, { location: `${this.endpoint}${request.url}` });
      const result = state.done();
      if (result.retry) {
        state.polls = 1;
        return send(202, undefined, { location: `${this.endpoint}${request.url}` });
      }
      return send(result.status, result.body);
    }
    return send(400, {
      error: { code: 'UnexpectedRequest', message: `the fake ARM endpoint does not answer ${request.method} ${path}` },
    });
  }

  /**
   * Metrics - List (GET {resourceUri}/providers/Microsoft.Insights/metrics, azure-rest-api-specs
   * specification/monitor/resource-manager/Microsoft.Insights/stable/2023-10-01/metrics_API.json and its GetMetric.json
   * example): api-version 2023-10-01, `timespan` start/end, `interval`, comma-separated `metricnames`, `aggregation`,
   * optionally `$filter=VMName eq '*'` to split a scale set's series per VM (metadatavalues name "vmname"). A metric
   * the
   * resource type does not have is a 400 BadRequest, as ARM answers an unknown metric name.
   */
  private metrics(resourceId: string, query: URLSearchParams, send: (status: number, payload?: unknown) => void): void {
    this.metricsQueries.push(query);
    if (query.get('api-version') !== '2023-10-01')
      return send(400, {
        error: {
          code: 'InvalidApiVersionParameter',
          message:
            `The api-version '${query.get('api-version')}' is invalid ` +
            `for Microsoft.Insights/metrics in the fake (2023-10-01).`,
        },
      });
    const timespan = /^([^/]+)\/([^/]+)$/.exec(query.get('timespan') ?? '');
    const names = (query.get('metricnames') ?? '').split(',').filter(Boolean);
    if (!timespan || names.length === 0 || !query.get('interval'))
      return send(400, {
        error: {
          code: 'BadRequest',
          message: `timespan, interval and metricnames are required (got ${query.toString()})`,
        },
      });
    const [from, to] = [Date.parse(timespan[1]!), Date.parse(timespan[2]!)];
    const known = [
      'Percentage CPU',
      'Disk Write Bytes',
      'Network In Total',
      'Network Out Total',
      'Available Memory Bytes',
    ];
    const unknown = names.find((name) => !known.includes(name));
    if (unknown)
      return send(400, {
        error: {
          code: 'BadRequest',
          message:
            `Failed to find metric configuration for provider: Microsoft.Compute, resource Type: ` +
            `virtualMachineScaleSets, metric: ${unknown}, Valid metrics: ${known.join(',')}`,
        },
      });
    const filter = query.get('$filter');
    if (filter !== null && filter !== "VMName eq '*'")
      return send(400, {
        error: { code: 'BadRequest', message: `the fake understands $filter=VMName eq '*' only, got ${filter}` },
      });
    const aggregations = (query.get('aggregation') ?? 'average').split(',');
    const recorded = (this.metricValues.get(resourceId.toLowerCase()) ?? []).filter(
      (entry) => Date.parse(entry.timeStamp) >= from && Date.parse(entry.timeStamp) < to,
    );
    const value = names.map((name) => {
      const ofMetric = recorded.filter((entry) => entry.metric === name);
      const groups = filter ? [...new Set(ofMetric.map((entry) => entry.vmName ?? ''))] : [undefined];
      return {
        id: `${resourceId}/providers/Microsoft.Insights/metrics/${name}`,
        type: 'Microsoft.Insights/metrics',
        name: { value: name, localizedValue: name },
        unit: name === 'Percentage CPU' ? 'Percent' : 'Bytes',
        timeseries: groups.map((vmName) => ({
          metadatavalues:
            vmName === undefined ? [] : [{ name: { value: 'vmname', localizedValue: 'vmname' }, value: vmName }],
          data: ofMetric
            .filter((entry) => vmName === undefined || entry.vmName === vmName)
            .map((entry) => ({
              timeStamp: entry.timeStamp,
              ...Object.fromEntries(aggregations.map((aggregation) => [aggregation, entry.value])),
            })),
        })),
        errorCode: 'Success',
      };
    });
    send(200, {
      cost: 0,
      timespan: query.get('timespan'),
      interval: query.get('interval'),
      value,
      namespace: resourceId.includes('virtualMachineScaleSets')
        ? 'microsoft.compute/virtualmachinescalesets'
        : 'microsoft.compute/virtualmachines',
      resourceregion: 'westeurope',
    });
  }

  /**
   * The VM agent's part: named and protected parameters become the script's environment (Linux), then the script's
   * result.
   */
  private scriptOf(command: FakeRunCommand): { script: string; environment: Record<string, string> } {
    const script = command.properties.source!.script!;
    const environment = Object.fromEntries(
      [...(command.properties.parameters ?? []), ...(command.properties.protectedParameters ?? [])].map(
        ({ name, value }) => [name, value],
      ),
    );
    return { script, environment };
  }

  private outcome(command: FakeRunCommand): RunCommandOutcome {
    const { script, environment } = this.scriptOf(command);
    if (this.options.runCommandOutcome) return this.options.runCommandOutcome(script, environment, command.vm ?? '');
    return { executionState: 'Succeeded', exitCode: 0, output: `ran: ${script}`, error: '' };
  }
}

/**
 * ARM's error of a deployment whose resource failed: the generic DeploymentFailed at the top, the resource's failure
 * and its cause (`CODE: message`, as the template's `fail` variable gives it) in nested details
 * (https://learn.microsoft.com/azure/azure-resource-manager/troubleshooting/find-error-code).
 */
function failedDeploymentError(cause: string) {
  const [, code, message] = /^(\w+): (.*)$/s.exec(cause) ?? [undefined, 'ResourceDeploymentFailure', cause];
  return {
    code: 'DeploymentFailed',
    message:
      'At least one resource deployment operation failed. Please list deployment operations for details. ' +
      'Please see https://aka.ms/arm-deployment-operations for usage details.',
    details: [
      {
        code: 'ResourceDeploymentFailure',
        message:
          'The resource write operation failed to complete successfully, because it reached terminal provisioning ' +
          "state 'Failed'.",
        details: [{ code, message }],
      },
    ],
  };
}
