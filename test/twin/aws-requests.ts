/**
 * What an AWS API request asks IAM for: the service and operation read from the request as the SDK sent it, and the
 * authorizations (action, resource ARN, condition keys) that must all be allowed. Action names, resource ARN formats
 * and condition keys are the Service Authorization Reference's
 * (https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html),
 * one page per service, cited at each service below. Only the operations the controller, its functions and the
 * cluster nodes call are mapped; any other operation by a role is refused by name, so that a new call cannot pass
 * the twin unchecked.
 */
import type { AuthorizationRequest } from './iam-policy';

export const TWIN_REGION = 'us-east-1';
/** moto's default account (moto/core/models.py DEFAULT_ACCOUNT_ID). */
export const TWIN_ACCOUNT = '123456789012';

export type Protocol = 'json' | 'query' | 'ec2' | 'rest-xml' | 'rest-json';

export interface RawRequest {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: Buffer;
}

export interface DescribedRequest {
  /** SigV4 credential scope's service (s3, dynamodb, ...). */
  readonly service: string;
  readonly operation: string;
  readonly protocol: Protocol;
  /** The access key the request was signed with. */
  readonly accessKeyId?: string;
  /** The decoded parameters (JSON body or form fields). */
  readonly params: Record<string, unknown>;
}

/** Facts about existing resources that some authorizations need (answered from moto by the gateway). */
export interface ResourceLookup {
  instanceTags(instanceId: string): Promise<Record<string, string>>;
  /** ARN and tags of a secret named or identified by `secretId`. */
  secret(secretId: string): Promise<{ arn: string; tags: Record<string, string> } | undefined>;
  /** Stack ARN and service role of a stack name or ARN. */
  stack(stackName: string): Promise<{ arn: string; roleArn?: string } | undefined>;
}

const SIGV4_CREDENTIAL = /Credential=([^/,\s]+)\/\d{8}\/[^/]+\/([^/]+)\/aws4_request/;

/** Decodes an AWS query-protocol body (Action=...&Name.member.1=...). */
function formFields(body: Buffer): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(body.toString('utf8')));
}

export function describeRequest(request: RawRequest): DescribedRequest | undefined {
  const authorization = request.headers['authorization'] ?? '';
  const signed = SIGV4_CREDENTIAL.exec(authorization);
  const presigned = request.query.get('X-Amz-Credential')?.split('/');
  const accessKeyId = signed?.[1] ?? presigned?.[0];
  const service = signed?.[2] ?? presigned?.[3];
  if (!service) return undefined;
  const target = request.headers['x-amz-target'];
  if (target) {
    const params =
      request.body.length > 0 ? (JSON.parse(request.body.toString('utf8')) as Record<string, unknown>) : {};
    return {
      service,
      operation: target.split('.').pop()!,
      protocol: 'json',
      ...(accessKeyId ? { accessKeyId } : {}),
      params,
    };
  }
  if (service === 's3')
    return {
      service,
      operation: s3Operation(request),
      protocol: 'rest-xml',
      ...(accessKeyId ? { accessKeyId } : {}),
      params: {},
    };
  if (service === 'lambda') {
    const invoke = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(request.path);
    const operation = invoke ? 'Invoke' : `${request.method} ${request.path}`;
    return {
      service,
      operation,
      protocol: 'rest-json',
      ...(accessKeyId ? { accessKeyId } : {}),
      params: invoke ? { FunctionName: decodeURIComponent(invoke[1]!) } : {},
    };
  }
  const fields = request.method === 'GET' ? Object.fromEntries(request.query) : formFields(request.body);
  return {
    service,
    operation: fields['Action'] ?? 'Unknown',
    protocol: service === 'ec2' ? 'ec2' : 'query',
    ...(accessKeyId ? { accessKeyId } : {}),
    params: fields,
  };
}

