/**
 * The twin's AWS endpoint: every SDK client, CLI call and function of a twin run sends its requests here
 * (AWS_ENDPOINT_URL). The gateway knows who signed each request (the access key of the SigV4 Authorization header or
 * a presigned URL's X-Amz-Credential), asks IAM (iam-policy.ts) with that principal's policies as moto holds them
 * (what CloudFormation deployed from the synthesized template), answers a denial as the service would, and forwards
 * what is allowed to moto. It also runs what moto cannot: Lambda invocations (lambda-runtime.ts), Step Functions
 * executions of Lambda tasks (step-functions.ts), STS sessions with tags, and CloudFormation's service-role checks
 * (cloudformation-role.ts). Every decision is recorded in `decisions`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { evaluate, denialMessage, type AuthorizationRequest, type NamedPolicy, wildcardMatches } from './iam-policy';
import {
  authorizationsFor,
  describeRequest,
  TWIN_ACCOUNT,
  TWIN_REGION,
  type DescribedRequest,
  type RawRequest,
  type ResourceLookup,
} from './aws-requests';
import { firstCreateFailure, type ClusterTemplate, type CreateFailure } from './cloudformation-role';
import { ClusterStack } from './cluster-stack';
import type { SecurityGroupRule } from './security-groups';
import { attachToVpc, type VpcAttachment } from './vpc-function';
import { SsmCommands } from './ssm-commands';
import type { StackTemplate } from './cfn-template';
import type { FunctionConfiguration, LambdaRuntime } from './lambda-runtime';
import { STANDARD_VCPU_QUOTA } from '../../core/cloud/vcpu-quota';
import { CloudWatchJson } from './cloudwatch-json';
import { ADMIN_ACCESS_KEY, escapeXml, MotoAdmin, xmlValues } from './moto-admin';
import { LocalExecutions } from './step-functions';

export interface Session {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  readonly roleArn: string;
  /** arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION */
  readonly principalArn: string;
  readonly tags: Readonly<Record<string, string>>;
}

export interface Decision {
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  readonly allowed: boolean;
  readonly message?: string;
}

/**
 * A stack whose creation the twin decided itself (the service role was refused): what DescribeStacks and
 * DescribeStackEvents show.
 */
interface StackOverlay {
  readonly failure: CreateFailure;
  readonly at: Date;
}

export interface GatewayOptions {
  readonly moto: string;
  readonly runtime: LambdaRuntime;
  /** Code locations of the deployed functions, by function name (the stack's template says where each one's zip is). */
  readonly functionCode: ReadonlyMap<string, { bucket: string; key: string }>;
  /**
   * The DefinitionSubstitutions of each state machine, resolved, by ARN: CloudFormation replaces `${key}` in the
   * definition with them (AWS::StepFunctions::StateMachine, DefinitionSubstitutions); moto 5.2.5 stores the definition
   * without replacing them.
   */
  readonly definitionSubstitutions: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /**
   * Cluster stacks are created by the twin's own CloudFormation (cluster-stack.ts) in simulated instances on hubs
   * 10.91.X.0/24 from this third octet on; without it a cluster CreateStack is refused by name.
   */
  readonly clusterSubnets?: number;
  /** ClusterStackOptions.blockedBootSeconds of every cluster stack. */
  readonly blockedBootSeconds?: number;
  /**
   * The account's applied quota of On-Demand Standard vCPUs (Service Quotas ec2 L-1216C47A), which moto does not
   * serve. @default 1152
   */
  readonly standardVcpuQuota?: number;
  /**
   * The rules of the deployed stack's security groups `groupIds` (a VPC-attached function's), in their template's
   * terms.
   */
  readonly securityGroupRules?: (groupIds: readonly string[]) => SecurityGroupRule[];
  /**
   * Where a function runs when no AWS cluster stack is live (the Azure twin: a network namespace that reaches the Azure
   * endpoints and resource groups as the function's place in AWS would, azure/function-network.ts).
   */
  readonly placeFunction?: (config: FunctionConfiguration) => Promise<FunctionPlacement | undefined>;
  readonly log?: (line: string) => void;
}

/** A function's process placed in a network of its own (see GatewayOptions.placeFunction). */
export interface FunctionPlacement {
  readonly prefix: readonly string[];
  /** Variables the place adds to the process (e.g. the trust of the Azure twin's CA). */
  readonly environment?: Readonly<Record<string, string>>;
  /** What the packet filters dropped, named. */
  dropped(): string[];
  release(): void;
}

/**
 * The calls about the simulated instances themselves, which the hub's fake answers once the gateway has allowed them:
 * moto knows nothing of the simulated instances and groups.
 */
const ANSWERED_IN_HUB = new Set([
  'autoscaling:DescribeAutoScalingInstances',
  'autoscaling:DescribeAutoScalingGroups',
  'ec2:DescribeInstances',
  'cloudformation:SignalResource',
]);

const roleNameOf = (roleArn: string) => roleArn.split('/').pop()!;

/** The error code of a cluster CreateStack the twin cannot carry out yet (a twin limit, never a product failure). */
export const TWIN_CANNOT_PROVISION = 'TwinCannotProvisionClusterStack';

export class AwsGateway {
  readonly decisions: Decision[] = [];
  readonly executions: LocalExecutions;
  private readonly sessions = new Map<string, Session>();
  private readonly policies = new Map<string, Promise<NamedPolicy[]>>();
  private readonly stackOverlays = new Map<string, StackOverlay>();
  /** Cluster stacks the twin's CloudFormation created, by stack name. */
  readonly clusterStacks = new Map<string, ClusterStack>();
  private readonly ssmCommands = new SsmCommands();
  private unixServer?: Server;
  private unixPath?: string;
  private readonly admin: MotoAdmin;
  private readonly cloudWatchJson: CloudWatchJson;
  private server?: Server;
  endpoint = '';

