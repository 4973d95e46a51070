import { rmqbenchAsync } from '../cloud/cli-child';
import { TWIN_AWS_ACCEPTANCE_PLAN_YAML, TWIN_PLAN_YAML } from './twin-cli';
import { twinFailure, twinTestSetup } from './twin-test-setup';

jest.setTimeout(600_000);

type ClusterTemplate = { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };

/**
 * The twin's stage 2a (docs/verification.md "The cloud twin"): `rmqbench run --target aws` against the twin whose
 * CloudFormation creates cluster stacks in simulated EC2 instances. The node group's instances boot the synthesized
 * user data through the gateway with their instance profile's role, behind their security groups' rules.
 */
/** A one-node cluster, for a run that fails before its first repetition. */
const ONE_NODE_PLAN_YAML = `name: twin-one
repetitions: 1
clusters:
  - { name: one, nodes: 1, instanceType: m5.xlarge }
workloads:
  - { name: steady, producers: 1, consumers: 1, messageCount: 3000, durationSeconds: 60, publishRateLimit: 200 }
`;

/**
 * Removes the statements granting secretsmanager:GetSecretValue from the IAM policy whose logical id matches
 * `policyId`; returns how many it removed.
 */
function withoutSecretReads(template: ClusterTemplate, policyId: RegExp): number {
  const [, policy] = Object.entries(template.Resources).find(
    ([id, resource]) => policyId.test(id) && resource.Type === 'AWS::IAM::Policy',
  )!;
  const document = policy.Properties!['PolicyDocument'] as { Statement: { Action: string | string[] }[] };
  const kept = document.Statement.filter(
    (statement) => ![statement.Action].flat().includes('secretsmanager:GetSecretValue'),
  );
  const removed = document.Statement.length - kept.length;
  document.Statement = kept;
  return removed;
}

