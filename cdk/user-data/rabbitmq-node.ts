import { policyCommandArgs, type BrokerConfig } from '../../core/broker/broker-config';
import { AWS_CLI_ENVIRONMENT } from '../../core/cloud/aws-cli-environment';
import type { RabbitMqRelease } from '../rabbitmq-release';
import { shellQuote, writeFileCommand } from '../shell';

/** Here-document delimiters; the tests locate the written files by them. */
export const RABBITMQ_CONF_DELIMITER = 'RMQBENCH_RABBITMQ_CONF';
export const ENABLED_PLUGINS_DELIMITER = 'RMQBENCH_ENABLED_PLUGINS';
export const DRAIN_SCRIPT_DELIMITER = 'RMQBENCH_DRAIN_SCRIPT';
export const DRAIN_UNIT_DELIMITER = 'RMQBENCH_DRAIN_UNIT';

/**
 * The device name the data volume is attached as. On Nitro instances EBS volumes are NVMe devices; Amazon Linux's
 * amazon-ec2-utils udev rule links each to its block device mapping name (amazonlinux/amazon-ec2-utils
 * 70-ec2-nvme-devices.rules: `PROGRAM="/usr/sbin/ebsnvme-id -u /dev/%k", SYMLINK+="%c"`), so /dev/sdf exists either
 * way.
 */
export const DATA_VOLUME_DEVICE = '/dev/sdf';
/** Everything the boot script prints is also appended here (the tail is copied to CloudWatch Logs when it ends). */
export const BOOT_LOG_FILE = '/var/log/rmqbench-boot.log';
/** Lines of the boot log copied to the boot log group when the script ends. */
export const BOOT_LOG_TAIL_LINES = 200;
/** Where the drain watcher is installed. */
export const DRAIN_SCRIPT_PATH = '/usr/local/sbin/rmqbench-drain-before-termination';
export const DRAIN_UNIT_PATH = '/etc/systemd/system/rmqbench-drain-before-termination.service';
/**
 * The one test seam of the script: when this file exists, it is sourced right before the package installation and may
 * redefine `rmqbench_install_packages` (the simulated-VM harness installs Debian's rabbitmq-server instead of the
 * RPMs).
 * Nothing creates it on EC2.
 */
export const INSTALL_OVERRIDE_FILE = '/etc/rmqbench/install-override.sh';

export interface RabbitMqNodeBootInput {
  /** What core/generateBrokerConfig returned: written and applied unchanged. */
  readonly brokerConfig: BrokerConfig;
  readonly release: RabbitMqRelease;
  /** Region of the secrets (a token is fine). */
  readonly region: string;
  /** ARN of the secret holding the Erlang cookie (plain string). */
  readonly erlangCookieSecretArn: string;
  /** ARN of the secret holding `{"username": ..., "password": ...}` of the administrator. */
  readonly adminSecretArn: string;
  /** Name of the stack holding the Auto Scaling group (a token is fine); the boot result is signalled to it. */
  readonly stackName: string;
  /** Logical id of the Auto Scaling group whose creation policy waits for the signal. */
  readonly autoScalingGroupLogicalId: string;
  /** CloudWatch Logs group the tail of the boot log is copied to (a token is fine). */
  readonly bootLogGroupName: string;
  /** Name of the group's termination lifecycle hook that the drain watcher completes. */
  readonly drainLifecycleHookName: string;
  /** Seconds the boot waits for the cluster to reach the group's desired capacity. */
  readonly clusterFormationTimeoutSeconds: number;
  /** Seconds `rabbitmq-upgrade drain` may take before the node is terminated anyway. */
  readonly drainTimeoutSeconds: number;
}

// Team RabbitMQ's repositories and signing keys, exactly as RabbitMQ's "Installing on RPM-based Linux" guide gives them
// for the el9 family, which lists Amazon Linux 2023 (rabbitmq/rabbitmq-website
// versioned_docs/version-4.1/install-rpm.md,
// "Import the Signing Keys" and "Add Yum Repositories for RabbitMQ and Modern Erlang"). The guide also says these
// mirrors carry x86-64 Erlang only, which is why RabbitMqCluster refuses ARM instance types.
const SIGNING_KEYS = {
  release: 'https://github.com/rabbitmq/signing-keys/releases/download/3.0/rabbitmq-release-signing-key.asc',
  erlang:
    'https://github.com/rabbitmq/signing-keys/releases/download/3.0/cloudsmith.rabbitmq-erlang.E495BB49CC4BBE5B.key',
  server:
    'https://github.com/rabbitmq/signing-keys/releases/download/3.0/cloudsmith.rabbitmq-server.9F4587F226208342.key',
} as const;

