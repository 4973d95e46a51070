import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  chooseFaultNode,
  CLOUD_FAULT_ACTIONS,
  faultScript,
  HEAL_RESTART_AFTER_SECONDS,
  healScript,
  notCountedReason,
  PARTITION_TABLE,
  queueLeader,
} from '../../core/failover/cloud-fault';
import { runWithStubs } from '../stub-commands';

// The scripts themselves run for real on simulated EC2 nodes (test/simulated-vm/aws-node.integration.test.ts); here:
// reading their answers and choosing the node.

const nodes = [
  { id: 'i-0a', nodeName: 'rabbit@10.0.1.10' },
  { id: 'i-0b', nodeName: 'rabbit@10.0.2.20' },
  { id: 'i-0c', nodeName: 'rabbit@10.0.3.30' },
];

describe('the cloud fault step: which node, from what the broker says', () => {
  // Shaped as the script prints it on RabbitMQ 3.10 (the simulated nodes): JSON pids carry no node name.
  const listing = (queues: unknown[], local: Record<string, string[]>) => JSON.stringify({ queues, local });

  test(
    'a quorum queue names its leader; a classic queue (empty leader) ' +
      'is led by the one node that hosts it locally; other queues do not matter',
    () => {
      const local = {
        'rabbit@10.0.1.10': ['rmqbench-smoke-1'],
        'rabbit@10.0.2.20': ['perf-test-1'],
        'rabbit@10.0.3.30': [],
      };
      expect(
        queueLeader(
          listing(
            [
              { name: 'rmqbench-smoke-1', type: 'classic', leader: '' },
              { name: 'perf-test-1', type: 'quorum', leader: 'rabbit@10.0.3.30' },
            ],
            local,
          ),
          'perf-test-1',
        ),
      ).toBe('rabbit@10.0.3.30');
      expect(queueLeader(listing([{ name: 'perf-test-1', type: 'classic', leader: '' }], local), 'perf-test-1')).toBe(
        'rabbit@10.0.2.20',
      );
    },
  );

  test(
    'a missing benchmark queue, unreadable output or no single ' + 'host is an error saying why, never a guessed node',
    () => {
      expect(() => queueLeader(listing([], {}), 'perf-test-1')).toThrow(
        /queue perf-test-1 does not exist on the cluster .*queues: none.*is atSeconds before they have connected/,
      );
      expect(() => queueLeader('', 'perf-test-1')).toThrow(/printed no queues and hosts/);
      expect(() => queueLeader('Error: unable to perform an operation on node', 'perf-test-1')).toThrow(
        /printed no JSON: Error: unable/,
      );
      expect(() =>
        queueLeader(listing([{ name: 'perf-test-1', type: 'classic', leader: '' }], { a: [], b: [] }), 'perf-test-1'),
      ).toThrow(/no running node hosts it locally/);
      expect(() =>
        queueLeader(
          listing([{ name: 'perf-test-1', type: 'classic', leader: '' }], {
            'rabbit@a': ['perf-test-1'],
            'rabbit@b': ['perf-test-1'],
          }),
          'perf-test-1',
        ),
      ).toThrow(/several nodes \(rabbit@a, rabbit@b\)/);
    },
  );

  test(
    'leader, follower and an index choose among the running nodes; ' +
      'a leader that is none of them or an index past the end is refused',
    () => {
      expect(chooseFaultNode(nodes, 'leader', 'rabbit@10.0.2.20')).toEqual(nodes[1]);
      expect(chooseFaultNode(nodes, 'follower', 'rabbit@10.0.1.10')).toEqual(nodes[1]);
      expect(chooseFaultNode(nodes, 2)).toEqual(nodes[2]);
      expect(() => chooseFaultNode(nodes, 3)).toThrow(
        'fault.node 3 is not a node of this cluster, which runs 3 (0 to 2)',
      );
      expect(() => chooseFaultNode(nodes, 'leader', 'rabbit@10.0.9.9')).toThrow(
        /led by rabbit@10\.0\.9\.9, which is none of the cluster's running instances/,
      );
      expect(() => chooseFaultNode([nodes[0]!], 'follower', 'rabbit@10.0.1.10')).toThrow(
        /no other node runs, so there is no follower/,
      );
      expect(() => chooseFaultNode([], 0)).toThrow('the cluster has no running node to fault');
    },
  );

  test(
    'a node name that is not rabbit@<IPv4 or host name> never ' +
      'reaches a script (it is written into the shell text)',
    () => {
      expect(() => faultScript('kill', "rabbit@10.0.0.1'; reboot; '")).toThrow(
        /expected a node name rabbit@<private IPv4 address or host name>/,
      );
      expect(() => healScript('rabbit@host name', 'kill')).toThrow(/expected a node name/);
      expect(() => healScript('guest@10.0.0.1', 'partition')).toThrow(/expected a node name/);
      expect(faultScript('stop', 'rabbit@10.0.1.10')).toContain("EXPECTED='rabbit@10.0.1.10'");
      expect(healScript('rabbit@RMQBENCHN000001', 'stop')).toContain("EXPECTED='rabbit@RMQBENCHN000001'");
    },
  );

  test(
    'partition: both clouds apply it; the script drops epmd and distribution traffic both ' +
      'ways in a table of its own (not loopback), the heal deletes only that table and starts no broker',
    () => {
      expect(CLOUD_FAULT_ACTIONS.aws).toContain('partition');
      expect(CLOUD_FAULT_ACTIONS.azure).toContain('partition');
      const script = faultScript('partition', 'rabbit@10.0.1.10');
      expect(script).toContain("EXPECTED='rabbit@10.0.1.10'");
      const ruleset = script.slice(script.indexOf("nft -f - <<'RMQBENCH_NFT'"), script.lastIndexOf('RMQBENCH_NFT'));
      expect(PARTITION_TABLE).toBe('rmqbench_partition');
      // Declared, deleted and declared again: a retried step replaces the table instead of stacking rules.
      expect(ruleset).toContain(
        'table inet rmqbench_partition\ndelete table inet rmqbench_partition\ntable inet rmqbench_partition {',
      );
      for (const hook of ['input', 'output']) {
        const chain = ruleset.slice(
          ruleset.indexOf(`chain ${hook} {`),
          ruleset.indexOf('\n  }', ruleset.indexOf(`chain ${hook} {`)),
        );
        expect(chain).toContain(`type filter hook ${hook} priority -10; policy accept;`);
        expect(chain).toContain(`${hook === 'input' ? 'iifname' : 'oifname'} "lo" accept`);
        expect(chain).toContain('tcp dport { 4369, 25672 } drop');
        expect(chain).toContain('tcp sport { 4369, 25672 } drop');
        // Nothing that would let established connections through (the point of a host rule over a security group).
        expect(chain).not.toMatch(/ct state|\b5672\b|15672/);
      }
      // nft is installed where the boot could not install it.
      expect(script).toMatch(
        /if ! command -v nft > \/dev\/null; then[\s\S]*dnf install -y -q nftables[\s\S]*apt-get install -y -q nftables/,
      );
      expect(script).not.toContain('systemctl');
      const heal = healScript('rabbit@10.0.1.10', 'partition');
      expect(heal).toContain(
        'if nft list table inet rmqbench_partition > /dev/null 2>&1; then nft delete table inet rmqbench_partition; fi',
      );
      expect(heal).toContain('until HEAL_OUTPUT=$(rabbitmqctl -q await_startup --timeout 60 2>&1); do');
      // The broker is restarted only as the fallback for a node that has not resumed by itself.
      expect(heal.match(/systemctl/g)).toEqual(['systemctl']);
      expect(heal).toMatch(/HEAL_RESTART_AT[\s\S]*systemctl restart rabbitmq-server/);
      expect(healScript('rabbit@10.0.1.10', 'kill')).toContain('systemctl start rabbitmq-server');
      expect(healScript('rabbit@10.0.1.10', 'kill')).not.toContain('nft');
    },
  );

  test(
    'the partition script installs nft only where it is missing: with dnf on Amazon Linux, ' +
      'else apt-get non-interactively; a failed install fails the script before any rule',
    () => {
      const lines = faultScript('partition', 'rabbit@10.0.1.10').split('\n');
      const from = lines.indexOf('if ! command -v nft > /dev/null; then');
      const ensure = `set -euo pipefail\n${lines.slice(from, lines.indexOf('fi', from) + 1).join('\n')}\necho ensured`;
      expect(runWithStubs(ensure, { nft: 0, dnf: 0, 'apt-get': 0 })).toMatchObject({
        status: 0,
        stdout: 'ensured\n',
        calls: [],
      });
      expect(runWithStubs(ensure, { dnf: 0, 'apt-get': 0 })).toMatchObject({
        status: 0,
        calls: ['dnf install -y -q nftables DEBIAN_FRONTEND='],
      });
      expect(runWithStubs(ensure, { 'apt-get': 0 })).toMatchObject({
        status: 0,
        calls: ['apt-get install -y -q nftables DEBIAN_FRONTEND=noninteractive'],
      });
      const failed = runWithStubs(ensure, { dnf: 1 });
      expect({ status: failed.status, stdout: failed.stdout }).toEqual({ status: 1, stdout: '' });
      expect(failed.stderr).toContain('rmqbench: nft is missing (the boot installs nftables); installing it now');
    },
  );

  test('what a cloud repetition records instead of counts says "not counted" and names the target', () => {
    expect(notCountedReason('aws', 'the verifier printed no result line')).toMatch(
      /^lost messages not counted on aws: the verifier printed no result line, so lostMessages, .* were not measured$/,
    );
  });
});

