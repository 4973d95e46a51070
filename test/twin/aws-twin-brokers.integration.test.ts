import { rmqbenchAsync } from '../cloud/cli-child';
import type { SimulatedInstance } from './cluster-stack';
import { failoverSummaries, TWIN_AWS_BROKERS_PLAN_YAML, type Faulted } from './twin-cli';
import { twinFailure, twinTestSetup } from './twin-test-setup';

jest.setTimeout(900_000);

type ClusterTemplate = { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };

/**
 * The twin's stage 2a for the brokers without a load balancer (docs/verification.md "The cloud twin"): `rmqbench run
 * --target aws` of a Kafka and NATS plan against the twin, which creates the controller's 3-broker Kafka and 3-server
 * NATS templates as the launch function asks for them (at once, as the workflow launches a plan's clusters): each
 * node's network interface and private zone name, its own creation policy, the load generator with Kafka's tools or
 * Go; the smoke tests and repetitions run on the load generators over SSM and upload to S3 as their roles.
 */
describe('the AWS twin runs Kafka and NATS on the controller’s broker cluster templates', () => {
  const { cdkOut, runOnTwin, changedAssembly } = twinTestSetup();
  /** A copy of the assembly with `change` applied to every Kafka cluster template it uploads (BootstrapServers). */
  const changedKafkaTemplates = (name: string, change: (template: ClusterTemplate) => void) =>
    changedAssembly<ClusterTemplate>(
      name,
      (file, json) =>
        /^asset\.[0-9a-f]+\.json$/.test(file) &&
        Object.keys((json as { Outputs?: Record<string, unknown> }).Outputs ?? {}).some((key) =>
          key.includes('BootstrapServers'),
        ),
      change,
    );

  test(
    'unchanged: the Kafka brokers form one quorum and the NATS servers one meta group by their zone names on their ' +
      'interfaces; each load generator runs the smoke test and the repetition (the NATS one builds the load ' +
      'client from the module proxy); results are ingested, no call is denied, nothing is left',
    async () => {
      const { twin, env, code, stderr, stdout, log } = await runOnTwin(cdkOut, {
        clusterSubnets: 46,
        planYaml: TWIN_AWS_BROKERS_PLAN_YAML,
      });
      expect({ code, failure: twinFailure({ code, stdout, stderr, log }) }).toEqual({ code: 0, failure: '' });
      const stacks = [...twin.gateway.clusterStacks.values()];
      expect(stacks).toHaveLength(2);
      const brokerInstanceIds: string[] = [];
      for (const [prefix, count] of [
        ['KafkaBroker', 3],
        ['NatsServer', 3],
      ] as const) {
        for (let node = 1; node <= count; node++)
          expect(log).toMatch(new RegExp(`${prefix}${node}\\w+ CREATE_COMPLETE`));
        const stack = stacks.find((candidate) => candidate.instances.some((i) => i.logicalId?.startsWith(prefix)))!;
        const nodes = stack.instances.filter((instance) => instance.logicalId?.startsWith(prefix));
        // Each node at its interface's address, which the twin gave the interface when the stack was created.
        expect(nodes.map((node) => Number(node.vm.ip.split('.')[3])).sort()).toEqual([20, 21, 22]);
        for (const node of nodes) expect(node.result?.status).toBe(0);
        // They called AWS as their own role: boot log, signal and the CloudWatch agent's host metrics only.
        const calls = twin.gateway.decisions.filter((decision) =>
          nodes.some((node: SimulatedInstance) => decision.principal.endsWith(`/${node.instanceId}`)),
        );
        expect(new Set(calls.map((decision) => decision.action))).toEqual(
          new Set([
            'logs:CreateLogStream',
            'logs:PutLogEvents',
            'cloudformation:SignalResource',
            'cloudwatch:PutMetricData',
          ]),
        );
        brokerInstanceIds.push(...nodes.map((node) => node.instanceId));
        const loadGenerator = stack.instances.find((instance) =>
          instance.logicalId?.startsWith('LoadGeneratorInstance'),
        );
        expect(loadGenerator?.result?.status).toBe(0);
        const uploads = twin.gateway.decisions.filter((decision) =>
          decision.principal.endsWith(`/${loadGenerator!.instanceId}`),
        );
        expect(uploads.map((decision) => decision.action)).toContain('s3:PutObject');
        expect(stack.deleted).toBe(true);
        expect(stack.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
      }
      // The NATS load client's modules came from the module proxy, reached through the load generator's egress.
      expect(stacks.flatMap((stack) => stack.requestsAtDeletion).join('\n')).toMatch(
        /goproxy GET \/github\.com\/nats-io\/nats\.go\/@v\//,
      );
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
      // The CLI announced each cluster as what it is.
      expect(`${stdout}${stderr}`).toContain('starting a 3-broker Kafka cluster (KRaft)...');
      expect(`${stdout}${stderr}`).toContain('starting a 3-node NATS JetStream cluster...');
      expect(stdout).toMatch(/\| kafka-three\/kafka-steady \| 1\/1 \|/);
      expect(stdout).toMatch(/\| nats-three\/nats-steady \| 1\/1 \|/);
      expect(twin.gateway.decisions.filter((decision) => !decision.allowed)).toEqual([]);
      const shown = rmqbenchAsync(env, 'runs', '--store', 'aws', '--json');
      expect(await shown.exited).toBe(0);
      const runs = JSON.parse(shown.stdout) as { runId: string; planName: string; status: string }[];
      expect(runs).toEqual(
        expect.arrayContaining([expect.objectContaining({ planName: 'twin-brokers', status: 'SUCCEEDED' })]),
      );
      // Host metrics of every broker and of the load generators, from their agents through CloudWatch.
      const show = rmqbenchAsync(
        env,
        'show',
        runs.find((run) => run.planName === 'twin-brokers')!.runId,
        '--store',
        'aws',
        '--json',
      );
      expect(await show.exited).toBe(0);
      const { repetitions } = JSON.parse(show.stdout) as {
        repetitions: ({ metricsError?: string; metrics?: { series: { node: string; metric: string }[] } } & Faulted)[];
      };
      const cpuNodes = repetitions.flatMap((repetition) =>
        (repetition.metrics?.series ?? []).filter((one) => one.metric === 'cpuPercent').map((one) => one.node),
      );
      expect(repetitions.map((repetition) => repetition.metricsError)).toEqual(repetitions.map(() => undefined));
      // Each leader was killed and started again through SSM as the fault node role (named by its tags), and the
      // verifier beside the load counted what that cost: every confirmed message of its topic or stream consumed.
      expect(failoverSummaries(repetitions)).toEqual([
        { node: expect.stringMatching(/^kafka-[123]$/), counted: true, lost: 0, healed: true },
        { node: expect.stringMatching(/^nats-[123]$/), counted: true, lost: 0, healed: true },
      ]);
      // SendCommand on the brokers themselves (leader query, kill, start), allowed by their component tags.
      const brokerCommands = twin.gateway.decisions.filter(
        (decision) =>
          decision.action === 'ssm:SendCommand' && brokerInstanceIds.some((id) => decision.resource.endsWith(`/${id}`)),
      );
      expect(brokerCommands.length).toBeGreaterThanOrEqual(6);
      expect(new Set(brokerCommands.map((decision) => decision.principal.split('/')[1]))).toHaveProperty('size', 1);
      expect(cpuNodes).toEqual(expect.arrayContaining(brokerInstanceIds));
      expect(cpuNodes.filter((node) => node.startsWith('load-generator'))).toHaveLength(repetitions.length);
    },
  );

  test(
    'the broker security group without its KRaft controller rule (9093): the brokers cannot form a quorum, the ' +
      'first broker fails and the failure names the dropped port between two brokers; nothing is left',
    async () => {
      const assembly = changedKafkaTemplates('no-9093', (template) => {
        const ids = Object.keys(template.Resources).filter(
          (id) =>
            template.Resources[id]!.Type === 'AWS::EC2::SecurityGroupIngress' &&
            template.Resources[id]!.Properties?.['FromPort'] === 9093,
        );
        expect(ids).toHaveLength(1);
        delete template.Resources[ids[0]!];
      });
      // Only to end the run sooner: no broker can reach a voter without 9093, however long it waits.
      const { twin, code, stderr } = await runOnTwin(assembly, {
        clusterSubnets: 48,
        planYaml: TWIN_AWS_BROKERS_PLAN_YAML.replace(/\n {2}- \{ name: nats-three.*\n/, '\n').replace(
          /\n {2}- \{ name: nats-steady.*\n/,
          '\n',
        ),
        blockedBootSeconds: 10,
      });
      expect(code).toBe(1);
      expect(stderr).toMatch(
        new RegExp(
          String.raw`KafkaBroker\d\w+ \(AWS::EC2::Instance\) CREATE_FAILED: .*security groups sg-\w+ of i-\w+ ` +
            String.raw`dropped tcp from i-\w+ \(10\.91\.48\.2\d\) to port 9093: no ingress rule allows it`,
        ),
      );
      const [stack] = [...twin.gateway.clusterStacks.values()];
      expect(stack!.deleted).toBe(true);
      expect(stack!.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
    },
  );
});
