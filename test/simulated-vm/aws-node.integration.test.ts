/**
 * The AWS node boot script (cdk/user-data/rabbitmq-node.ts, rendered as RabbitMqCluster renders it: CDK's Linux user
 * data with the exit trap) runs verbatim on three simulated EC2 instances (harness.ts) against fake IMDSv2, Secrets
 * Manager, Auto Scaling, CloudWatch Logs and CloudFormation (fake-aws.py), the AWS CLI using the instance-profile
 * credentials the fake IMDS hands out. Only the package installation goes through the script's seam
 * (/etc/rmqbench/install-override.sh; Debian's rabbitmq-server 3.10.8 stands in for the RPMs).
 *
 * How far it goes: all of it. The data volume is formatted (xfs) and mounted, the configuration and the cookie are
 * written, the broker starts with `cluster_formation.peer_discovery_backend = aws` and RabbitMQ's AWS plugin (3.10.8's)
 * discovers the group's instances through the fake Auto Scaling and EC2 APIs (three instances booting at once form
 * one cluster), the group's desired capacity is awaited, the administrator is created, the drain watcher and policies
 * installed, and the exit trap ships the log tail and signals SUCCESS. Not shown: the RPM installation on Amazon Linux
 * 2023, RabbitMQ 3.13 / 4.1's own plugin, and the real APIs' signatures, throttling and IAM.
 */
import { UserData } from 'aws-cdk-lib/aws-ec2';
import { generateBrokerConfig } from '../../core/broker/broker-config';
import { RabbitMqRelease } from '../../cdk/rabbitmq-release';
import { BOOT_LOG_FILE, INSTALL_OVERRIDE_FILE, rabbitMqNodeBootCommands } from '../../cdk/user-data/rabbitmq-node';
import {
  faultScript,
  HEAL_RESTART_AFTER_SECONDS,
  healScript,
  PARTITION_TABLE,
  queueLeader,
  queueLeadersScript,
} from '../../core/failover/cloud-fault';
import { ec2UserDataEnvironment as userDataEnvironment, SimulatedHub, type SimulatedVm } from './harness';

jest.setTimeout(600_000);

const REGION = 'us-east-1';
const COOKIE_ARN = `arn:aws:secretsmanager:${REGION}:111122223333:secret:rmqbench-cookie-AbCdEf`;
const ADMIN_ARN = `arn:aws:secretsmanager:${REGION}:111122223333:secret:rmqbench-admin-GhIjKl`;

/**
 * Erlang's net_ticktime on the three simulated nodes (test only; 60 s by default): the partition test waits for the
 * cluster to notice the cut, which takes 0.75 to 1.25 net_ticktime, and nothing else here depends on it.
 */
const TEST_NET_TICKTIME_SECONDS = 20;

function renderUserData(nodeCount: number, netTicktimeSeconds?: number): string {
  // Generated for the RabbitMQ the simulation runs (3.10.8 rejects 3.13-only keys); the script is the same.
  const brokerConfig = generateBrokerConfig({
    topology: { type: 'quorum', replicationFactor: 3 },
    rabbitmqVersion: '3.10.8',
    peerDiscovery: { backend: 'aws', region: REGION },
    nodeCount,
  });
  const userData = UserData.forLinux();
  userData.addOnExitCommands('rmqbench_boot_finished "$exitCode"');
  userData.addCommands(
    ...rabbitMqNodeBootCommands({
      brokerConfig:
        netTicktimeSeconds === undefined
          ? brokerConfig
          : { ...brokerConfig, rabbitmqConf: `${brokerConfig.rabbitmqConf}\nnet_ticktime = ${netTicktimeSeconds}\n` },
      release: RabbitMqRelease.V3_13,
      region: REGION,
      erlangCookieSecretArn: COOKIE_ARN,
      adminSecretArn: ADMIN_ARN,
      stackName: 'rmqbench-sim-stack',
      autoScalingGroupLogicalId: 'NodesASG46ED8A0D',
      bootLogGroupName: 'rmqbench-sim-boot',
      drainLifecycleHookName: 'rmqbench-drain',
      clusterFormationTimeoutSeconds: 120,
      drainTimeoutSeconds: 60,
    }),
  );
  return userData.render();
}