describe('the partition heal on a node that pause_minority paused', () => {
  /** The heal script run with stand-ins: hostname, nft (no table) and a rabbitmqctl that fails `failures` times. */
  const heal = (failures: number, deadlineSeconds?: number, restartAfterSeconds?: number) => {
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-heal-'));
    try {
      const stub = (name: string, body: string) =>
        writeFileSync(join(dir, name), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
      stub('hostname', 'echo node1');
      stub('nft', 'exit 1');
      stub('sleep', 'exit 0');
      stub('systemctl', `echo "$*" >> ${dir}/systemctl.log`);
      stub(
        'rabbitmqctl',
        `n=$(cat ${dir}/calls 2>/dev/null || echo 0); echo $((n + 1)) > ${dir}/calls; ` +
          `if [ "$n" -lt ${failures} ]; then echo 'Error:' >&2; echo rabbit_is_not_running >&2; exit 69; fi`,
      );
      let script = healScript('rabbit@node1', 'partition');
      if (deadlineSeconds !== undefined) script = script.replace('SECONDS + 300', `SECONDS + ${deadlineSeconds}`);
      if (restartAfterSeconds !== undefined)
        script = script.replace(`SECONDS + ${HEAL_RESTART_AFTER_SECONDS}`, `SECONDS + ${restartAfterSeconds}`);
      const run = spawnSync('/bin/bash', ['-c', script], {
        encoding: 'utf8',
        env: { PATH: `${dir}:/usr/bin:/bin`, HOME: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      return {
        status: run.status,
        stdout: run.stdout,
        stderr: run.stderr,
        calls: Number(readFileSync(join(dir, 'calls'), 'utf8')),
        systemctl: existsSync(join(dir, 'systemctl.log')) ? readFileSync(join(dir, 'systemctl.log'), 'utf8') : '',
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test('waits while the node has not begun to start again (rabbit_is_not_running), then reports it healed', () => {
    // The node's clock when the heal began (healedAt), then the outcome.
    expect(heal(3)).toEqual({
      status: 0,
      stdout: expect.stringMatching(/^rmqbench: healing at \d{13}\nrmqbench: partition of rabbit@node1 healed\n$/),
      stderr: '',
      calls: 4,
      systemctl: '',
    });
  });

  test('a node that has not resumed by itself when the restart is due is restarted once, then reported healed', () => {
    expect(heal(3, undefined, 0)).toEqual({
      status: 0,
      stdout: expect.stringMatching(
        new RegExp(
          '^rmqbench: healing at \\d{13}\n' +
            `rmqbench: rabbit@node1 had not resumed ${HEAL_RESTART_AFTER_SECONDS} s after the heal: restarting it\n` +
            'rmqbench: partition of rabbit@node1 healed\n$',
        ),
      ),
      stderr: '',
      calls: 4,
      systemctl: 'restart rabbitmq-server\n',
    });
  });

  test('a node that never starts fails the heal at the deadline with what rabbitmqctl said', () => {
    const result = heal(1_000_000, 0);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('rabbit_is_not_running');
    expect(result.calls).toBe(1);
  });
});
