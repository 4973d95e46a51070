/**
 * The AWS twin: a cloud assembly deployed as `cdk deploy` would deploy it, into moto behind the IAM-enforcing gateway.
 * 1. The assembly's file and zip assets are published to the bootstrap bucket (cdk-hnb659fds-assets-ACCOUNT-REGION,
 *    the CDK's default bootstrap qualifier, https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping-env.html) as
 * cdk-assets
 *    publishes them (a zip asset's folder zipped, a file asset as is), under the object keys the assets manifest names.
 * 2. The stack template is created by moto's CloudFormation (CAPABILITY_IAM), which makes the roles, policies,
 *    functions, table, bucket, VPC and state machine with the template's own properties and substitutions.
 * 3. Each function's code location is read from the template (its Code.S3Key), so that the Lambda runtime runs the
 *    bundle that was uploaded.
 */
import {
  CloudFormationClient,
  CreateStackCommand,
  DescribeStacksCommand,
  ListStackResourcesCommand,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startMoto, type Moto } from '../cloud/moto';
import { AwsGateway, type FunctionPlacement } from './aws-gateway';
import { removeTwinTempFolder, twinTempFolder } from './temp-folders';
import type { FunctionConfiguration } from './lambda-runtime';
import { TWIN_ACCOUNT, TWIN_REGION } from './aws-requests';
import { LambdaRuntime } from './lambda-runtime';
import { ADMIN_ACCESS_KEY, MotoAdmin } from './moto-admin';
import { TemplateEvaluator, type StackTemplate } from './cfn-template';
import { securityGroupRules, type SecurityGroupRule } from './security-groups';

const BOOTSTRAP_BUCKET = `cdk-hnb659fds-assets-${TWIN_ACCOUNT}-${TWIN_REGION}`;

interface AssetsManifest {
  files: Record<
    string,
    {
      source: { path: string; packaging: 'file' | 'zip' };
      destinations: Record<string, { bucketName: string; objectKey: string }>;
    }
  >;
}

