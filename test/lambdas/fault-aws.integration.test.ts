/**
 * The AWS fault step (lambdas/fault/aws.ts) with the real SDK v3 EC2 and SSM clients against moto: which instances
 * are the run's nodes, which one the fault hits, and what is sent to it. moto takes SendCommand and answers every
 * invocation with Success and empty output, so the scripts' own behaviour is tested where they run for
 * real (test/simulated-vm/aws-node.integration.test.ts); an empty answer to the leader query shows that no node is
 * guessed. CloudFormation tags a group's instances with aws:cloudformation:stack-name
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-autoscaling-autoscalinggroup-tagproperty.html);
 * here the instances are launched with the tags the stack would give them.
 */
import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  EC2Client,
  RunInstancesCommand,
  StopInstancesCommand,
} from '@aws-sdk/client-ec2';
import { SSMClient } from '@aws-sdk/client-ssm';
import { faultScript, healScript, queueLeadersScript } from '../../core/failover/cloud-fault';
import { applyAwsFault, clusterNodes, healAwsFault, NODE_COMPONENT, type AwsFaultEvent } from '../../lambdas/fault/aws';
import { clusterScopedSsm } from '../../lambdas/fault/cluster-scoped-ssm';
import { buildSchedule } from '../../state-machines/schedule';
import { motoClientConfig, startMoto, type Moto } from '../cloud/moto';

jest.setTimeout(120_000);

const STACK = 'rmqbench-run1-c1';

