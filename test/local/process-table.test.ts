import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStat, processTree, type ProcessEntry } from '../../local/process-table';
import { ProcessRegistry } from '../../local/processes';

const entry = (pid: number, ppid: number, pgid: number, state = 'S'): ProcessEntry => ({
  pid,
  ppid,
  pgid,
  state,
  comm: `p${pid}`,
  startTime: '1',
});

describe('the process table rmqbench waits on', () => {
  test(
    'parseStat reads state, parent, group and start time ' + 'after a command name holding spaces and parentheses',
    () => {
      const line =
        '4242 (odd) name (x)) Z 1 4200 4200 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0 18446744073709551615';
      expect(parseStat(line)).toEqual({
        pid: 4242,
        comm: 'odd) name (x)',
        state: 'Z',
        ppid: 1,
        pgid: 4200,
        startTime: '987654',
      });
      expect(parseStat('garbage')).toBeUndefined();
    },
  );

  test('the real /proc entry of this process parses to its own pid and parent', () => {
    expect(parseStat(readFileSync('/proc/self/stat', 'utf8'))).toMatchObject({ pid: process.pid, ppid: process.ppid });
  });

  test(
    'processTree finds descendants, also one in a session of its ' +
      'own, and members of their groups already re-parented to PID 1',
    () => {
      const table = [
        entry(10, 1, 10), // beam.smp, leader of its group
        entry(11, 10, 11), // erl_child_setup: child, own session
        entry(12, 11, 12), // inet_gethost below it
        entry(13, 1, 10, 'Z'), // an orphan of group 10, now a zombie child of PID 1
        entry(20, 1, 20), // unrelated
      ];
      expect(
        processTree(10, table)
          .map((e) => e.pid)
          .sort(),
      ).toEqual([10, 11, 12, 13]);
      expect(processTree(99, table)).toEqual([]);
    },
  );
});

describe('the process registry', () => {
  test(
    'once stopAll was called, start refuses (a step that begins ' +
      'during Ctrl-C starts nothing that would outlive the run)',
    async () => {
      const processes = new ProcessRegistry();
      const sleeper = processes.start('sleeper', 'sleep', ['30']);
      expect(processes.running.map((p) => p.name)).toEqual(['sleeper']);
      await processes.stopAll(100);
      expect(sleeper.hasExited).toBe(true);
      expect(() => processes.start('perftest', 'sleep', ['30'])).toThrow(
        'not starting perftest: every process of this run is being stopped',
      );
      expect(processes.running).toEqual([]);
    },
  );

  const keepsOutput =
    'stop keeps the whole output in the log when the exit comes before the last of it, and throws nothing';
  test(
    keepsOutput,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-log-'));
      try {
        const logPath = join(dir, 'out.log');
        const processes = new ProcessRegistry();
        // Like a broker whose helper process still writes as the broker exits: the pipe holds output after the exit.
        const script = 'yes & trap "exit 0" TERM; while :; do sleep 0.01; done';
        for (let round = 1; round <= 8; round += 1) {
          const writer = processes.start('writer', 'sh', ['-c', script], { logPath });
          await new Promise((resolve) => setTimeout(resolve, 100));
          await writer.stop(5000);
          const size = statSync(logPath).size;
          await new Promise((resolve) => setTimeout(resolve, 200));
          expect(statSync(logPath).size).toBe(size);
        }
        await processes.stopAll(100);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    30_000,
  );
});
