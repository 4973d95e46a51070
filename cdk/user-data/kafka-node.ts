import { KAFKA_BROKER_ROLE } from '../../core/metrics/cloudwatch-host-metrics';
import { KAFKA_BROKER_LOG4J } from '../../core/kafka/kafka-broker-log4j';
import { KAFKA_ARTIFACTS, KAFKA_VERSION_ON_AWS } from '../kafka-artifacts';
import { shellQuote, writeFileCommand } from '../shell';
import { cloudWatchAgentBootCommands } from './cloudwatch-agent';
import { FETCH_JAR_FUNCTION, jarsDigest, jarsManifest, pinnedJarCommands } from './pinned-jars';
import { INSTALL_OVERRIDE_FILE } from './rabbitmq-node';
import { dataVolumeMountCommands, signalledBootPrelude, type SignalledBootSettings } from './node-boot';

/** Here-document delimiters; the tests locate the written files by them. */
export const SERVER_PROPERTIES_DELIMITER = 'RMQBENCH_KAFKA_SERVER_PROPERTIES';
export const KAFKA_UNIT_DELIMITER = 'RMQBENCH_KAFKA_UNIT';
export const KAFKA_LOG4J_DELIMITER = 'RMQBENCH_KAFKA_LOG4J';

export const KAFKA_HOME = '/opt/kafka';
export const KAFKA_CONFIG_DIR = '/etc/kafka';
export const KAFKA_SERVER_PROPERTIES = `${KAFKA_CONFIG_DIR}/server.properties`;
export const KAFKA_UNIT_PATH = '/etc/systemd/system/kafka.service';
/** Mount point of the data volume; the broker's log.dirs is a folder below it. */
export const KAFKA_DATA_MOUNT = '/var/lib/kafka';
export const KAFKA_LOG_DIR = `${KAFKA_DATA_MOUNT}/data`;
/**
 * The broker's heap: Kafka's own default (bin/kafka-server-start.sh sets KAFKA_HEAP_OPTS="-Xmx1G -Xms1G"); the log
 * lives in the page cache.
 */
export const KAFKA_HEAP = '-Xmx1G -Xms1G';

export interface KafkaBrokerIdentity {
  /** node.id of the broker, 1..N. */
  readonly nodeId: number;
  /** The broker's stable DNS name, `kafka-<nodeId>.<zone>`. */
  readonly hostName: string;
}

export interface KafkaServerPropertiesInput {
  readonly self: KafkaBrokerIdentity;
  /** Every broker of the cluster (self included), in node id order. */
  readonly all: readonly KafkaBrokerIdentity[];
  readonly clientPort: number;
  readonly controllerPort: number;
}

/**
 * One broker's server.properties: combined broker+controller (process.roles=broker,controller), a static quorum of
 * every broker named by its stable DNS name (controller.quorum.voters=id@host:port), clients told to reach the
 * broker by that name (advertised.listeners). Key by key as Kafka's configuration reference documents them
 * (https://kafka.apache.org/documentation/#brokerconfigs; KRaft: https://kafka.apache.org/documentation/#kraft_config
 * "Process Roles", "Controllers": "controller.quorum.voters=id1@host1:port1,id2@host2:port2,id3@host3:port3"), the same
 * keys the local target uses (local/kafka-cluster.ts serverProperties), with DNS names instead of loopback ports.
 */
export function kafkaServerProperties(input: KafkaServerPropertiesInput): string {
  const copies = Math.min(3, input.all.length);
  return [
    '# Written by rmqbench (KafkaCluster on AWS): a combined broker+controller in KRaft mode, no ZooKeeper.',
    'process.roles=broker,controller',
    `node.id=${input.self.nodeId}`,
    `controller.quorum.voters=` +
      `${input.all.map((broker) => `${broker.nodeId}@${broker.hostName}:${input.controllerPort}`).join(',')}`,
    // Bound on every interface (the instance has one ENI); clients and other brokers are told the DNS name.
    `listeners=PLAINTEXT://0.0.0.0:${input.clientPort},CONTROLLER://0.0.0.0:${input.controllerPort}`,
    `advertised.listeners=PLAINTEXT://${input.self.hostName}:${input.clientPort}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${KAFKA_LOG_DIR}`,
    // Internal topics as replicated as the cluster allows; consumer groups start without the 3 s join delay.
    `offsets.topic.replication.factor=${copies}`,
    `transaction.state.log.replication.factor=${copies}`,
    `transaction.state.log.min.isr=${Math.min(2, copies)}`,
    'group.initial.rebalance.delay.ms=0',
    // Benchmark topics are created with the workload's partitions and replication factor, never implicitly.
    'auto.create.topics.enable=false',
    '',
  ].join('\n');
}

