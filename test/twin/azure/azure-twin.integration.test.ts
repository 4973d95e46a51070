/**
 * The Azure twin end to end (issue 23): examples/controller synthesized with Azure, deployed into the AWS twin, and
 * `rmqbench run --target azure`, unchanged, against it. The functions reach the twin's ARM and Entra ID from where
 * they run; ARM deploys bicep/main.bicep, evaluated, into simulated VMs (3 RabbitMQ nodes behind the internal and the
 * public load balancer, a load generator); the smoke test reaches the public load balancer from the NAT gateway's
 * Elastic IP, PerfTest runs by Run Command and uploads to the twin's S3, the fault step kills the leader by Run
 * Command, and the resource group is deleted. A change to one thing in the synthesized assembly makes the run fail
 * where Azure would fail it, and the twin names the hop.
 */
import { rmqbenchAsync } from '../../cloud/cli-child';
import { TWIN_AZURE_PLAN_YAML } from '../twin-cli';
import { TWIN_FAULT_PRINCIPAL } from './azure-twin';
import { LAMBDA_PUBLIC_ADDRESS } from './function-network';
import { azureTwinTestSetup, type ControllerTemplate } from './azure-twin-test-setup';

jest.setTimeout(900_000);

/** A one-node cluster of the acceptance plan's size, for a run that fails at readiness. */
const ONE_NODE_PLAN_YAML = `name: twin-one
repetitions: 1
clusters:
  - { name: one, nodes: 1, instanceType: Standard_D2s_v5 }
workloads:
  - { name: steady, producers: 1, consumers: 1, messageCount: 3000, durationSeconds: 60, publishRateLimit: 200 }
`;

