import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Issue 22, items 3 and 4, as a user meets them: estimate --json historyEvents, and validate --target refusing by
 * field.
 */
const cli = join(__dirname, '../../dist/bin/rmqbench.js');
function rmqbench(...args: string[]) {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
  const result = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...process.env, RMQBENCH_HOME: mkdtempSync(join(tmpdir(), 'rmqbench-cli-')) },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
const planFile = (text: string) => {
  const file = join(mkdtempSync(join(tmpdir(), 'rmqbench-limits-')), 'p.yaml');
  writeFileSync(file, text);
  return file;
};

describe('workflow limits in the CLI', () => {
  test('estimate --json reports historyEvents, and the text names it beside the 25,000 limit', () => {
    const json = rmqbench('estimate', 'seed-004-test-plan-full', '--target', 'aws', '--json');
    expect(json.code).toBe(0);
    const estimate = JSON.parse(json.stdout) as { historyEvents: number; stateTransitions: number };
    expect(estimate.historyEvents).toBeGreaterThan(estimate.stateTransitions);
    expect(estimate.historyEvents).toBeLessThan(20_000);
    expect(rmqbench('estimate', 'seed-004-test-plan-full', '--target', 'aws').stdout).toContain(
      `${estimate.historyEvents} history events of the 25000 one execution may hold`,
    );
  });

  test(
    'validate --target refuses a plan over the history budget (repetitions) and a cluster over the execution ' +
      'timeout (clusters[0])',
    () => {
      const many = planFile(
        'name: many\nrepetitions: 100\nclusters:\n  - { name: c, nodes: 3, instanceType: c5.xlarge }\n' +
          'workloads:\n' +
          '  - { name: w, durationSeconds: 60, sweep: { messageSizeBytes: [100, 200, 300, 400, 500] } }\n',
      );
      const refused = rmqbench('validate', many, '--target', 'aws');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        new RegExp(
          String.raw`repetitions: one execution of this plan would record about \d+ Step Functions history ` +
            String.raw`events, more than the 20000`,
        ),
      );
      const long = planFile(
        'name: long\nrepetitions: 25\nclusters:\n  - { name: c, nodes: 3, instanceType: c5.xlarge }\nworkloads:\n' +
          '  - { name: w, durationSeconds: 3600 }\n',
      );
      const tooLong = rmqbench('validate', long, '--target', 'aws');
      expect(tooLong.code).toBe(2);
      expect(tooLong.stderr).toMatch(
        /clusters\[0\]: cluster c would run about 2\d\.\d h .*longer than an execution's 24 h timeout/,
      );
      expect(rmqbench('validate', long).code).toBe(0);
    },
  );
});