/**
 * log4j2 (properties format): the broker's configuration shared with the local target
 * (core/kafka/kafka-broker-log4j.ts).
 */
export const KAFKA_LOG4J = KAFKA_BROKER_LOG4J;

/**
 * `java` with the Kafka classpath and log4j2 configuration; the JVM expands the classpath's `*` itself (no shell glob).
 */
function javaCommand(jvmOptions = ''): string {
  return (
    `/usr/bin/java ` +
    `${jvmOptions ? `${jvmOptions} ` : ''}-Dlog4j2.configurationFile=${KAFKA_CONFIG_DIR}/log4j2.properties -cp ` +
    `'${KAFKA_HOME}/libs/*'`
  );
}
const JAVA_COMMAND = javaCommand();

export const KAFKA_UNIT = `[Unit]
Description=Apache Kafka ${KAFKA_VERSION_ON_AWS} (KRaft, broker+controller), installed by rmqbench
After=network-online.target local-fs.target
Wants=network-online.target

[Service]
User=kafka
Group=kafka
ExecStart=${javaCommand(`${KAFKA_HEAP} -XX:+UseG1GC`)} kafka.Kafka ${KAFKA_SERVER_PROPERTIES}
Restart=on-failure
RestartSec=10
LimitNOFILE=100000
TimeoutStopSec=120

[Install]
WantedBy=multi-user.target
`;

export interface KafkaNodeBootInput extends SignalledBootSettings {
  readonly self: KafkaBrokerIdentity;
  readonly all: readonly KafkaBrokerIdentity[];
  readonly clientPort: number;
  readonly controllerPort: number;
  /** The cluster id every broker formats its storage with (22 characters of base64url, see KafkaCluster). */
  readonly clusterId: string;
  /** Device name of the data volume. */
  readonly dataVolumeDevice: string;
  /** Seconds the boot waits for the whole quorum (every broker a voter, a leader elected). */
  readonly clusterFormationTimeoutSeconds: number;
}

/**
 * The boot script of one Kafka broker (Amazon Linux 2023), as user-data lines: Java, the pinned Kafka jars from Maven
 * Central (a checksum mismatch removes them and fails the boot), the data volume, server.properties, storage formatted
 * with the shared cluster id, a systemd unit, and success only once the metadata quorum holds every broker with an
 * elected leader. The CloudWatch agent starts first (host metrics under Role kafka-broker and the stack name as
 * ClusterId, cloudwatch-agent.ts); a broker whose agent cannot be installed boots all the same. KafkaCluster registers
 * `rmqbench_boot_finished $exitCode` as the exit command, which copies the boot
 * log's tail to CloudWatch Logs and signals SUCCESS or FAILURE to this instance's creation policy.
 * No secret is involved: the listeners are PLAINTEXT inside the VPC, reachable only as the security group allows.
 */
export function kafkaNodeBootCommands(input: KafkaNodeBootInput): string[] {
  return [
    ...brokerBootPrelude(input),
    ...brokerDataVolumeCommands(input),
    ...brokerInstallCommands(),
    ...brokerConfigurationCommands(input),
    ...brokerStartCommands(input),
  ];
}

