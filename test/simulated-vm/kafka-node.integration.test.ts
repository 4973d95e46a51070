/**
 * The Kafka broker boot scripts run verbatim on three simulated VMs each (harness.ts) and must form one 3-broker KRaft
 * quorum: the AWS user data of KafkaCluster (cdk/user-data/kafka-node.ts, rendered as the construct renders it, with
 * its
 * exit trap) against fake IMDSv2, CloudWatch Logs and CloudFormation (fake-aws.py); and the Azure broker's customData,
 * rendered from modules/kafka-cluster.bicep (bicep/cloud-init/rmqbench-kafka-setup.sh and its kafka.env), whose runcmd
 * runs as cloud-init would. Only the downloads go through each script's one seam (/etc/rmqbench/install-override.sh):
 * the
 * 92 Kafka 4.3.1 jars are copied from this machine's Maven cache (scripts/setup.sh fills it, as for the local Kafka
 * tests), and the scripts still check every jar against its pinned SHA-256. Java is this machine's (17) instead of the
 * images' 21. Each VM gets private /etc, /opt and /var/lib layers (the scripts add a `kafka` system user and write
 * /opt/kafka, /etc/kafka, /var/lib/kafka) and its own data disk (a loop device the scripts format with xfs).
 *
 * Membership is read from inside a VM's namespaces, with Kafka's own tools: MetadataQuorumCommand `describe --status`
 * (leader, voters) and BrokerApiVersionsCommand (each broker's node id and advertised listener).
 * The brokers run with the scripts' own heap settings (-Xmx1G -Xms1G; the heap is committed as it is used): one cloud's
 * three brokers at a time, the other's start after the first three are gone.
 */