  constructor(private readonly options: GatewayOptions) {
    this.admin = new MotoAdmin(options.moto);
    this.cloudWatchJson = new CloudWatchJson(options.moto);
    this.executions = new LocalExecutions({
      onTask: (execution, state) => options.log?.(`[twin] ${execution}: ${state}`),
    });
  }

  async start(): Promise<string> {
    this.server = createServer(
      (req, res) =>
        void this.handle(req, res).catch((error: Error) =>
          this.options.log?.(`[twin] request abandoned: ${error.message}`),
        ),
    );
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.endpoint;
  }

  /** Also listens on a Unix socket (the hubs' endpoints reach the gateway there from their network namespaces). */
  async listenUnix(path: string): Promise<void> {
    this.unixServer = createServer(
      (req, res) =>
        void this.handle(req, res).catch((error: Error) =>
          this.options.log?.(`[twin] request abandoned: ${error.message}`),
        ),
    );
    await new Promise<void>((resolve) => this.unixServer!.listen(path, resolve));
    this.unixPath = path;
  }

  async stop(): Promise<void> {
    for (const arn of this.executions.executions.keys()) this.executions.stop(arn);
    for (const stack of this.clusterStacks.values()) if (!stack.deleted) await stack.delete();
    await new Promise<void>((resolve) => (this.unixServer ? this.unixServer.close(() => resolve()) : resolve()));
    this.unixServer?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
    this.cloudWatchJson.destroy();
  }

  /** Credentials for a role, as STS AssumeRole or the Lambda and EC2 credential providers hand them out. */
  session(roleArn: string, sessionName: string, tags: Record<string, string> = {}): Session {
    const accessKeyId = `ASIATWIN${randomBytes(6).toString('hex').toUpperCase()}`;
    const session: Session = {
      accessKeyId,
      secretAccessKey: randomBytes(20).toString('hex'),
      sessionToken: randomBytes(24).toString('base64'),
      roleArn,
      principalArn: `arn:aws:sts::${TWIN_ACCOUNT}:assumed-role/${roleNameOf(roleArn)}/${sessionName}`,
      tags,
    };
    this.sessions.set(accessKeyId, session);
    return session;
  }

  private rolePolicies(roleArn: string): Promise<NamedPolicy[]> {
    const name = roleNameOf(roleArn);
    let policies = this.policies.get(name);
    if (!policies) {
      policies = this.admin.rolePolicies(name);
      this.policies.set(name, policies);
    }
    return policies;
  }

  /** Forgets cached policies (after a test changes a role in moto). */
  forgetPolicies(): void {
    this.policies.clear();
  }

  private async authorize(
    session: Session,
    request: AuthorizationRequest,
  ): Promise<{ allowed: boolean; reason?: string; message?: string }> {
    const context = {
      ...Object.fromEntries(Object.entries(session.tags).map(([key, value]) => [`aws:PrincipalTag/${key}`, value])),
      'aws:PrincipalArn': session.roleArn,
      ...(request.context ?? {}),
    };
    const decision = evaluate(await this.rolePolicies(session.roleArn), { ...request, context });
    const message = decision.allowed ? undefined : denialMessage(session.principalArn, request, decision);
    this.decisions.push({
      principal: session.principalArn,
      action: request.action,
      resource: request.resource,
      allowed: decision.allowed,
      ...(message ? { message } : {}),
    });
    if (!decision.allowed) this.options.log?.(`[twin] DENIED ${message}`);
    return decision.allowed ? { allowed: true } : { allowed: false, reason: decision.reason, message: message! };
  }

  /**
   * The simulated instances with these ids, each with its cluster stack: of live stacks, or also of deleted ones (the
   * instance-tags lookup). One search for the tags lookup, SendCommand's targets and DescribeInstanceInformation.
   */
  private simulatedInstances(ids: readonly string[], options: { deletedStacks?: boolean } = {}) {
    return [...this.clusterStacks.values()]
      .filter((stack) => options.deletedStacks || !stack.deleted)
      .flatMap((stack) =>
        stack.instances
          .filter((instance) => ids.includes(instance.instanceId))
          .map((instance) => ({ stack, instance })),
      );
  }