/** The shell options, the script's settings, the boot log, the helper functions and the CloudWatch agent. */
function brokerBootPrelude(input: KafkaNodeBootInput): string[] {
  return [
    ...signalledBootPrelude(input),
    `echo "Kafka broker ${input.self.nodeId} booting on $INSTANCE_ID"`,
    // After STACK_NAME, which is the cluster id the agent's metrics carry (the stack name token once in the script);
    // before the installation, so that the metrics exist well before the first repetition. Never fatal.
    ...cloudWatchAgentBootCommands({ clusterId: '$STACK_NAME', role: KAFKA_BROKER_ROLE }),
  ];
}

/** The data volume: formatted on first boot only, mounted where the broker keeps its log. */
function brokerDataVolumeCommands(input: KafkaNodeBootInput): string[] {
  return dataVolumeMountCommands(input.dataVolumeDevice, KAFKA_DATA_MOUNT, 'mounted where the broker keeps its log');
}

/** Java and the pinned Kafka jars (through the one test seam), each checked against its SHA-256. */
function brokerInstallCommands(): string[] {
  return [
    `# Java (the load generator's Corretto 21) and Kafka ${KAFKA_VERSION_ON_AWS} from Maven Central, every jar ` +
      `checked against its pinned SHA-256.`,
    'id kafka >/dev/null 2>&1 || useradd --system --no-create-home --shell /sbin/nologin kafka',
    `install -d ${KAFKA_HOME}/libs ${KAFKA_CONFIG_DIR}`,
    `cd ${KAFKA_HOME}/libs`,
    'rmqbench_install_packages() { dnf install -y java-21-amazon-corretto-headless; }',
    FETCH_JAR_FUNCTION,
    `# Test seam (the only one; absent on EC2): ${INSTALL_OVERRIDE_FILE} may redefine ` +
      `rmqbench_install_packages and rmqbench_fetch_jar (<Maven path> <file>).`,
    `if [ -f ${INSTALL_OVERRIDE_FILE} ]; then . ${INSTALL_OVERRIDE_FILE}; fi`,
    'rmqbench_install_packages',
    // Within EC2's 16 KB of user data: coordinates and one digest instead of a line and a checksum per jar
    // (pinned-jars.ts).
    ...pinnedJarCommands({
      artifacts: KAFKA_ARTIFACTS,
      home: KAFKA_HOME,
      libDir: `${KAFKA_HOME}/libs`,
      label: `Kafka ${KAFKA_VERSION_ON_AWS} (pinned in cdk/kafka-artifacts.ts)`,
      delimiter: KAFKA_JARS_DELIMITER,
    }),
    'cd /',
  ];
}

/** server.properties and log4j2, the broker names read back from it, and waiting until every name resolves. */
function brokerConfigurationCommands(input: KafkaNodeBootInput): string[] {
  return [
    '# Configuration: node id and quorum from the construct, log4j2 to the journal.',
    writeFileCommand(
      KAFKA_SERVER_PROPERTIES,
      kafkaServerProperties({
        self: input.self,
        all: input.all,
        clientPort: input.clientPort,
        controllerPort: input.controllerPort,
      }),
      SERVER_PROPERTIES_DELIMITER,
    ),
    writeFileCommand(`${KAFKA_CONFIG_DIR}/log4j2.properties`, KAFKA_LOG4J, KAFKA_LOG4J_DELIMITER),
    `install -d -o kafka -g kafka ${KAFKA_LOG_DIR}`,
    // Read back from server.properties rather than written out again: the zone name in every broker's name is a token
    // in a controller's template, and each repetition of it counts against EC2's 16 KB of user data.
    "# The brokers' names and this broker's listener, as server.properties names them.",
    `voter_hosts=$(sed -n 's/^controller\\.quorum\\.voters=//p' ${KAFKA_SERVER_PROPERTIES} | tr ',' '\\n' | ` +
      `sed 's/^[0-9]*@//; s/:[0-9]*$//')`,
    `self_listener=$(sed -n 's|^advertised\\.listeners=PLAINTEXT://||p' ${KAFKA_SERVER_PROPERTIES})`,
    `echo "broker ${input.self.nodeId} is $self_listener; voters:" $voter_hosts`,

    // The records exist before the instance (KafkaCluster makes the instance depend on them); a new private zone can
    // still take a moment to answer inside the VPC, and Kafka resolves the voters' names when it starts.
    '# Wait until every broker name resolves.',
    'for host in $voter_hosts; do for attempt in $(seq 1 60); do getent hosts "$host" >/dev/null && break; [ ' +
      '"$attempt" -lt 60 ] || { echo "$host does not resolve" >&2; exit 1; }; sleep 5; done; done',
  ];
}

