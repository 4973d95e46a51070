/**
 * The Azure node boot script (bicep/cloud-init/rmqbench-node-setup.sh), rendered into the scale set's customData from
 * modules/cluster.bicep, runs verbatim on simulated VMs (see harness.ts) against fake IMDS, ARM and Key Vault. Only the
 * package installation goes through the script's seam (Debian's rabbitmq-server 3.10.8 stands in for Team RabbitMQ's
 * 3.13.7 package). Membership is read from `rabbitmqctl cluster_status` inside the VMs.
 */
import { faultScript, healScript, queueLeader, queueLeadersScript } from '../../core/failover/cloud-fault';
import {
  IDENTITY_CLIENT_ID,
  KEY_VAULT,
  SCALE_SET,
  SECRETS,
  nodeFiles,
  renderClusterCloudInit,
  runCloudInit,
} from './azure-cluster';
import { SimulatedHub, type SimulatedVm } from './harness';

jest.setTimeout(900_000);

const sorted = (names: string[]): string[] => [...names].sort();
const nodeName = (vm: SimulatedVm): string => `rabbit@${vm.computerName}`;

/** Expects a boot to have succeeded; on failure the message carries the script's stderr and the VM's logs. */
async function expectBooted(
  hub: SimulatedHub,
  vm: SimulatedVm,
  result: { status: number; stderr: string },
): Promise<void> {
  const failure = result.status === 0 ? '' : `${result.stderr}\n${await hub.diagnostics(vm)}`;
  expect({ vm: vm.computerName, status: result.status, failure }).toEqual({
    vm: vm.computerName,
    status: 0,
    failure: '',
  });
}

function newHub(subnet: number): SimulatedHub {
  return new SimulatedHub({
    subnet,
    fakeScript: 'fake-azure.py',
    httpsNames: ['management.azure.com', `${KEY_VAULT}.vault.azure.net`],
    state: {
      subscriptionId: '00000000-0000-0000-0000-000000000091',
      resourceGroup: 'rmqbench-sim',
      scaleSetName: SCALE_SET,
      identityClientId: IDENTITY_CLIENT_ID,
      vaultName: KEY_VAULT,
      secrets: { [SECRETS.cookie]: 'SIMULATEDCOOKIEVALUE0123456789', [SECRETS.password]: 'simulated-admin-password' },
    },
  });
}

