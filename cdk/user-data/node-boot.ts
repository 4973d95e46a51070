import { AWS_CLI_ENVIRONMENT } from '../../core/cloud/aws-cli-environment';
import { BOOT_FINISHED_FUNCTION, BOOT_LOG_FILE, IMDS_FUNCTION } from './rabbitmq-node';

/** What the boot script of a node with its own creation policy (a Kafka broker, a NATS server) is told. */
export interface SignalledBootSettings {
  /** Region (a token is fine). */
  readonly region: string;
  /** Name of the stack (a token is fine); the boot result is signalled to it. */
  readonly stackName: string;
  /** Logical id of this node's instance, whose creation policy waits for the signal. */
  readonly instanceLogicalId: string;
  /** CloudWatch Logs group the tail of the boot log is copied to (a token is fine). */
  readonly bootLogGroupName: string;
}

/**
 * The shell options, the script's settings, the boot log and the helper functions (imds, rmqbench_boot_finished) of a
 * node that signals its own instance's creation policy, ending with INSTANCE_ID set.
 */
export function signalledBootPrelude(settings: SignalledBootSettings): string[] {
  return [
    'set -euo pipefail',
    `REGION=${settings.region}`,
    `STACK_NAME=${settings.stackName}`,
    `SIGNAL_RESOURCE=${settings.instanceLogicalId}`,
    `BOOT_LOG_GROUP=${settings.bootLogGroupName}`,
    `exec > >(tee -a ${BOOT_LOG_FILE}) 2>&1`,
    'BOOT_LOG_TEE_PID=$!',
    AWS_CLI_ENVIRONMENT,
    IMDS_FUNCTION,
    BOOT_FINISHED_FUNCTION,
    'INSTANCE_ID=$(imds instance-id)',
  ];
}

/**
 * The data volume `device`, formatted (xfs) on first boot only and mounted at `mount` through /etc/fstab; `purpose`
 * ends the comment line (e.g. "mounted where the broker keeps its log").
 */
export function dataVolumeMountCommands(device: string, mount: string, purpose: string): string[] {
  return [
    `# Data volume: formatted on first boot only, ${purpose}.`,
    `for attempt in $(seq 1 60); do [ -e ${device} ] && break; sleep 2; done`,
    `blkid ${device} >/dev/null || mkfs.xfs ${device}`,
    `mkdir -p ${mount}`,
    `grep -q ' ${mount} ' /etc/fstab || echo '${device} ${mount} xfs defaults,nofail 0 2' >> /etc/fstab`,
    `mountpoint -q ${mount} || mount ${mount}`,
  ];
}
