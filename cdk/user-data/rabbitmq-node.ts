import { policyCommandArgs, type BrokerConfig } from '../../core/broker-config';
import type { RabbitMqRelease } from '../rabbitmq-release';
import { shellQuote, writeFileCommand } from '../shell';

/** Here-document delimiters; the tests locate the written files by them. */
export const RABBITMQ_CONF_DELIMITER = 'RMQBENCH_RABBITMQ_CONF';
export const ENABLED_PLUGINS_DELIMITER = 'RMQBENCH_ENABLED_PLUGINS';

/** The device name the data volume is attached as; Amazon Linux's udev rules link it to the NVMe device. */
export const DATA_VOLUME_DEVICE = '/dev/sdf';

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
}

// Team RabbitMQ's repositories and signing keys, from RabbitMQ's "Installing on RPM-based Linux" guide.
const SIGNING_KEYS = [
  'https://github.com/rabbitmq/signing-keys/releases/download/3.0/rabbitmq-release-signing-key.asc',
  'https://github.com/rabbitmq/signing-keys/releases/download/3.0/cloudsmith.rabbitmq-erlang.E495BB49CC4BBE5B.key',
  'https://github.com/rabbitmq/signing-keys/releases/download/3.0/cloudsmith.rabbitmq-server.9F4587F226208342.key',
];

const REPO_FILE = `[modern-erlang]
name=modern-erlang-el9
baseurl=https://yum1.rabbitmq.com/erlang/el/9/$basearch
        https://yum2.rabbitmq.com/erlang/el/9/$basearch
repo_gpgcheck=1
enabled=1
gpgkey=${SIGNING_KEYS[1]}
gpgcheck=1
sslverify=1
sslcacert=/etc/pki/tls/certs/ca-bundle.crt
metadata_expire=300
type=rpm-md

[rabbitmq-el9]
name=rabbitmq-el9
baseurl=https://yum1.rabbitmq.com/rabbitmq/el/9/noarch
        https://yum2.rabbitmq.com/rabbitmq/el/9/noarch
repo_gpgcheck=1
enabled=1
gpgkey=${SIGNING_KEYS[2]}
       ${SIGNING_KEYS[0]}
gpgcheck=1
sslverify=1
sslcacert=/etc/pki/tls/certs/ca-bundle.crt
metadata_expire=300
type=rpm-md
`;

/**
 * The boot script of a RabbitMQ node (Amazon Linux 2023), as user-data lines.
 *
 * It holds no secret: the Erlang cookie and the administrator password are fetched from Secrets Manager
 * with the instance role, written straight to their destination (file or stdin) and never echoed.
 * The script must not use `set -x`, since cloud-init logs its output.
 */
export function rabbitMqNodeBootCommands(input: RabbitMqNodeBootInput): string[] {
  const { brokerConfig, release } = input;
  const policyCommands = brokerConfig.policies.map((policy) => `rabbitmqctl ${policyCommandArgs(policy).map(shellQuote).join(' ')}`);
  return [
    'set -euo pipefail',
    `REGION=${input.region}`,
    `ERLANG_COOKIE_SECRET_ARN=${input.erlangCookieSecretArn}`,
    `ADMIN_SECRET_ARN=${input.adminSecretArn}`,
    'imds() { local token; token=$(curl -sSf -X PUT http://169.254.169.254/latest/api/token -H "X-aws-ec2-metadata-token-ttl-seconds: 300"); curl -sSf -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"; }',

    '# Data volume: formatted on first boot only, mounted where RabbitMQ keeps its state.',
    `for attempt in $(seq 1 60); do [ -e ${DATA_VOLUME_DEVICE} ] && break; sleep 2; done`,
    `blkid ${DATA_VOLUME_DEVICE} >/dev/null || mkfs.xfs ${DATA_VOLUME_DEVICE}`,
    'mkdir -p /var/lib/rabbitmq',
    `grep -q ' /var/lib/rabbitmq ' /etc/fstab || echo '${DATA_VOLUME_DEVICE} /var/lib/rabbitmq xfs defaults,nofail 0 2' >> /etc/fstab`,
    'mountpoint -q /var/lib/rabbitmq || mount /var/lib/rabbitmq',

    `# Pinned RabbitMQ ${release.rabbitmqVersion} on Erlang ${release.erlangVersion} from Team RabbitMQ's signed repositories.`,
    ...SIGNING_KEYS.map((key) => `rpm --import ${key}`),
    writeFileCommand('/etc/yum.repos.d/rabbitmq.repo', REPO_FILE, 'RMQBENCH_REPO'),
    `dnf install -y --setopt=install_weak_deps=False erlang-${release.erlangVersion} rabbitmq-server-${release.rabbitmqVersion}`,
    // Holding the versions keeps a later `dnf upgrade` from splitting the cluster across versions.
    'dnf install -y python3-dnf-plugin-versionlock && dnf versionlock add erlang rabbitmq-server',
    'systemctl stop rabbitmq-server || true',
    'chown -R rabbitmq:rabbitmq /var/lib/rabbitmq',

    '# Node name from the private IP, matching cluster_formation.aws.use_private_ip.',
    'PRIVATE_IP=$(imds local-ipv4)',
    `printf 'NODENAME=rabbit@%s\\nUSE_LONGNAME=true\\n' "$PRIVATE_IP" > /etc/rabbitmq/rabbitmq-env.conf`,
    writeFileCommand('/etc/rabbitmq/rabbitmq.conf', brokerConfig.rabbitmqConf, RABBITMQ_CONF_DELIMITER),
    writeFileCommand('/etc/rabbitmq/enabled_plugins', brokerConfig.enabledPluginsFile, ENABLED_PLUGINS_DELIMITER),
    'chown rabbitmq:rabbitmq /etc/rabbitmq/rabbitmq.conf /etc/rabbitmq/enabled_plugins /etc/rabbitmq/rabbitmq-env.conf',

    '# Erlang cookie: read from Secrets Manager straight into the file, never into the log.',
    'umask 077',
    'aws secretsmanager get-secret-value --region "$REGION" --secret-id "$ERLANG_COOKIE_SECRET_ARN" --query SecretString --output text | tr -d "\\n" > /var/lib/rabbitmq/.erlang.cookie',
    'chown rabbitmq:rabbitmq /var/lib/rabbitmq/.erlang.cookie && chmod 400 /var/lib/rabbitmq/.erlang.cookie',
    'umask 022',

    '# Peer discovery joins this node to the running cluster (or forms a new one) as it starts.',
    'systemctl enable --now rabbitmq-server',
    'rabbitmqctl await_startup --timeout 900',

    '# Administrator: created once per cluster; the password goes through stdin, not the command line.',
    'admin_secret() { aws secretsmanager get-secret-value --region "$REGION" --secret-id "$ADMIN_SECRET_ARN" --query SecretString --output text | python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]], end=\'\')" "$1"; }',
    'ADMIN_USER=$(admin_secret username)',
    'if ! rabbitmqctl --quiet list_users | cut -f1 | grep -qxF "$ADMIN_USER"; then admin_secret password | rabbitmqctl add_user "$ADMIN_USER" || true; fi',
    'rabbitmqctl set_user_tags "$ADMIN_USER" administrator',
    'rabbitmqctl set_permissions -p / "$ADMIN_USER" ".*" ".*" ".*"',
    'rabbitmqctl delete_user guest 2>/dev/null || true',

    '# Queue topology policies from core/broker-config.ts (idempotent; every node applies them).',
    ...policyCommands,
  ];
}
