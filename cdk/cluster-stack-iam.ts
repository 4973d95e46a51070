/**
 * The IAM actions the controller's CloudFormation service role needs to create, read, update and delete a cluster
 * stack, beyond what its AWS managed policy PowerUserAccess allows.
 *
 * They are the `iam:` handler permissions (create/read/update/delete) of the resource types in the cluster templates,
 * as the CloudFormation registry schemas list them (cfn-lint ships those schemas: cfnlint/data/schemas/resources,
 * indexed by cfnlint/data/schemas/providers/<region>.json). test/cdk/BenchmarkController.test.ts derives the set from
 * both synthesized cluster templates and fails when a template gains a resource type whose handlers need an action
 * that is neither here, nor allowed by PowerUserAccess, nor listed in CLUSTER_STACK_IAM_ACTIONS_NOT_NEEDED.
 */
export const CLUSTER_STACK_IAM_ACTIONS: readonly string[] = [
  // AWS::IAM::Role
  'iam:CreateRole',
  'iam:DeleteRole',
  'iam:GetRole',
  'iam:UpdateRole',
  'iam:UpdateRoleDescription',
  'iam:UpdateAssumeRolePolicy',
  'iam:TagRole',
  'iam:UntagRole',
  'iam:PutRolePolicy',
  'iam:GetRolePolicy',
  'iam:DeleteRolePolicy',
  'iam:ListRolePolicies',
  'iam:AttachRolePolicy',
  'iam:DetachRolePolicy',
  'iam:ListAttachedRolePolicies',
  'iam:PutRolePermissionsBoundary',
  'iam:DeleteRolePermissionsBoundary',
  // AWS::IAM::InstanceProfile
  'iam:CreateInstanceProfile',
  'iam:DeleteInstanceProfile',
  'iam:GetInstanceProfile',
  'iam:AddRoleToInstanceProfile',
  'iam:RemoveRoleFromInstanceProfile',
  // AWS::EC2::LaunchTemplate / Instance / InstanceProfile / AutoScalingGroup pass the node and load generator roles.
  'iam:PassRole',
];

/**
 * Handler permissions the role deliberately lacks, with the reason: the AWS::IAM::Policy handler lists the user and
 * group variants of its actions, but the cluster templates attach policies to roles only.
 */
export const CLUSTER_STACK_IAM_ACTIONS_NOT_NEEDED: Readonly<Record<string, string>> = Object.fromEntries(
  [
    'iam:PutUserPolicy',
    'iam:GetUserPolicy',
    'iam:DeleteUserPolicy',
    'iam:PutGroupPolicy',
    'iam:GetGroupPolicy',
    'iam:DeleteGroupPolicy',
  ].map((action) => [action, 'the cluster templates attach AWS::IAM::Policy to roles only, never to users or groups']),
);

/**
 * What the AWS managed policy PowerUserAccess (version v12) allows, from its JSON policy document
 * (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/PowerUserAccess.html): everything except the
 * `iam:`, `organizations:` and `account:` services, plus these actions of those services.
 */
export const POWER_USER_ACCESS = {
  excludedServices: ['iam', 'organizations', 'account'],
  alsoAllowed: [
    'account:GetAccountInformation',
    'account:GetGovCloudAccountInformation',
    'account:GetPrimaryEmail',
    'account:ListRegions',
    'iam:CreateServiceLinkedRole',
    'iam:DeleteServiceLinkedRole',
    'iam:ListRoles',
    'organizations:DescribeEffectivePolicy',
    'organizations:DescribeOrganization',
  ],
} as const;

/**
 * The handler permissions in `required` that neither PowerUserAccess, nor `granted`, nor the reasoned exceptions cover.
 */
export function uncoveredActions(required: Iterable<string>, granted: readonly string[]): string[] {
  const missing = new Set<string>();
  for (const action of required) {
    const service = action.split(':')[0]!;
    const coveredByPowerUser =
      !(POWER_USER_ACCESS.excludedServices as readonly string[]).includes(service) ||
      (POWER_USER_ACCESS.alsoAllowed as readonly string[]).includes(action);
    if (!coveredByPowerUser && !granted.includes(action) && !(action in CLUSTER_STACK_IAM_ACTIONS_NOT_NEEDED))
      missing.add(action);
  }
  return [...missing].sort();
}