function repoSection(id: string, name: string, baseUrls: readonly string[], gpgKeys: readonly string[]): string {
  return [
    `[${id}]`,
    `name=${name}`,
    `baseurl=${baseUrls[0]}`,
    ...baseUrls.slice(1).map((url) => `        ${url}`),
    'repo_gpgcheck=1',
    'enabled=1',
    `gpgkey=${gpgKeys[0]}`,
    ...gpgKeys.slice(1).map((key) => `       ${key}`),
    'gpgcheck=1',
    'sslverify=1',
    'sslcacert=/etc/pki/tls/certs/ca-bundle.crt',
    'metadata_expire=300',
    'pkg_gpgcheck=1',
    'autorefresh=1',
    'type=rpm-md',
    '',
  ].join('\n');
}

/** /etc/yum.repos.d/rabbitmq.repo: both mirrors of every repository, as the guide lists them. */
export const RABBITMQ_REPO_FILE = [
  repoSection(
    'modern-erlang',
    'modern-erlang-el9',
    ['https://yum1.rabbitmq.com/erlang/el/9/$basearch', 'https://yum2.rabbitmq.com/erlang/el/9/$basearch'],
    [SIGNING_KEYS.erlang],
  ),
  repoSection(
    'modern-erlang-noarch',
    'modern-erlang-el9-noarch',
    ['https://yum1.rabbitmq.com/erlang/el/9/noarch', 'https://yum2.rabbitmq.com/erlang/el/9/noarch'],
    [SIGNING_KEYS.erlang, SIGNING_KEYS.release],
  ),
  repoSection(
    'rabbitmq-el9',
    'rabbitmq-el9',
    ['https://yum2.rabbitmq.com/rabbitmq/el/9/$basearch', 'https://yum1.rabbitmq.com/rabbitmq/el/9/$basearch'],
    [SIGNING_KEYS.server, SIGNING_KEYS.release],
  ),
  repoSection(
    'rabbitmq-el9-noarch',
    'rabbitmq-el9-noarch',
    ['https://yum2.rabbitmq.com/rabbitmq/el/9/noarch', 'https://yum1.rabbitmq.com/rabbitmq/el/9/noarch'],
    [SIGNING_KEYS.server, SIGNING_KEYS.release],
  ),
].join('\n');

/** `imds <path>`: one IMDSv2 metadata read (token first); shared with the Kafka brokers' boot script. */
export const IMDS_FUNCTION =
  'imds() { local token; token=$(curl -sSf -X PUT http://169.254.169.254/latest/api/token -H ' +
  '"X-aws-ec2-metadata-token-ttl-seconds: 300"); curl -sSf -H "X-aws-ec2-metadata-token: $token" ' +
  '"http://169.254.169.254/latest/meta-data/$1"; }';

/**
 * Runs on the node as a systemd service: polls the Auto Scaling target lifecycle state through IMDSv2 and, once it
 * reads "Terminated" (a scale-in or replacement; the group's termination lifecycle hook holds the instance), puts the
 * node in maintenance mode with `rabbitmq-upgrade drain` (quorum queue leaders move away, clients reconnect
 * elsewhere) and lets the termination continue. Polling the item and completing the hook from the instance is the
 * pattern of https://docs.aws.amazon.com/autoscaling/ec2/userguide/retrieving-target-lifecycle-state-through-imds.html;
 * `drain` is documented in rabbitmq-website versioned_docs/version-3.13/man/rabbitmq-upgrade.8.md (3.13 and 4.1).
 */
const DRAIN_SCRIPT =
  `#!/bin/bash
set -uo pipefail
. /etc/rmqbench/node.env
${IMDS_FUNCTION}
while true; do
  if [ "$(imds autoscaling/target-lifecycle-state 2>/dev/null || true)" = "Terminated" ]; then
    echo "this instance is being terminated: draining RabbitMQ"
    timeout "$DRAIN_TIMEOUT_SECONDS" rabbitmq-upgrade drain || echo "drain did not finish; terminating anyway"
    aws autoscaling complete-lifecycle-action --region "$REGION" --auto-scaling-group-name "$ASG_NAME" ` +
  `--lifecycle-hook-name "$DRAIN_HOOK_NAME" --instance-id "$INSTANCE_ID" --lifecycle-action-result CONTINUE
    exit 0
  fi
  sleep 5
done
`;