interface Template {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

/** What the twin hands to the hooks that need its insides (the Azure twin's). */
export interface TwinContext {
  readonly admin: MotoAdmin;
  /** The AWS-side clients' configuration: moto with an administrator's keys. */
  readonly adminClientConfig: {
    endpoint: string;
    region: string;
    credentials: { accessKeyId: string; secretAccessKey: string };
    forcePathStyle: boolean;
  };
  readonly gateway: { readonly socket: string; readonly port: number };
  /** The controller stack's security group rules among `groupIds` (a function's VpcConfig), once it is deployed. */
  readonly securityGroupRules: (groupIds: readonly string[]) => SecurityGroupRule[];
  /** The public IP of the NAT gateway a subnet of the controller stack routes 0.0.0.0/0 to, once it is deployed. */
  readonly natAddress: (subnetId: string) => string | undefined;
}

export interface AwsTwinOptions {
  /**
   * The cloud assembly (cdk.out) to deploy, or a function that makes it once moto runs (e.g. after creating a secret
   * whose ARN the app takes as context, as a user creates it before `cdk deploy`).
   */
  readonly cdkOut: string | ((context: TwinContext) => Promise<string>);
  /** Where a function runs when no AWS cluster stack is live (GatewayOptions.placeFunction). */
  readonly placeFunction?: (
    config: FunctionConfiguration,
    context: TwinContext,
  ) => Promise<FunctionPlacement | undefined>;
  /** The stack to deploy from it. @default RmqbenchController */
  readonly stackName?: string;
  /**
   * Creates cluster stacks in simulated instances (cluster-stack.ts) on hubs 10.91.X.0/24 from this third octet on.
   * @default undefined: a cluster CreateStack is refused by name after the service-role check
   */
  readonly clusterSubnets?: number;
  /** GatewayOptions.blockedBootSeconds. */
  readonly blockedBootSeconds?: number;
  /** GatewayOptions.standardVcpuQuota. */
  readonly standardVcpuQuota?: number;
  readonly log?: (line: string) => void;
}

export interface AwsTwin {
  readonly gateway: AwsGateway;
  readonly moto: Moto;
  /** The environment of a user's shell pointed at the twin: an administrator's keys and AWS_ENDPOINT_URL. */
  readonly env: Record<string, string>;
  readonly stackName: string;
  /** Physical ids of the deployed stack's resources by logical id. */
  readonly resources: ReadonlyMap<string, StackResourceSummary>;
  readonly clientConfig: {
    endpoint: string;
    region: string;
    credentials: { accessKeyId: string; secretAccessKey: string };
  };
  stop(): Promise<void>;
}

const NODE_22 = resolve(__dirname, '../../node_modules/.bin/node');

export async function startAwsTwin(options: AwsTwinOptions): Promise<AwsTwin> {
  const stackName = options.stackName ?? 'RmqbenchController';
  const log = options.log ?? (() => undefined);
  const workDir = twinTempFolder('rmqbench-twin-');
  const moto = await startMoto({ managedPolicies: true });
  const admin = {
    endpoint: moto.endpoint,
    region: TWIN_REGION,
    credentials: { accessKeyId: ADMIN_ACCESS_KEY, secretAccessKey: 'twin' },
    forcePathStyle: true,
  };
  const s3 = new S3Client(admin);
  const fetchCode = async (bucket: string, key: string) =>
    Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray());
  const functionCode = new Map<string, { bucket: string; key: string }>();
  const definitionSubstitutions = new Map<string, Record<string, string>>();
  let controllerRules: (groupIds: readonly string[]) => SecurityGroupRule[] = () => [];
  let natAddress: (subnetId: string) => string | undefined = () => undefined;
  let context: TwinContext | undefined;
  const placeFunction = options.placeFunction;
  const gateway = new AwsGateway({
    moto: moto.endpoint,
    runtime: new LambdaRuntime(workDir, fetchCode, NODE_22),
    functionCode,
    definitionSubstitutions,
    log,
    securityGroupRules: (groupIds) => controllerRules(groupIds),
    ...(placeFunction ? { placeFunction: async (config) => placeFunction(config, context!) } : {}),
    ...(options.clusterSubnets === undefined ? {} : { clusterSubnets: options.clusterSubnets }),
    ...(options.blockedBootSeconds === undefined ? {} : { blockedBootSeconds: options.blockedBootSeconds }),
    ...(options.standardVcpuQuota === undefined ? {} : { standardVcpuQuota: options.standardVcpuQuota }),
  });
  const stop = async () => {
    await gateway.stop();
    s3.destroy();
    await moto.stop();
    removeTwinTempFolder(workDir);
  };
  try {
    const endpoint = await gateway.start();
    await gateway.listenUnix(join(workDir, 'gateway.sock'));
    context = {
      admin: new MotoAdmin(moto.endpoint),
      adminClientConfig: admin,
      gateway: { socket: join(workDir, 'gateway.sock'), port: Number(new URL(endpoint).port) },
      securityGroupRules: (groupIds) => controllerRules(groupIds),
      natAddress: (subnetId) => natAddress(subnetId),
    };
    const cdkOut = typeof options.cdkOut === 'string' ? options.cdkOut : await options.cdkOut(context);
    log(`[twin] publishing the assets of ${cdkOut}`);
    await publishAssets(s3, cdkOut, stackName, workDir);
    // cdk bootstrap's version parameter, which every synthesized template checks (BootstrapVersion), and the
    // deploy itself.
    const ssm = new SSMClient(admin);
    await ssm.send(new PutParameterCommand({ Name: '/cdk-bootstrap/hnb659fds/version', Value: '30', Type: 'String' }));
    ssm.destroy();
    const template = JSON.parse(readFileSync(join(cdkOut, `${stackName}.template.json`), 'utf8')) as Template;
    const cfn = new CloudFormationClient(admin);
    log(`[twin] deploying ${stackName} (${Object.keys(template.Resources).length} resources) into moto`);
    await cfn.send(
      new CreateStackCommand({
        StackName: stackName,
        TemplateBody: JSON.stringify(motoCompatible(template)),
        Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM'],
      }),
    );
    const status = (await cfn.send(new DescribeStacksCommand({ StackName: stackName }))).Stacks?.[0]?.StackStatus;
    if (status !== 'CREATE_COMPLETE') throw new Error(`moto's CloudFormation left ${stackName} ${status}`);
    const resources = new Map<string, StackResourceSummary>();
    let token: string | undefined;
    do {
      const page = await cfn.send(new ListStackResourcesCommand({ StackName: stackName, NextToken: token }));
      for (const summary of page.StackResourceSummaries ?? []) resources.set(summary.LogicalResourceId!, summary);
      token = page.NextToken;
    } while (token);
    cfn.destroy();
    await attachManagedPolicies(new MotoAdmin(moto.endpoint), template, resources);
    for (const [logicalId, resource] of Object.entries(template.Resources)) {
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      const code = resource.Properties?.['Code'] as { S3Key?: string } | undefined;
      const physical = resources.get(logicalId)?.PhysicalResourceId;
      if (code?.S3Key && physical) functionCode.set(physical, { bucket: BOOTSTRAP_BUCKET, key: code.S3Key });
    }
    for (const [logicalId, resource] of Object.entries(template.Resources)) {
      const substitutions =
        resource.Type === 'AWS::StepFunctions::StateMachine'
          ? (resource.Properties?.['DefinitionSubstitutions'] as Record<string, unknown> | undefined)
          : undefined;
      const physical = resources.get(logicalId)?.PhysicalResourceId;
      if (substitutions && physical)
        definitionSubstitutions.set(
          physical,
          Object.fromEntries(
            Object.entries(substitutions).map(([key, value]) => [key, resolveValue(value, template, resources)]),
          ),
        );
    }
    controllerRules = (groupIds) => controllerSecurityGroupRules(template, resources, groupIds);
    natAddress = (subnetId) => natGatewayAddress(template, resources, subnetId);
    const env = {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: TWIN_REGION,
      AWS_DEFAULT_REGION: TWIN_REGION,
      AWS_ACCESS_KEY_ID: ADMIN_ACCESS_KEY,
      AWS_SECRET_ACCESS_KEY: 'twin',
    };
    return {
      gateway,
      moto,
      env,
      stackName,
      resources,
      clientConfig: {
        endpoint,
        region: TWIN_REGION,
        credentials: { accessKeyId: ADMIN_ACCESS_KEY, secretAccessKey: 'twin' },
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The rules of the controller stack's security groups among `groupIds` (a function's VpcConfig), evaluated with the
 * physical ids moto gave the stack's resources. Only those groups and the stand-alone rules of them are evaluated.
 */
function controllerSecurityGroupRules(
  template: Template,
  resources: ReadonlyMap<string, StackResourceSummary>,
  groupIds: readonly string[],
): SecurityGroupRule[] {
  const physical = new Map(
    [...resources].map(([logicalId, summary]) => [
      logicalId,
      { ref: summary.PhysicalResourceId!, attributes: { GroupId: summary.PhysicalResourceId! } },
    ]),
  );
  const mine = Object.entries(template.Resources).filter(
    ([logicalId, resource]) =>
      resource.Type === 'AWS::EC2::SecurityGroup' &&
      groupIds.includes(resources.get(logicalId)?.PhysicalResourceId ?? ''),
  );
  const sub: StackTemplate = { Resources: Object.fromEntries(mine) };
  const evaluator = new TemplateEvaluator(
    { ...sub, Resources: template.Resources as StackTemplate['Resources'] },
    { stackName: 'RmqbenchController', stackId: 'controller', parameters: {}, physical },
  );
  return securityGroupRules(sub, evaluator);
}

/**
 * The Elastic IP of the NAT gateway that a subnet's route table sends 0.0.0.0/0 to, from the deployed template: the
 * subnet's AWS::EC2::SubnetRouteTableAssociation, that table's AWS::EC2::Route with a NatGatewayId, the gateway's
 * AllocationId (Fn::GetAtt of an AWS::EC2::EIP), whose physical id is its address (Ref of an EIP returns the Elastic IP
 * address). moto 5.2.5 creates the route without its NAT gateway, so its own route tables cannot say.
 */
function natGatewayAddress(
  template: Template,
  resources: ReadonlyMap<string, StackResourceSummary>,
  subnetId: string,
): string | undefined {
  const logicalOf = (value: unknown): string | undefined => {
    const object = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] } | undefined;
    return object?.Ref ?? object?.['Fn::GetAtt']?.[0];
  };
  const subnet = [...resources].find(([, summary]) => summary.PhysicalResourceId === subnetId)?.[0];
  const of = (type: string) => Object.values(template.Resources).filter((resource) => resource.Type === type);
  const table = of('AWS::EC2::SubnetRouteTableAssociation')
    .map((association) => association.Properties ?? {})
    .find((properties) => logicalOf(properties['SubnetId']) === subnet)?.['RouteTableId'];
  const nat = of('AWS::EC2::Route')
    .map((route) => route.Properties ?? {})
    .find((properties) => logicalOf(properties['RouteTableId']) === logicalOf(table) && properties['NatGatewayId']);
  const gateway = template.Resources[logicalOf(nat?.['NatGatewayId']) ?? ''];
  const eip = logicalOf(gateway?.Properties?.['AllocationId']);
  return eip ? resources.get(eip)?.PhysicalResourceId : undefined;
}

const PSEUDO_PARAMETERS: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': TWIN_REGION,
  'AWS::AccountId': TWIN_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

/**
 * The ManagedPolicyArns of each role, attached as CloudFormation attaches them (AWS::IAM::Role, ManagedPolicyArns):
 * moto 5.2.5's CloudFormation creates the role without them.
 */
async function attachManagedPolicies(
  admin: MotoAdmin,
  template: Template,
  resources: ReadonlyMap<string, StackResourceSummary>,
): Promise<void> {
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Role') continue;
    const roleName = resources.get(logicalId)?.PhysicalResourceId;
    for (const policy of (resource.Properties?.['ManagedPolicyArns'] as unknown[] | undefined) ?? []) {
      await admin.query(
        'iam',
        'AttachRolePolicy',
        { RoleName: roleName!, PolicyArn: resolveValue(policy, template, resources) },
        '2010-05-08',
      );
    }
  }
}