describe('the Azure twin runs rmqbench run --target azure on the example controller synthesized with Azure', () => {
  const { runOnTwin: run, rawOutputs } = azureTwinTestSetup();
  const runOnTwin = (change?: (template: ControllerTemplate) => void) => run(TWIN_AZURE_PLAN_YAML, change);

  test('unchanged: SUCCEEDED, both repetitions stored, failover counted, no call denied, group deleted', async () => {
    const { twin, env, code, stdout, stderr, log } = await runOnTwin();
    // The CLI's error last: a long failure message is shown by its head and tail.
    if (code !== 0)
      throw new Error(`exit ${code}\n${await rawOutputs(twin)}\n${log.slice(-3000)}\n${stderr.slice(-3000)}`);
    expect(stdout).toContain('status **SUCCEEDED**');
    // The smoke test came from the NAT gateway's Elastic IP (the only source the NSG admits besides the user's).
    expect(log).toMatch(/CheckClusterFunction\S* runs in the VPC, leaving through the NAT gateway's [\d.]+/);
    expect(twin.aws.gateway.decisions.filter((decision) => !decision.allowed)).toEqual([]);
    const runs = rmqbenchAsync(env, 'runs', '--store', 'aws', '--json');
    expect(await runs.exited).toBe(0);
    const [run] = JSON.parse(runs.stdout) as { runId: string; planName: string; status: string; target: string }[];
    expect(run).toMatchObject({ planName: 'twin', status: 'SUCCEEDED' });
    const show = rmqbenchAsync(env, 'show', run!.runId, '--store', 'aws', '--json');
    expect(await show.exited).toBe(0);
    const repetitions = (
      JSON.parse(show.stdout) as {
        repetitions: {
          status: string;
          failover?: unknown;
          loadGenerators?: { id: string; cpuPercent?: number }[];
          metricsError?: string;
          metrics?: { source?: string; series: { node: string; metric: string }[] };
        }[];
      }
    ).repetitions;
    expect(repetitions.map((repetition) => repetition.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    // Both of the plan's load generator VMs ran each repetition's share, uploading under generator-<i>/.
    for (const repetition of repetitions)
      expect(repetition.loadGenerators?.map((generator) => generator.id)).toEqual(['lg-1', 'lg-2']);
    // Host metrics read through the twin's Azure Monitor (platform-metrics.ts): each node's CPU under its VM name, and
    // each load generator's under its own node.
    for (const repetition of repetitions) {
      expect(repetition.metricsError ?? '').not.toMatch(/metrics unavailable/);
      const cpu = new Set(
        repetition.metrics!.series.filter((one) => one.metric === 'cpuPercent').map((one) => one.node),
      );
      expect([...cpu].filter((node) => node.startsWith('rmqbench-vmss_'))).toHaveLength(3);
      expect([...cpu].filter((node) => node.startsWith('load-generator')).sort()).toEqual([
        'load-generator-lg-1',
        'load-generator-lg-2',
      ]);
      // Each generator's CPU from the minutes that overlap its measured seconds.
      expect(repetition.loadGenerators!.map((generator) => typeof generator.cpuPercent)).toEqual(['number', 'number']);
      // Broker metrics: the management API sampler's queue depths, from the load generator's raw output.
      expect(repetition.metrics!.series.some((series) => series.metric === 'queueDepth')).toBe(true);
    }
    expect(repetitions.some((repetition) => repetition.failover !== undefined)).toBe(true);
    // The fault step ran as the fault-only principal, allowed by the run's own role assignment (arm-authorization.ts).
    const clientOf = (authorization?: string) =>
      twin.cloud.entra.issued.get(authorization?.replace(/^Bearer /, '') ?? '');
    const faultCommands = twin.cloud.arm.requests.filter(
      (request) => request.method === 'PUT' && /\/runCommands\/rmqbench-fault-/.test(request.path),
    );
    expect(faultCommands.length).toBeGreaterThan(0);
    expect(new Set(faultCommands.map((request) => clientOf(request.authorization)))).toEqual(
      new Set([TWIN_FAULT_PRINCIPAL.clientId]),
    );
    expect(log).not.toContain('ARM refused the fault principal');
    // Torn down: ARM holds no resource group, and no VM namespace is left.
    expect([...twin.cloud.arm.groups.keys()]).toEqual([]);
    expect(twin.cloud.groups.size).toBe(0);
  });

  test('the cluster check moved out of the VPC: the public load balancer refuses it by a named NSG rule', async () => {
    // One node: the run never gets past readiness, and one VM boots sooner than three on a busy machine.
    const { code, stderr, log } = await run(ONE_NODE_PLAN_YAML, (template) => {
      const [, checkCluster] = Object.entries(template.Resources).find(
        ([id, resource]) =>
          id.startsWith('ControllerCheckClusterFunction') && resource.Type === 'AWS::Lambda::Function',
      )!;
      expect(checkCluster.Properties['VpcConfig']).toBeDefined();
      delete checkCluster.Properties['VpcConfig'];
      // Only to end the run sooner: the launch deadline (60 s instead of the default 30 minutes). The error below needs
      // the deployment to have succeeded by then: one node and the load generator take 10-25 s (a CI run whose boot
      // outlasted it had met the hub bridge's changing MAC, now fixed; the twin's log shows each boot step's time).
      for (const resource of Object.values(template.Resources)) {
        const variables = (resource.Properties['Environment'] as { Variables?: Record<string, unknown> } | undefined)
          ?.Variables;
        if (variables && 'LAUNCH_TIMEOUT_MINUTES' in variables) variables['LAUNCH_TIMEOUT_MINUTES'] = '1';
      }
    });
    expect(code).toBe(1);
    // Otherwise the twin's log without the cluster polls: the boot's steps with their times, if the deployment
    // outlasted the deadline.
    if (!/did not form by .*\(the deployment succeeded\); last seen: /.test(stderr))
      throw new Error(`${stderr}\n${log.replace(/^.*CheckCluster.*\n/gm, '').slice(-5000)}`);
    expect(log).toContain(`CheckClusterFunction`);
    expect(log).toContain(`outside a VPC, from Lambda's ${LAMBDA_PUBLIC_ADDRESS}`);
    expect(log).toMatch(
      new RegExp(
        `load balancer rmqbench-lb-public refused ${LAMBDA_PUBLIC_ADDRESS.replace(/\./g, '\\.')} -> 15671 -> ` +
          '.* denied by NSG rule DenyClientPortsFromElsewhere',
      ),
    );
  });
});
