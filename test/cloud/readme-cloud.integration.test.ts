import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateStackCommand, ListStacksCommand } from '@aws-sdk/client-cloudformation';
import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { waitFor } from '../../local/ports';
import { buildSchedule, executionInput } from '../../state-machines/schedule';
import { CLI, cliEnv, rmqbenchAsync, rmqbenchSync } from './cli-child';
import {
  CLOUD_PLAN_YAML,
  deployFakeController,
  finishRun,
  repetitionRecord,
  runStarted,
  cloudPlan,
  type FakeController,
} from './controller-fake';
import { startMoto, type Moto } from './moto';

jest.setTimeout(180_000);

const README = readFileSync(join(__dirname, '../../README.md'), 'utf8');
const CONTROLLER_DIR = join(__dirname, '../../examples/controller');

/** The commands of the README's "Benchmark in the cloud" block, comments and continuation lines dropped. */
function cloudSectionCommands(): string[] {
  const section = README.slice(README.indexOf('## Benchmark in the cloud'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.length > 0 && !line.startsWith('#'));
}

describe('README "Benchmark in the cloud", followed against moto as far as an emulator goes', () => {
  let moto: Moto;
  let controller: FakeController;

  beforeAll(async () => {
    moto = await startMoto({ executeStateMachines: true });
  });
  afterAll(async () => {
    controller?.destroy();
    await moto?.stop();
  });

  test(
    'every rmqbench command of the section runs in order from ' +
      'examples/controller; the cdk commands are the ones only an account runs',
    async () => {
      const commands = cloudSectionCommands();
      const cdk = commands.filter((command) => command.startsWith('npx aws-cdk'));
      expect(cdk.map((command) => command.split(' ')[2])).toEqual(['bootstrap', 'deploy', 'destroy']);
      expect(commands[0]).toBe('npm ci && npm run build'); // npm test's setup has done it: the CLI below is that build
      expect(commands[1]).toBe('cd examples/controller');
      const rmqbench = commands.filter((command) => command.startsWith('npx rmqbench '));
      expect(rmqbench.length).toBeGreaterThanOrEqual(3);
      expect(commands).toHaveLength(2 + cdk.length + rmqbench.length);

      // `cdk deploy RmqbenchController` in moto: the stack with the example app's outputs
      // (test/cdk/controller-example.test.ts checks the app has them).
      expect(cdk[1]).toContain('deploy RmqbenchController');
      controller = await deployFakeController(moto, 'RmqbenchController');
      const plan = join(mkdtempSync(join(tmpdir(), 'rmqbench-readme-')), 'my-plan.yaml');
      writeFileSync(plan, CLOUD_PLAN_YAML);
      const env = cliEnv(moto);
      // `npx rmqbench` from examples/controller runs the package's bin, the built CLI these tests run.
      const { bin } = JSON.parse(readFileSync(resolve(CONTROLLER_DIR, '../../package.json'), 'utf8')) as {
        bin: Record<string, string>;
      };
      expect(resolve(CONTROLLER_DIR, '../..', bin['rmqbench']!)).toBe(CLI);

      for (const command of rmqbench) {
        const args = command
          .replace('npx rmqbench ', '')
          .split(/\s+/)
          .map((arg) => (arg === 'my-plan.yaml' ? plan : arg));
        if (args[0] === 'run') {
          const run = rmqbenchAsync(env, ...args, '--poll-seconds', '0.2');
          try {
            // Play the workflow's part for the execution the CLI started.
            const execution = await waitFor(
              async () =>
                (await controller.sfn.send(new ListExecutionsCommand({ stateMachineArn: controller.stateMachineArn })))
                  .executions?.[0],
              30_000,
              () => `the README's run started no execution:\n${run.stderr}`,
              100,
            );
            const schedule = buildSchedule(executionInput(cloudPlan(), 'aws', execution.name!), execution.name!);
            const runId = execution.name!;
            await controller.store.putRun(runStarted(runId, cloudPlan()));
            await controller.cfn.send(
              new CreateStackCommand({
                StackName: schedule.clusters[0]!.clusterId,
                TemplateBody: JSON.stringify({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } }),
                Tags: [
                  { Key: 'rmqbench:run-id', Value: runId },
                  { Key: 'rmqbench:expires-at', Value: new Date(Date.now() + 3_600_000).toISOString() },
                ],
              }),
            );
            for (const rep of schedule.clusters[0]!.repetitions)
              await controller.store.putRepetition(repetitionRecord(runId, rep.scenarioId, rep.repetition, 11_000));
            await finishRun(controller.store, runId, 'SUCCEEDED');
            expect(await run.exited).toBe(0);
            expect(run.stderr).toMatch(/^estimated cost of plan cloud-e2e on aws: \$0\.\d\d/);
            expect(run.stdout).toContain(`Run \`${runId}\` on target **aws**, status **SUCCEEDED**`);
          } finally {
            run.kill();
          }
          continue;
        }
        const result = rmqbenchSync(env, ...args);
        expect({ command, code: result.code, stderr: result.stderr }).toEqual({ command, code: 0, stderr: '' });
        if (args[0] === 'runs') expect(result.stdout).toMatch(/^cloud-e2e-\S+ +SUCCEEDED +aws /);
        if (args[0] === 'cleanup')
          expect(result.stdout).toMatch(
            /^would delete +stack rmqbench-cloud-e2e-\S+-c1 .*its run cloud-e2e-\S+ finished SUCCEEDED$/m,
          );
      }
      // --dry-run deleted nothing.
      const stacks = (await controller.cfn.send(new ListStacksCommand({}))).StackSummaries ?? [];
      expect(
        stacks.some(
          (stack) => stack.StackName?.startsWith('rmqbench-cloud-e2e-') && stack.StackStatus === 'CREATE_COMPLETE',
        ),
      ).toBe(true);
    },
  );

  test(
    'the verification matrix (docs/verification.md, linked from the ' +
      'README) says what only a real account verifies for the cloud CLI',
    () => {
      const matrix = readFileSync(join(__dirname, '../../docs/verification.md'), 'utf8');
      expect(README).toContain('(docs/verification.md)');
      const row = matrix.split('\n').find((line) => line.startsWith('| cloud CLI ('));
      expect(row).toBeDefined();
      expect(row!.split('|')[3]).toMatch(
        /the real workflow executing, IAM .* the EventBridge failure rule firing on ABORTED/,
      );
    },
  );
});
