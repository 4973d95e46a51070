jest.setTimeout(600_000);

import { join } from 'node:path';
import { parsePlanText } from '../../core/plan/plan';
import { LocalTarget } from '../../local/local-target';
import { cacheDir } from '../../local/paths';
import { ProcessRegistry } from '../../local/processes';
import type { RunEvent } from '../../local/run-events';
import { newRunId } from '../../local/run-plan';
import { runPlanWorkflow } from '../../local/workflow-runner';
import type { ResultsStore } from '../../store/results-store';
import { alivePids, startStore, tempDir } from './helpers';
import { stillListed, watchProcesses } from './process-watch';

// Short and rate-limited: two engineers' tests share two cores with this one.
const workload = (fault: string) => `
workloads:
  - name: kill-leader
    durationSeconds: 16
    persistent: true
    confirmWindow: 50
    autoAck: false
    prefetch: 100
    publishRateLimit: 300
    fault: ${fault}
`;

const planText = (topology: string, fault: string) => `
name: failover-test
clusters:
  - { name: three, nodes: 3, topology: { type: ${topology} }, connection: lb }
${workload(fault)}`;

describe('fault scenarios on a real 3-node local cluster, counted by the lost-message verifier', () => {
  const storeProcesses = new ProcessRegistry();
  const work = tempDir('failover');
  let store: ResultsStore;
  beforeAll(async () => {
    ({ store } = await startStore(storeProcesses, work.path));
  });
  afterAll(async () => {
    await storeProcesses.stopAll();
    work.cleanup();
  });

  async function run(text: string, failAt?: string) {
    const plan = parsePlanText(text, 'failover.yaml');
    const processes = new ProcessRegistry();
    const runId = newRunId(plan.name);
    const runDir = join(work.path, 'runs', runId);
    const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
    const events: RunEvent[] = [];
    // The kernel's view, independent of the registry: every process whose command line or environment names this
    // run's folder (each broker, and what a SIGKILLed broker leaves: erl_child_setup, inet_gethost), seen at any time.
    const watch = watchProcesses(-1, runDir);
    try {
      target.preflight(plan);
      const outcome = await runPlanWorkflow({
        plan,
        target,
        store,
        runDir,
        runId,
        onEvent: (event) => events.push(event),
        ...(failAt ? { failAt } : {}),
      });
      const left = { registered: processes.running.length, alive: alivePids(processes) };
      await processes.stopAll();
      const seen = watch.stop();
      return {
        outcome,
        events,
        left,
        seen: seen.map((entry) => entry.comm),
        leftInKernel: stillListed(seen, runDir),
        stored: await store.getRun(runId),
      };
    } finally {
      watch.stop();
      await processes.stopAll();
    }
  }

  /**
   * One run shared by the tests that read it, started by whichever of them comes first: each 3-node cluster start and
   * teardown costs tens of seconds on CI's two cores, so the two classic-queue kills (the target starts the killed node
   * again after each repetition) share a run and its cluster. Not the quorum ones: a quorum fault scenario after a
   * kill on the same cluster failed here with "queue rmqbench-verifier has no leader now" (the new verifier queue's
   * leader not yet reported when the fault is resolved); `queueNode` now waits up to 15 s for one, but the quorum
   * runs have not been merged since.
   */
  function shared<T>(start: () => Promise<T>): () => Promise<T> {
    let started: Promise<T> | undefined;
    return () => (started ??= start());
  }

  // The classic kill without heal (a shorter run: the messages on the killed node are lost whenever it dies), then the
  // kill and heal, longer: the healed node boots (about 10 s here) before the consumer can subscribe again.
  const classicRun = shared(() =>
    run(
      planText('classic', '{ action: kill, node: leader, atSeconds: 5 }').replace(
        'durationSeconds: 16',
        'durationSeconds: 10',
      ) +
        `
  - name: kill-heal
    durationSeconds: 26
    persistent: true
    confirmWindow: 50
    autoAck: false
    prefetch: 100
    publishRateLimit: 300
    fault: { action: kill, node: leader, atSeconds: 5, healAtSeconds: 8 }
`,
    ),
  );

  type Run = Awaited<ReturnType<typeof run>>;
  const recordOf = ({ outcome }: Run, scenarioId: string) =>
    outcome.records.find((record) => record.scenarioId === scenarioId)!;

  test(
    'quorum queue, leader SIGKILLed mid-run: no confirmed message lost, ' +
      'recovery and unavailability recorded and stored, nothing left running',
    async () => {
      const { outcome, events, left, seen, leftInKernel, stored } = await run(
        planText('quorum', '{ action: kill, node: leader, atSeconds: 7 }'),
      );
      expect(outcome.error).toBeUndefined();
      expect(outcome.status).toBe('SUCCEEDED');
      const failover = outcome.records[0]!.failover!;
      expect(failover.fault).toMatchObject({ action: 'kill', node: 'leader', nodeName: 'rmqbench1@localhost' });
      expect(failover.fault.appliedAtSeconds).toBeGreaterThan(6);
      expect(failover.confirmed).toBeGreaterThan(1000);
      expect(failover.lostMessages).toBe(0);
      expect(failover.consumed).toBeGreaterThanOrEqual(failover.confirmed);
      expect(failover.recoverySeconds).toEqual(expect.any(Number));
      expect(failover.unavailableSeconds).toEqual(expect.any(Number));
      expect(failover.receivedPerSecond.length).toBeGreaterThanOrEqual(15);
      // The fault was a state of the workflow, reported as it happened; the stored repetition carries the same counts.
      expect(events.filter((event) => event.type === 'fault')).toEqual([
        { type: 'fault', scenarioId: 'three/kill-leader', action: 'kill', nodeName: 'rmqbench1@localhost' },
      ]);
      expect(stored!.repetitions[0]!.failover).toEqual(failover);
      // Host metrics across the kill: the killed node's CPU stops at the fault (no zeros invented for a dead process),
      // the survivors' go on to PerfTest's end.
      const metrics = (await store.getMetrics(outcome.runId, 'three/kill-leader', 1))!;
      const lastCpuSecond = (node: string) =>
        Math.max(
          ...metrics.series
            .find((series) => series.node === node && series.metric === 'cpuPercent')!
            .points.map(([t]) => t),
        );
      expect(lastCpuSecond('rmqbench1@localhost')).toBeLessThanOrEqual(failover.fault.appliedAtSeconds + 1);
      expect(lastCpuSecond('rmqbench2@localhost') - lastCpuSecond('rmqbench1@localhost')).toBeGreaterThanOrEqual(5);
      expect(left).toEqual({ registered: 0, alive: [] });
      // Four brokers ran (three, then the killed one started again after the repetition); none of them, nor anything
      // they started, is left.
      expect(seen.filter((comm) => comm === 'beam.smp').length).toBeGreaterThanOrEqual(4);
      expect(leftInKernel).toEqual([]);
      // For the README and the unit test's shape: what this machine measured.
      console.log(
        'quorum kill-leader: ' +
          `${JSON.stringify({ ...failover, receivedPerSecond: failover.receivedPerSecond.join(',') })}`,
      );
    },
  );

  test('classic (non-replicated) queue on the killed node: the verifier reports confirmed messages lost', async () => {
    const shared = await classicRun();
    const { left, leftInKernel } = shared;
    const record = recordOf(shared, 'three/kill-leader');
    expect(record.error).toBeUndefined();
    const failover = record.failover!;
    expect(failover.fault.nodeName).toBe('rmqbench1@localhost');
    expect(failover.lostMessages).toBeGreaterThan(0);
    expect(left).toEqual({ registered: 0, alive: [] });
    expect(leftInKernel).toEqual([]);
    console.log(
      'classic kill-leader: ' +
        `${JSON.stringify({ ...failover, receivedPerSecond: failover.receivedPerSecond.join(',') })}`,
    );
  });

  test(
    'classic queue killed and healed: the consumer subscribes ' +
      'again after the broker cancelled it and receives again',
    async () => {
      const shared = await classicRun();
      const { leftInKernel } = shared;
      const failover = recordOf(shared, 'three/kill-heal').failover!;
      console.log(
        'classic kill-heal: ' +
          `${JSON.stringify({ ...failover, receivedPerSecond: failover.receivedPerSecond.join(',') })}`,
      );
      expect(failover.fault).toMatchObject({
        nodeName: 'rmqbench1@localhost',
        appliedAtSeconds: expect.any(Number),
        healedAtSeconds: expect.any(Number),
      });
      // Deliveries in the seconds after the heal: only a consumer that subscribed again gets them.
      const afterHeal = failover.receivedPerSecond.slice(Math.ceil(failover.fault.healedAtSeconds!) + 1);
      expect(afterHeal.some((received) => received > 0)).toBe(true);
      expect(leftInKernel).toEqual([]);
    },
  );

  test(
    'stop a follower and heal it, then restart node 2, on one ' +
      'cluster: HealFault ran, the node rejoined, nothing lost',
    async () => {
      const text =
        `
name: failover-stop-restart
clusters:
  - { name: three, nodes: 3, topology: { type: quorum }, connection: direct }
workloads:
  - { name: stop-heal, durationSeconds: 14, persistent: true, confirmWindow: 50, autoAck: false, prefetch: 100, ` +
        `publishRateLimit: 300, fault: { action: stop, node: follower, atSeconds: 4, healAtSeconds: 8 } }
  - { name: restart, durationSeconds: 14, persistent: true, confirmWindow: 50, autoAck: false, prefetch: 100, ` +
        `publishRateLimit: 300, fault: { action: restart, node: 2, atSeconds: 4 } }
`;
      const { outcome, events, left, leftInKernel } = await run(text);
      expect(outcome.error).toBeUndefined();
      expect(outcome.status).toBe('SUCCEEDED');
      const [stopped, restarted] = outcome.records.map((record) => record.failover!);
      expect(stopped!.fault).toMatchObject({ action: 'stop', node: 'follower' });
      expect(stopped!.fault.nodeName).not.toBe('rmqbench1@localhost');
      expect(stopped!.fault.healedAtSeconds).toBeGreaterThan(stopped!.fault.appliedAtSeconds);
      expect(restarted!.fault).toMatchObject({ action: 'restart', node: 2, nodeName: 'rmqbench3@localhost' });
      for (const failover of [stopped!, restarted!]) expect(failover.lostMessages).toBe(0);
      expect(
        events.filter((event) => event.type === 'fault').map((event) => (event.type === 'fault' ? event.action : '')),
      ).toEqual(['stop', 'heal', 'restart']);
      expect(left).toEqual({ registered: 0, alive: [] });
      expect(leftInKernel).toEqual([]);
    },
  );

  test('--fail-at InjectFault: the run ends FAILED with the cause and teardown leaves nothing running', async () => {
    const { outcome, stored, left, leftInKernel } = await run(
      planText('quorum', '{ action: kill, node: leader, atSeconds: 2 }').replace(
        'durationSeconds: 16',
        'durationSeconds: 6',
      ),
      'InjectFault',
    );
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toContain('fault injected at InjectFault');
    expect(stored?.run.status).toBe('FAILED');
    expect(left).toEqual({ registered: 0, alive: [] });
    expect(leftInKernel).toEqual([]);
  });

  test('partition is refused by the local target by name, before anything starts', async () => {
    await expect(
      run(planText('quorum', '{ action: partition, node: follower, atSeconds: 5, healAtSeconds: 10 }')),
    ).rejects.toThrow(/workloads\[0\]\.fault\.action: fault action "partition" is not available on the local target/);
  });
});