const DRAIN_UNIT = `[Unit]
Description=rmqbench: drain RabbitMQ before Auto Scaling terminates this instance
After=rabbitmq-server.service

[Service]
ExecStart=${DRAIN_SCRIPT_PATH}
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

/**
 * The function the user data's exit trap calls (RabbitMqCluster registers `rmqbench_boot_finished $exitCode` with
 * UserData.addOnExitCommands, so it runs after every command, including those appended to the user data later).
 * It copies the tail of the boot log to CloudWatch Logs, then signals the Auto Scaling group's creation (or rolling
 * update) policy: SUCCESS only when the whole script succeeded, FAILURE otherwise, which fails the stack at once.
 * The signal uses the SignalResource API with the instance role
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_SignalResource.html: for Auto Scaling groups
 * the unique id is the instance id) through the AWS CLI v2 that Amazon Linux 2023 ships
 * (https://docs.aws.amazon.com/linux/al2023/ug/awscli2.html), so no cfn-bootstrap package is needed.
 * Shared with the Kafka brokers' boot script (user-data/kafka-node.ts), which signals its own instance's creation
 * policy.
 */
export const BOOT_FINISHED_FUNCTION = [
  'rmqbench_boot_finished() {',
  '  local status=SUCCESS',
  '  [ "$1" -eq 0 ] || status=FAILURE',
  '  echo "rmqbench boot script ended with exit code $1: signalling $status"',
  '  local stream="${INSTANCE_ID:-unknown-instance}/boot"',
  // tee copies the output to the boot log asynchronously: end it (it sees EOF once nothing writes to its pipe) and give
  // it up to 2 s to finish, so that the tail below holds the script's last lines (a background process still holding
  // the pipe cannot block the signal). From here on the output goes to the log file only.
  `  exec >> ${BOOT_LOG_FILE} 2>&1`,
  '  local waited; for waited in $(seq 20); do [ -n "${BOOT_LOG_TEE_PID:-}" ] && kill -0 "$BOOT_LOG_TEE_PID" ' +
    '2>/dev/null || break; sleep 0.1; done',
  '  aws logs create-log-stream --region "$REGION" --log-group-name "$BOOT_LOG_GROUP" --log-stream-name ' +
    '"$stream" 2>/dev/null || true',
  `  tail -n ${BOOT_LOG_TAIL_LINES} ${BOOT_LOG_FILE} | python3 -c 'import json,sys,time; ` +
    `now=int(time.time()*1000); print(json.dumps([{"timestamp": now, "message": line.rstrip("\\n") or " "} for ` +
    `line in sys.stdin]))' > /run/rmqbench-boot-log-events.json || true`,
  '  aws logs put-log-events --region "$REGION" --log-group-name "$BOOT_LOG_GROUP" --log-stream-name "$stream" ' +
    '--log-events file:///run/rmqbench-boot-log-events.json >/dev/null || echo "could not copy the boot log to ' +
    'CloudWatch Logs"',
  '  aws cloudformation signal-resource --region "$REGION" --stack-name "$STACK_NAME" --logical-resource-id ' +
    '"$SIGNAL_RESOURCE" --unique-id "${INSTANCE_ID:-unknown-instance}" --status "$status" || echo "could not ' +
    'signal CloudFormation"',
  '}',
].join('\n');

/**
 * The boot script of a RabbitMQ node (Amazon Linux 2023), as user-data lines.
 *
 * It holds no secret: the Erlang cookie and the administrator password are fetched from Secrets Manager
 * with the instance role, written straight to their destination (file or stdin) and never echoed.
 * The script must not use `set -x`, since cloud-init logs its output and the boot log is copied to CloudWatch Logs.
 */
export function rabbitMqNodeBootCommands(input: RabbitMqNodeBootInput): string[] {
  return [
    ...bootPrelude(input),
    ...dataVolumeCommands(),
    ...installCommands(input.release),
    ...brokerFileCommands(input.brokerConfig),
    ...clusterFormationCommands(input),
    ...administratorCommands(),
    ...drainCommands(input),
    ...policyCommands(input.brokerConfig),
  ];
}

/** The shell options, the script's settings, the boot log and the helper functions every later step uses. */
function bootPrelude(input: RabbitMqNodeBootInput): string[] {
  return [
    'set -euo pipefail',
    `REGION=${input.region}`,
    `STACK_NAME=${input.stackName}`,
    `SIGNAL_RESOURCE=${input.autoScalingGroupLogicalId}`,
    `BOOT_LOG_GROUP=${input.bootLogGroupName}`,
    `ERLANG_COOKIE_SECRET_ARN=${input.erlangCookieSecretArn}`,
    `ADMIN_SECRET_ARN=${input.adminSecretArn}`,
    `exec > >(tee -a ${BOOT_LOG_FILE}) 2>&1`,
    'BOOT_LOG_TEE_PID=$!',
    // Every aws call retries throttling and transient errors, and reads the instance's credentials patiently.
    AWS_CLI_ENVIRONMENT,
    // The first secret read also waits out a new instance role whose credentials are not usable yet (IAM is eventually
    // consistent:
    // https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_general.html#troubleshoot_general_eventual-consistency).
    'read_secret() { local attempt; for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do aws secretsmanager ' +
      'get-secret-value --region "$REGION" --secret-id "$1" --query SecretString --output text && return 0; echo ' +
      '"secret $1 not readable yet (attempt $attempt of 12)" >&2; sleep 10; done; return 1; }',
    IMDS_FUNCTION,
    BOOT_FINISHED_FUNCTION,
    'INSTANCE_ID=$(imds instance-id)',
  ];
}