describe('Azure node boot on simulated VMs: cluster formation, scale-out, forget-departed, TLS', () => {
  const hub = newHub(1);
  let cloudConfig: Awaited<ReturnType<typeof renderClusterCloudInit>>;
  const vms: SimulatedVm[] = [];
  // Flexible orchestration: VM names {scale-set-name}_{8-char-guid}; host names computerNamePrefix + generated
  // characters, which may be upper-case
  // (https://learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-instance-ids).
  const names = [
    ['rmqbench-vmss_3f2a9c1d', 'rmqbenchQ7K2ZD'],
    ['rmqbench-vmss_8b1e44f0', 'rmqbench4F2A9C'],
    ['rmqbench-vmss_c09d7a35', 'rmqbenchM0x8Rb'],
    ['rmqbench-vmss_5e6f7a8b', 'rmqbenchZZ91KQ'],
  ] as const;

  beforeAll(async () => {
    await hub.start();
    const broker = hub.pem('broker');
    hub.updateState((state) =>
      Object.assign(state.secrets as Record<string, string>, {
        [SECRETS.tlsCertificate]: broker.certificate,
        [SECRETS.tlsKey]: broker.privateKey,
      }),
    );
    cloudConfig = await renderClusterCloudInit();
  });
  afterAll(() => hub.cleanup());

  test(
    'three VMs with upper-case host names boot at once ' + 'and form ONE cluster named with the exact host names',
    async () => {
      for (const [name, computerName] of names.slice(0, 3))
        vms.push(hub.createVm(name, computerName, nodeFiles(cloudConfig, { tls: true })));
      const results = await Promise.all(vms.map((vm) => runCloudInit(hub, vm, cloudConfig)));
      for (const [index, result] of results.entries()) await expectBooted(hub, vms[index] as SimulatedVm, result);
      const expected = sorted(vms.map(nodeName));
      for (const vm of vms) {
        const status = await hub.clusterStatus(vm);
        expect(sorted(status.running_nodes)).toEqual(expected);
        expect(sorted(status.disk_nodes)).toEqual(expected);
      }
      expect((await hub.exec(vms[0] as SimulatedVm, 'hostname -s')).stdout.trim()).toBe('rmqbenchQ7K2ZD');
      // One join at a time (form_or_join): the seed never joined, and the second joiner wrote its joining flag only
      // after the first joiner was formed.
      const flagTimes = await Promise.all(
        vms.map(async (vm) => {
          const stat = (path: string) => hub.exec(vm, `stat -c %.9Y /var/lib/rmqbench/${path}`);
          const [joining, formed] = await Promise.all([stat('joining'), stat('formed')]);
          return { joining: joining.status === 0 ? Number(joining.stdout) : undefined, formed: Number(formed.stdout) };
        }),
      );
      const joiners = flagTimes.filter((times) => times.joining !== undefined).sort((a, b) => a.joining! - b.joining!);
      expect(joiners).toHaveLength(2);
      expect(joiners[1]!.joining).toBeGreaterThanOrEqual(joiners[0]!.formed);
    },
  );

  test('the script created the admin user from Key Vault, deleted guest and applied the generated policy', async () => {
    const vm = vms[1] as SimulatedVm;
    const users = JSON.parse((await hub.exec(vm, 'rabbitmqctl -q list_users --formatter json')).stdout) as {
      user: string;
      tags: string[];
    }[];
    expect(users.map((user) => user.user)).toEqual(['rmqbench-admin']);
    const authenticated = await hub.exec(
      vm,
      'rabbitmqctl -q authenticate_user rmqbench-admin simulated-admin-password',
    );
    expect(authenticated.status).toBe(0);
    const policies = await hub.exec(vm, 'rabbitmqctl -q list_policies --formatter json');
    expect(JSON.parse(policies.stdout)).toEqual([
      expect.objectContaining({ name: 'rmqbench-mirroring', definition: expect.stringContaining('"ha-mode":"all"') }),
    ]);
    const cookie = await hub.exec(
      vm,
      'stat -c "%a %U" /var/lib/rabbitmq/.erlang.cookie && cat /var/lib/rabbitmq/.erlang.cookie',
    );
    expect(cookie.stdout).toBe('400 rabbitmq\nSIMULATEDCOOKIEVALUE0123456789');
    // The Key Vault and ARM calls went to the fakes with the identity's tokens (the fakes refuse anything else).
    const log = hub.requestLog();
    expect(log.some((line) => line.includes(`${KEY_VAULT}.vault.azure.net /secrets/${SECRETS.cookie}`))).toBe(true);
    expect(log.some((line) => line.includes('management.azure.com /subscriptions/'))).toBe(true);
  });

  test(
    'AMQPS (5671) and management HTTPS (15671) answer with ' + 'the Key Vault certificate; the key is 0600 rabbitmq',
    async () => {
      const [first, second] = vms as [SimulatedVm, SimulatedVm];
      const files = await hub.exec(first, 'stat -c "%n %a %U" /etc/rabbitmq/tls/cert.pem /etc/rabbitmq/tls/key.pem');
      expect(files.stdout).toBe('/etc/rabbitmq/tls/cert.pem 640 rabbitmq\n/etc/rabbitmq/tls/key.pem 600 rabbitmq\n');
      // From another VM, verifying the chain to the test CA and the certificate's name.
      const https = await hub.exec(
        second,
        `curl -sS -o /dev/null -w '%{http_code} %{ssl_verify_result}' --resolve ` +
          `rmqbench-broker:15671:${first.ip} https://rmqbench-broker:15671/`,
      );
      expect(https.stdout).toBe('200 0');
      const amqps = await hub.exec(
        second,
        `python3 - <<'PY'
import socket, ssl
context = ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt")
with socket.create_connection(("${first.ip}", 5671), timeout=10) as raw:
    with context.wrap_socket(raw, server_hostname="rmqbench-broker") as tls:
        tls.sendall(b"AMQP\\x00\\x00\\x09\\x01")
        frame = tls.recv(11)
        print(tls.getpeercert()["subject"][0][0][1], frame[0], frame[7:11].hex())
PY`,
      );
      expect({ stdout: amqps.stdout, stderr: amqps.stderr }).toEqual({
        stdout: 'rmqbench-broker 1 000a000a\n',
        stderr: '',
      });
      // The plain listeners stay for in-VNet traffic.
      expect(
        (await hub.exec(second, `curl -s -o /dev/null -w '%{http_code}' http://${first.computerName}:15672/`)).stdout,
      ).toBe('200');
    },
  );

  /**
   * The fault step's scripts (core/failover/cloud-fault.ts) as a managed Run Command runs them on a node VM (bash,
   * root, a
   * minimal environment): the node's name is rabbit@<hostname -s> here (no NODENAME in rabbitmq-env.conf), the leader
   * of
   * a classic mirrored queue is the node that hosts it locally, and the cluster goes on while the killed node is down.
   */
  test(
    "the fault scripts on Azure nodes: the listing finds the classic mirrored queue's node (the one " +
      'hosting it locally), kill takes exactly that node down, heal brings it back, another VM refuses',
    async () => {
      const run = (vm: SimulatedVm, script: string) =>
        hub.exec(vm, script, {
          env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root' },
        });
      const all = sorted(vms.map(nodeName));
      const declared = await run(
        vms[0]!,
        "curl -sSf -u rmqbench-admin:simulated-admin-password -X PUT -H 'content-type: application/json' " +
          `--data '{"durable":true}' http://127.0.0.1:15672/api/queues/%2F/perf-test-1`,
      );
      expect({ status: declared.status, stderr: declared.stderr }).toEqual({ status: 0, stderr: '' });
      const listed = await run(vms[2]!, queueLeadersScript());
      expect(listed.status).toBe(0);
      const leader = queueLeader(listed.stdout, 'perf-test-1');
      expect(all).toContain(leader);
      const leaderVm = vms.find((vm) => nodeName(vm) === leader)!;
      const other = vms.find((vm) => vm !== leaderVm)!;

      const wrong = await run(other, faultScript('kill', leader));
      expect(wrong.status).toBe(3);
      expect(wrong.stderr).toContain(`this instance does not run ${leader} (it runs ${nodeName(other)})`);

      const killed = await run(leaderVm, faultScript('kill', leader));
      expect({ status: killed.status, stderr: killed.stderr }).toEqual({ status: 0, stderr: '' });
      expect(sorted((await hub.clusterStatus(other)).running_nodes)).toEqual(all.filter((node) => node !== leader));
      const healed = await run(leaderVm, healScript(leader, 'kill'));
      expect({ status: healed.status, stderr: healed.stderr }).toEqual({ status: 0, stderr: '' });
      expect(sorted((await hub.clusterStatus(other)).running_nodes)).toEqual(all);
      await run(
        vms[0]!,
        'curl -sSf -u rmqbench-admin:simulated-admin-password -X DELETE ' +
          'http://127.0.0.1:15672/api/queues/%2F/perf-test-1',
      );
    },
  );

  test('a fourth VM added later joins the existing cluster', async () => {
    const [name, computerName] = names[3];
    const fourth = hub.createVm(name, computerName, nodeFiles(cloudConfig, { tls: true }));
    vms.push(fourth);
    const result = await runCloudInit(hub, fourth, cloudConfig);
    await expectBooted(hub, fourth, result);
    const expected = sorted(vms.map(nodeName));
    expect(sorted((await hub.clusterStatus(fourth)).running_nodes)).toEqual(expected);
    expect(sorted((await hub.clusterStatus(vms[0] as SimulatedVm)).running_nodes)).toEqual(expected);
  });

  test('forget-departed forgets a deleted VM but keeps a stopped one', async () => {
    const [first, second, third, fourth] = vms as [SimulatedVm, SimulatedVm, SimulatedVm, SimulatedVm];
    // Deleted: gone from ARM's VM list. (One at a time: pause_minority pauses a side without a majority.)
    hub.deleteVm(fourth);
    const afterDelete = await hub.exec(first, '/usr/local/sbin/rmqbench-node-setup forget-departed');
    expect({ status: afterDelete.status, stderr: afterDelete.stderr }).toMatchObject({ status: 0 });
    expect(afterDelete.stderr).toContain(`forgetting ${nodeName(fourth)}`);
    expect(sorted((await hub.clusterStatus(first)).disk_nodes)).toEqual(sorted([first, second, third].map(nodeName)));
    // Stopped: powered off, still listed by ARM.
    hub.stopVm(third);
    const afterStop = await hub.exec(second, '/usr/local/sbin/rmqbench-node-setup forget-departed');
    expect({ status: afterStop.status, stderr: afterStop.stderr }).toMatchObject({ status: 0 });
    expect(afterStop.stderr).not.toContain('forgetting');
    const status = await hub.clusterStatus(second);
    expect(sorted(status.disk_nodes)).toEqual(sorted([first, second, third].map(nodeName)));
    expect(sorted(status.running_nodes)).toEqual(sorted([first, second].map(nodeName)));
  });
});

