import { DescribeStacksCommand, CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { rmqbenchAsync } from '../cloud/cli-child';
import { twinTestSetup } from './twin-test-setup';

jest.setTimeout(300_000);

type Template = {
  Resources: Record<
    string,
    { Type: string; Properties: { PolicyDocument: { Statement: { Action: string | string[] }[] } } }
  >;
};

/**
 * The twin's stage 1 (the AWS control plane, docs/verification.md "The cloud twin"): the example controller app
 * synthesized, deployed
 * into moto behind the IAM-enforcing gateway, and `rmqbench run --target aws` run against it unchanged. A change to one
 * permission in the synthesized assembly makes the run fail where AWS would fail it, naming the permission.
 */
describe('the AWS twin runs rmqbench run --target aws on the synthesized example controller', () => {
  const { cdkOut, changedAssembly: changed, runOnTwin } = twinTestSetup();
  /** A copy of the assembly with `change` applied to the controller stack's template. */
  const changedAssembly = (name: string, change: (template: Template) => void) =>
    changed(name, (file) => file === 'RmqbenchController.template.json', change);

  /** Removes `action` from every statement of the IAM::Policy whose logical id starts with `policyPrefix`. */
  const withoutAction = (policyPrefix: string, action: string) => (template: Template) => {
    const [, policy] = Object.entries(template.Resources).find(
      ([id, resource]) => id.startsWith(policyPrefix) && resource.Type === 'AWS::IAM::Policy',
    )!;
    let removed = 0;
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      const actions = ([] as string[]).concat(statement.Action);
      if (actions.includes(action)) removed++;
      statement.Action = actions.filter((candidate) => candidate !== action);
    }
    policy.Properties.PolicyDocument.Statement = policy.Properties.PolicyDocument.Statement.filter(
      (statement) => ([] as string[]).concat(statement.Action).length > 0,
    );
    expect(removed).toBeGreaterThan(0);
  };

  test(
    'unchanged: every call of every function is allowed by its own role, the service role may create ' +
      'every cluster resource, and the run stops where the twin stops (provisioning) with the run recorded',
    async () => {
      const { twin, env, code, stderr, log } = await runOnTwin(cdkOut);
      expect(code).toBe(1);
      // The real workflow ran the real bundles up to the cluster launch, and the failure path recorded the run.
      const tasks = [...twin.gateway.executions.executions.values()][0]!.tasks;
      expect(tasks.slice(0, 3)).toEqual(['ValidatePlan', 'RecordRunStart', 'LaunchCluster']);
      expect(tasks).toContain('FinishRun');
      const denied = twin.gateway.decisions.filter((decision) => !decision.allowed);
      expect(denied).toEqual([]);
      // Calls were made as the functions' roles, and CloudFormation's role was asked about the instance profiles'
      // roles.
      const principals = new Set(twin.gateway.decisions.map((decision) => decision.principal.split('/')[1]));
      expect([...principals].some((role) => role?.includes('LaunchClusterFunctionServiceRole'))).toBe(true);
      expect(twin.gateway.decisions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            action: 'iam:PassRole',
            principal: expect.stringContaining('CloudFormationRole'),
            allowed: true,
          }),
        ]),
      );
      expect(stderr).toMatch(/may create every resource of rmqbench-\S+, but does not provision cluster stacks yet/);
      // Before it started: the plan's vCPUs (3 × m5.xlarge and a c5n.4xlarge load generator) against the quota.
      expect(stderr).toContain(
        "vCPU quota: the run holds up to 28 vCPUs of On-Demand Standard instances at once, of this account's 1152 in " +
          'us-east-1',
      );
      expect(log).toContain('[twin]');
      // The run is in the twin's DynamoDB, as `rmqbench runs --store aws` shows it.
      // (A child that does not block this process: the gateway answering it runs here.)
      const runs = rmqbenchAsync(env, 'runs', '--store', 'aws', '--json');
      expect(await runs.exited).toBe(0);
      expect(JSON.parse(runs.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ planName: 'twin', status: 'FAILED' })]),
      );
    },
  );

  test("an account whose On-Demand vCPU quota is below the plan's: refused before anything starts", async () => {
    const { twin, code, stderr } = await runOnTwin(cdkOut, { standardVcpuQuota: 16 });
    expect(code).toBe(1);
    expect(stderr).toContain(
      "the run holds up to 28 vCPUs of On-Demand Standard instances at once in us-east-1, above this account's " +
        'quota of 16 ',
    );
    expect(stderr).toMatch(/--skip-quota-check starts it anyway; nothing was started/);
    expect(twin.gateway.executions.executions.size).toBe(0);
  });

  test(
    "CloudFormation's service role without iam:PassRole: the cluster stack rolls back at " +
      'the first instance profile and the run fails naming iam:PassRole and the node role',
    async () => {
      const assembly = changedAssembly(
        'no-cfn-passrole',
        withoutAction('ControllerCloudFormationRoleDefaultPolicy', 'iam:PassRole'),
      );
      const { twin, code, stderr } = await runOnTwin(assembly);
      expect(code).toBe(1);
      expect(stderr).toMatch(
        new RegExp(
          String.raw`is ROLLBACK_COMPLETE: first failed resource \w+ \(AWS::IAM::InstanceProfile\) ` +
            String.raw`CREATE_FAILED: .*assumed-role\/RmqbenchController-ControllerCloudFormationRole[^/]*` +
            String.raw`\/AWSCloudFormation is not authorized to perform: iam:PassRole on resource: ` +
            String.raw`arn:aws:iam::123456789012:role\/rmqbench-`,
        ),
      );
      const stack = /stack (rmqbench-\S+) is ROLLBACK_COMPLETE/.exec(stderr)![1]!;
      const cfn = new CloudFormationClient(twin.clientConfig);
      try {
        // The failure path tore the stack down.
        await expect(cfn.send(new DescribeStacksCommand({ StackName: stack }))).rejects.toThrow(/does not exist/);
      } finally {
        cfn.destroy();
      }
    },
  );

  test(
    "the launch function's role without iam:PassRole on CloudFormation's " +
      'role: CreateStack is refused and the run fails naming the permission',
    async () => {
      const assembly = changedAssembly(
        'no-launch-passrole',
        withoutAction('ControllerLaunchClusterFunctionServiceRoleDefaultPolicy', 'iam:PassRole'),
      );
      const { twin, code, stderr } = await runOnTwin(assembly);
      expect(code).toBe(1);
      expect(stderr).toMatch(
        new RegExp(
          String.raw`assumed-role\/RmqbenchController-ControllerLaunchClusterFunctionServiceRole[^/]*\/\S+ is ` +
            String.raw`not authorized to perform: iam:PassRole on resource: arn:aws:iam::123456789012:role` +
            String.raw`\/RmqbenchController-ControllerCloudFormationRole`,
        ),
      );
      expect(twin.gateway.decisions.filter((decision) => !decision.allowed).map((decision) => decision.action)).toEqual(
        ['iam:PassRole'],
      );
    },
  );
});