/** The data volume: formatted on first boot only, mounted where RabbitMQ keeps its state. */
function dataVolumeCommands(): string[] {
  return [
    '# Data volume: formatted on first boot only, mounted where RabbitMQ keeps its state.',
    `for attempt in $(seq 1 60); do [ -e ${DATA_VOLUME_DEVICE} ] && break; sleep 2; done`,
    `blkid ${DATA_VOLUME_DEVICE} >/dev/null || mkfs.xfs ${DATA_VOLUME_DEVICE}`,
    'mkdir -p /var/lib/rabbitmq',
    `grep -q ' /var/lib/rabbitmq ' /etc/fstab || echo '${DATA_VOLUME_DEVICE} /var/lib/rabbitmq xfs ` +
      `defaults,nofail 0 2' >> /etc/fstab`,
    'mountpoint -q /var/lib/rabbitmq || mount /var/lib/rabbitmq',
  ];
}

/** RabbitMQ and Erlang, pinned, from Team RabbitMQ's signed repositories (through the one test seam). */
function installCommands(release: RabbitMqRelease): string[] {
  return [
    `# Pinned RabbitMQ ${release.rabbitmqVersion} on Erlang ${release.erlangVersion} from Team RabbitMQ's ` +
      `signed repositories.`,
    'rmqbench_install_packages() {',
    ...Object.values(SIGNING_KEYS).map((key) => `rpm --import ${key}`),
    writeFileCommand('/etc/yum.repos.d/rabbitmq.repo', RABBITMQ_REPO_FILE, 'RMQBENCH_REPO'),
    // logrotate is the one dependency the guide installs from the distribution's own repositories.
    `dnf install -y --setopt=install_weak_deps=False logrotate erlang-${release.erlangVersion} ` +
      `rabbitmq-server-${release.rabbitmqVersion}`,
    // Holding the versions keeps a later `dnf upgrade` from splitting the cluster across versions.
    'dnf install -y python3-dnf-plugin-versionlock && dnf versionlock add erlang rabbitmq-server',
    '}',
    `# Test seam (the only one; absent on EC2): ${INSTALL_OVERRIDE_FILE} may redefine rmqbench_install_packages.`,
    `if [ -f ${INSTALL_OVERRIDE_FILE} ]; then . ${INSTALL_OVERRIDE_FILE}; fi`,
    'rmqbench_install_packages',
    // nft for a partition fault (core/failover/cloud-fault.ts faultScript): the AL2023 core repository has nftables,
    // the default
    // AMI does not list it. Not fatal: a partition installs it itself when this failed.
    'command -v nft >/dev/null || dnf install -y -q nftables || echo "nftables not installed; a partition ' +
      'fault installs it" >&2',
    'systemctl stop rabbitmq-server || true',
    'chown -R rabbitmq:rabbitmq /var/lib/rabbitmq',
  ];
}

/** The node name, the broker's configuration files and the Erlang cookie. */
function brokerFileCommands(brokerConfig: BrokerConfig): string[] {
  return [
    '# Node name from the private IP, matching cluster_formation.aws.use_private_ip.',
    'PRIVATE_IP=$(imds local-ipv4)',
    `printf 'NODENAME=rabbit@%s\\nUSE_LONGNAME=true\\n' "$PRIVATE_IP" > /etc/rabbitmq/rabbitmq-env.conf`,
    writeFileCommand('/etc/rabbitmq/rabbitmq.conf', brokerConfig.rabbitmqConf, RABBITMQ_CONF_DELIMITER),
    writeFileCommand('/etc/rabbitmq/enabled_plugins', brokerConfig.enabledPluginsFile, ENABLED_PLUGINS_DELIMITER),
    'chown rabbitmq:rabbitmq /etc/rabbitmq/rabbitmq.conf /etc/rabbitmq/enabled_plugins /etc/rabbitmq/rabbitmq-env.conf',

    '# Erlang cookie: read from Secrets Manager straight into the file, never into the log.',
    'umask 077',
    'read_secret "$ERLANG_COOKIE_SECRET_ARN" | tr -d "\\n" > /var/lib/rabbitmq/.erlang.cookie',
    '[ -s /var/lib/rabbitmq/.erlang.cookie ] || { echo "the Erlang cookie secret is empty or unreadable" >&2; ' +
      'exit 1; }',
    'chown rabbitmq:rabbitmq /var/lib/rabbitmq/.erlang.cookie && chmod 400 /var/lib/rabbitmq/.erlang.cookie',
    'umask 022',
  ];
}

