/**
 * What CloudFormation does with a stack's service role (the RoleARN of CreateStack): every resource is created with
 * that role's credentials, so the role must allow each resource's create calls
 * (CloudFormation User Guide, "CloudFormation service role": "CloudFormation uses the role's credentials to make calls
 * on your behalf"). moto creates the resources without asking; this module asks first, with the permissions each
 * resource type's create handler declares in its registry schema (`handlers.create.permissions`,
 * https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-schema.html, e.g.
 * aws-cloudformation/aws-cloudformation-resource-providers-ec2 aws-ec2-instance.json), reduced to the actions that
 * carry a resource-level or role-level check, plus the iam:PassRole that passing an instance profile's role to EC2
 * needs: "iam:PassRole – ... Needed when ... a launch template that specifies an instance profile" (EC2 Auto Scaling
 * User Guide, "Amazon EC2 Auto Scaling API permissions"), "To launch an instance with a role, the user must have
 * permission to pass the role" (EC2 User Guide, "IAM roles for Amazon EC2", permission to pass a role), and
 * AddRoleToInstanceProfile's "The caller of this operation must be granted the PassRole permission on the IAM role"
 * (IAM API Reference, AddRoleToInstanceProfile).
 * A denial fails the stack as CloudFormation reports it: the resource CREATE_FAILED with the service's AccessDenied
 * message, the stack ROLLBACK_COMPLETE.
 */
import type { AuthorizationRequest } from './iam-policy';
import { TWIN_ACCOUNT, TWIN_REGION } from './aws-requests';

type Resource = { Type: string; Properties?: Record<string, unknown> };
export interface ClusterTemplate {
  readonly Resources: Record<string, Resource>;
}

const arn = (service: string, resource: string, region = TWIN_REGION) =>
  `arn:aws:${service}:${region}:${TWIN_ACCOUNT}:${resource}`;

/**
 * The physical name CloudFormation gives a named resource without a name property: {stack}-{logicalId}-{suffix}, at
 * most 64 characters (IAM's limit).
 */
export const generatedName = (stackName: string, logicalId: string) =>
  `${stackName}-${logicalId}`.slice(0, 51) + '-TWIN0000000';

