/**
 * Kafka and NATS through the Azure twin (issue 23): `rmqbench run --target azure` of the plan a user writes to compare
 * them (test/twin/aws-twin-brokers.integration.test.ts, on Azure sizes) against the example controller synthesized with
 * Azure. ARM deploys main.bicep with `broker: kafka`, then with `broker: nats`, into simulated VMs: three brokers or
 * servers at their static private IPs, each with its data disk at LUN 0, and the load generator with Kafka's tools or
 * Go; readiness, the smoke test and the repetition run on the load generator by managed Run Command and upload to the
 * twin's S3; each resource group is deleted. The twin runs the two clusters one after the other (runOneClusterAtATime).
 */
import { rmqbenchAsync } from '../../cloud/cli-child';
import { failoverSummaries, TWIN_BROKERS_PLAN_YAML, type Faulted } from '../twin-cli';
import { azureTwinTestSetup } from './azure-twin-test-setup';

jest.setTimeout(1_200_000);

/** The AWS twin's broker plan on a size main.bicep deploys for every broker. */
const AZURE_BROKERS_PLAN_YAML = TWIN_BROKERS_PLAN_YAML.replace(/m5\.xlarge|c5\.xlarge/g, 'Standard_D2s_v5');

describe('the Azure twin runs Kafka and NATS on main.bicep', () => {
  const { runOnTwin, rawOutputs } = azureTwinTestSetup();

  test(
    'the Kafka brokers form one quorum and the NATS servers one meta group at their static IPs, each store on its ' +
      'data disk; the load generator runs the smoke test and the repetition (NATS: its client built from the module ' +
      'proxy); each leader is killed and started again with the verifier counting; results are ingested, no call is ' +
      'denied, both resource groups are deleted',
    async () => {
      const { twin, env, code, stdout, stderr, log } = await runOnTwin(AZURE_BROKERS_PLAN_YAML);
      if (code !== 0)
        throw new Error(`exit ${code}\n${await rawOutputs(twin)}\n${log.slice(-4000)}\n${stderr.slice(-3000)}`);
      expect(stdout).toContain('status **SUCCEEDED**');
      expect(stdout).toMatch(/\| kafka-three\/kafka-steady \| 1\/1 \|/);
      expect(stdout).toMatch(/\| nats-three\/nats-steady \| 1\/1 \|/);
      expect(`${stdout}${stderr}`).toContain('starting a 3-broker Kafka cluster (KRaft)...');
      expect(`${stdout}${stderr}`).toContain('starting a 3-node NATS JetStream cluster...');
      // Each group booted its three brokers or servers and its load generator, all of them to the end.
      expect(log).toMatch(
        new RegExp(
          String.raw`\[azure twin\] rmqbench-\S+: deployment Succeeded \(4 VMs booted\)[\s\S]*` +
            String.raw`\[azure twin\] rmqbench-\S+: deployment Succeeded \(4 VMs booted\)`,
        ),
      );
      // The NATS load client's modules came from the module proxy, and Kafka's jars from Maven Central.
      const requests = twin.cloud.requestsOfDeletedGroups.join('\n');
      expect(requests).toMatch(/goproxy GET \/github\.com\/nats-io\/nats\.go\/@v\//);
      expect(requests).toMatch(/maven GET \/maven2\/org\/apache\/kafka\/kafka_2\.13\//);
      expect(twin.aws.gateway.decisions.filter((decision) => !decision.allowed)).toEqual([]);
      const runs = rmqbenchAsync(env, 'runs', '--store', 'aws', '--json');
      expect(await runs.exited).toBe(0);
      expect(JSON.parse(runs.stdout)).toEqual([
        expect.objectContaining({ planName: 'twin-brokers', status: 'SUCCEEDED' }),
      ]);
      // Each leader was killed and started again by managed Run Commands on its VM (kafka-<n>, nats-<n> of the VM
      // names), and the verifier beside the load counted what that cost.
      const [run] = JSON.parse(runs.stdout) as { runId: string }[];
      const show = rmqbenchAsync(env, 'show', run!.runId, '--store', 'aws', '--json');
      expect(await show.exited).toBe(0);
      expect(failoverSummaries((JSON.parse(show.stdout) as { repetitions: Faulted[] }).repetitions)).toEqual([
        { node: expect.stringMatching(/^kafka-[123]$/), counted: true, lost: 0, healed: true },
        { node: expect.stringMatching(/^nats-[123]$/), counted: true, lost: 0, healed: true },
      ]);
      expect([...twin.cloud.arm.groups.keys()]).toEqual([]);
      expect(twin.cloud.groups.size).toBe(0);
    },
  );
});