/**
 * The value of a template expression after deployment, for the forms DefinitionSubstitutions and ManagedPolicyArns use:
 * a string, Ref (a pseudo parameter or the physical id), Fn::Join and Fn::GetAtt of a function's Arn (CloudFormation's
 * AWS::Lambda::Function return values).
 */
function resolveValue(
  value: unknown,
  template: Template,
  resources: ReadonlyMap<string, StackResourceSummary>,
): string {
  if (typeof value === 'string') return value;
  const object = value as Record<string, unknown>;
  const physicalOf = (logicalId: string) => {
    const physical = resources.get(logicalId)?.PhysicalResourceId;
    if (!physical) throw new Error(`the twin found no deployed resource ${logicalId}`);
    return physical;
  };
  if (typeof object['Ref'] === 'string') return PSEUDO_PARAMETERS[object['Ref']] ?? physicalOf(object['Ref']);
  if (Array.isArray(object['Fn::Join'])) {
    const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
    return parts.map((part) => resolveValue(part, template, resources)).join(separator);
  }
  const getAtt = object['Fn::GetAtt'] as [string, string] | undefined;
  if (getAtt && getAtt[1] === 'Arn' && template.Resources[getAtt[0]]?.Type === 'AWS::Lambda::Function')
    return `arn:aws:lambda:${TWIN_REGION}:${TWIN_ACCOUNT}:function:${physicalOf(getAtt[0])}`;
  throw new Error(`the twin cannot resolve ${JSON.stringify(value)} in a DefinitionSubstitutions`);
}