const refTarget = (value: unknown): string | undefined => {
  if (value && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    if (typeof object['Ref'] === 'string') return object['Ref'];
    const getAtt = object['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  }
  return undefined;
};

function roleArnOf(template: ClusterTemplate, stackName: string, logicalId: string): string {
  const role = template.Resources[logicalId];
  const name =
    typeof role?.Properties?.['RoleName'] === 'string'
      ? (role.Properties['RoleName'] as string)
      : generatedName(stackName, logicalId);
  return `arn:aws:iam::${TWIN_ACCOUNT}:role/${name}`;
}

/** The role ARNs an instance profile holds (its Roles, each a Ref to a role of the template). */
function instanceProfileRoles(template: ClusterTemplate, stackName: string, profileValue: unknown): string[] {
  const profileId = refTarget(profileValue);
  const profile = profileId ? template.Resources[profileId] : undefined;
  if (!profile) return [];
  return ((profile.Properties?.['Roles'] as unknown[]) ?? [])
    .map((role) => refTarget(role))
    .filter((id): id is string => id !== undefined)
    .map((id) => roleArnOf(template, stackName, id));
}

const passRole = (roleArn: string): AuthorizationRequest => ({
  action: 'iam:PassRole',
  resource: roleArn,
  context: { 'iam:PassedToService': 'ec2.amazonaws.com' },
});

/** The calls the service role must be allowed to create `logicalId`. */
export function createPermissions(
  template: ClusterTemplate,
  stackName: string,
  logicalId: string,
): AuthorizationRequest[] {
  const resource = template.Resources[logicalId]!;
  const properties = resource.Properties ?? {};
  const any = (...actions: string[]) => actions.map((action) => ({ action, resource: '*' }));
  switch (resource.Type) {
    case 'AWS::IAM::Role': {
      const role = roleArnOf(template, stackName, logicalId);
      return [
        { action: 'iam:CreateRole', resource: role },
        ...(properties['ManagedPolicyArns'] ? [{ action: 'iam:AttachRolePolicy', resource: role }] : []),
      ];
    }
    case 'AWS::IAM::Policy':
      return ((properties['Roles'] as unknown[]) ?? []).map((role) => ({
        action: 'iam:PutRolePolicy',
        resource: roleArnOf(template, stackName, refTarget(role) ?? ''),
      }));
    case 'AWS::IAM::InstanceProfile': {
      const profile = `arn:aws:iam::${TWIN_ACCOUNT}:instance-profile/${
        typeof properties['InstanceProfileName'] === 'string'
          ? (properties['InstanceProfileName'] as string)
          : generatedName(stackName, logicalId)
      }`;
      const roles = instanceProfileRoles(template, stackName, { Ref: logicalId });
      return [
        { action: 'iam:CreateInstanceProfile', resource: profile },
        ...roles.flatMap((role) => [
          { action: 'iam:AddRoleToInstanceProfile', resource: profile },
          { ...passRole(role), context: {} },
        ]),
      ];
    }
    case 'AWS::EC2::LaunchTemplate':
      return any('ec2:CreateLaunchTemplate');
    case 'AWS::AutoScaling::AutoScalingGroup': {
      const launchTemplateId = refTarget(
        (properties['LaunchTemplate'] as Record<string, unknown> | undefined)?.['LaunchTemplateId'],
      );
      const data = launchTemplateId
        ? ((template.Resources[launchTemplateId]?.Properties?.['LaunchTemplateData'] as
            Record<string, unknown> | undefined) ?? {})
        : {};
      const profile = (data['IamInstanceProfile'] as Record<string, unknown> | undefined)?.['Arn'];
      return [
        ...any('autoscaling:CreateAutoScalingGroup', 'ec2:RunInstances'),
        ...instanceProfileRoles(template, stackName, profile).map(passRole),
      ];
    }
    case 'AWS::EC2::Instance':
      return [
        ...any('ec2:RunInstances'),
        ...instanceProfileRoles(template, stackName, properties['IamInstanceProfile']).map(passRole),
      ];
    case 'AWS::AutoScaling::LifecycleHook':
      return any('autoscaling:PutLifecycleHook');
    case 'AWS::EC2::SecurityGroup':
      return any('ec2:CreateSecurityGroup');
    case 'AWS::EC2::SecurityGroupIngress':
      return any('ec2:AuthorizeSecurityGroupIngress');
    case 'AWS::EC2::SecurityGroupEgress':
      return any('ec2:AuthorizeSecurityGroupEgress');
    case 'AWS::EC2::NetworkInterface':
      return any('ec2:CreateNetworkInterface');
    case 'AWS::SecretsManager::Secret':
      return [
        {
          action: 'secretsmanager:CreateSecret',
          resource: arn('secretsmanager', `secret:${generatedName(stackName, logicalId)}-*`),
        },
        ...(properties['GenerateSecretString'] ? any('secretsmanager:GetRandomPassword') : []),
      ];
    case 'AWS::ElasticLoadBalancingV2::LoadBalancer':
      return any('elasticloadbalancing:CreateLoadBalancer');
    case 'AWS::ElasticLoadBalancingV2::TargetGroup':
      return any('elasticloadbalancing:CreateTargetGroup');
    case 'AWS::ElasticLoadBalancingV2::Listener':
      return any('elasticloadbalancing:CreateListener');
    case 'AWS::Logs::LogGroup':
      return [
        {
          action: 'logs:CreateLogGroup',
          resource: arn(
            'logs',
            `log-group:${
              typeof properties['LogGroupName'] === 'string'
                ? (properties['LogGroupName'] as string)
                : generatedName(stackName, logicalId)
            }`,
          ),
        },
      ];
    case 'AWS::Route53::HostedZone':
      return any('route53:CreateHostedZone');
    case 'AWS::Route53::RecordSet':
      return any('route53:ChangeResourceRecordSets');
    default:
      throw new Error(
        `the twin does not know what CloudFormation's role needs to create ` +
          `${resource.Type} (${logicalId}); add it to test/twin/cloudformation-role.ts`,
      );
  }
}

export interface CreateFailure {
  readonly logicalId: string;
  readonly type: string;
  readonly reason: string;
}

/**
 * The first resource the role may not create, in template order (CloudFormation stops at the first failure and rolls
 * back), with the reason CloudFormation records: the service's AccessDenied message.
 */
export function firstCreateFailure(
  template: ClusterTemplate,
  stackName: string,
  roleArn: string,
  allowed: (request: AuthorizationRequest) => { allowed: boolean; reason?: string },
): CreateFailure | undefined {
  const session = `arn:aws:sts::${TWIN_ACCOUNT}:assumed-role/${roleArn.split('/').pop()}/AWSCloudFormation`;
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    for (const request of createPermissions(template, stackName, logicalId)) {
      const decision = allowed(request);
      if (!decision.allowed) {
        const message = (
          `User: ${session} is not authorized to perform: ${request.action} ` +
          `on resource: ${request.resource} ${decision.reason ?? ''}`
        ).trim();
        return {
          logicalId,
          type: resource.Type,
          reason: `Resource handler returned message: "${message}" (Status Code: 403; Error Code: AccessDenied)`,
        };
      }
    }
  }
  return undefined;
}
