/**
 * The brokers' wait for the KRaft quorum, on AWS (cdk/user-data/kafka-node.ts) and on Azure
 * (bicep/cloud-init/rmqbench-kafka-setup.sh), run in bash under the scripts' own `set -euo pipefail` with the quorum
 * command stubbed: a poll that finds no voter (the broker not answering yet) must lead to the next poll, not end the
 * boot. It did end it, with exit code 1 and no message: `grep -o` of no voter exits 1, which pipefail made the whole
 * assignment's status (the AWS twin's broker run failed so on a busy machine, the quorum command's first answer
 * empty).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kafkaNodeBootCommands } from '../../cdk/user-data/kafka-node';

const ROOT = join(__dirname, '../..');

/** What `kafka-metadata-quorum describe --status` prints once the quorum has a leader and three voters (4.3.1). */
const FORMED_STATUS = [
  'ClusterId:              q1Sh-9_ISia_zwGINzRvyQ',
  'LeaderId:               2',
  'LeaderEpoch:            1',
  'CurrentVoters:          [{"id": 1, "endpoints": ["CONTROLLER://a:9093"]}, ' +
    '{"id": 2, "endpoints": ["CONTROLLER://b:9093"]}, {"id": 3, "endpoints": ["CONTROLLER://c:9093"]}]',
].join('\n');

/**
 * A stub quorum command: nothing on its first call (and a failure, as when the broker does not answer), the formed
 * quorum after. `sleep` is a no-op.
 */
const STUBS = [
  `QUORUM_CALLS=$(mktemp)`,
  `quorum_status() { echo x >>"$QUORUM_CALLS"; [ "$(wc -l <"$QUORUM_CALLS")" -gt 1 ] || return 1; cat <<'STATUS'`,
  FORMED_STATUS,
  'STATUS',
  '}',
  'sleep() { :; }',
].join('\n');

function runBash(script: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the Kafka quorum wait survives a poll that finds no voter', () => {
  test('AWS user data: the loop polls again and ends with the quorum formed', () => {
    const lines = kafkaNodeBootCommands({
      self: { nodeId: 1, hostName: 'a' },
      all: [1, 2, 3].map((nodeId) => ({ nodeId, hostName: 'abc'[nodeId - 1]! })),
      clientPort: 9092,
      controllerPort: 9093,
      clusterId: 'q1Sh-9_ISia_zwGINzRvyQ',
      region: 'us-east-1',
      stackName: 'stack',
      instanceLogicalId: 'KafkaBroker1',
      bootLogGroupName: 'boot',
      dataVolumeDevice: '/dev/sdf',
      clusterFormationTimeoutSeconds: 60,
    });
    const start = lines.findIndex((line) => line.startsWith('deadline='));
    const end = lines.indexOf('done', start);
    expect([start, end].every((index) => index > 0)).toBe(true);
    // The loop as the boot runs it, with its shell options; runuser stands for the quorum command.
    const script = [
      lines[0]!,
      STUBS,
      'runuser() { quorum_status; }',
      'self_listener=a:9092',
      ...lines.slice(start, end + 1),
    ].join('\n');
    expect(lines[0]).toBe('set -euo pipefail');
    const result = runBash(script);
    expect(result).toMatchObject({ status: 0, stdout: 'quorum formed: leader 2, 3 voters\n' });
  });

  test('Azure setup script: the loop polls again and ends with the quorum formed', () => {
    const setup = readFileSync(join(ROOT, 'bicep/cloud-init/rmqbench-kafka-setup.sh'), 'utf8');
    const loop = /^# Formed when the quorum[\s\S]*?^done$/m.exec(setup)?.[0];
    expect(loop).toBeDefined();
    expect(setup).toContain('\nset -euo pipefail\n');
    const script = [
      'set -euo pipefail',
      STUBS,
      'java_cmd=(quorum_java)',
      'quorum_java() { quorum_status; }',
      'count=3 CLIENT_PORT=9092 QUORUM_TIMEOUT_SECONDS=60',
      loop!,
    ].join('\n');
    const result = runBash(script);
    expect(result).toMatchObject({ status: 0, stderr: 'rmqbench-kafka-setup: quorum formed: leader 2, 3 voters\n' });
  });
});