/**
 * The template with what moto 5.2.5's CloudFormation cannot evaluate put in terms it can, meaning the same:
 * `Fn::GetAtt [<AWS::EC2::EIP>, PublicIp]` becomes `Ref` of the EIP, which returns the same address ("Ref: returns the
 * Elastic IP address", AWS::EC2::EIP return values, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
 * aws-resource-ec2-eip.html#aws-resource-ec2-eip-return-values).
 */
export function motoCompatible(template: Template): Template {
  const eips = new Set(
    Object.entries(template.Resources)
      .filter(([, resource]) => resource.Type === 'AWS::EC2::EIP')
      .map(([logicalId]) => logicalId),
  );
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== 'object' || value === null) return value;
    const getAtt = (value as Record<string, unknown>)['Fn::GetAtt'] as unknown[] | undefined;
    if (Array.isArray(getAtt) && getAtt[1] === 'PublicIp' && eips.has(String(getAtt[0]))) return { Ref: getAtt[0] };
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, rewrite(inner)]));
  };
  return rewrite(template) as Template;
}

/**
 * What `cdk deploy` publishes before it deploys: each file asset of the stack's assets manifest, a zip asset zipped.
 */
async function publishAssets(s3: S3Client, cdkOut: string, stackName: string, workDir: string): Promise<void> {
  const manifest = JSON.parse(readFileSync(join(cdkOut, `${stackName}.assets.json`), 'utf8')) as AssetsManifest;
  await s3.send(new CreateBucketCommand({ Bucket: BOOTSTRAP_BUCKET }));
  for (const asset of Object.values(manifest.files)) {
    const source = join(cdkOut, asset.source.path);
    let body: Buffer;
    if (asset.source.packaging === 'zip') {
      const zip = join(workDir, 'asset.zip');
      rmSync(zip, { force: true });
      execFileSync('zip', ['-q', '-r', zip, '.'], { cwd: source });
      body = readFileSync(zip);
    } else {
      body = readFileSync(source);
    }
    for (const destination of Object.values(asset.destinations)) {
      const bucket = destination.bucketName
        .replace('${AWS::AccountId}', TWIN_ACCOUNT)
        .replace('${AWS::Region}', TWIN_REGION);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: destination.objectKey, Body: body }));
    }
  }
}
