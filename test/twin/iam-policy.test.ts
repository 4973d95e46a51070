import { authorizationsFor, describeRequest } from './aws-requests';
import { evaluate, wildcardMatches, type NamedPolicy } from './iam-policy';
import { CLOUDWATCH_NAMESPACE } from '../../core/metrics/cloudwatch-host-metrics';

const policy = (name: string, ...Statement: NamedPolicy['document']['Statement'][]): NamedPolicy => ({
  name,
  document: { Version: '2012-10-17', Statement: Statement.flat() },
});
const table = 'arn:aws:dynamodb:us-east-1:123456789012:table/results';

describe("the twin's IAM evaluator (identity-based policies, one account)", () => {
  test('an Allow of the action on the resource allows; another resource or action is implicitly denied', () => {
    const policies = [
      policy('inline', { Effect: 'Allow', Action: ['dynamodb:PutItem', 'dynamodb:Query'], Resource: table }),
    ];
    expect(evaluate(policies, { action: 'dynamodb:PutItem', resource: table })).toEqual({
      allowed: true,
      by: 'inline',
    });
    expect(evaluate(policies, { action: 'dynamodb:PutItem', resource: `${table}-other` })).toMatchObject({
      allowed: false,
      reason: 'because no identity-based policy allows the dynamodb:PutItem action',
    });
    expect(evaluate(policies, { action: 'dynamodb:DeleteItem', resource: table }).allowed).toBe(false);
  });

  test('actions match case-insensitively with wildcards; resources case-sensitively, * spanning / and :', () => {
    const policies = [
      policy('p', {
        Effect: 'Allow',
        Action: 'cloudformation:Describe*',
        Resource: 'arn:aws:cloudformation:us-east-1:123456789012:stack/rmqbench-*/*',
      }),
    ];
    expect(
      evaluate(policies, {
        action: 'CloudFormation:DescribeStacks',
        resource: 'arn:aws:cloudformation:us-east-1:123456789012:stack/rmqbench-run-c1/0f1e-22',
      }).allowed,
    ).toBe(true);
    expect(
      evaluate(policies, {
        action: 'cloudformation:DescribeStacks',
        resource: 'arn:aws:cloudformation:us-east-1:123456789012:stack/RMQBENCH-run-c1/0f1e',
      }).allowed,
    ).toBe(false);
    expect(wildcardMatches('a?c', 'abc')).toBe(true);
    expect(wildcardMatches('a?c', 'abbc')).toBe(false);
  });

  test('PowerUserAccess: NotAction iam:* allows everything but IAM, and iam:PassRole needs its own grant', () => {
    const powerUser = policy(
      'managed policy PowerUserAccess',
      { Effect: 'Allow', NotAction: ['iam:*', 'organizations:*', 'account:*'], Resource: '*' },
      { Effect: 'Allow', Action: ['iam:CreateServiceLinkedRole', 'iam:ListRoles'], Resource: '*' },
    );
    expect(evaluate([powerUser], { action: 'ec2:RunInstances', resource: '*' }).allowed).toBe(true);
    expect(
      evaluate([powerUser], { action: 'iam:PassRole', resource: 'arn:aws:iam::123456789012:role/rmqbench-node' })
        .allowed,
    ).toBe(false);
    const withPassRole = [
      powerUser,
      policy('inline', {
        Effect: 'Allow',
        Action: 'iam:PassRole',
        Resource: 'arn:aws:iam::123456789012:role/rmqbench-*',
      }),
    ];
    expect(
      evaluate(withPassRole, { action: 'iam:PassRole', resource: 'arn:aws:iam::123456789012:role/rmqbench-node' })
        .allowed,
    ).toBe(true);
  });

  test('an explicit Deny wins over any Allow and is named', () => {
    const policies = [
      policy('allow-all', { Effect: 'Allow', Action: '*', Resource: '*' }),
      policy('guard', { Sid: 'NoDelete', Effect: 'Deny', Action: 'dynamodb:DeleteTable', Resource: '*' }),
    ];
    expect(evaluate(policies, { action: 'dynamodb:DeleteTable', resource: table })).toEqual({
      allowed: false,
      explicitDeny: 'guard (NoDelete)',
      reason: 'with an explicit deny in guard (NoDelete)',
    });
  });

  test('conditions: a resource tag the policy requires (StringEquals), absent keys, IfExists and negation', () => {
    const sendCommand = [
      policy('p', {
        Effect: 'Allow',
        Action: 'ssm:SendCommand',
        Resource: 'arn:aws:ec2:us-east-1:123456789012:instance/*',
        Condition: { StringEquals: { 'ssm:resourceTag/rmqbench:component': 'load-generator' } },
      }),
    ];
    const instance = 'arn:aws:ec2:us-east-1:123456789012:instance/i-1';
    expect(
      evaluate(sendCommand, {
        action: 'ssm:SendCommand',
        resource: instance,
        context: { 'ssm:ResourceTag/rmqbench:component': 'load-generator' },
      }).allowed,
    ).toBe(true);
    expect(
      evaluate(sendCommand, {
        action: 'ssm:SendCommand',
        resource: instance,
        context: { 'ssm:resourceTag/rmqbench:component': 'rabbitmq-node' },
      }).allowed,
    ).toBe(false);
    expect(evaluate(sendCommand, { action: 'ssm:SendCommand', resource: instance }).allowed).toBe(false);
    const ifExists = [
      policy('p', {
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: '*',
        Condition: { StringEqualsIfExists: { 's3:prefix': 'runs/' } },
      }),
    ];
    expect(evaluate(ifExists, { action: 's3:GetObject', resource: 'arn:aws:s3:::b/k' }).allowed).toBe(true);
    const negated = [
      policy('p', {
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: '*',
        Condition: { StringNotEquals: { 'aws:PrincipalTag/team': 'other' } },
      }),
    ];
    expect(evaluate(negated, { action: 's3:GetObject', resource: 'arn:aws:s3:::b/k' }).allowed).toBe(true);
    expect(
      evaluate(negated, {
        action: 's3:GetObject',
        resource: 'arn:aws:s3:::b/k',
        context: { 'aws:PrincipalTag/team': 'other' },
      }).allowed,
    ).toBe(false);
  });

  test('policy variables: FaultNodeRole may command only the nodes of the stack its session is tagged with', () => {
    const faultNode = [
      policy('FaultNodeRoleDefaultPolicy', {
        Effect: 'Allow',
        Action: 'ssm:SendCommand',
        Resource: 'arn:aws:ec2:us-east-1:123456789012:instance/*',
        Condition: {
          StringEquals: {
            'ssm:resourceTag/rmqbench:component': 'rabbitmq-node',
            'ssm:resourceTag/aws:cloudformation:stack-name': '${aws:PrincipalTag/rmqbench:cluster-stack}',
          },
        },
      }),
    ];
    const request = (stack: string, sessionTag?: string) => ({
      action: 'ssm:SendCommand',
      resource: 'arn:aws:ec2:us-east-1:123456789012:instance/i-1',
      context: {
        'ssm:resourceTag/rmqbench:component': 'rabbitmq-node',
        'ssm:resourceTag/aws:cloudformation:stack-name': stack,
        ...(sessionTag ? { 'aws:PrincipalTag/rmqbench:cluster-stack': sessionTag } : {}),
      },
    });
    expect(evaluate(faultNode, request('rmqbench-a-c1', 'rmqbench-a-c1')).allowed).toBe(true);
    expect(evaluate(faultNode, request('rmqbench-b-c1', 'rmqbench-a-c1')).allowed).toBe(false);
    // No session tag: the variable has no value and the statement does not match.
    expect(evaluate(faultNode, request('rmqbench-a-c1')).allowed).toBe(false);
  });

  const namespaceTest =
    "PutMetricData carries its namespace as cloudwatch:namespace: the agent's role publishes in rmqbench only";
  test(namespaceTest, async () => {
    // The instance roles' statement (cdk/host-metrics-agent.ts), and PutMetricData as the agent's botocore sends it
    // (query protocol, form body).
    const agentRole = [
      policy('inline', {
        Effect: 'Allow',
        Action: 'cloudwatch:PutMetricData',
        Resource: '*',
        Condition: { StringEquals: { 'cloudwatch:namespace': CLOUDWATCH_NAMESPACE } },
      }),
    ];
    const putMetricData = (namespace: string) => {
      const body = Buffer.from(new URLSearchParams({ Action: 'PutMetricData', Namespace: namespace }).toString());
      const raw = {
        method: 'POST',
        path: '/',
        query: new URLSearchParams(),
        headers: { authorization: 'AWS4-HMAC-SHA256 Credential=ASIATWIN1/20261127/us-east-1/monitoring/aws4_request' },
        body,
      };
      const lookup = { instanceTags: async () => ({}), secret: async () => undefined, stack: async () => undefined };
      return authorizationsFor(describeRequest(raw)!, raw, lookup);
    };
    const [allowed] = await putMetricData(CLOUDWATCH_NAMESPACE);
    expect(evaluate(agentRole, allowed!)).toMatchObject({ allowed: true });
    const [other] = await putMetricData('CWAgent');
    expect(evaluate(agentRole, other!)).toMatchObject({ allowed: false });
  });

  test('an operator it does not know is an error, not a silent allow or deny', () => {
    const policies = [
      policy('p', {
        Effect: 'Allow',
        Action: '*',
        Resource: '*',
        Condition: { DateGreaterThan: { 'aws:CurrentTime': '2020-01-01T00:00:00Z' } },
      }),
    ];
    expect(() => evaluate(policies, { action: 's3:GetObject', resource: '*' })).toThrow(/DateGreaterThan/);
  });
});
