import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { cleanupAzure } from '../../bin/cleanup-command';
import { sweepExpiredStacks } from '../../lambdas/sweeper/logic';
import { withFakeArm } from '../lambdas/fake-arm-clients';
import { cliEnv, rmqbenchSync } from './cli-child';
import { cloudPlan, deployFakeController, finishRun, runStarted, type FakeController } from './controller-fake';
import { motoClientConfig, stackStatusOrGone, startMoto, type Moto } from './moto';

jest.setTimeout(120_000);

const hour = 3_600_000;
const at = (offsetHours: number) => new Date(Date.now() + offsetHours * hour).toISOString();
const tags = (runId: string, expiresAt: string) => [
  { Key: 'rmqbench:run-id', Value: runId },
  { Key: 'rmqbench:expires-at', Value: expiresAt },
];
const TEMPLATE = JSON.stringify({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } });

describe('rmqbench cleanup --target aws against moto; the sweeper applies the same rule', () => {
  let moto: Moto;
  let controller: FakeController;
  let env: NodeJS.ProcessEnv;
  let cfn: CloudFormationClient;
  const plan = cloudPlan();

  beforeAll(async () => {
    moto = await startMoto();
    try {
      controller = await deployFakeController(moto);
      cfn = new CloudFormationClient(motoClientConfig(moto));
      // r-expired is still RUNNING but past its expiry; r-done finished; r-running runs; r-none is not in the table.
      for (const [runId, status] of [
        ['r-expired', 'RUNNING'],
        ['r-done', 'SUCCEEDED'],
        ['r-running', 'RUNNING'],
      ] as const) {
        await controller.store.putRun(runStarted(runId, plan));
        if (status !== 'RUNNING') await finishRun(controller.store, runId, status);
      }
      const stacks: [string, ReturnType<typeof tags> | undefined][] = [
        ['rmqbench-r-expired-c1', tags('r-expired', at(-1))],
        ['rmqbench-r-done-c1', tags('r-done', at(10))],
        ['rmqbench-r-running-c1', tags('r-running', at(10))],
        ['rmqbench-r-none-c1', tags('r-none', at(10))],
        ['rmqbench-untagged', undefined],
        ['someone-elses-stack', tags('r-done', at(-1))],
      ];
      for (const [name, stackTags] of stacks)
        await cfn.send(
          new CreateStackCommand({
            StackName: name,
            TemplateBody: TEMPLATE,
            ...(stackTags ? { Tags: stackTags } : {}),
          }),
        );
    } catch (error) {
      await moto.stop();
      throw error;
    }
    env = cliEnv(moto);
  });
  afterAll(async () => {
    cfn?.destroy();
    controller?.destroy();
    await moto?.stop();
  });

  /** A deleted stack is no longer found by name (DescribeStacks answers "does not exist", as AWS does for names). */
  const status = (name: string) => stackStatusOrGone(cfn, name);

  test('--dry-run lists every rmqbench stack with its run, age and expiry and deletes nothing', async () => {
    const dry = rmqbenchSync(env, 'cleanup', '--target', 'aws', '--dry-run');
    expect(dry.code).toBe(0);
    const lines = dry.stdout.trim().split('\n');
    // Expired, but its run is still RUNNING: kept until its execution must have ended (issue 22, item 4).
    expect(lines.find((line) => line.includes('rmqbench-r-expired-c1'))).toMatch(
      new RegExp(
        String.raw`^keeping +stack rmqbench-r-expired-c1 {2}run r-expired \(RUNNING\), age 0\.0 h, expires ` +
          String.raw`.*: expired at .*, but its run r-expired is RUNNING: kept until `,
      ),
    );
    expect(lines.find((line) => line.includes('rmqbench-r-done-c1'))).toMatch(
      /^would delete +stack rmqbench-r-done-c1 {2}run r-done \(SUCCEEDED\), .*: its run r-done finished SUCCEEDED$/,
    );
    expect(lines.find((line) => line.includes('rmqbench-r-running-c1'))).toMatch(
      /^keeping +stack .*: its run r-running is RUNNING; expires at /,
    );
    expect(lines.find((line) => line.includes('rmqbench-r-none-c1'))).toMatch(
      /^keeping +stack .*run r-none \(not-recorded\).*is not in the results table/,
    );
    expect(lines.find((line) => line.includes('rmqbench-untagged'))).toMatch(
      /^keeping .*no valid rmqbench:expires-at tag/,
    );
    expect(dry.stdout).not.toContain('someone-elses-stack');
    for (const name of ['rmqbench-r-expired-c1', 'rmqbench-r-done-c1'])
      expect(await status(name)).toBe('CREATE_COMPLETE');
  });

  test(
    'the sweeper (no table) deletes only the expired stack; cleanup ' +
      "then deletes the finished run's stack and keeps the rest",
    async () => {
      const logs: string[] = [];
      const swept = await sweepExpiredStacks(
        cfn,
        'arn:aws:iam::123456789012:role/rmqbench-cfn',
        'rmqbench-',
        new Date(),
        undefined,
        (line) => logs.push(line),
      );
      expect(swept.deleted).toEqual(['rmqbench-r-expired-c1']);
      expect(await status('rmqbench-r-expired-c1')).toBe('GONE');

      const cleaned = rmqbenchSync(env, 'cleanup', '--target', 'aws', '--json');
      expect(cleaned.code).toBe(0);
      const outcome = JSON.parse(cleaned.stdout) as {
        dryRun: boolean;
        deleted: string[];
        decisions: { candidate: { name: string }; delete: boolean }[];
      };
      expect(outcome.dryRun).toBe(false);
      expect(outcome.deleted).toEqual(['rmqbench-r-done-c1']);
      expect(await status('rmqbench-r-done-c1')).toBe('GONE');
      for (const name of ['rmqbench-r-running-c1', 'rmqbench-r-none-c1', 'rmqbench-untagged'])
        expect(await status(name)).toBe('CREATE_COMPLETE');
    },
  );

  test('without a controller table only expiry decides, and it says so', () => {
    const dry = rmqbenchSync(env, 'cleanup', '--target', 'aws', '--dry-run', '--stack', 'NoSuchStack');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /^run states unknown \(no CloudFormation stack "NoSuchStack" in us-east-1: .*\): only expiry tags decide/,
    );
    expect(dry.stdout).toMatch(/keeping +stack rmqbench-r-running-c1 {2}run r-running \(not read\).*: expires at /);
    expect(rmqbenchSync(env, 'cleanup', '--target', 'local').code).toBe(2);
    expect(rmqbenchSync(env, 'cleanup', '--target', 'azure').stderr).toContain('needs --subscription ID');
  });

  test(
    '--target azure: resource groups from the fake ARM endpoint, ' +
      'run states from the table, expired and finished groups deleted',
    async () => {
      await withFakeArm({ operationPolls: 1 }, async (clients, arm) => {
        const groupTags = (runId: string, expiresAt: string) => ({
          'rmqbench:run-id': runId,
          'rmqbench:expires-at': expiresAt,
        });
        arm.groups.set('rmqbench-r-expired-c1', { location: 'westeurope', tags: groupTags('r-expired', at(-1)) });
        arm.groups.set('rmqbench-r-done-c1', { location: 'westeurope', tags: groupTags('r-done', at(10)) });
        arm.groups.set('rmqbench-r-running-c1', { location: 'westeurope', tags: groupTags('r-running', at(10)) });
        arm.groups.set('other-team-group', { location: 'westeurope', tags: groupTags('r-done', at(-1)) });
        const dry = await cleanupAzure(clients, controller.store, { dryRun: true });
        expect(dry.deleted).toEqual([]);
        expect(dry.decisions.map((d) => [d.candidate.name, d.delete])).toEqual([
          // Expired, but its run is RUNNING in the table: kept until its execution must have ended.
          ['rmqbench-r-expired-c1', false],
          ['rmqbench-r-done-c1', true],
          ['rmqbench-r-running-c1', false],
        ]);
        const done = await cleanupAzure(clients, controller.store, { dryRun: false, updateIntervalInMs: 10 });
        expect(done.deleted).toEqual(['rmqbench-r-done-c1']);
        expect([...arm.groups.keys()].sort()).toEqual([
          'other-team-group',
          'rmqbench-r-expired-c1',
          'rmqbench-r-running-c1',
        ]);
      });
    },
  );
});