describe('AWS node boot script on three simulated EC2 instances of one group', () => {
  const hub = new SimulatedHub({
    subnet: 4,
    fakeScript: 'fake-aws.py',
    httpsNames: ['secretsmanager', 'autoscaling', 'logs', 'cloudformation', 'ec2'].map(
      (service) => `${service}.${REGION}.amazonaws.com`,
    ),
    state: {
      region: REGION,
      roleName: 'rmqbench-node-role',
      autoScalingGroupName: 'rmqbench-sim-NodesASG-1A2B3C',
      desiredCapacity: 3,
      secrets: {
        [COOKIE_ARN]: 'AWSSIMULATEDCOOKIE0123456789',
        [ADMIN_ARN]: JSON.stringify({ username: 'rmqbench-admin', password: 'simulated-aws-password' }),
      },
    },
  });
  afterAll(() => hub.cleanup());

  /** The three instances, for the fault test after the boot test. */
  let vms: SimulatedVm[] = [];

  test(
    'booting at once, the instances discover each other through ' +
      'the AWS plugin and form ONE cluster; each signals SUCCESS; the first formatted and mounted its data volume, ' +
      'wrote the cookie, created the admin and shipped its boot log without a secret',
    async () => {
      await hub.start();
      const userData = renderUserData(3, TEST_NET_TICKTIME_SECONDS);
      vms = [1, 2, 3].map((index) => {
        const instanceId = `i-0${index}23456789abcdef0`;
        return hub.createVm(
          instanceId,
          `ip-10-91-4-${10 + index}`,
          {
            '/var/lib/cloud/instance/user-data.txt': { content: userData, mode: 0o700 },
            [INSTALL_OVERRIDE_FILE]: {
              content: 'rmqbench_install_packages() { command -v rabbitmq-server >/dev/null; }\n',
              mode: 0o644,
            },
          },
          { blockDevice: '/dev/sdf', state: { instanceId }, sharedPaths: ['/var/lib/rabbitmq'] },
        );
      });
      const results = await Promise.all(
        vms.map((vm) => hub.exec(vm, 'bash /var/lib/cloud/instance/user-data.txt', { env: userDataEnvironment() })),
      );
      for (const [index, result] of results.entries()) {
        const vm = vms[index] as (typeof vms)[number];
        const diagnostics =
          result.status === 0 ? '' : `${result.stdout}\n${result.stderr}\n${await hub.diagnostics(vm)}`;
        expect({ vm: vm.name, status: result.status, diagnostics }).toEqual({
          vm: vm.name,
          status: 0,
          diagnostics: '',
        });
      }
      const expected = vms.map((vm) => `rabbit@${vm.ip}`).sort();
      for (const vm of vms) {
        const status = JSON.parse((await hub.exec(vm, 'rabbitmqctl -q cluster_status --formatter json')).stdout) as {
          running_nodes: string[];
          disk_nodes: string[];
        };
        expect([...status.running_nodes].sort()).toEqual(expected);
        expect([...status.disk_nodes].sort()).toEqual(expected);
      }
      const requests = hub.requestLog();
      for (const vm of vms) expect(requests).toContain(`${vm.ip} cloudformation SignalResource ${vm.name} SUCCESS`);
      await expectOneInstanceBootedFully(vms[0]!, requests);
    },
  );

  /** What the boot left on one instance: its volume, cookie, admin user, shipped log, and no secret in the log. */
  async function expectOneInstanceBootedFully(vm: SimulatedVm, requests: string[]): Promise<void> {
    const mounted = await hub.exec(
      vm,
      'findmnt -n -o SOURCE,FSTYPE /var/lib/rabbitmq; grep " /var/lib/rabbitmq " /etc/fstab',
    );
    expect(mounted.stdout).toBe('/dev/sdf xfs\n/dev/sdf /var/lib/rabbitmq xfs defaults,nofail 0 2\n');
    const cookie = await hub.exec(
      vm,
      'stat -c "%a %U" /var/lib/rabbitmq/.erlang.cookie && cat /var/lib/rabbitmq/.erlang.cookie',
    );
    expect(cookie.stdout).toBe('400 rabbitmq\nAWSSIMULATEDCOOKIE0123456789');
    const users = JSON.parse((await hub.exec(vm, 'rabbitmqctl -q list_users --formatter json')).stdout) as {
      user: string;
    }[];
    expect(users.map((user) => user.user)).toEqual(['rmqbench-admin']);
    expect((await hub.exec(vm, 'rabbitmqctl -q authenticate_user rmqbench-admin simulated-aws-password')).status).toBe(
      0,
    );
    // The exit trap shipped the boot log and signalled the group's creation policy with the instance id.
    expect(requests).toContain(`${vm.ip} logs Logs_20140328.PutLogEvents ${vm.name}/boot`);
    expect(requests).toContain(`${vm.ip} secretsmanager GetSecretValue ${COOKIE_ARN}`);
    // RabbitMQ's AWS peer-discovery plugin found the group's instances through the fake Auto Scaling and EC2 APIs.
    // (The fake logs the ids asked for, sorted: the group's, this instance's among them.)
    expect(
      requests.filter((line) => line.startsWith(`${vm.ip} ec2 DescribeInstances `) && line.includes(vm.name)),
    ).not.toEqual([]);
    // Neither secret reached the boot log, which is copied to CloudWatch Logs.
    const bootLog = (await hub.exec(vm, `cat ${BOOT_LOG_FILE}`)).stdout;
    expect(bootLog).toContain('cluster has 3 running nodes');
    expect(bootLog).not.toContain('AWSSIMULATEDCOOKIE0123456789');
    expect(bootLog).not.toContain('simulated-aws-password');
  }

  /**
   * The fault step's scripts (core/failover/cloud-fault.ts), run on the nodes as SSM's AWS-RunShellScript would run
   * them: as
   * root, with a minimal environment, on the cluster the previous test formed. Nothing of the scripts is mocked: the
   * broker is killed, stopped and started through the same systemctl calls as on EC2 (the shim stands in for systemd).
   */
  test(
    'the fault scripts on the nodes: list_queues names the quorum queue leader, ' +
      'kill takes exactly that broker down while the others go on, heal starts it and ' +
      'it rejoins; stop and restart too; a script sent to the wrong instance refuses',
    async () => {
      expect(vms).toHaveLength(3);
      const run = (vm: SimulatedVm, script: string) => hub.exec(vm, script, { env: userDataEnvironment() });
      const runningNodes = async (vm: SimulatedVm) =>
        (
          JSON.parse((await run(vm, 'rabbitmqctl -q cluster_status --formatter json')).stdout) as {
            running_nodes: string[];
          }
        ).running_nodes.sort();
      const all = vms.map((vm) => `rabbit@${vm.ip}`).sort();
      // PerfTest's first queue, declared as PerfTest would (a quorum queue, through the management API of the first
      // node).
      const declared = await run(
        vms[0]!,
        "curl -sSf -u rmqbench-admin:simulated-aws-password -X PUT -H 'content-type: application/json' " +
          `--data '{"durable":true,"arguments":{"x-queue-type":"quorum"}}' ` +
          'http://127.0.0.1:15672/api/queues/%2F/perf-test-1',
      );
      expect({ status: declared.status, stderr: declared.stderr }).toEqual({ status: 0, stderr: '' });

      const listed = await run(vms[1]!, queueLeadersScript());
      expect(listed.status).toBe(0);
      const leader = queueLeader(listed.stdout, 'perf-test-1');
      expect(all).toContain(leader);
      const leaderVm = vms.find((vm) => `rabbit@${vm.ip}` === leader)!;
      const others = vms.filter((vm) => vm !== leaderVm);

      // The node name is checked on the instance: a kill meant for the leader, sent to another node, does nothing
      // there.
      const wrong = await run(others[0]!, faultScript('kill', leader));
      expect(wrong.status).toBe(3);
      expect(wrong.stderr).toContain(`this instance does not run ${leader}`);
      expect(await runningNodes(others[0]!)).toEqual(all);

      const killed = await run(leaderVm, faultScript('kill', leader));
      expect({ status: killed.status, stdout: killed.stdout, stderr: killed.stderr }).toEqual({
        status: 0,
        // The node's clock right before the kill (the fault step's appliedAt), then the outcome.
        stdout: expect.stringMatching(
          new RegExp(`^rmqbench: applying at \\d{13}\nrmqbench: kill applied to ${leader}\n$`),
        ),
        stderr: '',
      });
      expect(await runningNodes(others[0]!)).toEqual(all.filter((node) => node !== leader));
      // The quorum queue elected another leader among the nodes that run.
      const after = queueLeader((await run(others[0]!, queueLeadersScript())).stdout, 'perf-test-1');
      expect(after).not.toBe(leader);

      const healed = await run(leaderVm, healScript(leader, 'kill'));
      expect({ status: healed.status, stderr: healed.stderr }).toEqual({ status: 0, stderr: '' });
      expect(await runningNodes(others[0]!)).toEqual(all);

      // stop (orderly, through the unit's stop) and its heal; restart on another node comes back by itself.
      const stopped = await run(leaderVm, faultScript('stop', leader));
      expect({ status: stopped.status, stderr: stopped.stderr }).toEqual({ status: 0, stderr: '' });
      expect(await runningNodes(others[0]!)).toEqual(all.filter((node) => node !== leader));
      expect((await run(leaderVm, healScript(leader, 'stop'))).status).toBe(0);
      const follower = `rabbit@${others[1]!.ip}`;
      const restarted = await run(others[1]!, faultScript('restart', follower));
      expect({ status: restarted.status, stderr: restarted.stderr }).toEqual({ status: 0, stderr: '' });
      expect(await runningNodes(others[0]!)).toEqual(all);
    },
  );
  /**
   * partition (core/failover/cloud-fault.ts): the node's own nftables rules, run as SSM would run the script, on the
   * cluster the
   * first test formed (every node running again after the previous test). The simulated nodes are network namespaces
   * on one bridge, so the rules act on real TCP connections between real brokers: the distribution connections
   * already open are cut, not only new ones. The cluster notices after net_ticktime (60 s by default, so 45 to 75 s;
   * TEST_NET_TICKTIME_SECONDS on these nodes, so 15 to 25 s), hence the polling (a condition awaited, never a duration
   * asserted).
   */
  test(
    'partition: the firewall table of the script cuts one node off; the majority ' +
      'drops it and keeps the quorum queue, the node pauses (pause_minority); the ' +
      'heal deletes the table and the node resumes into a whole cluster',
    async () => {
      expect(vms).toHaveLength(3);
      const run = (vm: SimulatedVm, script: string) => hub.exec(vm, script, { env: userDataEnvironment() });
      const runningNodes = async (vm: SimulatedVm) => {
        const result = await run(vm, 'rabbitmqctl -q cluster_status --formatter json');
        return result.status === 0
          ? (JSON.parse(result.stdout) as { running_nodes: string[] }).running_nodes.sort()
          : [];
      };
      const isRunning = async (vm: SimulatedVm) =>
        (await run(vm, "rabbitmqctl -q eval 'rabbit:is_running().'")).stdout.trim();
      /** Polls `check` every 2 s until it holds or `limitSeconds` pass; returns whether it held. */
      const eventually = async (check: () => Promise<boolean>, limitSeconds: number) => {
        for (let waited = 0; waited <= limitSeconds; waited += 2) {
          if (await check()) return true;
          await new Promise((resolve) => setTimeout(resolve, 2_000));
        }
        return false;
      };
      const all = vms.map((vm) => `rabbit@${vm.ip}`).sort();
      const [cutVm, majorityVm, otherVm] = [vms[2]!, vms[0]!, vms[1]!];
      const cut = `rabbit@${cutVm.ip}`;
      expect(await runningNodes(majorityVm)).toEqual(all);
      // The shorter tick of the test's configuration is in force (it only shortens the wait below).
      expect((await run(cutVm, "rabbitmqctl -q eval 'net_kernel:get_net_ticktime().'")).stdout.trim()).toBe(
        String(TEST_NET_TICKTIME_SECONDS),
      );

      const applied = await run(cutVm, faultScript('partition', cut));
      expect({ status: applied.status, stdout: applied.stdout, stderr: applied.stderr }).toEqual({
        status: 0,
        stdout: expect.stringMatching(
          new RegExp(`^rmqbench: applying at \\d{13}\nrmqbench: partition applied to ${cut}\n$`),
        ),
        stderr: '',
      });
      const table = await run(cutVm, `nft list table inet ${PARTITION_TABLE}`);
      expect(table.stdout).toContain('tcp dport { 4369, 25672 } drop');

      // The majority declares the node down once its ticks stop (net_ticktime), and keeps serving: both of its nodes
      // run and the quorum queue of the previous test has a leader among them.
      const majority = all.filter((node) => node !== cut);
      const dropped = await eventually(
        async () => JSON.stringify(await runningNodes(majorityVm)) === JSON.stringify(majority),
        150,
      );
      expect({ dropped, diagnostics: dropped ? '' : await hub.diagnostics(cutVm) }).toEqual({
        dropped: true,
        diagnostics: '',
      });
      expect(await runningNodes(otherVm)).toEqual(majority);
      expect(majority).toContain(queueLeader((await run(majorityVm, queueLeadersScript())).stdout, 'perf-test-1'));
      // The cut node, alone in its minority, pauses: its RabbitMQ application stops (listeners closed), its Erlang VM
      // stays up and still answers its own CLI over loopback.
      expect(await eventually(async () => (await isRunning(cutVm)) === 'false', 60)).toBe(true);
      expect((await run(cutVm, 'exec 3<>/dev/tcp/127.0.0.1/5672')).status).not.toBe(0);

      // The node resumes by itself, or (rabbitmq-server#2175, seen here once) the heal restarts it after
      // HEAL_RESTART_AFTER_SECONDS and says so; either way the cluster must be whole again below.
      const healed = await run(cutVm, healScript(cut, 'partition'));
      const restarted =
        `rmqbench: ${cut} had not resumed ${HEAL_RESTART_AFTER_SECONDS} s after the heal: ` + 'restarting it\n';
      if (healed.stdout.includes(restarted)) console.warn(`the paused node did not resume by itself: ${healed.stdout}`);
      expect({ status: healed.status, stdout: healed.stdout.replace(restarted, ''), stderr: healed.stderr }).toEqual({
        status: 0,
        stdout: expect.stringMatching(
          new RegExp(`^rmqbench: healing at \\d{13}\nrmqbench: partition of ${cut} healed\n$`),
        ),
        stderr: '',
      });
      // The table is gone (no rule left behind) and the node resumed and rejoined: the cluster is whole again, seen
      // from both sides.
      expect((await run(cutVm, `nft list table inet ${PARTITION_TABLE}`)).status).not.toBe(0);
      expect((await run(cutVm, 'nft list tables')).stdout).not.toContain(PARTITION_TABLE);
      expect(await isRunning(cutVm)).toBe('true');
      expect(
        await eventually(async () => JSON.stringify(await runningNodes(majorityVm)) === JSON.stringify(all), 60),
      ).toBe(true);
      expect(await runningNodes(cutVm)).toEqual(all);
      // A retried heal finds no table and still succeeds.
      expect((await run(cutVm, healScript(cut, 'partition'))).status).toBe(0);
    },
  );
});