/** Storage formatted with the shared cluster id, the systemd unit, and waiting for the whole quorum with a leader. */
function brokerStartCommands(input: KafkaNodeBootInput): string[] {
  const quorumCommand =
    `${JAVA_COMMAND} org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$self_listener" ` +
    `describe --status`;
  return [
    // A static quorum: every broker formats with the same cluster id and no --standalone / --initial-controllers, which
    // are for a dynamic quorum (`kafka-storage format --help` in 4.3.1, kafka.tools.StorageTool: "--standalone ... When
    // setting this flag, the controller.quorum.voters config must not be set"). --ignore-formatted keeps a reboot from
    // failing on the already formatted log directory (same help text).
    '# Storage formatted once with the cluster id all brokers share.',
    `runuser -u kafka -- ${JAVA_COMMAND} kafka.tools.StorageTool format --config ${KAFKA_SERVER_PROPERTIES} ` +
      `--cluster-id ${shellQuote(input.clusterId)} --ignore-formatted`,

    writeFileCommand(KAFKA_UNIT_PATH, KAFKA_UNIT, KAFKA_UNIT_DELIMITER),
    'systemctl daemon-reload && systemctl enable --now kafka.service',

    // Success means the cluster formed: this broker's listener answers and the quorum lists every broker as a voter
    // with a leader (kafka-metadata-quorum describe --status: "LeaderId:", "CurrentVoters:"; the local target checks
    // the same, local/kafka-cluster.ts describeQuorum).
    `# Wait for the quorum: ${input.all.length} voters and a leader.`,
    `deadline=$(( $(date +%s) + ${input.clusterFormationTimeoutSeconds} ))`,
    'while true; do',
    `  status=$(runuser -u kafka -- ${quorumCommand} 2>/dev/null || true)`,
    '  leader=$(printf "%s\\n" "$status" | sed -n "s/^LeaderId:[[:space:]]*//p")',
    // grep -o finds no voter while the broker does not answer yet: `|| true`, or pipefail would end the boot there.
    '  voters=$(printf "%s\\n" "$status" | sed -n "s/^CurrentVoters:[[:space:]]*//p" | { grep -o ' +
      '\'"id":[[:space:]]*[0-9]*\' || true; } | wc -l)',
    `  if [ -n "$leader" ] && [ "$leader" -ge 0 ] && [ "$voters" -eq ${input.all.length} ]; then echo "quorum ` +
      `formed: leader $leader, $voters voters"; break; fi`,
    `  if [ "$(date +%s)" -ge "$deadline" ]; then echo "the quorum did not form within ` +
      `${input.clusterFormationTimeoutSeconds} s (leader '\${leader}', \${voters} of ${input.all.length} ` +
      `voters)" >&2; systemctl status kafka.service --no-pager || true; journalctl -u kafka.service -n 50 ` +
      `--no-pager || true; exit 1; fi`,
    '  sleep 10',
    'done',
  ];
}

/** The pinned jars as coordinates, one a line, in KAFKA_ARTIFACTS order: what the boot reads to download them. */
export const KAFKA_JARS_MANIFEST = jarsManifest(KAFKA_ARTIFACTS);
export const KAFKA_JARS_MANIFEST_PATH = `${KAFKA_HOME}/jars.txt`;
export const KAFKA_JARS_DELIMITER = 'RMQBENCH_KAFKA_JARS';
/**
 * One digest over the pinned jars' SHA-256 sums (pinned-jars.ts jarsDigest): the user data need not carry 92 checksums.
 */
export const KAFKA_JARS_DIGEST = jarsDigest(KAFKA_ARTIFACTS);