  private readonly lookup: ResourceLookup = {
    instanceTags: async (instanceId) => {
      // A terminated instance keeps its tags in DescribeInstances for a while: deleted stacks count here.
      const [simulated] = this.simulatedInstances([instanceId], { deletedStacks: true });
      if (simulated) return { ...simulated.instance.tags };
      const xml = await this.admin.query('ec2', 'DescribeInstances', { 'InstanceId.1': instanceId }, '2016-11-15');
      const tagSet = /<tagSet>([\s\S]*?)<\/tagSet>/.exec(xml)?.[1] ?? '';
      const keys = xmlValues(tagSet, 'key');
      const values = xmlValues(tagSet, 'value');
      return Object.fromEntries(keys.map((key, index) => [key, values[index] ?? '']));
    },
    secret: async (secretId) => {
      try {
        const described = await this.admin.json<{ ARN: string; Tags?: { Key: string; Value: string }[] }>(
          'secretsmanager',
          'secretsmanager.DescribeSecret',
          { SecretId: secretId },
        );
        return {
          arn: described.ARN,
          tags: Object.fromEntries((described.Tags ?? []).map((tag) => [tag.Key, tag.Value])),
        };
      } catch {
        return undefined;
      }
    },
    stack: async (stackName) => {
      try {
        const xml = await this.admin.query('cloudformation', 'DescribeStacks', { StackName: stackName }, '2010-05-15');
        const arn = xmlValues(xml, 'StackId')[0];
        const roleArn = xmlValues(xml, 'RoleARN')[0];
        return arn ? { arn, ...(roleArn ? { roleArn } : {}) } : undefined;
      } catch {
        return undefined;
      }
    },
  };

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://twin');
    // A gzip-compressed body, as botocore sends PutMetricData (its requestCompression trait; "You can send a payload
    // compressed by gzip", API_PutMetricData.html), is read and passed on uncompressed.
    const { 'content-encoding': encoding, ...plainHeaders } = req.headers as Record<string, string>;
    let raw: RawRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: encoding === 'gzip' ? plainHeaders : (req.headers as Record<string, string>),
      body: encoding === 'gzip' ? gunzipSync(Buffer.concat(chunks)) : Buffer.concat(chunks),
    };
    // A virtual-hosted–style S3 request (bucket.s3.amazonaws.com/key, as the AWS CLI on an instance sends it) in the
    // path style the twin reads and moto answers (/bucket/key).
    const virtualBucket = /^([a-z0-9][a-z0-9.-]*)\.s3(?:\.[a-z0-9-]+)?\.amazonaws\.com(?::\d+)?$/.exec(
      req.headers.host ?? '',
    )?.[1];
    if (virtualBucket)
      raw = { ...raw, path: `/${virtualBucket}${raw.path}`, headers: { ...raw.headers, host: 's3.amazonaws.com' } };
    try {
      const described = describeRequest(raw);
      if (!described || described.accessKeyId === ADMIN_ACCESS_KEY)
        return await this.admitted(described, raw, res, undefined);
      const session = this.sessions.get(described.accessKeyId ?? '');
      if (!session)
        return this.refuse(
          res,
          described,
          'InvalidClientTokenId',
          `The security token included in the request is invalid (access key ${described.accessKeyId ?? 'none'})`,
          403,
        );
      for (const needed of await authorizationsFor(described, raw, this.lookup)) {
        const decision = await this.authorize(session, needed);
        if (!decision.allowed) return this.refuse(res, described, 'AccessDenied', decision.message!, 403);
      }
      if (req.headers['x-twin-caller-ip'] && ANSWERED_IN_HUB.has(`${described.service}:${described.operation}`)) {
        return void res.writeHead(200, { 'x-twin-answer': 'local', 'content-length': '0' }).end();
      }
      await this.admitted(described, raw, res, session);
    } catch (error) {
      this.options.log?.(`[twin] gateway error: ${(error as Error).stack ?? String(error)}`);
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`twin gateway: ${(error as Error).message}`);
    }
  }

  /** An allowed request: what the twin runs itself, or moto's answer (patched where the twin decided the state). */
  private async admitted(
    described: DescribedRequest | undefined,
    raw: RawRequest,
    res: ServerResponse,
    session: Session | undefined,
  ): Promise<void> {
    if (described?.service === 'lambda' && described.operation === 'Invoke')
      return this.invokeFunction(described, raw, res);
    if (described?.service === 'sts' && described.operation === 'AssumeRole' && session)
      return this.assumeRole(described, res, session);
    if (described?.service === 'sts' && described.operation === 'GetCallerIdentity' && session) {
      return this.xml(
        res,
        '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
          `<Arn>${session.principalArn}</Arn><UserId>AROATWIN:${session.principalArn.split('/').pop()}</UserId>` +
          `<Account>${TWIN_ACCOUNT}</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`,
      );
    }
    if (
      described?.service === 'cloudformation' &&
      described.operation === 'CreateStack' &&
      typeof described.params['RoleARN'] === 'string'
    ) {
      const failure = await this.serviceRoleFailure(described);
      if (failure) {
        this.stackOverlays.set(String(described.params['StackName']), { failure, at: new Date() });
        this.options.log?.(
          `[twin] stack ${String(described.params['StackName'])}: ` +
            `${failure.logicalId} CREATE_FAILED: ${failure.reason}`,
        );
        // Nothing of the template is created: moto gets an empty stack of the same name, tags and role.
        const params = {
          ...described.params,
          TemplateBody: JSON.stringify({
            Resources: { RolledBack: { Type: 'AWS::CloudFormation::WaitConditionHandle' } },
          }),
        } as Record<string, string>;
        delete params['TemplateURL'];
        return this.forward({ ...raw, body: Buffer.from(new URLSearchParams(params).toString()) }, res);
      }
      if (this.options.clusterSubnets !== undefined) return this.createClusterStack(described, raw, res);
      // Without hubs for simulated instances, refused by name, so that no run passes the twin on a cluster that was
      // never made.
      return this.refuse(
        res,
        described,
        TWIN_CANNOT_PROVISION,
        `the twin checked that ${roleNameOf(String(described.params['RoleARN']))} ` +
          `may create every resource of ${String(described.params['StackName'])}, but ` +
          'does not provision cluster stacks yet (simulated VMs for its instances)',
        400,
      );
    }
    if (described?.service === 'ssm' && described.operation === 'SendCommand') {
      const ids = (described.params['InstanceIds'] as string[] | undefined) ?? [];
      const targets = this.simulatedInstances(ids);
      // Commands to the simulated instances run on them (moto would answer a command to an instance it does not know
      // with a "success" that ran nothing); an id that is none of them is SSM's InvalidInstanceId.
      if (targets.length > 0) {
        if (targets.length < ids.length)
          return this.refuse(
            res,
            described,
            'InvalidInstanceId',
            'Instances ' +
              `[${ids.filter((id) => !targets.some((target) => target.instance.instanceId === id)).join(', ')}] ` +
              `not in a valid state for account ${TWIN_ACCOUNT}`,
            400,
          );
        this.options.log?.(`[twin] SSM ${String(described.params['DocumentName'])} on ${ids.join(', ')}`);
        return this.sendJson(res, 200, { Command: this.ssmCommands.send(described.params, targets) });
      }
    }
    if (described?.service === 'ec2' && described.operation === 'DescribeInstances') {
      const answer = this.describeSimulatedInstances(described.params);
      if (answer) return this.xml(res, answer);
    }
    if (described?.service === 'ssm' && described.operation === 'GetCommandInvocation') {
      const answer = this.ssmCommands.invocation(
        String(described.params['CommandId']),
        String(described.params['InstanceId']),
      );
      if (answer) return this.sendJson(res, 200, answer);
    }
    if (described?.service === 'ssm' && described.operation === 'DescribeInstanceInformation') {
      const simulated = await this.simulatedInstanceInformation(described);
      if (simulated) return this.sendJson(res, 200, { InstanceInformationList: simulated });
    }
    // Service Quotas: moto 5.2.5 serves VPC quotas only (moto/servicequotas/models.py); the twin answers the EC2
    // On-Demand Standard vCPU quota the CLI reads before a run (bin/vcpu-quota-check.ts) in GetServiceQuota's shape.
    if (
      described?.service === 'servicequotas' &&
      described.operation === 'GetServiceQuota' &&
      described.params['ServiceCode'] === STANDARD_VCPU_QUOTA.serviceCode &&
      described.params['QuotaCode'] === STANDARD_VCPU_QUOTA.quotaCode
    ) {
      return this.sendJson(res, 200, {
        Quota: {
          ServiceCode: STANDARD_VCPU_QUOTA.serviceCode,
          QuotaCode: STANDARD_VCPU_QUOTA.quotaCode,
          QuotaName: STANDARD_VCPU_QUOTA.name,
          Value: this.options.standardVcpuQuota ?? 1152,
          Unit: 'None',
          Adjustable: true,
          GlobalQuota: false,
        },
      });
    }
    // The functions' CloudWatch client speaks JSON 1.0, which moto does not serve (cloudwatch-json.ts).
    if (described?.service === 'monitoring' && described.protocol === 'json') {
      const answer = await this.cloudWatchJson.answer(described.operation, described.params);
      return void res.writeHead(answer.status, answer.headers).end(answer.body);
    }
    if (described?.service === 'states') {
      const handled = await this.stepFunctions(described, raw, res);
      if (handled) return;
    }
    const clusterStack =
      described?.service === 'cloudformation'
        ? this.clusterStacks.get(String(described.params['StackName'] ?? ''))
        : undefined;
    if (clusterStack && described && ['DescribeStacks', 'DescribeStackEvents'].includes(described.operation))
      return this.describeClusterStack(described, raw, res, clusterStack);
    if (clusterStack && described?.operation === 'DeleteStack') {
      await clusterStack.delete();
      return this.forward(raw, res);
    }
    if (
      described?.service === 'cloudformation' &&
      ['DescribeStacks', 'DescribeStackEvents'].includes(described.operation)
    ) {
      const overlay = this.stackOverlays.get(String(described.params['StackName'] ?? ''));
      if (overlay) return this.overlayStack(described, raw, res, overlay);
    }
    return this.forward(raw, res);
  }

  /**
   * CreateStack of a cluster template whose service role may create it: moto holds a placeholder stack of the same
   * name, tags, parameters' absence and role (for the stack's ARN and DeleteStack); the twin's CloudFormation creates
   * the resources (cluster-stack.ts).
   */
  private async createClusterStack(described: DescribedRequest, raw: RawRequest, res: ServerResponse): Promise<void> {
    const stackName = String(described.params['StackName']);
    const url = described.params['TemplateURL'] as string | undefined;
    const template = JSON.parse(
      url ? await this.s3Object(url) : String(described.params['TemplateBody']),
    ) as StackTemplate;
    const parameters: Record<string, string> = {};
    for (const key of Object.keys(described.params).filter((name) =>
      /^Parameters\.member\.\d+\.ParameterKey$/.test(name),
    )) {
      parameters[String(described.params[key])] = String(
        described.params[key.replace(/ParameterKey$/, 'ParameterValue')] ?? '',
      );
    }
    const tags: Record<string, string> = {};
    for (const key of Object.keys(described.params).filter((name) => /^Tags\.member\.\d+\.Key$/.test(name)))
      tags[String(described.params[key])] = String(described.params[key.replace(/Key$/, 'Value')] ?? '');
    const placeholder = Object.fromEntries(
      Object.entries(described.params).filter(([key]) => !key.startsWith('Parameters.') && key !== 'TemplateURL'),
    ) as Record<string, string>;
    placeholder['TemplateBody'] = JSON.stringify({
      Resources: { TwinClusterStack: { Type: 'AWS::CloudFormation::WaitConditionHandle' } },
    });
    const answer = await this.upstream({ ...raw, body: Buffer.from(new URLSearchParams(placeholder).toString()) });
    const stackId = xmlValues(answer.body.toString('utf8'), 'StackId')[0];
    if (answer.status !== 200 || !stackId) return this.relay(answer, res);
    const subnet = this.options.clusterSubnets! + this.clusterStacks.size;
    const stack = new ClusterStack(
      { stackName, stackId, template, parameters, tags },
      {
        admin: this.admin,
        session: (roleArn, name) => this.session(roleArn, name),
        gatewaySocket: this.unixPath!,
        subnet,
        ...(this.options.blockedBootSeconds === undefined
          ? {}
          : { blockedBootSeconds: this.options.blockedBootSeconds }),
        ...(this.options.log ? { log: this.options.log } : {}),
      },
    );
    this.clusterStacks.set(stackName, stack);
    stack.start();
    return this.relay(answer, res);
  }

  /**
   * DescribeInstances filtered by a cluster stack's aws:cloudformation:stack-name tag (the fault step's and the
   * ingest's
   * node lookup): the stack's simulated instances that match every filter (tag:KEY, instance-state-name, instance-id),
   * in EC2's query-protocol shape (EC2 API Reference, DescribeInstances). Undefined for any other question (moto's).
   */
  private describeSimulatedInstances(params: Record<string, unknown>): string | undefined {
    const filters = new Map<string, string[]>();
    for (const key of Object.keys(params).filter((name) => /^Filter\.\d+\.Name$/.test(name))) {
      const prefix = key.replace(/Name$/, 'Value.');
      filters.set(
        String(params[key]),
        Object.keys(params)
          .filter((name) => name.startsWith(prefix))
          .map((name) => String(params[name])),
      );
    }
    const stack = this.clusterStacks.get(filters.get('tag:aws:cloudformation:stack-name')?.[0] ?? '');
    if (!stack) return undefined;
    const matches = stack.instances.filter((instance) =>
      [...filters].every(([name, values]) => {
        if (name.startsWith('tag:')) return values.includes(instance.tags[name.slice(4)] ?? '');
        if (name === 'instance-state-name') return values.includes(stack.deleted ? 'terminated' : 'running');
        if (name === 'instance-id') return values.includes(instance.instanceId);
        throw new Error(`the twin does not filter simulated instances by ${name}`);
      }),
    );
    const items = matches
      .map((instance) => {
        const tags = Object.entries(instance.tags)
          .map(([key, value]) => `<item><key>${escapeXml(key)}</key><value>${escapeXml(value)}</value></item>`)
          .join('');
        return (
          `<item><reservationId>r-${instance.instanceId.slice(2)}</reservationId>` +
          `<ownerId>${TWIN_ACCOUNT}</ownerId><instancesSet><item>` +
          `<instanceId>${instance.instanceId}</instanceId><instanceState><code>16</code>` +
          `<name>running</name></instanceState><privateIpAddress>${instance.vm.ip}</privateIpAddress>` +
          `<launchTime>${instance.launchedAt.toISOString()}</launchTime><tagSet>${tags}</tagSet>` +
          '</item></instancesSet></item>'
        );
      })
      .join('');
    return (
      '<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">' +
      `<requestId>${randomUUID()}</requestId>` +
      `<reservationSet>${items}</reservationSet></DescribeInstancesResponse>`
    );
  }

  /**
   * DescribeInstanceInformation about simulated instances: the SSM agent the AMI ships registers the instance (Online)
   * when its instance profile lets it call ssm:UpdateInstanceInformation (AmazonSSMManagedInstanceCore grants it;
   * Systems Manager User Guide, "Configure instance permissions required for Systems Manager"), else it stays absent.
   */
  private async simulatedInstanceInformation(described: DescribedRequest): Promise<unknown[] | undefined> {
    const filters = (described.params['Filters'] as { Key: string; Values: string[] }[] | undefined) ?? [];
    const ids = filters.filter((filter) => filter.Key === 'InstanceIds').flatMap((filter) => filter.Values);
    const instances = this.simulatedInstances(ids).map(({ instance }) => instance);
    if (instances.length === 0) return undefined;
    const online: unknown[] = [];
    for (const instance of instances) {
      const session = this.sessions.get(instance.accessKeyId)!;
      const decision = await this.authorize(session, {
        action: 'ssm:UpdateInstanceInformation',
        resource: `arn:aws:ec2:${TWIN_REGION}:${TWIN_ACCOUNT}:instance/${instance.instanceId}`,
      });
      if (decision.allowed)
        online.push({
          InstanceId: instance.instanceId,
          PingStatus: 'Online',
          PlatformType: 'Linux',
          PlatformName: 'Amazon Linux',
          IPAddress: instance.vm.ip,
          ResourceType: 'EC2Instance',
          AgentVersion: '3.3.0.0',
        });
    }
    return online;
  }

  private describeClusterStack(
    described: DescribedRequest,
    raw: RawRequest,
    res: ServerResponse,
    stack: ClusterStack,
  ): Promise<void> | void {
    const { status, reason } = stack.status();
    if (described.operation === 'DescribeStacks') {
      const outputs = Object.entries(stack.outputs())
        .map(
          ([key, value]) =>
            `<member><OutputKey>${escapeXml(key)}</OutputKey><OutputValue>${escapeXml(value)}</OutputValue></member>`,
        )
        .join('');
      return this.forward(raw, res, (xml) =>
        xml
          .replace(
            /<StackStatus>[^<]*<\/StackStatus>/,
            `<StackStatus>${status}</StackStatus>` +
              `${reason ? `<StackStatusReason>${escapeXml(reason)}</StackStatusReason>` : ''}`,
          )
          .replace(/<Outputs>[\s\S]*?<\/Outputs>|<Outputs\/>/, '')
          .replace('</StackStatus>', `</StackStatus><Outputs>${outputs}</Outputs>`),
      );
    }
    const name = stack.request.stackName;
    const events = [...stack.events]
      .reverse()
      .map(
        (event) =>
          `<member><StackName>${escapeXml(name)}</StackName>` +
          `<StackId>${escapeXml(stack.request.stackId)}</StackId><EventId>${randomUUID()}</EventId>` +
          `<LogicalResourceId>${escapeXml(event.logicalId)}</LogicalResourceId>` +
          `<ResourceType>${event.type}</ResourceType>` +
          `${event.physicalId ? `<PhysicalResourceId>${escapeXml(event.physicalId)}</PhysicalResourceId>` : ''}` +
          `<ResourceStatus>${event.status}</ResourceStatus>` +
          `${event.reason ? `<ResourceStatusReason>${escapeXml(event.reason)}</ResourceStatusReason>` : ''}` +
          `<Timestamp>${event.at.toISOString()}</Timestamp>` +
          '</member>',
      );
    return this.xml(
      res,
      '<DescribeStackEventsResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">' +
        `<DescribeStackEventsResult><StackEvents>${events.join('')}</StackEvents>` +
        `</DescribeStackEventsResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId>` +
        '</ResponseMetadata></DescribeStackEventsResponse>',
    );
  }

  private relay(
    answer: { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer },
    res: ServerResponse,
  ): void {
    const { 'content-length': _length, 'transfer-encoding': _encoding, ...headers } = answer.headers;
    res.writeHead(answer.status, { ...headers, 'content-length': answer.body.length }).end(answer.body);
  }

  private async serviceRoleFailure(described: DescribedRequest): Promise<CreateFailure | undefined> {
    const roleArn = String(described.params['RoleARN']);
    const stackName = String(described.params['StackName']);
    const url = described.params['TemplateURL'] as string | undefined;
    const body = url ? await this.s3Object(url) : String(described.params['TemplateBody']);
    const template = JSON.parse(body) as ClusterTemplate;
    const policies = await this.rolePolicies(roleArn);
    const principal = `arn:aws:sts::${TWIN_ACCOUNT}:assumed-role/${roleNameOf(roleArn)}/AWSCloudFormation`;
    return firstCreateFailure(template, stackName, roleArn, (request) => {
      const decision = evaluate(policies, request);
      this.decisions.push({ principal, action: request.action, resource: request.resource, allowed: decision.allowed });
      return decision.allowed ? { allowed: true } : { allowed: false, reason: decision.reason };
    });
  }

  /** An object of the twin's S3 by https URL (https://bucket.s3.region.amazonaws.com/key, or path style). */
  async s3Object(url: string): Promise<string> {
    const parsed = new URL(url);
    const virtual = /^([^.]+)\.s3[.-]/.exec(parsed.hostname);
    const path = virtual ? `/${virtual[1]}${parsed.pathname}` : parsed.pathname;
    const response = await this.admin.get('s3', path);
    if (!response.ok) throw new Error(`the twin's S3 has no ${url} (${response.status})`);
    return response.text();
  }

  private overlayStack(
    described: DescribedRequest,
    raw: RawRequest,
    res: ServerResponse,
    overlay: StackOverlay,
  ): Promise<void> | void {
    const name = String(described.params['StackName']);
    if (described.operation === 'DescribeStacks') {
      return this.forward(raw, res, (xml) =>
        xml.replace(
          /<StackStatus>[^<]*<\/StackStatus>/,
          '<StackStatus>ROLLBACK_COMPLETE</StackStatus><StackStatusReason>The following resource(s) failed ' +
            `to create: [${overlay.failure.logicalId}]. Rollback requested by user.</StackStatusReason>`,
        ),
      );
    }
    const event = (status: string, logicalId: string, type: string, reason?: string) =>
      `<member><StackName>${escapeXml(name)}</StackName><EventId>${randomUUID()}</EventId>` +
      `<LogicalResourceId>${logicalId}</LogicalResourceId><ResourceType>${type}</ResourceType>` +
      `<ResourceStatus>${status}</ResourceStatus>` +
      `${reason ? `<ResourceStatusReason>${escapeXml(reason)}</ResourceStatusReason>` : ''}` +
      `<Timestamp>${overlay.at.toISOString()}</Timestamp>` +
      '</member>';
    // Newest first, as DescribeStackEvents answers.
    const events = [
      event('ROLLBACK_COMPLETE', name, 'AWS::CloudFormation::Stack'),
      event('CREATE_FAILED', overlay.failure.logicalId, overlay.failure.type, overlay.failure.reason),
      event('CREATE_IN_PROGRESS', name, 'AWS::CloudFormation::Stack', 'User Initiated'),
    ];
    return this.xml(
      res,
      '<DescribeStackEventsResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">' +
        `<DescribeStackEventsResult><StackEvents>${events.join('')}</StackEvents>` +
        `</DescribeStackEventsResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId>` +
        '</ResponseMetadata></DescribeStackEventsResponse>',
    );
  }

  private async functionConfiguration(name: string): Promise<FunctionConfiguration> {
    const functionName = name.startsWith('arn:') ? name.split(':')[6]! : name;
    const response = await this.admin.get('lambda', `/2015-03-31/functions/${encodeURIComponent(functionName)}`);
    if (!response.ok) throw new Error(`Function not found: ${name}`);
    const { Configuration: c } = (await response.json()) as {
      Configuration: {
        FunctionName: string;
        FunctionArn: string;
        Handler: string;
        Timeout: number;
        MemorySize: number;
        Role: string;
        Environment?: { Variables?: Record<string, string> };
        VpcConfig?: { SubnetIds?: string[]; SecurityGroupIds?: string[] };
      };
    };
    const code = this.options.functionCode.get(c.FunctionName);
    if (!code) throw new Error(`the twin does not know where the code of ${c.FunctionName} is`);
    return {
      functionName: c.FunctionName,
      functionArn: c.FunctionArn,
      handler: c.Handler,
      timeoutSeconds: c.Timeout,
      memoryMb: c.MemorySize,
      roleArn: c.Role,
      environment: c.Environment?.Variables ?? {},
      subnetIds: c.VpcConfig?.SubnetIds ?? [],
      securityGroupIds: c.VpcConfig?.SecurityGroupIds ?? [],
      code,
    };
  }

  /**
   * A VPC-attached function's place in the live cluster stack's subnets (vpc-function.ts); none when no cluster stack
   * runs (nothing in the VPC to reach: the function then runs beside the gateway).
   */
  private vpcAttachment(config: FunctionConfiguration): VpcAttachment | undefined {
    if (config.subnetIds.length === 0 || !this.options.securityGroupRules || !this.unixPath) return undefined;
    const stack = [...this.clusterStacks.values()]
      .reverse()
      .find((candidate) => !candidate.deleted && candidate.simulatedHub);
    if (!stack) return undefined;
    const rules = this.options.securityGroupRules(config.securityGroupIds);
    const attachment = attachToVpc(stack, config.securityGroupIds, rules, {
      socket: this.unixPath,
      port: Number(new URL(this.endpoint).port),
    });
    this.options.log?.(
      `[twin] ${config.functionName} runs in the VPC at ${attachment.ip} (security groups ` +
        `${config.securityGroupIds.join(', ')})${
          attachment.apisReachable ? '' : ': no egress rule allows HTTPS out, so its AWS API calls cannot leave the VPC'
        }`,
    );
    return attachment;
  }

  /**
   * Runs a function as Lambda would and answers as Invoke does (errors: 200 with X-Amz-Function-Error, Lambda API
   * reference, Invoke).
   */
  async runFunction(
    name: string,
    event: unknown,
  ): Promise<{ ok: true; payload: unknown } | { ok: false; errorType: string; errorMessage: string }> {
    const config = await this.functionConfiguration(name);
    const session = this.session(config.roleArn, config.functionName);
    const attachment = this.vpcAttachment(config);
    const placement = attachment ? undefined : await this.options.placeFunction?.(config);
    const invocation = await this.options.runtime.invoke(
      config,
      event,
      session,
      this.endpoint,
      attachment?.prefix ?? placement?.prefix,
      placement?.environment,
    );
    // A VPC function that failed: what the packet filters dropped on its way (the hop it could not make).
    if (attachment && !invocation.result.ok) {
      const own = attachment.dropped();
      this.options.log?.(
        `[twin] ${config.functionName}: ` +
          `${own.length > 0 ? `The twin saw: ${own.join('; ')}` : await attachment.stack.diagnosis()}`,
      );
    }
    if (placement && !invocation.result.ok) {
      const dropped = placement.dropped();
      if (dropped.length > 0) this.options.log?.(`[twin] ${config.functionName}: The twin saw: ${dropped.join('; ')}`);
    }
    attachment?.release();
    placement?.release();
    const tail = invocation.logs.trim().split('\n').slice(-15).join('\n');
    if (!invocation.result.ok)
      this.options.log?.(
        `[twin] ${config.functionName} failed: ${invocation.result.errorType}: ` +
          `${invocation.result.errorMessage}${tail ? `\n${tail}` : ''}`,
      );
    return invocation.result;
  }

  private async invokeFunction(described: DescribedRequest, raw: RawRequest, res: ServerResponse): Promise<void> {
    const event = raw.body.length > 0 ? (JSON.parse(raw.body.toString('utf8')) as unknown) : {};
    const result = await this.runFunction(String(described.params['FunctionName']), event);
    if (result.ok)
      return void res
        .writeHead(200, { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST' })
        .end(JSON.stringify(result.payload));
    res
      .writeHead(200, {
        'content-type': 'application/json',
        'x-amz-function-error': 'Unhandled',
        'x-amz-executed-version': '$LATEST',
      })
      .end(JSON.stringify({ errorType: result.errorType, errorMessage: result.errorMessage, trace: [] }));
  }

  private assumeRole(described: DescribedRequest, res: ServerResponse, caller: Session): Promise<void> | void {
    const roleArn = String(described.params['RoleArn']);
    const tags = Object.fromEntries(
      Object.keys(described.params)
        .filter((key) => /^Tags\.member\.\d+\.Key$/.test(key))
        .map((key) => [String(described.params[key]), String(described.params[key.replace(/Key$/, 'Value')])]),
    );
    return this.admin.roleTrustPolicy(roleNameOf(roleArn)).then((trust) => {
      // The role's trust policy must name the caller (IAM User Guide, "Granting a user permissions to switch roles":
      // both the caller's policy and the role's trust policy must allow it).
      const trusted = (
        [] as {
          Effect: string;
          Principal?: { AWS?: string | string[] };
          Action?: string | string[];
          Condition?: never;
        }[]
      )
        .concat((trust as unknown as { Statement: never }).Statement)
        .some(
          (statement) =>
            statement.Effect === 'Allow' &&
            ([] as string[])
              .concat(statement.Principal?.AWS ?? [])
              .some((principal) => principal === caller.roleArn || wildcardMatches(principal, caller.roleArn)),
        );
      if (!trusted)
        return this.refuse(
          res,
          described,
          'AccessDenied',
          `User: ${caller.principalArn} is not authorized to perform: sts:AssumeRole ` +
            `on resource: ${roleArn} because the role's trust policy does not name it`,
          403,
        );
      const session = this.session(roleArn, String(described.params['RoleSessionName'] ?? 'twin'), tags);
      const expiration = new Date(
        Date.now() + Number(described.params['DurationSeconds'] ?? 3600) * 1000,
      ).toISOString();
      return this.xml(
        res,
        '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>' +
          `<AccessKeyId>${session.accessKeyId}</AccessKeyId>` +
          `<SecretAccessKey>${session.secretAccessKey}</SecretAccessKey>` +
          `<SessionToken>${escapeXml(session.sessionToken)}</SessionToken><Expiration>${expiration}</Expiration>` +
          `</Credentials><AssumedRoleUser><Arn>${session.principalArn}</Arn>` +
          `<AssumedRoleId>AROATWIN:${escapeXml(String(described.params['RoleSessionName']))}</AssumedRoleId>` +
          `</AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId>` +
          '</ResponseMetadata></AssumeRoleResponse>',
      );
    });
  }

  /**
   * StartExecution runs the execution here; Describe/List/Stop answer from it. Returns false for what moto answers
   * alone.
   */
  private async stepFunctions(described: DescribedRequest, raw: RawRequest, res: ServerResponse): Promise<boolean> {
    const { operation, params } = described;
    if (operation === 'StartExecution') {
      const answer = await this.forwardJson(raw);
      if (answer.status !== 200) return (this.sendJson(res, answer.status, answer.body), true);
      const executionArn = String((answer.body as { executionArn: string }).executionArn);
      const machine = await this.admin.json<{ definition: string; roleArn: string }>(
        'states',
        'AWSStepFunctions.DescribeStateMachine',
        { stateMachineArn: params['stateMachineArn'] },
      );
      const roleSession = this.session(machine.roleArn, `twin-${executionArn.split(':').pop()}`);
      const substitutions = this.options.definitionSubstitutions.get(String(params['stateMachineArn'])) ?? {};
      const definition = machine.definition.replace(
        /\$\{([A-Za-z0-9_]+)\}/g,
        (match, key: string) => substitutions[key] ?? match,
      );
      this.executions.start(
        executionArn,
        String(params['stateMachineArn']),
        definition,
        String(params['input'] ?? '{}'),
        async (functionArn, payload) => {
          const decision = await this.authorize(roleSession, {
            action: 'lambda:InvokeFunction',
            resource: functionArn,
          });
          if (!decision.allowed)
            return { ok: false, errorType: 'Lambda.AWSLambdaException', errorMessage: decision.message! };
          return this.runFunction(functionArn, payload);
        },
      );
      this.sendJson(res, 200, answer.body);
      return true;
    }
    if (operation === 'DescribeExecution') {
      const record = this.executions.executions.get(String(params['executionArn']));
      if (!record) return false;
      const answer = await this.forwardJson(raw);
      const body = answer.body as Record<string, unknown>;
      this.sendJson(
        res,
        answer.status,
        answer.status !== 200
          ? body
          : {
              ...body,
              status: record.status,
              ...(record.stopDate ? { stopDate: record.stopDate.getTime() / 1000 } : {}),
              ...(record.output ? { output: record.output } : {}),
              ...(record.error ? { error: record.error } : {}),
              ...(record.cause ? { cause: record.cause } : {}),
            },
      );
      return true;
    }
    if (operation === 'ListExecutions') {
      const answer = await this.forwardJson(raw);
      const body = answer.body as { executions?: { executionArn: string; status: string }[] };
      for (const execution of body.executions ?? []) {
        const record = this.executions.executions.get(execution.executionArn);
        if (record) execution.status = record.status;
      }
      this.sendJson(res, answer.status, body);
      return true;
    }
    if (operation === 'StopExecution') {
      this.executions.stop(String(params['executionArn']));
      return false;
    }
    return false;
  }

  /** moto's whole answer to a request (status, headers, body). */
  private upstream(
    raw: RawRequest,
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const url = `${this.options.moto}${raw.path}${raw.query.size > 0 ? `?${raw.query.toString()}` : ''}`;
      // The whole body is here already: no Expect: 100-continue handshake with moto.
      const { expect: _expect, ...headers } = raw.headers;
      const upstream = httpRequest(
        url,
        { method: raw.method, headers: { ...headers, 'content-length': String(raw.body.length) } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 500, headers: response.headers, body: Buffer.concat(chunks) }),
          );
        },
      );
      upstream.on('error', reject);
      upstream.end(raw.body);
    });
  }

  private async forwardJson(raw: RawRequest): Promise<{ status: number; body: unknown }> {
    const { status, body } = await this.upstream(raw);
    const text = body.toString('utf8');
    return { status, body: text ? (JSON.parse(text) as unknown) : {} };
  }

  private sendJson(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(body));
  }

  private xml(res: ServerResponse, body: string): void {
    res.writeHead(200, { 'content-type': 'text/xml' }).end(body);
  }

  /** Sends the request to moto and its answer back (through `patch` for a text answer the twin amends). */
  private async forward(
    raw: RawRequest,
    res: ServerResponse,
    patch: (text: string) => string = (text) => text,
  ): Promise<void> {
    const answer = await this.upstream(raw);
    const text = patch(answer.body.toString('utf8'));
    const { 'content-length': _length, 'transfer-encoding': _encoding, ...headers } = answer.headers;
    res.writeHead(answer.status, { ...headers, 'content-length': Buffer.byteLength(text) }).end(text);
  }

  /**
   * A refusal in the service's own error shape (JSON protocols: __type; query: ErrorResponse; EC2: Response/Errors; S3:
   * Error).
   */
  private refuse(
    res: ServerResponse,
    described: DescribedRequest,
    code: string,
    message: string,
    status: number,
  ): void {
    const requestId = randomUUID();
    switch (described.protocol) {
      case 'json':
      case 'rest-json': {
        const type = code === 'AccessDenied' ? 'AccessDeniedException' : code;
        res
          .writeHead(status === 403 && described.protocol === 'json' ? 400 : status, {
            'content-type': 'application/x-amz-json-1.1',
            'x-amzn-errortype': type,
            'x-amzn-requestid': requestId,
          })
          .end(JSON.stringify({ __type: type, message, Message: message }));
        return;
      }
      case 'ec2':
        res
          .writeHead(status, { 'content-type': 'text/xml' })
          .end(
            `<Response><Errors><Error><Code>${code === 'AccessDenied' ? 'UnauthorizedOperation' : code}</Code>` +
              `<Message>${escapeXml(message)}</Message></Error></Errors><RequestID>${requestId}</RequestID>` +
              '</Response>',
          );
        return;
      case 'rest-xml':
        res
          .writeHead(status, { 'content-type': 'application/xml' })
          .end(
            `<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message>` +
              `<RequestId>${requestId}</RequestId></Error>`,
          );
        return;
      default:
        res
          .writeHead(status, { 'content-type': 'text/xml' })
          .end(
            '<ErrorResponse><Error><Type>Sender</Type>' +
              `<Code>${code}</Code><Message>${escapeXml(message)}</Message>` +
              `</Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
          );
    }
  }
}