import { dirname } from 'node:path';
import { UserData } from 'aws-cdk-lib/aws-ec2';
import { KAFKA_ARTIFACTS } from '../../cdk/kafka-artifacts';
import { KAFKA_CLIENT_PORT, KAFKA_CONTROLLER_PORT, kafkaClusterId } from '../../cdk/KafkaCluster';
import { CLOUDWATCH_NAMESPACE, KAFKA_BROKER_ROLE } from '../../core/metrics/cloudwatch-host-metrics';
import { CLOUDWATCH_AGENT_CONFIG_PATH, CLOUDWATCH_AGENT_CTL } from '../../cdk/user-data/cloudwatch-agent';
import { KAFKA_LOG_DIR, kafkaNodeBootCommands, type KafkaBrokerIdentity } from '../../cdk/user-data/kafka-node';
import { BOOT_LOG_FILE, DATA_VOLUME_DEVICE, INSTALL_OVERRIDE_FILE } from '../../cdk/user-data/rabbitmq-node';
import { cachedArtifactDir, KAFKA_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';
import { cloudConfigFiles, moduleCustomData, runCommands, shellQuote, type CloudConfig } from './azure-custom-data';
import { awsCliDirectory, SimulatedHub, type CommandResult, type SimulatedVm } from './harness';

jest.setTimeout(900_000);

const REGION = 'us-east-1';
const ZONE = 'kafka-5e1f0a2b.rmqbench.internal';
/** Private layers per VM: the scripts' `useradd kafka` (/etc/passwd), /etc/kafka, /opt/kafka and /var/lib/kafka. */
const OVERLAYS = ['/etc', '/opt', '/var/lib'];
const MINIMAL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Where the stand-in agent control script records how the boot called it (/var/log is private to each VM). */
const AGENT_CTL_CALLS = '/var/log/rmqbench-sim-cloudwatch-agent-ctl';
/**
 * Stands in for Amazon Linux 2023's dnf, which this machine lacks, on brokers 1 and 2 (/usr/local/sbin is private to
 * each VM and on the boot's PATH): `dnf install -y amazon-cloudwatch-agent` leaves the agent's folders and a control
 * script that records its arguments, so the boot's own lines write the configuration where the agent reads it. Broker 3
 * has no dnf at all, as when the repository cannot be reached: its boot must go on without the agent.
 */
const FAKE_DNF = `#!/bin/sh
[ "$*" = "install -y amazon-cloudwatch-agent" ] || { echo "fake dnf: unexpected arguments: $*" >&2; exit 1; }
mkdir -p ${dirname(CLOUDWATCH_AGENT_CTL)} ${dirname(CLOUDWATCH_AGENT_CONFIG_PATH)}
printf '#!/bin/sh\\necho "$*" > ${AGENT_CTL_CALLS}\\n' > ${CLOUDWATCH_AGENT_CTL}
chmod 755 ${CLOUDWATCH_AGENT_CTL}
`;

/** This machine's Kafka jars (the 92 the scripts pin), as the local Kafka tests find them. */
function kafkaJarDirectory(): string {
  const dir = cachedArtifactDir(cacheDir(), KAFKA_ARTIFACT);
  if (!dir) throw new Error('Kafka 4.3.1 is not in the Maven cache: run rmqbench doctor --fix (scripts/setup.sh does)');
  return dir;
}

/** Kafka's own tools, run as root inside a VM with the jars the boot installed. */
const kafkaTool = (mainClass: string, args: string): string =>
  `java -cp '/opt/kafka/libs/*' ${mainClass} ${args} 2>/dev/null`;

interface QuorumStatus {
  readonly clusterId: string;
  readonly leaderId: number;
  readonly voterIds: number[];
  readonly voterEndpoints: string[];
}

/**
 * `kafka-metadata-quorum describe --status`, parsed ("ClusterId:", "LeaderId:", "CurrentVoters:" with a JSON array).
 */
async function quorumStatus(hub: SimulatedHub, vm: SimulatedVm, bootstrap: string): Promise<QuorumStatus> {
  const result = await hub.exec(
    vm,
    kafkaTool('org.apache.kafka.tools.MetadataQuorumCommand', `--bootstrap-server ${bootstrap} describe --status`),
  );
  const field = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(result.stdout)?.[1]?.trim() ?? '';
  if (result.status !== 0 || !field('CurrentVoters'))
    throw new Error(
      `describe --status failed in ${vm.computerName} (${result.status}): ${result.stdout}${result.stderr}`,
    );
  const voters = JSON.parse(field('CurrentVoters')) as { id: number; endpoints?: string[] }[];
  return {
    clusterId: field('ClusterId'),
    leaderId: Number(field('LeaderId')),
    voterIds: voters.map((voter) => voter.id).sort(),
    voterEndpoints: voters.flatMap((voter) => voter.endpoints ?? []).sort(),
  };
}

/**
 * BrokerApiVersionsCommand's first line per broker, "<advertised host:port> (id: <node id> rack: ...) -> (": listener →
 * id.
 */
async function advertisedBrokers(
  hub: SimulatedHub,
  vm: SimulatedVm,
  bootstrap: string,
): Promise<Record<string, number>> {
  const result = await hub.exec(
    vm,
    kafkaTool('org.apache.kafka.tools.BrokerApiVersionsCommand', `--bootstrap-server ${bootstrap}`),
  );
  if (result.status !== 0) throw new Error(`BrokerApiVersionsCommand failed in ${vm.computerName}: ${result.stderr}`);
  return Object.fromEntries(
    [...result.stdout.matchAll(/^(\S+) \(id: (\d+) rack:/gm)].map((match) => [match[1] as string, Number(match[2])]),
  );
}

/** node.id and cluster.id the broker's log directory was formatted with (meta.properties, written by StorageTool). */
async function formattedIdentity(hub: SimulatedHub, vm: SimulatedVm): Promise<{ nodeId: string; clusterId: string }> {
  const text = (await hub.exec(vm, `cat ${KAFKA_LOG_DIR}/meta.properties`)).stdout;
  return { nodeId: /^node\.id=(.*)$/m.exec(text)?.[1] ?? '', clusterId: /^cluster\.id=(.*)$/m.exec(text)?.[1] ?? '' };
}

/** The broker process the unit started: its user and that it runs kafka.Kafka. */
async function brokerProcess(hub: SimulatedHub, vm: SimulatedVm): Promise<string> {
  return (
    await hub.exec(vm, 'ps -o user=,args= -p "$(cat /run/rmqbench-sim/kafka.pid)" | awk \'{print $1, $NF}\'')
  ).stdout.trim();
}

async function expectBooted(hub: SimulatedHub, vm: SimulatedVm, result: CommandResult): Promise<void> {
  const failure =
    result.status === 0
      ? ''
      : `${result.stdout.slice(-3000)}\n${result.stderr.slice(-3000)}\n${await hub.diagnostics(vm)}`;
  expect({ vm: vm.computerName, status: result.status, failure }).toEqual({
    vm: vm.computerName,
    status: 0,
    failure: '',
  });
}

describe('AWS Kafka broker user data on three simulated EC2 instances', () => {
  const hub = new SimulatedHub({
    subnet: 5,
    fakeScript: 'fake-aws.py',
    httpsNames: ['secretsmanager', 'autoscaling', 'logs', 'cloudformation', 'ec2'].map(
      (service) => `${service}.${REGION}.amazonaws.com`,
    ),
    state: {
      region: REGION,
      roleName: 'rmqbench-kafka-role',
      autoScalingGroupName: 'none',
      desiredCapacity: 0,
      secrets: {},
    },
  });
  afterAll(() => hub.cleanup());

  const identities: KafkaBrokerIdentity[] = [1, 2, 3].map((nodeId) => ({
    nodeId,
    hostName: `kafka-${nodeId}.${ZONE}`,
  }));
  const clusterId = kafkaClusterId('rmqbench-sim-stack/Kafka');
  const vms: SimulatedVm[] = [];

  /**
   * KafkaCluster's user data for one broker: CDK's Linux user data with the exit trap, the construct's ports and
   * device.
   */
  function renderUserData(self: KafkaBrokerIdentity): string {
    const userData = UserData.forLinux();
    userData.addOnExitCommands('rmqbench_boot_finished "$exitCode"');
    userData.addCommands(
      ...kafkaNodeBootCommands({
        self,
        all: identities,
        clientPort: KAFKA_CLIENT_PORT,
        controllerPort: KAFKA_CONTROLLER_PORT,
        clusterId,
        region: REGION,
        stackName: 'rmqbench-sim-stack',
        instanceLogicalId: `KafkaBroker${self.nodeId}Instance`,
        bootLogGroupName: 'rmqbench-sim-kafka-boot',
        dataVolumeDevice: DATA_VOLUME_DEVICE,
        clusterFormationTimeoutSeconds: 300,
      }),
    );
    return userData.render();
  }

  test(
    'booting at once, the three brokers form ONE KRaft quorum: node ' +
      'ids 1-3, advertised by their zone names, each signals SUCCESS',
    async () => {
      const jars = kafkaJarDirectory();
      await hub.start();
      for (const identity of identities) {
        const instanceId = `i-0${identity.nodeId}a0000000000kafka`;
        vms.push(
          hub.createVm(
            instanceId,
            `ip-10-91-5-${10 + identity.nodeId}`,
            {
              '/var/lib/cloud/instance/user-data.txt': { content: renderUserData(identity), mode: 0o700 },
              // Downloads only: Java is this machine's, each jar its Maven cache's (rmqbench_fetch_jar <Maven path>
              // <file>, into
              // the script's /opt/kafka/libs); the script's manifest loop and digest check run as on EC2.
              [INSTALL_OVERRIDE_FILE]: {
                content:
                  'rmqbench_install_packages() { command -v java >/dev/null; }\n' +
                  `rmqbench_fetch_jar() { cp ${shellQuote(jars)}/"$2" "$2"; }\n`,
                mode: 0o644,
              },
              ...(identity.nodeId < 3 ? { '/usr/local/sbin/dnf': { content: FAKE_DNF, mode: 0o755 } } : {}),
            },
            // The Route 53 private zone's A record for the broker's interface: its name resolves to the instance's
            // address.
            {
              blockDevice: DATA_VOLUME_DEVICE,
              state: { instanceId },
              overlays: OVERLAYS,
              dnsNames: [identity.hostName],
            },
          ),
        );
      }
      // What cloud-init gives the user data here: the AWS CLI on PATH, and AWS_CA_BUNDLE for the test CA (the CLI keeps
      // its own bundle).
      const environment = {
        PATH: `${awsCliDirectory()}:${MINIMAL_PATH}`,
        HOME: '/root',
        AWS_CA_BUNDLE: '/etc/ssl/certs/ca-certificates.crt',
        AWS_CONFIG_FILE: '/nonexistent',
        AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
      };
      const results = await Promise.all(
        vms.map((vm) => hub.exec(vm, 'bash /var/lib/cloud/instance/user-data.txt', { env: environment })),
      );
      for (const [index, result] of results.entries()) await expectBooted(hub, vms[index] as SimulatedVm, result);

      const requests = hub.requestLog();
      for (const vm of vms) {
        // The exit trap copied the boot log's tail to CloudWatch Logs and signalled the instance's creation policy.
        expect(requests).toContain(`${vm.ip} logs Logs_20140328.PutLogEvents ${vm.name}/boot`);
        expect(requests).toContain(`${vm.ip} cloudformation SignalResource ${vm.name} SUCCESS`);
      }
      for (const [index, vm] of vms.entries()) {
        const bootLog = (await hub.exec(vm, `cat ${BOOT_LOG_FILE}`)).stdout;
        // The jars were checked against their pins (the digest over their SHA-256 sums), and all 92 are there.
        expect((await hub.exec(vm, 'ls /opt/kafka/libs/*.jar | wc -l')).stdout.trim()).toBe(
          String(KAFKA_ARTIFACTS.length),
        );
        expect(bootLog).not.toContain('differ from the pinned ones');
        expect(bootLog).toContain('quorum formed: leader');
        expect(bootLog).toContain('3 voters');
        expect(await formattedIdentity(hub, vm)).toEqual({ nodeId: String(index + 1), clusterId });
        expect(await brokerProcess(hub, vm)).toBe(`kafka /etc/kafka/server.properties`);
        expect((await hub.exec(vm, 'findmnt -n -o SOURCE,FSTYPE /var/lib/kafka')).stdout).toBe(
          `${DATA_VOLUME_DEVICE} xfs\n`,
        );
      }
    },
  );

  test(
    'the boot wrote the CloudWatch agent configuration with the stack name as ClusterId and ' +
      'Role kafka-broker, and started the agent; without dnf the broker booted all the same',
    async () => {
      for (const vm of vms.slice(0, 2)) {
        const config = JSON.parse((await hub.exec(vm, `cat ${CLOUDWATCH_AGENT_CONFIG_PATH}`)).stdout) as {
          metrics: {
            namespace: string;
            append_dimensions: Record<string, string>;
            metrics_collected: Record<string, { append_dimensions: Record<string, string> }>;
          };
        };
        expect(config.metrics.namespace).toBe(CLOUDWATCH_NAMESPACE);
        // The agent's own placeholder arrives unexpanded; it fills in the instance id.
        expect(config.metrics.append_dimensions).toEqual({ InstanceId: '${aws:InstanceId}' });
        expect(Object.keys(config.metrics.metrics_collected).sort()).toEqual(['cpu', 'diskio', 'mem', 'net']);
        for (const plugin of Object.values(config.metrics.metrics_collected))
          expect(plugin.append_dimensions).toEqual({ ClusterId: 'rmqbench-sim-stack', Role: KAFKA_BROKER_ROLE });
        expect((await hub.exec(vm, `cat ${AGENT_CTL_CALLS}`)).stdout).toBe(
          `-a fetch-config -m ec2 -s -c file:${CLOUDWATCH_AGENT_CONFIG_PATH}\n`,
        );
      }
      const third = vms[2] as SimulatedVm;
      expect((await hub.exec(third, `cat ${BOOT_LOG_FILE}`)).stdout).toContain(
        'the CloudWatch agent could not be installed or started',
      );
      expect(
        (await hub.exec(third, `test -e ${CLOUDWATCH_AGENT_CONFIG_PATH} && echo present || echo absent`)).stdout,
      ).toBe('absent\n');
    },
  );

  test(
    "from inside an instance, Kafka's tools see one quorum of voters " +
      '1-3 with a leader, and each broker advertised at its zone name',
    async () => {
      const [first, second, third] = vms as [SimulatedVm, SimulatedVm, SimulatedVm];
      const status = await quorumStatus(hub, second, `${identities[0]!.hostName}:9092`);
      expect(status.clusterId).toBe(clusterId);
      expect(status.voterIds).toEqual([1, 2, 3]);
      expect(status.voterEndpoints).toEqual(identities.map((broker) => `CONTROLLER://${broker.hostName}:9093`));
      expect([1, 2, 3]).toContain(status.leaderId);
      // The same quorum asked through another broker.
      expect((await quorumStatus(hub, third, `${identities[2]!.hostName}:9092`)).voterIds).toEqual([1, 2, 3]);
      expect(await advertisedBrokers(hub, first, `${identities[1]!.hostName}:9092`)).toEqual(
        Object.fromEntries(identities.map((broker) => [`${broker.hostName}:9092`, broker.nodeId])),
      );
    },
  );

  test('cleanup leaves no broker process, namespace or folder behind', () => {
    expect(vms).toHaveLength(3);
    hub.cleanup();
    expect(hub.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
  });
});

describe('Azure Kafka broker customData (modules/kafka-cluster.bicep) on three simulated VMs', () => {
  const SUBNET = 6;
  const hub = new SimulatedHub({
    subnet: SUBNET,
    fakeScript: 'fake-azure.py',
    httpsNames: ['management.azure.com', 'rmqbenchsimkv.vault.azure.net'],
    state: {
      subscriptionId: '00000000-0000-0000-0000-000000000091',
      resourceGroup: 'rmqbench-sim',
      scaleSetName: 'none',
      identityClientId: 'none',
      vaultName: 'rmqbenchsimkv',
      secrets: {},
    },
  });
  afterAll(() => hub.cleanup());

  // The module's static IPs: cidrHost(subnetAddressPrefix, firstHostNumber + i) with the default firstHostNumber 99,
  // which
  // is the subnet's address 100 + i (cidrHost's 0 is the first usable address, .1:
  // https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions-cidr#cidrhost).
  const FIRST_HOST_NUMBER = 99;
  const brokerHosts = [0, 1, 2].map((i) => `10.91.${SUBNET}.${FIRST_HOST_NUMBER + i + 1}`);
  const clusterSeed = '/subscriptions/00000000-0000-0000-0000-000000000091/resourceGroups/rmqbench-sim/rmqbench-kafka';
  const vms: SimulatedVm[] = [];

  /** Broker i's customData, evaluated from the module as ARM would (the static IPs and the seed given, as ARM does). */
  const renderCustomData = (i: number): Promise<CloudConfig> =>
    moduleCustomData('kafka-cluster.bicep', {
      i: String(i),
      namePrefix: 'rmqbench',
      brokerHostList: brokerHosts.join(','),
      clusterSeed,
      quorumTimeoutSeconds: '300',
    });

  test(
    'booting at once, the three brokers form ONE KRaft quorum: ' +
      'node ids 1-3, advertised at their static private IPs',
    async () => {
      const jars = kafkaJarDirectory();
      await hub.start();
      const configs: CloudConfig[] = [];
      for (const i of [0, 1, 2]) {
        const config = await renderCustomData(i);
        configs.push(config);
        const files = cloudConfigFiles(config);
        expect(files['/etc/rmqbench/kafka.env']?.content).toContain(
          `NODE_ID=${i + 1}\nBROKER_HOSTS=${brokerHosts.join(',')}\n`,
        );
        // Downloads only: Java is this machine's, the jars its Maven cache's; the script checks their SHA-256 sums
        // itself.
        files['/etc/rmqbench/install-override.sh'] = {
          content: `install_kafka() { command -v java >/dev/null && cp ${shellQuote(jars)}/*.jar "$home/libs/"; }\n`,
          mode: 0o644,
        };
        vms.push(
          hub.createVm(`rmqbench-kafka-${i + 1}`, `rmqbench-kafka-${i + 1}`, files, {
            hostNumber: FIRST_HOST_NUMBER + i + 1,
            // The data disk at LUN 0, by the name Azure's udev rules give it.
            blockDevice: '/dev/disk/azure/scsi1/lun0',
            overlays: OVERLAYS,
          }),
        );
      }
      expect(vms.map((vm) => vm.ip)).toEqual(brokerHosts);
      const results = await runCommands(hub, vms, configs);
      for (const [index, result] of results.entries()) {
        await expectBooted(hub, vms[index] as SimulatedVm, result);
        expect(result.stderr).toContain('rmqbench-kafka-setup: quorum formed: leader');
      }
      for (const [index, vm] of vms.entries()) {
        expect(await formattedIdentity(hub, vm)).toEqual({
          nodeId: String(index + 1),
          clusterId: kafkaClusterId(clusterSeed),
        });
        expect(await brokerProcess(hub, vm)).toBe('kafka /etc/kafka/server.properties');
        expect((await hub.exec(vm, 'findmnt -n -o SOURCE,FSTYPE /var/lib/kafka')).stdout).toBe(
          '/dev/disk/azure/scsi1/lun0 xfs\n',
        );
      }
    },
  );

  test(
    "from inside a VM, Kafka's tools see one quorum of voters 1-3 " +
      'with a leader, and each broker advertised at its static IP',
    async () => {
      const [first, second] = vms as [SimulatedVm, SimulatedVm];
      const status = await quorumStatus(hub, first, `${brokerHosts[1]}:9092`);
      expect(status.clusterId).toBe(kafkaClusterId(clusterSeed));
      expect(status.voterIds).toEqual([1, 2, 3]);
      expect(status.voterEndpoints).toEqual(brokerHosts.map((host) => `CONTROLLER://${host}:9093`));
      expect([1, 2, 3]).toContain(status.leaderId);
      expect(await advertisedBrokers(hub, second, `${brokerHosts[0]}:9092`)).toEqual(
        Object.fromEntries(brokerHosts.map((host, index) => [`${host}:9092`, index + 1])),
      );
    },
  );

  test('cleanup leaves no broker process, namespace or folder behind', () => {
    expect(vms).toHaveLength(3);
    hub.cleanup();
    expect(hub.leftovers()).toEqual({ processes: [], hubNamespace: false, folder: false });
  });
});
