import { validatePlan } from '../../core/plan/plan';
import type { RunRecord } from '../../core/results/result-model';
import { cliEnv, rmqbenchSync } from './cli-child';
import { deployFakeController, repetitionRecord, type FakeController } from './controller-fake';
import { startMoto, type Moto } from './moto';

jest.setTimeout(120_000);

/** Two cloud runs of the same workload on different instance types (thesis chapter 7 compares such runs). */
function cloudRun(runId: string, instanceType: string, startedAt: string): RunRecord {
  const plan = validatePlan(
    {
      name: 'ch7-like',
      repetitions: 2,
      clusters: [{ name: 'c', nodes: 3, instanceType, topology: { type: 'quorum' } }],
      workloads: [{ name: 'w', producers: 10, consumers: 10, durationSeconds: 30, sweep: { queues: [1, 10] } }],
    },
    'test',
  );
  const { scenarios, ...planData } = plan;
  return {
    runId,
    planName: plan.name,
    plan: planData,
    target: 'aws',
    status: 'SUCCEEDED',
    startedAt,
    finishedAt: startedAt.replace('T10', 'T11'),
    environment: { region: 'us-east-1' },
    scenarioIds: scenarios.map((s) => s.id),
  };
}

describe(
  '--store aws: runs, show, report, compare and baseline ' +
    "read the controller's table in moto (real SDK v3 clients)",
  () => {
    let moto: Moto;
    let controller: FakeController;
    let env: NodeJS.ProcessEnv;
    const runs = [
      cloudRun('ch7-c5', 'c5.xlarge', '2026-11-01T10:00:00.000Z'),
      cloudRun('ch7-m5', 'm5.xlarge', '2026-11-02T10:00:00.000Z'),
    ];

    beforeAll(async () => {
      moto = await startMoto();
      try {
        controller = await deployFakeController(moto, 'BenchStack', 'bench-results', 'bench-raw');
        for (const [index, run] of runs.entries()) {
          await controller.store.putRun(run);
          for (const scenarioId of run.scenarioIds) {
            for (const repetition of [1, 2])
              await controller.store.putRepetition(
                repetitionRecord(run.runId, scenarioId, repetition, (index + 1) * 10_000 + repetition * 100),
              );
          }
        }
      } catch (error) {
        await moto.stop();
        throw error;
      }
      env = cliEnv(moto);
    });
    afterAll(async () => {
      controller?.destroy();
      await moto?.stop();
    });

    test('runs and show find the table from the stack outputs; show names the raw output in the bucket', () => {
      const listed = rmqbenchSync(env, 'runs', '--store', 'aws', '--stack', 'BenchStack', '--json');
      expect(listed.code).toBe(0);
      expect((JSON.parse(listed.stdout) as RunRecord[]).map((run) => run.runId)).toEqual(['ch7-m5', 'ch7-c5']);
      const show = rmqbenchSync(env, 'show', 'ch7-c5', '--store', 'aws', '--stack', 'BenchStack');
      expect(show.code).toBe(0);
      expect(show.stdout).toContain('ch7-c5: plan ch7-like, target aws, SUCCEEDED');
      expect(show.stdout).toContain('raw output: s3://bench-raw/runs/ch7-c5/');
      expect(show.stdout).toMatch(/c\/w@queues=1 #2 SUCCEEDED: send 10200 msg\/s/);
      // --table alone reads no stack (the stack named here does not exist).
      const byTable = rmqbenchSync(
        env,
        'runs',
        '--store',
        'aws',
        '--stack',
        'NoSuchStack',
        '--table',
        'bench-results',
        '--json',
      );
      expect([byTable.code, (JSON.parse(byTable.stdout) as unknown[]).length]).toEqual([0, 2]);
      const missing = rmqbenchSync(env, 'runs', '--store', 'aws', '--stack', 'NoSuchStack');
      expect([missing.code, missing.stderr]).toEqual([
        1,
        expect.stringContaining('no CloudFormation stack "NoSuchStack" in us-east-1'),
      ]);
      expect(rmqbenchSync(env, 'prune', '--store', 'aws').stderr).toContain(
        '--store is for runs, show, report, compare, baseline (see rmqbench prune --help)',
      );
    });

    test(
      'report over two runs compares the instance types in one ' +
        'price-performance table per queue count; one run reports as before',
      () => {
        const both = rmqbenchSync(
          env,
          'report',
          'ch7-c5',
          'ch7-m5',
          '--store',
          'aws',
          '--stack',
          'BenchStack',
          '--json',
        );
        expect(both.code).toBe(0);
        const report = JSON.parse(both.stdout) as {
          runs: unknown[];
          pricePerformance: {
            available: boolean;
            costs: { description: string; runId: string }[];
            tables: { queues: number }[];
          };
        };
        expect(report.runs).toHaveLength(2);
        expect(report.pricePerformance.costs.map((cost) => [cost.description, cost.runId])).toEqual([
          ['3 × c5.xlarge + lb', 'ch7-c5'],
          ['3 × m5.xlarge + lb', 'ch7-m5'],
        ]);
        expect(report.pricePerformance.tables.map((table) => table.queues)).toEqual([1, 10]);
        const one = rmqbenchSync(env, 'report', 'ch7-m5', '--store', 'aws', '--stack', 'BenchStack');
        expect(one.code).toBe(0);
        expect(one.stdout).toMatch(/\| c\/w@queues=1 \| 2\/2 \| 20,150 ± /);
      },
    );

    test('baseline marks a run in the cloud table and compare reads it back', () => {
      const marked = rmqbenchSync(env, 'baseline', 'ch7-c5', '--store', 'aws', '--stack', 'BenchStack');
      expect([marked.code, marked.stdout]).toEqual([
        0,
        expect.stringContaining('run ch7-c5 is now the baseline of plan "ch7-like"'),
      ]);
      const compared = rmqbenchSync(env, 'compare', 'ch7-m5', '--store', 'aws', '--stack', 'BenchStack');
      expect(compared.code).toBe(0);
      expect(compared.stdout).toContain('baseline: run ch7-c5 (marked baseline of plan "ch7-like")');
      expect(compared.stdout).toMatch(/\| c\/w@queues=1 \| \+98\.5% \(\+10,000 ± \d+ msg\/s\) \| higher: significant/);
    });
  },
);