describe('the AWS fault step against moto (real SDK v3 EC2 and SSM clients)', () => {
  let moto: Moto;
  let ec2: EC2Client;
  let ssm: SSMClient;
  let nodeIds: string[];

  const launch = async (count: number, tags: Record<string, string>) => {
    const image = (await ec2.send(new DescribeImagesCommand({}))).Images![0]!.ImageId!;
    const response = await ec2.send(
      new RunInstancesCommand({
        ImageId: image,
        MinCount: count,
        MaxCount: count,
        InstanceType: 'm5.large',
        TagSpecifications: [
          { ResourceType: 'instance', Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
        ],
      }),
    );
    return response.Instances!.map((instance) => instance.InstanceId!);
  };

  beforeAll(async () => {
    moto = await startMoto();
    ec2 = new EC2Client(motoClientConfig(moto));
    ssm = new SSMClient(motoClientConfig(moto));
    ssm.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendCommandCommand') {
          const input = args.input as {
            InstanceIds?: string[];
            DocumentName?: string;
            Parameters?: Record<string, string[]>;
          };
          sent.push({
            instanceIds: input.InstanceIds,
            document: input.DocumentName,
            script: input.Parameters?.commands?.[0],
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'recordSendCommand' },
    );
    // Each command reaches moto and gets its id there.
    const nodeTags = {
      'aws:cloudformation:stack-name': STACK,
      'rmqbench:component': NODE_COMPONENT,
      'rmqbench:run-id': 'run1',
    };
    nodeIds = await launch(3, nodeTags);
    // Not nodes of this run: its load generator, a node of another run's stack, and a node of this stack that is
    // stopped.
    await launch(1, { 'aws:cloudformation:stack-name': STACK, 'rmqbench:component': 'load-generator' });
    await launch(1, { ...nodeTags, 'aws:cloudformation:stack-name': 'rmqbench-run2-c1' });
    const [stopped] = await launch(1, nodeTags);
    await ec2.send(new StopInstancesCommand({ InstanceIds: [stopped!] }));
  });
  afterAll(async () => {
    ec2?.destroy();
    ssm?.destroy();
    await moto?.stop();
  });

  const event = (fault: Record<string, unknown>, applied?: AwsFaultEvent['applied']): AwsFaultEvent => {
    const plan = {
      name: 'f',
      clusters: [{ name: 'c', nodes: 3, instanceType: 'm5.large', topology: { type: 'quorum' } }],
      workloads: [{ name: 'w', durationSeconds: 30, fault }],
    };
    // The step reads the fault from the plan the execution carries; the item only names the scenario (scheduled from
    // the same plan without its fault, as the local target's rules refuse partition).
    const unfaulted = { ...plan, workloads: plan.workloads.map(({ fault: _fault, ...workload }) => workload) };
    const item = buildSchedule({ plan: unfaulted, target: 'local' }, 'run1').clusters[0]!.repetitions[0]!;
    return {
      action: applied ? 'heal' : 'inject',
      runId: 'run1',
      plan,
      item,
      launch: { clusterId: STACK },
      started: { startedAt: '2026-11-23T10:00:00.000Z' },
      ...(applied ? { applied } : {}),
    };
  };
  const timing = (at: string) => ({ deadline: new Date(Date.now() + 60_000), pollMs: 10, now: () => new Date(at) });
  /**
   * Every SendCommand input the client sent, recorded on its way out (moto answers it). moto's own record is no
   * witness here: its Command adds every instance of the account when the request has no Targets (moto/ssm/models.py,
   * Command._get_instance_ids_from_targets with empty filters), which the real service does not do.
   */
  const sent: { instanceIds?: string[]; document?: string; script?: string }[] = [];
  const commands = async () => sent.length;
  const sentSince = async (before: number) => sent.slice(before);

  test(
    "the run's nodes are the running instances of its cluster stack tagged as nodes: " +
      "not its load generator, not another run's, not a stopped one",
    async () => {
      const nodes = await clusterNodes(ec2, STACK);
      expect(nodes.map((node) => node.id).sort()).toEqual([...nodeIds].sort());
      const described = (await ec2.send(new DescribeInstancesCommand({ InstanceIds: nodeIds }))).Reservations!.flatMap(
        (reservation) => reservation.Instances!,
      );
      for (const node of nodes)
        expect(node.nodeName).toBe(
          `rabbit@${described.find((instance) => instance.InstanceId === node.id)!.PrivateIpAddress}`,
        );
    },
  );

  test(
    "a kill of node 1 sends the kill script for that node's name to that " +
      'instance only, with AWS-RunShellScript, and reports when it was applied',
    async () => {
      const before = await commands();
      const nodes = await clusterNodes(ec2, STACK);
      const applied = await applyAwsFault(
        { ec2, ssm },
        event({ action: 'kill', node: 1, atSeconds: 10, healAtSeconds: 20 }),
        timing('2026-11-23T10:00:12.500Z'),
      );
      expect(applied).toEqual({
        nodeName: nodes[1]!.nodeName,
        instanceId: nodes[1]!.id,
        appliedAt: '2026-11-23T10:00:12.500Z',
        appliedAtSeconds: 12.5,
      });
      expect(await sentSince(before)).toEqual([
        {
          instanceIds: [nodes[1]!.id],
          document: 'AWS-RunShellScript',
          script: faultScript('kill', nodes[1]!.nodeName),
        },
      ]);
    },
  );

  test(
    'the heal starts the broker on the instance the fault hit; ' +
      "an instance that is not a running node of the run's stack is refused",
    async () => {
      const nodes = await clusterNodes(ec2, STACK);
      const before = await commands();
      const healed = await healAwsFault(
        { ec2, ssm },
        event(
          { action: 'stop', node: 2, atSeconds: 10, healAtSeconds: 20 },
          {
            nodeName: nodes[2]!.nodeName,
            instanceId: nodes[2]!.id,
            appliedAt: '2026-11-23T10:00:10.000Z',
            appliedAtSeconds: 10,
          },
        ),
        timing('2026-11-23T10:00:21.000Z'),
      );
      expect(healed).toEqual({
        nodeName: nodes[2]!.nodeName,
        healedAt: '2026-11-23T10:00:21.000Z',
        healedAtSeconds: 21,
      });
      expect(await sentSince(before)).toEqual([
        { instanceIds: [nodes[2]!.id], document: 'AWS-RunShellScript', script: healScript(nodes[2]!.nodeName, 'stop') },
      ]);
      const foreign = (await clusterNodes(ec2, 'rmqbench-run2-c1'))[0]!;
      await expect(
        healAwsFault(
          { ec2, ssm },
          event(
            { action: 'stop', node: 0, atSeconds: 10, healAtSeconds: 20 },
            { ...foreign, instanceId: foreign.id, appliedAt: '', appliedAtSeconds: 0 },
          ),
          timing('2026-11-23T10:00:21.000Z'),
        ),
      ).rejects.toThrow(
        `${foreign.nodeName} (${foreign.id}) is no longer a running ` +
          `node of cluster stack ${STACK}, so it cannot be healed`,
      );
    },
  );

  test(
    '"leader" asks a node for the queues first; an answer that ' +
      'names no leader fails the step without faulting any node',
    async () => {
      const before = await commands();
      // moto answers every command with empty output: no queue list, so no leader.
      await expect(
        applyAwsFault(
          { ec2, ssm },
          event({ action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 }),
          timing('2026-11-23T10:00:10.000Z'),
        ),
      ).rejects.toThrow(/the queue listing printed no queues and hosts/);
      const sent = await sentSince(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.script).toBe(queueLeadersScript());
    },
  );

  test(
    'with FaultNodeRole, every SSM call runs on credentials assumed ' +
      "with the cluster's stack as the rmqbench:cluster-stack session tag",
    async () => {
      const assumeRoleInputs: unknown[] = [];
      const recordAssumeRole = {
        applyToStack: (stack: { add: (middleware: unknown, options: { step: 'initialize'; name: string }) => void }) =>
          stack.add(
            (next: (args: { input: unknown }) => Promise<unknown>) => async (args: { input: unknown }) => {
              assumeRoleInputs.push(args.input);
              return next(args);
            },
            { step: 'initialize', name: 'recordAssumeRole' },
          ),
      };
      const roleArn = 'arn:aws:iam::123456789012:role/rmqbench-FaultNodeRole';
      const scoped = clusterScopedSsm(roleArn, STACK, {
        ssmConfig: { endpoint: moto.endpoint, region: 'us-east-1' },
        stsConfig: motoClientConfig(moto),
        stsPlugins: [recordAssumeRole as never],
      });
      const signedBy: string[] = [];
      scoped.middlewareStack.add(
        (next) => async (args) => {
          signedBy.push(String((args.request as { headers: Record<string, string> }).headers.authorization ?? ''));
          return next(args);
        },
        { step: 'finalizeRequest', name: 'recordSigner' },
      );
      await applyAwsFault(
        { ec2, ssm: scoped },
        event({ action: 'kill', node: 0, atSeconds: 10, healAtSeconds: 20 }),
        timing('2026-11-23T10:00:10.000Z'),
      );
      expect(assumeRoleInputs).toEqual([
        {
          RoleArn: roleArn,
          RoleSessionName: `rmqbench-fault-${STACK}`,
          Tags: [{ Key: 'rmqbench:cluster-stack', Value: STACK }],
          DurationSeconds: 900,
        },
      ]);
      // SendCommand and GetCommandInvocation are signed with moto's temporary key (ASIA…), never the caller's own.
      expect(signedBy.length).toBeGreaterThanOrEqual(2);
      for (const authorization of signedBy) expect(authorization).toMatch(/Credential=ASIA[A-Z0-9]+\//);
      scoped.destroy();
    },
  );

  test(
    'a partition of node 0 sends the partition script (nftables table of its own) to that ' +
      'instance only; its heal sends the script that deletes the table, to the same instance',
    async () => {
      const nodes = await clusterNodes(ec2, STACK);
      const before = await commands();
      const fault = { action: 'partition', node: 0, atSeconds: 10, healAtSeconds: 20 };
      const applied = await applyAwsFault({ ec2, ssm }, event(fault), timing('2026-11-23T10:00:10.000Z'));
      expect(applied).toEqual({
        nodeName: nodes[0]!.nodeName,
        instanceId: nodes[0]!.id,
        appliedAt: '2026-11-23T10:00:10.000Z',
        appliedAtSeconds: 10,
      });
      const healed = await healAwsFault({ ec2, ssm }, event(fault, applied), timing('2026-11-23T10:00:20.000Z'));
      expect(healed).toEqual({
        nodeName: nodes[0]!.nodeName,
        healedAt: '2026-11-23T10:00:20.000Z',
        healedAtSeconds: 20,
      });
      expect(await sentSince(before)).toEqual([
        {
          instanceIds: [nodes[0]!.id],
          document: 'AWS-RunShellScript',
          script: faultScript('partition', nodes[0]!.nodeName),
        },
        {
          instanceIds: [nodes[0]!.id],
          document: 'AWS-RunShellScript',
          script: healScript(nodes[0]!.nodeName, 'partition'),
        },
      ]);
      expect(sent.at(-2)!.script).toContain('table inet rmqbench_partition {');
      expect(sent.at(-1)!.script).toContain('nft delete table inet rmqbench_partition');
      expect(sent.at(-1)!.script).not.toContain('systemctl start');
    },
  );
});