describe('Azure node boot on simulated VMs: the designated seed fails its install', () => {
  const hub = newHub(2);
  afterAll(() => hub.cleanup());

  test('the oldest VM failing its install still yields ONE cluster of the others, and reports failed', async () => {
    await hub.start();
    const cloudConfig = await renderClusterCloudInit();
    const oldest = hub.createVm(
      'rmqbench-vmss_0a0a0a0a',
      'rmqbenchAA00AA',
      nodeFiles(cloudConfig, { installFails: true }),
    );
    const others = [
      hub.createVm('rmqbench-vmss_1b1b1b1b', 'rmqbenchBB11BB', nodeFiles(cloudConfig, {})),
      hub.createVm('rmqbench-vmss_2c2c2c2c', 'rmqbenchCC22CC', nodeFiles(cloudConfig, {})),
    ];
    const [failed, ...results] = await Promise.all([oldest, ...others].map((vm) => runCloudInit(hub, vm, cloudConfig)));
    expect(failed?.status).not.toBe(0);
    expect(failed?.stderr).toContain('simulated: the package installation failed');
    expect((await hub.exec(others[0] as SimulatedVm, `curl -s http://${oldest.computerName}:8081/state`)).stdout).toBe(
      'failed\n',
    );
    for (const [index, result] of results.entries()) await expectBooted(hub, others[index] as SimulatedVm, result);
    const expected = sorted(others.map(nodeName));
    for (const vm of others) {
      const status = await hub.clusterStatus(vm);
      expect(sorted(status.running_nodes)).toEqual(expected);
      expect(sorted(status.disk_nodes)).toEqual(expected);
    }
  });
});