describe('the AWS twin creates the cluster stack the launch function asks for', () => {
  const { cdkOut, changedAssembly, runOnTwin: run } = twinTestSetup();
  const runOnTwin = (
    assembly: string,
    subnet: number,
    options: { blockedBootSeconds?: number; planYaml?: string } = {},
  ) => run(assembly, { clusterSubnets: subnet, ...options });
  /**
   * A copy of the assembly with `change` applied to every RabbitMQ cluster template it uploads (the file assets with a
   * NodeCount parameter).
   */
  const changedClusterTemplates = (name: string, change: (template: ClusterTemplate) => void) =>
    changedAssembly(
      name,
      (file, json) =>
        /^asset\.[0-9a-f]+\.json$/.test(file) &&
        Boolean((json['Parameters'] as Record<string, unknown> | undefined)?.['NodeCount']),
      change,
    );
  /** A copy of the assembly with `change` applied to the controller stack's template. */
  const changedController = (name: string, change: (template: ClusterTemplate) => void) =>
    changedAssembly(name, (file) => file === 'RmqbenchController.template.json', change);

  test(
    'unchanged: the acceptance plan runs to SUCCEEDED: three nodes boot the user data and ' +
      'form one cluster, the load generator boots, the smoke test passes from the VPC through ' +
      'the load balancer, PerfTest runs over SSM and uploads to S3, the leader is killed and ' +
      'healed, results are ingested; no call is denied and the teardown leaves nothing',
    async () => {
      const { twin, env, code, stderr, stdout, log } = await runOnTwin(cdkOut, 41, {
        planYaml: TWIN_AWS_ACCEPTANCE_PLAN_YAML,
      });
      expect({ code, failure: twinFailure({ code, stdout, stderr, log }) }).toEqual({ code: 0, failure: '' });
      expect(log).toMatch(/ClusterNodesASG\w+ CREATE_COMPLETE/);
      expect(log).toMatch(/rmqbench-twin-\S+ CREATE_COMPLETE/);
      const [stack] = [...twin.gateway.clusterStacks.values()];
      // Three nodes and the plan's two load generators (LoadGeneratorCount 2: the template's conditions create the
      // second instance and no other).
      expect(stack!.instances).toHaveLength(5);
      // Each load generator's user data ran to its end (Java, the pinned PerfTest jars checked by their sums).
      const loadGenerators = stack!.instances.filter((instance) => instance.logicalId?.startsWith('LoadGenerator'));
      expect(loadGenerators.map((instance) => instance.result?.status)).toEqual([0, 0]);
      // The smoke test ran in the VPC, reached the load balancer and through it a node (AMQP publish confirmed and
      // consumed).
      expect(log).toMatch(/SmokeTestFunction\S+ runs in the VPC at 10\.91\.41\.\d+/);
      const tasks = [...twin.gateway.executions.executions.values()][0]!.tasks;
      expect(tasks).toEqual(
        expect.arrayContaining([
          'SmokeTest',
          'StartRepetition',
          'InjectFault',
          'HealFault',
          'IngestRepetition',
          'TeardownCluster',
          'FinishRun',
        ]),
      );
      // Both workloads measured through the load balancer, the failover with the verifier's counts.
      expect(stdout).toMatch(/\| three\/steady \| 1\/1 \|/);
      expect(stdout).toMatch(/\| three\/failover #1 \| kill rabbit@10\.91\.41\.\d+ \(leader\)/);
      // The instances called AWS as the node role (sessions named by instance id), through the gateway: secrets, boot
      // log, Auto Scaling, signal.
      const instanceIds = stack!.instances
        .filter((instance) => !instance.logicalId)
        .map((instance) => instance.instanceId);
      expect(instanceIds).toHaveLength(3);
      const nodeCalls = twin.gateway.decisions.filter((decision) =>
        instanceIds.some((id) => decision.principal.endsWith(`/${id}`)),
      );
      expect(nodeCalls.every((decision) => decision.principal.includes('ClusterNo'))).toBe(true);
      expect(new Set(nodeCalls.map((decision) => decision.action))).toEqual(
        new Set([
          'secretsmanager:GetSecretValue',
          'autoscaling:DescribeAutoScalingInstances',
          'autoscaling:DescribeAutoScalingGroups',
          'ec2:DescribeInstances',
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'cloudformation:SignalResource',
          // The CloudWatch agent (the twin's stand-in) publishing host metrics with the node role.
          'cloudwatch:PutMetricData',
        ]),
      );
      // Each load generator read the admin secret and uploaded its raw files as its own role.
      for (const generator of loadGenerators) {
        const calls = twin.gateway.decisions.filter((decision) =>
          decision.principal.endsWith(`/${generator.instanceId}`),
        );
        expect(calls.map((decision) => decision.action)).toEqual(
          expect.arrayContaining(['secretsmanager:GetSecretValue', 's3:PutObject']),
        );
      }
      expect(twin.gateway.decisions.filter((decision) => !decision.allowed)).toEqual([]);
      // The run is in the twin's DynamoDB.
      const runs = rmqbenchAsync(env, 'runs', '--store', 'aws', '--json');
      expect(await runs.exited).toBe(0);
      const stored = JSON.parse(runs.stdout) as { runId: string; planName: string; status: string }[];
      expect(stored).toEqual(
        expect.arrayContaining([expect.objectContaining({ planName: 'twin', status: 'SUCCEEDED' })]),
      );
      // Each repetition was run by both generators: their shares, their own figures and the measured start skew.
      const show = rmqbenchAsync(env, 'show', stored[0]!.runId, '--store', 'aws', '--json');
      expect(await show.exited).toBe(0);
      const { repetitions } = JSON.parse(show.stdout) as {
        repetitions: {
          loadGenerators?: { id: string; queues: string[]; sendRate: number; cpuPercent?: number }[];
          startSkewMs?: number;
          metricsError?: string;
          metrics?: { series: { node: string; metric: string; points: [number, number][] }[] };
        }[];
      };
      for (const repetition of repetitions) {
        expect(repetition.loadGenerators?.map((generator) => generator.id)).toEqual(['lg-1', 'lg-2']);
        expect(repetition.loadGenerators!.every((generator) => generator.sendRate > 0)).toBe(true);
        expect(repetition.startSkewMs).toEqual(expect.any(Number));
        // Host metrics: the agents' PutMetricData (instance roles) read back by IngestRepetition (its role, the
        // function's CloudWatch client): CPU per node instance and per load generator, each its own node.
        expect(repetition.metricsError).toBeUndefined();
        const cpuNodes = (repetition.metrics?.series ?? [])
          .filter((series) => series.metric === 'cpuPercent' && series.points.length > 0)
          .map((series) => series.node);
        expect(new Set(cpuNodes)).toEqual(new Set([...instanceIds, 'load-generator-lg-1', 'load-generator-lg-2']));
        expect(repetition.loadGenerators!.every((generator) => generator.cpuPercent !== undefined)).toBe(true);
        // Broker metrics: the management API sampler's queue depths, from the load generator's raw output.
        expect(repetition.metrics?.series.some((series) => series.metric === 'queueDepth')).toBe(true);
      }
      // The teardown's DeleteStack removed every instance, namespace and folder.
      expect(stack!.deleted).toBe(true);
      expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
    },
  );

  test(
    'the node security group without its Erlang distribution rule (25672): the nodes cannot ' +
      'cluster, the group fails and the failure names the dropped port between two instances',
    async () => {
      const assembly = changedClusterTemplates('no-25672', (template) => {
        const ids = Object.keys(template.Resources).filter(
          (id) =>
            template.Resources[id]!.Type === 'AWS::EC2::SecurityGroupIngress' &&
            template.Resources[id]!.Properties?.['FromPort'] === 25672,
        );
        expect(ids).toHaveLength(1);
        delete template.Resources[ids[0]!];
      });
      // Only to end the run sooner: the twin fails the group 10 s after the first dropped packet instead of 90 s (no
      // node can join without 25672, however long it waits).
      const { twin, code, stderr } = await runOnTwin(assembly, 42, { blockedBootSeconds: 10 });
      expect(code).toBe(1);
      const [stack] = [...twin.gateway.clusterStacks.values()];
      const instanceIds = stack!.instances.map((instance) => instance.instanceId);
      expect(stderr).toMatch(
        new RegExp(
          String.raw`ClusterNodesASG\w+ \(AWS::AutoScaling::AutoScalingGroup\) CREATE_FAILED: .*security groups ` +
            String.raw`sg-\w+ of i-\w+ dropped tcp from i-\w+ \(10\.91\.42\.\d+\) to port 25672: no ingress rule ` +
            String.raw`allows it`,
        ),
      );
      const named = /of (i-\w+) dropped tcp from (i-\w+) /.exec(stderr)!;
      expect(instanceIds).toEqual(expect.arrayContaining([named[1], named[2]]));
      expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
    },
  );

  test("the load generator's role without GetSecretValue: the error names the action and the role", async () => {
    const assembly = changedClusterTemplates('no-loadgen-secret', (template) => {
      expect(withoutSecretReads(template, /^LoadGeneratorRoleDefaultPolicy/)).toBe(1);
    });
    // The acceptance plan on one node: both repetitions fail at the secret read, before a second node could matter.
    // Its fault due at 3 s instead of 15: the fault step finds the PerfTest command ended either way.
    const planYaml = TWIN_PLAN_YAML.replace('nodes: 3', 'nodes: 1').replace(
      'atSeconds: 15, healAtSeconds: 25',
      'atSeconds: 3, healAtSeconds: 5',
    );
    expect(planYaml).not.toBe(TWIN_PLAN_YAML);
    const { twin, code, stderr, stdout } = await runOnTwin(assembly, 44, { planYaml });
    expect(code).toBe(1);
    const [stack] = [...twin.gateway.clusterStacks.values()];
    const loadGenerator = stack!.instances.find((instance) => instance.logicalId?.startsWith('LoadGeneratorInstance'));
    // The boot itself reads no secret: the call was refused when the command ran, and the boot did not fail on its own.
    // It ended 0, or, on a busy machine, was still installing when the failed run's teardown stopped the instance (the
    // harness's -1: ended by a signal), as a real instance still booting is terminated by DeleteStack.
    expect([0, -1]).toContain(loadGenerator?.result?.status);
    const denied = twin.gateway.decisions.filter((decision) => !decision.allowed);
    expect(
      denied.map((decision) => [decision.action, decision.principal.endsWith(`/${loadGenerator!.instanceId}`)]),
    ).toContainEqual(['secretsmanager:GetSecretValue', true]);
    const output = `${stdout}\n${stderr}`;
    // Each repetition's error carries the CLI's refusal (which names the role's session and the action) and the
    // script's line saying what it means.
    expect(output).toContain('three/steady #1: the SSM command ended Failed (exit code 1): ');
    expect(output).toMatch(
      /assumed-role\/[^/\s]*LoadGenerator[^/\s]*\/i-\w+ is not authorized to perform: secretsmanager:GetSecretValue/,
    );
    expect(output).toContain(
      'with its instance role (it needs secretsmanager:GetSecretValue on that secret); PerfTest did not start',
    );
    // The fault workload's repetition failed the same way before its fault was due: the run's error says so, not that
    // the verifier's queue is missing.
    expect(output).toMatch(
      /Error: no fault was injected: the repetition's PerfTest command had already ended: command \S+ on i-\w+ /,
    );
    expect(stack!.deleted).toBe(true);
    expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
  });

  test(
    "the node role without GetSecretValue: the node's boot signals FAILURE and the run's error carries the last " +
      'lines of its boot log, read back from CloudWatch Logs as CheckCluster',
    async () => {
      const assembly = changedClusterTemplates('no-node-secret', (template) => {
        expect(withoutSecretReads(template, /NodeRoleDefaultPolicy/)).toBeGreaterThan(0);
        // Only to end the run sooner: the boot's secret read makes its 12 attempts one after the other instead of 10 s
        // apart (it is refused every time without the grant).
        const [, launchTemplate] = Object.entries(template.Resources).find(
          ([, resource]) => resource.Type === 'AWS::EC2::LaunchTemplate',
        )!;
        const text = JSON.stringify(launchTemplate.Properties);
        expect(text).toContain('sleep 10; done; return 1; }');
        launchTemplate.Properties = JSON.parse(
          text.replace('sleep 10; done; return 1; }', 'sleep 0; done; return 1; }'),
        );
      });
      const { twin, code, stderr } = await runOnTwin(assembly, 45, { planYaml: ONE_NODE_PLAN_YAML });
      expect(code).toBe(1);
      const [stack] = [...twin.gateway.clusterStacks.values()];
      const node = stack!.instances.find((instance) => !instance.logicalId)!;
      // The node's own call was refused, and its boot log went to CloudWatch Logs as the node role.
      const nodeDecisions = twin.gateway.decisions.filter((decision) =>
        decision.principal.endsWith(`/${node.instanceId}`),
      );
      expect(nodeDecisions.filter((decision) => !decision.allowed).map((decision) => decision.action)).toContain(
        'secretsmanager:GetSecretValue',
      );
      // The run's error: the group's failure and the boot log's tail, which CheckCluster's role read (GetLogEvents).
      expect(stderr).toMatch(/CREATE_FAILED/);
      expect(stderr).toContain(`last boot log lines of ${node.instanceId}/boot`);
      expect(stderr).toMatch(/not authorized to perform: secretsmanager:GetSecretValue/);
      expect(
        twin.gateway.decisions.filter(
          (decision) => decision.action === 'logs:GetLogEvents' && decision.principal.includes('CheckCluster'),
        ),
      ).toEqual([expect.objectContaining({ allowed: true })]);
      expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
    },
  );

  test(
    "the smoke-test function's security group without its AMQP egress to the cluster subnets: " +
      'the smoke test cannot reach the load balancer and the twin names the dropped port',
    async () => {
      const assembly = changedController('no-smoke-egress', (template) => {
        const [, group] = Object.entries(template.Resources).find(
          ([id, resource]) =>
            id.startsWith('ControllerSmokeTestSecurityGroup') && resource.Type === 'AWS::EC2::SecurityGroup',
        )!;
        const egress = group.Properties!['SecurityGroupEgress'] as { FromPort: number }[];
        const kept = egress.filter((rule) => rule.FromPort !== 5672);
        expect(kept.length).toBeLessThan(egress.length);
        group.Properties!['SecurityGroupEgress'] = kept;
        // Only to end the run sooner: one retry 1 s later instead of three 20, 40 and 80 s apart
        // (state-machines/phases.ts SMOKE_TEST_RETRY), so it is tried twice (the retry path still runs) instead of four
        // times, and each try waits out 5 s of dropped packets instead of 20 s (SMOKE_TEST_TIMEOUT_SECONDS,
        // lambdas/smoke-test/index.ts).
        const [, smokeFunction] = Object.entries(template.Resources).find(
          ([id, resource]) => id.startsWith('ControllerSmokeTestFunction') && resource.Type === 'AWS::Lambda::Function',
        )!;
        const environment = (smokeFunction.Properties!['Environment'] ??= { Variables: {} }) as {
          Variables?: Record<string, string>;
        };
        environment.Variables = { ...environment.Variables, SMOKE_TEST_TIMEOUT_SECONDS: '5' };
        const smokeRetry = '{"ErrorEquals":["Error"],"IntervalSeconds":20,"MaxAttempts":3,"BackoffRate":2}';
        const [machine] = Object.values(template.Resources).filter(
          (resource) => resource.Type === 'AWS::StepFunctions::StateMachine',
        );
        const definition = machine!.Properties!['DefinitionString'] as string;
        expect(definition).toContain(smokeRetry);
        machine!.Properties!['DefinitionString'] = definition.replace(
          smokeRetry,
          smokeRetry.replace('20', '1').replace('"MaxAttempts":3', '"MaxAttempts":1').replace(':2}', ':1}'),
        );
      });
      // One node: the run ends at the smoke test, and one instance boots sooner than three on a busy machine.
      const { code, stderr, log } = await runOnTwin(assembly, 43, { planYaml: ONE_NODE_PLAN_YAML });
      expect(code).toBe(1);
      expect(stderr).toMatch(
        /smoke test: could not connect to amqp:\/\/\S+\.elb\.us-east-1\.amazonaws\.com:5672 within 5 s/,
      );
      expect(log).toMatch(
        new RegExp(
          String.raw`security groups sg-\w+ of the function at 10\.91\.43\.\d+ dropped tcp to 10\.91\.43\.4 ` +
            String.raw`port 5672: no egress rule allows it`,
        ),
      );
    },
  );
});
