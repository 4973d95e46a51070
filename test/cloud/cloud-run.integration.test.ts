import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateStackCommand, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DescribeExecutionCommand, ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { followCloudRun, STOPPED_TEARDOWN } from '../../bin/cloud-run-command';
import { resolveController } from '../../bin/cloud-controller';
import { buildSchedule, clusterIdFor, executionInput } from '../../state-machines/schedule';
import { waitFor } from '../../local/ports';
import { ResultsStore } from '../../store/results-store';
import { outputEnded } from '../child-output';
import { cliEnv, rmqbenchAsync, rmqbenchSync } from './cli-child';
import {
  CLOUD_PLAN_YAML,
  cloudPlan,
  deployFakeController,
  finishRun,
  repetitionRecord,
  runStarted,
  type FakeController,
} from './controller-fake';
import { motoClientConfig, startMoto, type Moto } from './moto';

jest.setTimeout(180_000);

describe('rmqbench run/watch --target aws against moto (real SDK v3 clients, moto in server mode)', () => {
  let moto: Moto;
  let controller: FakeController;
  let env: NodeJS.ProcessEnv;
  const children: { kill(): void }[] = [];
  const planFile = join(mkdtempSync(join(tmpdir(), 'rmqbench-cloud-plan-')), 'cloud-e2e.yaml');
  writeFileSync(planFile, CLOUD_PLAN_YAML);
  const plan = cloudPlan();
  const [first, second] = plan.scenarios.flatMap((scenario) =>
    [1, 2].map((repetition) => ({ scenarioId: scenario.id, repetition })),
  );

  beforeAll(async () => {
    moto = await startMoto({ executeStateMachines: true });
    try {
      controller = await deployFakeController(moto);
    } catch (error) {
      await moto.stop();
      throw error;
    }
    env = cliEnv(moto);
  });
  afterEach(() => children.splice(0).forEach((child) => child.kill()));
  afterAll(async () => {
    controller?.destroy();
    await moto?.stop();
  });

  const executionOf = async (runId: string) =>
    waitFor(
      async () =>
        (
          await controller.sfn.send(new ListExecutionsCommand({ stateMachineArn: controller.stateMachineArn }))
        ).executions?.find((e) => e.name === runId),
      30_000,
      () => `no execution named ${runId} was started`,
      100,
    );

  /**
   * The workflow's writes for a run, as RecordRunStart, LaunchCluster (the stack), IngestRepetition and FinishRun make
   * them.
   */
  const launchCluster = async (runId: string) => {
    await controller.store.putRun(runStarted(runId, plan));
    await controller.cfn.send(
      new CreateStackCommand({
        StackName: clusterIdFor(runId, 0),
        TemplateBody: JSON.stringify({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } }),
        Tags: [
          { Key: 'rmqbench:run-id', Value: runId },
          { Key: 'rmqbench:expires-at', Value: new Date(Date.now() + 3_600_000).toISOString() },
        ],
      }),
    );
  };

  test(
    'run finds the state machine from the stack outputs, prints the estimate, starts the execution ' +
      'with the execution-input input, shows progress from the table and exits 0 with the report',
    async () => {
      const runId = 'cloud-e2e-ok-1';
      const run = rmqbenchAsync(env, 'run', planFile, '--target', 'aws', '--run-id', runId, '--poll-seconds', '0.2');
      children.push(run);
      await run.stderrMatches(/estimated cost of plan cloud-e2e on aws: \$\d+\.\d\d/);
      const execution = await executionOf(runId);
      const described = await controller.sfn.send(
        new DescribeExecutionCommand({ executionArn: execution.executionArn }),
      );
      // The same input `rmqbench execution-input` prints.
      const printed = rmqbenchSync(env, 'execution-input', planFile, '--target', 'aws', '--run-id', runId);
      expect(JSON.parse(described.input!)).toEqual(JSON.parse(printed.stdout));
      expect(JSON.parse(described.input!)).toEqual(JSON.parse(JSON.stringify(executionInput(plan, 'aws', runId))));

      await run.stderrMatches(/starting a 3-node RabbitMQ cluster \(quorum queues\)/);
      await launchCluster(runId);
      await run.stderrMatches(/cluster ready in [\d.]+ s\n\[1\/2\] small\/w repetition 1\/2 \(30 s\)/);
      // No msg/s while a repetition runs in the cloud (its samples are stored at its end): the time left, as planned
      // (the first poll may come a second after the start on a loaded machine).
      await run.stderrMatches(
        / {2}running, (30s left \(plan: 1m05s\)|29s left \(plan: 1m04s\)); msg\/s once the repetition is stored/,
      );
      await controller.store.putRepetition(repetitionRecord(runId, first!.scenarioId, 1, 12_000));
      await run.stderrMatches(
        new RegExp(
          String.raw`done: send 12000 msg\/s, receive 12000 msg\/s\n {2}pausing 5 s between repetitions\n\[2` +
            String.raw`\/2\] small\/w repetition 2\/2`,
        ),
      );
      await controller.store.putRepetition(repetitionRecord(runId, second!.scenarioId, 2, 14_000));
      await finishRun(controller.store, runId, 'SUCCEEDED');
      expect(await run.exited).toBe(0);
      expect(run.stderr).toContain(`run ${runId}: about`);
      expect(run.stderr).toContain(`raw output in s3://${controller.bucketName}/runs/${runId}/`);
      expect(run.stderr).toMatch(/done: send 14000 msg\/s, receive 14000 msg\/s/);
      expect(run.stdout).toMatch(/\| small\/w \| 2\/2 \| 13,000 ± /);
    },
  );

  test('a run with a failed repetition exits 3, a failed run exits 1 with its recorded error', async () => {
    const partial = rmqbenchAsync(
      env,
      'run',
      planFile,
      '--target',
      'aws',
      '--run-id',
      'cloud-e2e-partial',
      '--poll-seconds',
      '0.2',
      '--json',
    );
    children.push(partial);
    await executionOf('cloud-e2e-partial');
    await launchCluster('cloud-e2e-partial');
    await controller.store.putRepetition(repetitionRecord('cloud-e2e-partial', first!.scenarioId, 1, 10_000));
    await controller.store.putRepetition(repetitionRecord('cloud-e2e-partial', second!.scenarioId, 2, null));
    await finishRun(controller.store, 'cloud-e2e-partial', 'PARTIAL');
    expect(await partial.exited).toBe(3);
    expect(JSON.parse(partial.stdout)).toMatchObject({
      runId: 'cloud-e2e-partial',
      executionStatus: 'SUCCEEDED',
      status: 'PARTIAL',
    });
    expect(partial.stderr).toMatch(/FAILED: PerfTest exited with code 1/);
    expect(partial.stderr).toMatch(/rmqbench: run cloud-e2e-partial finished with 1 failed repetition\(s\) of 2/);

    const failed = rmqbenchAsync(
      env,
      'run',
      planFile,
      '--target',
      'aws',
      '--run-id',
      'cloud-e2e-failed',
      '--poll-seconds',
      '0.2',
    );
    children.push(failed);
    await executionOf('cloud-e2e-failed');
    await controller.store.putRun(runStarted('cloud-e2e-failed', plan));
    await finishRun(
      controller.store,
      'cloud-e2e-failed',
      'FAILED',
      'CheckClusterReady: stack rmqbench-x-c1 CREATE_FAILED',
    );
    expect(await failed.exited).toBe(1);
    expect(failed.stderr).toMatch(
      /rmqbench: run cloud-e2e-failed failed: execution FAILED: CheckClusterReady: stack rmqbench-x-c1 CREATE_FAILED/,
    );
  });

  test(
    '--detach prints the execution ARN and run id at ' + 'once; watch <runId> follows it later to the same end',
    async () => {
      const detached = rmqbenchSync(
        env,
        'run',
        planFile,
        '--target',
        'aws',
        '--run-id',
        'cloud-e2e-detached',
        '--detach',
        '--json',
      );
      expect(detached.code).toBe(0);
      const started = JSON.parse(detached.stdout) as { runId: string; executionArn: string };
      expect(started.runId).toBe('cloud-e2e-detached');
      expect(
        (await controller.sfn.send(new DescribeExecutionCommand({ executionArn: started.executionArn }))).status,
      ).toBe('RUNNING');

      const watch = rmqbenchAsync(env, 'watch', 'cloud-e2e-detached', '--poll-seconds', '0.2');
      children.push(watch);
      await watch.stderrMatches(/run cloud-e2e-detached: about/);
      await launchCluster('cloud-e2e-detached');
      await controller.store.putRepetition(repetitionRecord('cloud-e2e-detached', first!.scenarioId, 1, 9_000));
      await controller.store.putRepetition(repetitionRecord('cloud-e2e-detached', second!.scenarioId, 2, 9_000));
      await finishRun(controller.store, 'cloud-e2e-detached', 'SUCCEEDED');
      expect(await watch.exited).toBe(0);
      expect(watch.stderr).toMatch(/\[2\/2\] small\/w repetition 2\/2/);
      expect(watch.stdout).toMatch(/\| small\/w \| 2\/2 \| 9,000 ± 0 /);

      // A finished run is reported at once; an unknown one names the state machine.
      const again = rmqbenchSync(env, 'watch', 'cloud-e2e-detached');
      expect(again.code).toBe(0);
      const unknown = rmqbenchSync(env, 'watch', 'no-such-run');
      expect([unknown.code, unknown.stderr]).toEqual([
        1,
        expect.stringContaining(`no execution of ${controller.stateMachineArn} has run id "no-such-run"`),
      ]);
    },
  );

  test('watch finds a scheduled run by <plan>-<execution name> (started without a runId)', async () => {
    const { StartExecutionCommand } = await import('@aws-sdk/client-sfn');
    const { runIdFor } = await import('../../state-machines/schedule');
    const input = executionInput(plan, 'aws');
    await controller.sfn.send(
      new StartExecutionCommand({
        stateMachineArn: controller.stateMachineArn,
        name: 'sched-42',
        input: JSON.stringify(input),
      }),
    );
    const runId = runIdFor(input, 'sched-42');
    expect(runId).toBe('cloud-e2e-sched-42');
    await controller.store.putRun(runStarted(runId, plan));
    await finishRun(controller.store, runId, 'FAILED', 'LaunchCluster: quota exceeded');
    const watch = rmqbenchSync(env, 'watch', runId, '--poll-seconds', '0.2');
    expect(watch.code).toBe(1);
    expect(watch.stderr).toMatch(/run cloud-e2e-sched-42 failed: execution FAILED: LaunchCluster: quota exceeded/);
  });

  test(
    'an azure run (no stack to read) is launching from the ' + 'start and ready once its first repetition is stored',
    async () => {
      const { StartExecutionCommand } = await import('@aws-sdk/client-sfn');
      const azurePlan = (await import('../../core/plan/plan')).validatePlan(
        {
          name: 'cloud-az',
          clusters: [{ name: 'f4', nodes: 3, instanceType: 'F4s_v2', topology: { type: 'quorum' } }],
          workloads: [{ name: 'w', durationSeconds: 20 }],
        },
        'test',
      );
      const input = executionInput(azurePlan, 'azure', 'cloud-az-1');
      await controller.sfn.send(
        new StartExecutionCommand({
          stateMachineArn: controller.stateMachineArn,
          name: 'cloud-az-1',
          input: JSON.stringify(input),
        }),
      );
      const watch = rmqbenchAsync(env, 'watch', 'cloud-az-1', '--poll-seconds', '0.2');
      children.push(watch);
      await watch.stderrMatches(/starting a 3-node RabbitMQ cluster \(quorum queues\)/);
      await controller.store.putRun(runStarted('cloud-az-1', azurePlan, 'azure'));
      await controller.store.putRepetition(repetitionRecord('cloud-az-1', azurePlan.scenarios[0]!.id, 1, 8_000));
      await finishRun(controller.store, 'cloud-az-1', 'SUCCEEDED');
      expect(await watch.exited).toBe(0);
      expect(watch.stderr).toMatch(
        /cluster ready in [\d.]+ s\n\[1\/1\] f4\/w repetition 1\/1 \(20 s\)\n {2}done: send 8000 msg\/s/,
      );
    },
  );

  test(
    'Ctrl-C without a terminal stops following and leaves the ' +
      'execution running (exit 130, says how to watch or stop it)',
    async () => {
      const run = rmqbenchAsync(
        env,
        'run',
        planFile,
        '--target',
        'aws',
        '--run-id',
        'cloud-e2e-interrupted',
        '--poll-seconds',
        '0.2',
      );
      children.push(run);
      await run.stderrMatches(/starting a 3-node RabbitMQ cluster/);
      run.child.kill('SIGINT');
      expect(await run.exited).toBe(130);
      const execution = await executionOf('cloud-e2e-interrupted');
      expect(
        (await controller.sfn.send(new DescribeExecutionCommand({ executionArn: execution.executionArn }))).status,
      ).toBe('RUNNING');
      expect(run.stderr).toContain(
        'rmqbench watch cloud-e2e-interrupted follows it again, aws stepfunctions ' +
          `stop-execution --execution-arn ${execution.executionArn} stops it`,
      );
    },
  );

  test(
    'on a terminal (a pty from util-linux script), Ctrl-C asks "stop the ' +
      'execution? [y/N]"; y stops it (ABORTED) and says what tears down',
    async () => {
      const { spawn } = await import('node:child_process');
      const { CLI } = await import('./cli-child');
      const command = [
        process.execPath,
        CLI,
        'run',
        planFile,
        '--target',
        'aws',
        '--run-id',
        'cloud-e2e-tty',
        '--poll-seconds',
        '0.2',
      ]
        .map((arg) => `'${arg}'`)
        .join(' ');
      // script (util-linux, in Debian's essential bsdutils) runs the command on a new pseudo-terminal and relays our
      // bytes to it: ^C there is the terminal's SIGINT.
      const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      children.push({ kill: () => child.exitCode === null && child.kill('SIGKILL') });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) =>
        child.once('exit', (code) => void outputEnded(child).then(() => resolve(code))),
      );
      const printed = (pattern: RegExp) =>
        waitFor(
          async () => (pattern.test(output) ? true : undefined),
          60_000,
          () => `no ${pattern} on the terminal:\n${output}`,
          100,
        );
      await printed(/starting a 3-node RabbitMQ cluster/);
      child.stdin.write('\x03');
      await printed(/stop the execution\? \[y\/N\] /);
      child.stdin.write('y\n');
      expect(await exited).toBe(130);
      const execution = await executionOf('cloud-e2e-tty');
      expect(
        (await controller.sfn.send(new DescribeExecutionCommand({ executionArn: execution.executionArn }))).status,
      ).toBe('ABORTED');
      expect(output.replace(/\r/g, '')).toContain(
        `rmqbench: stopped execution ${execution.executionArn}: ${STOPPED_TEARDOWN}`,
      );
    },
  );

  test('on a terminal, a second Ctrl-C at the question answers no: the execution keeps running', async () => {
    const { spawn } = await import('node:child_process');
    const { CLI } = await import('./cli-child');
    const command = [
      process.execPath,
      CLI,
      'run',
      planFile,
      '--target',
      'aws',
      '--run-id',
      'cloud-e2e-tty-no',
      '--poll-seconds',
      '0.2',
    ]
      .map((arg) => `'${arg}'`)
      .join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.push({ kill: () => child.exitCode === null && child.kill('SIGKILL') });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => void outputEnded(child).then(() => resolve(code))),
    );
    const printed = (pattern: RegExp) =>
      waitFor(
        async () => (pattern.test(output) ? true : undefined),
        60_000,
        () => `no ${pattern} on the terminal:\n${output}`,
        100,
      );
    await printed(/starting a 3-node RabbitMQ cluster/);
    child.stdin.write('\x03');
    await printed(/stop the execution\? \[y\/N\] /);
    child.stdin.write('\x03');
    expect(await exited).toBe(130);
    const execution = await executionOf('cloud-e2e-tty-no');
    expect(
      (await controller.sfn.send(new DescribeExecutionCommand({ executionArn: execution.executionArn }))).status,
    ).toBe('RUNNING');
    expect(output).toContain('rmqbench watch cloud-e2e-tty-no follows it again');
  });

  test(
    'Ctrl-C answered yes stops the execution (ABORTED in ' + 'Step Functions) and says what tears the clusters down',
    async () => {
      const config = motoClientConfig(moto);
      const { SFNClient, StartExecutionCommand } = await import('@aws-sdk/client-sfn');
      const { CloudFormationClient } = await import('@aws-sdk/client-cloudformation');
      const sfn = new SFNClient(config);
      const cfn = new CloudFormationClient(config);
      const resolved = await resolveController(cfn, {}, { stateMachine: true });
      expect(resolved).toEqual({
        stateMachineArn: controller.stateMachineArn,
        tableName: controller.tableName,
        bucketName: controller.bucketName,
      });
      const input = executionInput(plan, 'aws', 'cloud-e2e-stopped');
      const { executionArn } = await sfn.send(
        new StartExecutionCommand({
          stateMachineArn: resolved.stateMachineArn,
          name: 'cloud-e2e-stopped',
          input: JSON.stringify(input),
        }),
      );
      const store = new ResultsStore(new DynamoDBClient(config), resolved.tableName);
      const interrupted = new AbortController();
      interrupted.abort();
      let asked = 0;
      const result = await followCloudRun(
        {
          sfn,
          cfn,
          store,
          controller: resolved,
          json: false,
          progress: { write: () => true, isTTY: false } as unknown as NodeJS.WriteStream,
          interrupted: interrupted.signal,
          askToStop: async () => (asked++, true),
        },
        executionArn!,
        buildSchedule(input, 'cloud-e2e-stopped'),
        'aws',
      );
      expect(asked).toBe(1);
      expect(result.exitCode).toBe(130);
      expect(result.error).toBe(`stopped execution ${executionArn}: ${STOPPED_TEARDOWN}`);
      expect((await sfn.send(new DescribeExecutionCommand({ executionArn }))).status).toBe('ABORTED');
      [sfn, cfn, store.client].forEach((client) => client.destroy());
    },
  );

  test('--max-cost below the estimate refuses before anything starts; a missing stack or output is named', async () => {
    const before = (
      await controller.sfn.send(new ListExecutionsCommand({ stateMachineArn: controller.stateMachineArn }))
    ).executions?.length;
    const over = rmqbenchSync(env, 'run', planFile, '--target', 'aws', '--max-cost', '0.01');
    expect(over.code).toBe(1);
    expect(over.stderr).toMatch(/^estimated cost of plan cloud-e2e on aws/);
    expect(over.stderr).toMatch(
      /rmqbench: the estimated cost \$\d+\.\d\d on aws exceeds --max-cost \$0\.01.*; nothing was started/,
    );
    expect(
      (await controller.sfn.send(new ListExecutionsCommand({ stateMachineArn: controller.stateMachineArn }))).executions
        ?.length,
    ).toBe(before);

    const missing = rmqbenchSync(env, 'run', planFile, '--target', 'aws', '--stack', 'NoSuchStack');
    expect([missing.code, missing.stderr]).toEqual([
      1,
      expect.stringContaining(
        'rmqbench: no CloudFormation stack "NoSuchStack" in us-east-1: deploy examples/controller',
      ),
    ]);
    await controller.cfn.send(
      new CreateStackCommand({
        StackName: 'NotAController',
        TemplateBody: JSON.stringify({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } }),
      }),
    );
    expect((await controller.cfn.send(new DescribeStacksCommand({ StackName: 'NotAController' }))).Stacks).toHaveLength(
      1,
    );
    const notController = rmqbenchSync(env, 'run', planFile, '--target', 'aws', '--stack', 'NotAController');
    expect([notController.code, notController.stderr]).toEqual([
      1,
      expect.stringContaining('stack "NotAController" has no output StateMachineArn (outputs: none)'),
    ]);
  });
});