/** Start, join the cluster by peer discovery, and wait until the group's desired number of nodes run. */
function clusterFormationCommands(input: RabbitMqNodeBootInput): string[] {
  return [
    '# Peer discovery joins this node to the running cluster (or forms a new one) as it starts.',
    'systemctl enable --now rabbitmq-server',
    'rabbitmqctl await_startup --timeout 900',

    '# Success means clustered: wait until as many nodes run as the Auto Scaling group wants (its desired capacity).',
    'ASG_NAME=$(aws autoscaling describe-auto-scaling-instances --region "$REGION" --instance-ids ' +
      '"$INSTANCE_ID" --query "AutoScalingInstances[0].AutoScalingGroupName" --output text)',
    'EXPECTED_NODES=$(aws autoscaling describe-auto-scaling-groups --region "$REGION" ' +
      '--auto-scaling-group-names "$ASG_NAME" --query "AutoScalingGroups[0].DesiredCapacity" --output text)',
    `rabbitmqctl await_online_nodes "$EXPECTED_NODES" --timeout ${input.clusterFormationTimeoutSeconds}`,
    'echo "cluster has $EXPECTED_NODES running nodes"',
  ];
}

/** The administrator user, created once per cluster, its password through stdin. */
function administratorCommands(): string[] {
  return [
    '# Administrator: created once per cluster; the password goes through stdin, not the command line.',
    'admin_secret() { read_secret "$ADMIN_SECRET_ARN" | python3 -c "import json,sys; ' +
      'print(json.load(sys.stdin)[sys.argv[1]], end=\'\')" "$1"; }',
    'ADMIN_USER=$(admin_secret username)',
    // rabbitmqctl reads the password as a line: without the newline add_user says "Password is not provided via
    // argument or stdin" (seen on the simulated EC2 instance, test/simulated-vm/aws-node.integration.test.ts).
    'if ! rabbitmqctl --quiet list_users | cut -f1 | grep -qxF "$ADMIN_USER"; then { admin_secret password; ' +
      'echo; } | rabbitmqctl add_user "$ADMIN_USER" || true; fi',
    'rabbitmqctl set_user_tags "$ADMIN_USER" administrator',
    'rabbitmqctl set_permissions -p / "$ADMIN_USER" ".*" ".*" ".*"',
    'rabbitmqctl delete_user guest 2>/dev/null || true',
  ];
}

/** The drain watcher that completes the termination lifecycle hook once the node is drained. */
function drainCommands(input: RabbitMqNodeBootInput): string[] {
  return [
    '# Drain before scale-in: a watcher completes the termination lifecycle hook once this node is drained.',
    'mkdir -p /etc/rmqbench',
    `printf 'REGION=%s\\nASG_NAME=%s\\nINSTANCE_ID=%s\\nDRAIN_HOOK_NAME=%s\\nDRAIN_TIMEOUT_SECONDS=%s\\n' ` +
      `"$REGION" "$ASG_NAME" "$INSTANCE_ID" ${shellQuote(input.drainLifecycleHookName)} ` +
      `${input.drainTimeoutSeconds} > /etc/rmqbench/node.env`,
    writeFileCommand(DRAIN_SCRIPT_PATH, DRAIN_SCRIPT, DRAIN_SCRIPT_DELIMITER),
    `chmod 755 ${DRAIN_SCRIPT_PATH}`,
    writeFileCommand(DRAIN_UNIT_PATH, DRAIN_UNIT, DRAIN_UNIT_DELIMITER),
    'systemctl daemon-reload && systemctl enable --now rmqbench-drain-before-termination.service',
  ];
}

/** The queue topology policies (idempotent; every node applies them). */
function policyCommands(brokerConfig: BrokerConfig): string[] {
  return [
    '# Queue topology policies from core/broker/broker-config.ts (idempotent; every node applies them).',
    ...brokerConfig.policies.map((policy) => `rabbitmqctl ${policyCommandArgs(policy).map(shellQuote).join(' ')}`),
  ];
}