/** Path-style S3 (the SDK uses it for an IP endpoint): /bucket or /bucket/key. */
export function s3Location(path: string): { bucket?: string; key?: string } {
  const [bucket, ...key] = path.replace(/^\//, '').split('/');
  return {
    ...(bucket ? { bucket: decodeURIComponent(bucket) } : {}),
    ...(key.length > 0 && key.join('/') !== '' ? { key: key.map(decodeURIComponent).join('/') } : {}),
  };
}

function s3Operation(request: RawRequest): string {
  const { key } = s3Location(request.path);
  const method = request.method.toUpperCase();
  if (key === undefined)
    return method === 'PUT'
      ? 'CreateBucket'
      : method === 'DELETE'
        ? 'DeleteBucket'
        : method === 'HEAD'
          ? 'HeadBucket'
          : 'ListObjects';
  return method === 'PUT'
    ? 'PutObject'
    : method === 'DELETE'
      ? 'DeleteObject'
      : method === 'HEAD'
        ? 'HeadObject'
        : 'GetObject';
}

const arn = (service: string, resource: string, region = TWIN_REGION, account = TWIN_ACCOUNT) =>
  `arn:aws:${service}:${region}:${account}:${resource}`;
const members = (params: Record<string, unknown>, prefix: string): string[] =>
  Object.keys(params)
    .filter((key) => key.startsWith(`${prefix}.`) && /\.\d+$/.test(key))
    .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
    .map((key) => String(params[key]));
const tagContext = (prefix: string, tags: Record<string, string>) =>
  Object.fromEntries(Object.entries(tags).map(([key, value]) => [`${prefix}/${key}`, value]));

/**
 * The authorizations a request needs. Throws for an operation the twin does not map (named), so that nothing passes
 * unchecked.
 */
export async function authorizationsFor(
  described: DescribedRequest,
  request: RawRequest,
  lookup: ResourceLookup,
): Promise<AuthorizationRequest[]> {
  const { service, operation, params } = described;
  const action = `${service === 'monitoring' ? 'cloudwatch' : service === 'states' ? 'states' : service}:${operation}`;
  const any = (): AuthorizationRequest[] => [{ action, resource: '*' }];
  switch (service) {
    // DynamoDB: table/{TableName}, index/{IndexName} (list_amazondynamodb.html).
    case 'dynamodb': {
      if (operation === 'BatchWriteItem' || operation === 'BatchGetItem') {
        return Object.keys((params['RequestItems'] as Record<string, unknown>) ?? {}).map((table) => ({
          action,
          resource: arn('dynamodb', `table/${table}`),
        }));
      }
      const table = String(params['TableName']);
      const index = params['IndexName'] ? `/index/${String(params['IndexName'])}` : '';
      return [{ action, resource: arn('dynamodb', `table/${table}${index}`) }];
    }
    // S3: arn:aws:s3:::bucket/key; GetObject also serves HEAD (list_amazons3.html).
    case 's3': {
      const { bucket, key } = s3Location(request.path);
      const s3Action = {
        GetObject: 's3:GetObject',
        HeadObject: 's3:GetObject',
        PutObject: 's3:PutObject',
        DeleteObject: 's3:DeleteObject',
        ListObjects: 's3:ListBucket',
        HeadBucket: 's3:ListBucket',
        CreateBucket: 's3:CreateBucket',
        DeleteBucket: 's3:DeleteBucket',
      }[operation]!;
      return [
        { action: s3Action, resource: key === undefined ? `arn:aws:s3:::${bucket}` : `arn:aws:s3:::${bucket}/${key}` },
      ];
    }
    // Systems Manager: SendCommand needs the document and every instance; instance tags as ssm:resourceTag/*
    // (list_awssystemsmanager.html).
    case 'ssm': {
      if (operation === 'SendCommand') {
        const document = String(params['DocumentName']);
        const documentArn = document.startsWith('arn:')
          ? document
          : document.startsWith('AWS-')
            ? `arn:aws:ssm:${TWIN_REGION}::document/${document}`
            : arn('ssm', `document/${document}`);
        const instances = await Promise.all(
          ((params['InstanceIds'] as string[] | undefined) ?? []).map(async (id) => ({
            action,
            resource: arn('ec2', `instance/${id}`),
            context: tagContext('ssm:resourceTag', await lookup.instanceTags(id)),
          })),
        );
        return [{ action, resource: documentArn }, ...instances];
      }
      if (
        ['GetCommandInvocation', 'DescribeInstanceInformation', 'ListCommandInvocations', 'ListCommands'].includes(
          operation,
        )
      )
        return any();
      if (['GetParameter', 'GetParameters'].includes(operation))
        return [{ action, resource: arn('ssm', `parameter${String(params['Name'])}`) }];
      break;
    }
    // Secrets Manager: secret ARN, secretsmanager:ResourceTag/* and aws:ResourceTag/* (list_awssecretsmanager.html).
    case 'secretsmanager': {
      if (operation === 'GetSecretValue' || operation === 'DescribeSecret') {
        const secret = await lookup.secret(String(params['SecretId']));
        if (!secret) return [{ action, resource: arn('secretsmanager', `secret:${String(params['SecretId'])}`) }];
        return [
          {
            action,
            resource: secret.arn,
            context: {
              ...tagContext('secretsmanager:ResourceTag', secret.tags),
              ...tagContext('aws:ResourceTag', secret.tags),
            },
          },
        ];
      }
      break;
    }
    // CloudWatch Logs: log-group:{name} and log-group:{name}:log-stream:{stream} (list_amazoncloudwatchlogs.html).
    case 'logs': {
      const group = String(params['logGroupName'] ?? '');
      if (['GetLogEvents', 'PutLogEvents', 'CreateLogStream'].includes(operation))
        return [
          { action, resource: arn('logs', `log-group:${group}:log-stream:${String(params['logStreamName'] ?? '')}`) },
        ];
      if (['DeleteLogGroup', 'CreateLogGroup', 'DescribeLogStreams', 'PutRetentionPolicy'].includes(operation))
        return [{ action, resource: arn('logs', `log-group:${group}`) }];
      if (operation === 'DescribeLogGroups') return any();
      break;
    }
    // CloudFormation: stack/{name}/{id}; a stack operation that uses a service role also needs iam:PassRole on it
    // (CloudFormation User Guide, "CloudFormation service role": users need iam:PassRole to use the role)
    // (list_awscloudformation.html).
    case 'cloudformation': {
      if (['ListStacks', 'DescribeStacks', 'ValidateTemplate'].includes(operation) && !params['StackName'])
        return any();
      const name = String(params['StackName'] ?? params['LogicalResourceId'] ?? '');
      const existing = await lookup.stack(name);
      const stackArn = existing?.arn ?? arn('cloudformation', `stack/${name}/*`);
      const needs: AuthorizationRequest[] = [{ action, resource: stackArn }];
      const roleArn =
        operation === 'CreateStack'
          ? (params['RoleARN'] as string | undefined)
          : ['DeleteStack', 'UpdateStack'].includes(operation)
            ? existing?.roleArn
            : undefined;
      if (roleArn)
        needs.push({
          action: 'iam:PassRole',
          resource: roleArn,
          context: { 'iam:PassedToService': 'cloudformation.amazonaws.com' },
        });
      if (operation === 'CreateStack' && members(params, 'Tags.member').length > 0)
        needs.push({ action: 'cloudformation:TagResource', resource: stackArn });
      return needs;
    }
    // EC2 and Auto Scaling describe calls support no resource-level permission (list_amazonec2.html,
    // list_amazonec2autoscaling.html).
    case 'ec2':
    case 'autoscaling': {
      if (operation.startsWith('Describe')) return any();
      if (operation === 'CompleteLifecycleAction' || operation === 'RecordLifecycleActionHeartbeat') {
        return [
          {
            action,
            resource: arn(
              'autoscaling',
              `autoScalingGroup:*:autoScalingGroupName/${String(params['AutoScalingGroupName'])}`,
            ),
          },
        ];
      }
      break;
    }
    // CloudWatch: no resource-level permissions for these; PutMetricData carries the cloudwatch:namespace condition key
    // (list_amazoncloudwatch.html; "Using condition keys to limit access to CloudWatch namespaces").
    case 'monitoring':
      if (operation === 'PutMetricData')
        return [{ action, resource: '*', context: { 'cloudwatch:namespace': String(params['Namespace'] ?? '') } }];
      if (['ListMetrics', 'GetMetricData', 'GetMetricStatistics'].includes(operation)) return any();
      break;
    // STS AssumeRole: the role ARN; session tags need sts:TagSession, with aws:RequestTag/*
    // (list_awssecuritytokenservice.html).
    case 'sts': {
      if (operation === 'GetCallerIdentity') return [];
      if (operation === 'AssumeRole') {
        const roleArn = String(params['RoleArn']);
        const tags = Object.fromEntries(
          Object.keys(params)
            .filter((key) => /^Tags\.member\.\d+\.Key$/.test(key))
            .map((key) => [String(params[key]), String(params[key.replace(/Key$/, 'Value')])]),
        );
        const context = tagContext('aws:RequestTag', tags);
        return [
          { action, resource: roleArn, context },
          ...(Object.keys(tags).length > 0 ? [{ action: 'sts:TagSession', resource: roleArn, context }] : []),
        ];
      }
      break;
    }
    // Lambda: function:{name} (list_awslambda.html).
    case 'lambda':
      if (operation === 'Invoke') {
        const name = String(params['FunctionName']);
        return [
          {
            action: 'lambda:InvokeFunction',
            resource: name.startsWith('arn:') ? name : arn('lambda', `function:${name}`),
          },
        ];
      }
      break;
    // Step Functions: stateMachine:{name}, execution:{machine}:{name} (list_awsstepfunctions.html).
    case 'states': {
      if (operation === 'StartExecution' || operation === 'ListExecutions' || operation === 'DescribeStateMachine')
        return [{ action, resource: String(params['stateMachineArn']) }];
      if (['DescribeExecution', 'StopExecution', 'GetExecutionHistory'].includes(operation))
        return [{ action, resource: String(params['executionArn']) }];
      break;
    }
    case 'xray':
      return any();
    default:
      break;
  }
  throw new Error(
    `the twin does not map ${service}:${operation} to IAM actions and resources (test/twin/aws-requests.ts)`,
  );
}
