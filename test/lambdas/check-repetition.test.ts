import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { GetCommandInvocationCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ingestRepetition, type RawRepetition } from '../../core/results/ingest';
import { checkRepetition } from '../../lambdas/check-repetition/logic';
import { buildSchedule } from '../../state-machines/schedule';

// SSM and S3 have no local engine here: their clients are replaced (aws-sdk-client-mock).
const ssmMock = mockClient(SSMClient);
const s3Mock = mockClient(S3Client);
afterEach(() => {
  ssmMock.reset();
  s3Mock.reset();
});

const plan = {
  name: 'check',
  repetitions: 1,
  pauseSecondsBetweenRepetitions: 0,
  clusters: [{ name: 'three', nodes: 3, topology: { type: 'quorum' }, instanceType: 'c5.xlarge' }],
  workloads: [{ name: 'small', producers: 2, consumers: 3, queues: 1, messageSizeBytes: 100, durationSeconds: 30 }],
};
const schedule = buildSchedule({ plan, runId: 'run-1', target: 'aws' }, 'exec');
const item = schedule.clusters[0]!.repetitions[0]!;
const started = {
  commandId: 'cmd',
  instanceId: 'i-1',
  startedAt: '2025-01-01T00:00:00.000Z',
  doneBy: '2025-01-01T00:03:30.000Z',
  perfTestArgs: ['--uri', 'amqp://***'],
};
const event = { runId: 'run-1', plan: schedule.plan, item, started };
const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
/** The part of an S3 object body the logic reads. */
const body = (text: string) => ({ transformToString: async () => text }) as never;

describe('check-repetition', () => {
  test('a running command is not done, and is an error once its deadline has passed', async () => {
    ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'InProgress' });
    await expect(
      checkRepetition(new SSMClient({}), new S3Client({}), 'raw', event, new Date('2025-01-01T00:01:00Z')),
    ).resolves.toEqual({ done: false });
    await expect(
      checkRepetition(new SSMClient({}), new S3Client({}), 'raw', event, new Date('2025-01-01T00:04:00Z')),
    ).rejects.toThrow(`PerfTest for ${item.scenarioId} #1 did not finish by 2025-01-01T00:03:30.000Z (InProgress)`);
    expect(s3Mock.calls()).toHaveLength(0);
  });

  test(
    'a finished command: the uploaded stdout, CSV and broker ' +
      'samples become the RawRepetition under the ingest key',
    async () => {
      ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'Success', ResponseCode: 0 });
      const rawPrefix = `runs/run-1/raw/${item.rawKey.replace(/\.json$/, '')}`;
      s3Mock.on(GetObjectCommand, { Key: `${rawPrefix}/stdout.txt` }).resolves({ Body: body('summary') });
      s3Mock.on(GetObjectCommand, { Key: `${rawPrefix}/perftest.csv` }).resolves({ Body: body('time,sent\n1,10\n') });
      s3Mock
        .on(GetObjectCommand, { Key: `${rawPrefix}/broker-metrics.jsonl` })
        .resolves({ Body: body('{"t":1735689601.5,"nodes":[],"alarms":{"status":"ok"},"queues":[]}\n') });
      s3Mock.on(PutObjectCommand).resolves({});
      const now = new Date('2025-01-01T00:00:40Z');
      await expect(checkRepetition(new SSMClient({}), new S3Client({}), 'raw', event, now)).resolves.toEqual({
        done: true,
        rawKey: item.rawKey,
      });
      const put = s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input;
      expect(put.Key).toBe(`runs/run-1/ingest/${item.rawKey}`);
      expect(JSON.parse(put.Body as string)).toEqual({
        runId: 'run-1',
        scenarioId: item.scenarioId,
        repetition: 1,
        startedAt: started.startedAt,
        finishedAt: now.toISOString(),
        perfTestArgs: started.perfTestArgs,
        expectations: { durationSeconds: 30, producers: 2, consumers: 3, confirms: false },
        stdout: 'summary',
        csv: 'time,sent\n1,10\n',
        brokerSamples: '{"t":1735689601.5,"nodes":[],"alarms":{"status":"ok"},"queues":[]}\n',
      });
    },
  );

  test('a failed command is still ingested, with the target error, and missing output is empty', async () => {
    ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'Failed', ResponseCode: 1 });
    s3Mock.on(GetObjectCommand).rejects(Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' }));
    s3Mock.on(PutObjectCommand).resolves({});
    await checkRepetition(new SSMClient({}), new S3Client({}), 'raw', event, new Date('2025-01-01T00:00:40Z'));
    const raw = JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string) as Record<
      string,
      unknown
    >;
    expect(raw).toMatchObject({
      stdout: '',
      csv: '',
      brokerSamples: '',
      targetError: 'the SSM command ended Failed (exit code 1)',
    });
  });

  test(
    'a repetition whose fault the aws step applied records it as not ' +
      'counted (what, on which node, when), never as zero lost messages',
    async () => {
      const faultPlan = {
        ...plan,
        workloads: [
          { ...plan.workloads[0], fault: { action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 } },
        ],
      };
      const faultSchedule = buildSchedule({ plan: faultPlan, runId: 'run-1', target: 'aws' }, 'exec');
      const faultItem = faultSchedule.clusters[0]!.repetitions[0]!;
      ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'Success', ResponseCode: 0 });
      s3Mock.on(GetObjectCommand).resolves({ Body: body('') });
      s3Mock.on(PutObjectCommand).resolves({});
      const faultStarted = {
        ...started,
        faultApplied: { nodeName: 'rabbit@10.0.1.5', appliedAtSeconds: 12.5 },
        faultHealed: { healedAtSeconds: 21 },
      };
      await checkRepetition(
        new SSMClient({}),
        new S3Client({}),
        'raw',
        { runId: 'run-1', plan: faultSchedule.plan, item: faultItem, started: faultStarted },
        new Date('2025-01-01T00:00:40Z'),
      );
      const raw = JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string) as Record<
        string,
        unknown
      >;
      expect(raw.failover).toBeUndefined();
      expect(raw.uncountedFault).toEqual({
        fault: {
          action: 'kill',
          node: 'leader',
          nodeName: 'rabbit@10.0.1.5',
          appliedAtSeconds: 12.5,
          healedAtSeconds: 21,
        },
        reason: expect.stringMatching(/^lost messages not counted on aws: /),
      });
    },
  );

  /**
   * A fault repetition checked with the verifier's output file holding `verifierOutput`; returns the RawRepetition
   * written.
   */
  async function checkFault(
    verifierOutput: string,
    faultApplied: { nodeName: string; instanceId: string; appliedAt: string; appliedAtSeconds: number },
    faultHealed?: { nodeName: string; healedAt: string; healedAtSeconds: number },
  ) {
    const faultPlan = {
      ...plan,
      workloads: [
        { ...plan.workloads[0], fault: { action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 } },
      ],
    };
    const faultSchedule = buildSchedule({ plan: faultPlan, runId: 'run-1', target: 'aws' }, 'exec');
    const faultItem = faultSchedule.clusters[0]!.repetitions[0]!;
    const rawPrefix = `runs/run-1/raw/${faultItem.rawKey.replace(/\.json$/, '')}`;
    ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'Success', ResponseCode: 0 });
    s3Mock.on(GetObjectCommand).resolves({ Body: body('') });
    s3Mock.on(GetObjectCommand, { Key: `${rawPrefix}/verifier.txt` }).resolves({ Body: body(verifierOutput) });
    s3Mock.on(PutObjectCommand).resolves({});
    const faultStarted = { ...started, faultApplied, ...(faultHealed ? { faultHealed } : {}) };
    await checkRepetition(
      new SSMClient({}),
      new S3Client({}),
      'raw',
      { runId: 'run-1', plan: faultSchedule.plan, item: faultItem, started: faultStarted },
      new Date('2025-01-01T00:00:40Z'),
    );
    return JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string) as RawRepetition;
  }

  // The verifier started 3.5 s after the command was sent (2025-01-01T00:00:03.500Z); captured shape, 12 whole seconds.
  const verifierOutput =
    'rmqbench verifier: publishing to rmqbench-verifier\n' +
    '{"startedAtMs":1735689603500,"published":1990,"confirmed":1978,"consumed":1978,' +
    '"lostMessages":0,"duplicatedMessages":0,"reconnects":2,"receivedPerSecond":[30,160,' +
    '190,190,200,190,180,200,100,138,200,200],"unconfirmedPerSecond":[0,10,0,0,0,0,0,4,0,0,0,0]}\n';

  test(
    'a repetition whose fault the aws step applied, with the verifier output: ' +
      'counted as failover on the verifier timeline, and the ingest stores it',
    async () => {
      const raw = await checkFault(
        verifierOutput,
        { nodeName: 'rabbit@10.0.1.5', instanceId: 'i-2', appliedAt: '2025-01-01T00:00:11.000Z', appliedAtSeconds: 11 },
        { nodeName: 'rabbit@10.0.1.5', healedAt: '2025-01-01T00:00:13.250Z', healedAtSeconds: 13.25 },
      );
      expect(raw.uncountedFault).toBeUndefined();
      expect(raw.failover).toEqual({
        counts: expect.objectContaining({
          lostMessages: 0,
          confirmed: 1978,
          faultAtSeconds: 7.5,
          unconfirmedAtFault: 4,
          healAtSeconds: 9.75,
          reconnects: 2,
        }),
        fault: { action: 'kill', node: 'leader', nodeName: 'rabbit@10.0.1.5' },
      });
      // IngestRepetition with a real PerfTest output (5 s, 1 producer, 1 consumer) beside it stores the failover.
      const counted = ingestRepetition({
        ...raw,
        stdout: fixture('basic-150b.stdout.txt'),
        csv: fixture('basic-150b.csv'),
        expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
      });
      expect(counted.status).toBe('SUCCEEDED');
      expect(counted.failover).toMatchObject({
        fault: { appliedAtSeconds: 7.5, healedAtSeconds: 9.75, nodeName: 'rabbit@10.0.1.5' },
        lostMessages: 0,
        unconfirmedAtFault: 4,
        recoverySeconds: 2.5,
      });
      expect(counted.uncountedFault).toBeUndefined();
    },
  );

  test.each([
    [
      'cut short',
      verifierOutput.slice(0, 120),
      new RegExp(
        String.raw`^lost messages not counted on aws: the lost-message verifier's output is unusable: the ` +
          String.raw`verifier's result line is not valid JSON`,
      ),
    ],
    [
      'failed to connect',
      'rmqbench verifier: ConnectException: Connection refused\nrmqbench verifier: exited with status 2\n',
      new RegExp(
        String.raw`unusable: the verifier printed no result line .*its output ended with: rmqbench verifier: ` +
          String.raw`ConnectException: Connection refused \| rmqbench verifier: exited with status 2`,
      ),
    ],
    [
      'not uploaded',
      '',
      new RegExp(
        String.raw`^lost messages not counted on aws: the lost-message verifier left no verifier.txt \(not ` +
          String.raw`uploaded, or it never ran\)`,
      ),
    ],
  ])(
    'verifier output %s: the fault is kept as applied but not counted, with the reason',
    async (_case, output, reason) => {
      const raw = await checkFault(output, {
        nodeName: 'rabbit@10.0.1.5',
        instanceId: 'i-2',
        appliedAt: '2025-01-01T00:00:11.000Z',
        appliedAtSeconds: 11,
      });
      expect(raw.failover).toBeUndefined();
      expect(raw.uncountedFault).toEqual({
        fault: { action: 'kill', node: 'leader', nodeName: 'rabbit@10.0.1.5', appliedAtSeconds: 11 },
        reason: expect.stringMatching(reason),
      });
    },
  );

  test('a fault applied before the verifier started is not counted, and says so', async () => {
    const raw = await checkFault(verifierOutput, {
      nodeName: 'rabbit@10.0.1.5',
      instanceId: 'i-2',
      appliedAt: '2025-01-01T00:00:02.000Z',
      appliedAtSeconds: 2,
    });
    expect(raw.uncountedFault!.reason).toMatch(/the fault was applied 1\.5 s before the verifier started/);
  });

  test('a fault that was never applied (the workflow failed before InjectFault) leaves no fault record', async () => {
    const faultPlan = {
      ...plan,
      workloads: [
        { ...plan.workloads[0], fault: { action: 'kill', node: 'leader', atSeconds: 10, healAtSeconds: 20 } },
      ],
    };
    const faultSchedule = buildSchedule({ plan: faultPlan, runId: 'run-1', target: 'aws' }, 'exec');
    ssmMock.on(GetCommandInvocationCommand).resolves({ Status: 'Success', ResponseCode: 0 });
    s3Mock.on(GetObjectCommand).resolves({ Body: body('') });
    s3Mock.on(PutObjectCommand).resolves({});
    await checkRepetition(
      new SSMClient({}),
      new S3Client({}),
      'raw',
      { runId: 'run-1', plan: faultSchedule.plan, item: faultSchedule.clusters[0]!.repetitions[0]!, started },
      new Date('2025-01-01T00:00:40Z'),
    );
    expect(JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string)).not.toHaveProperty(
      'uncountedFault',
    );
  });
});

describe('check-repetition with two load generators (issue 27)', () => {
  const twoPlan = {
    ...plan,
    clusters: [{ ...plan.clusters[0]!, loadGenerators: 2 }],
    workloads: [{ ...plan.workloads[0]!, producers: 2, consumers: 2, queues: 2, durationSeconds: 5 }],
  };
  const twoSchedule = buildSchedule({ plan: twoPlan, runId: 'run-1', target: 'aws' }, 'exec');
  const twoItem = twoSchedule.clusters[0]!.repetitions[0]!;
  const twoStarted = {
    ...started,
    generators: [
      {
        commandId: 'cmd-0',
        instanceId: 'i-0',
        perfTestArgs: ['--queue-pattern', 'perf-test-%d', '--queue-pattern-from', '1'],
      },
      { commandId: 'cmd-1', instanceId: 'i-1', perfTestArgs: ['--queue', 'perf-test-2'] },
    ],
    loadGeneratorSplit: 'split by queue over 2 load generators',
  };
  const twoEvent = { runId: 'run-1', plan: twoSchedule.plan, item: twoItem, started: twoStarted };
  const prefix = `runs/run-1/raw/${twoItem.rawKey.replace(/\.json$/, '')}`;
  const putRaw = () =>
    JSON.parse(s3Mock.commandCalls(PutObjectCommand)[0]!.args[0].input.Body as string) as RawRepetition;

  test('waits for both commands, reads generator-0/ and generator-1/, and ingest merges them', async () => {
    ssmMock.on(GetCommandInvocationCommand, { CommandId: 'cmd-0' }).resolves({ Status: 'Success', ResponseCode: 0 });
    ssmMock.on(GetCommandInvocationCommand, { CommandId: 'cmd-1' }).resolves({ Status: 'InProgress' });
    const now = new Date('2025-01-01T00:00:40Z');
    await expect(checkRepetition(new SSMClient({}), new S3Client({}), 'raw', twoEvent, now)).resolves.toEqual({
      done: false,
    });
    ssmMock.on(GetCommandInvocationCommand, { CommandId: 'cmd-1' }).resolves({ Status: 'Success', ResponseCode: 0 });
    for (const index of [0, 1]) {
      const at = `${prefix}/generator-${index}`;
      s3Mock
        .on(GetObjectCommand, { Key: `${at}/stdout.txt` })
        .resolves({ Body: body(fixture('basic-150b.stdout.txt')) });
      s3Mock.on(GetObjectCommand, { Key: `${at}/perftest.csv` }).resolves({ Body: body(fixture('basic-150b.csv')) });
      s3Mock
        .on(GetObjectCommand, { Key: `${at}/started-at.txt` })
        .resolves({ Body: body(`${1735689600000 + index * 250}\n`) });
    }
    s3Mock.on(GetObjectCommand, { Key: `${prefix}/broker-metrics.jsonl` }).resolves({ Body: body('') });
    s3Mock.on(PutObjectCommand).resolves({});
    await expect(checkRepetition(new SSMClient({}), new S3Client({}), 'raw', twoEvent, now)).resolves.toEqual({
      done: true,
      rawKey: twoItem.rawKey,
    });
    const raw = putRaw();
    expect({ stdout: raw.stdout, csv: raw.csv, targetError: raw.targetError }).toEqual({
      stdout: '',
      csv: '',
      targetError: undefined,
    });
    expect(raw.loadGenerators!.split).toBe(twoStarted.loadGeneratorSplit);
    expect(
      raw.loadGenerators!.outputs.map(({ id, queues, startedAtMs, producers }) => [id, queues, startedAtMs, producers]),
    ).toEqual([
      ['lg-1', ['perf-test-1'], 1735689600000, 1],
      ['lg-2', ['perf-test-2'], 1735689600250, 1],
    ]);
    expect(raw.loadGenerators!.outputs[1]!.perfTestArgs).toEqual(['--queue', 'perf-test-2']);
    // The same ingest as the local target's: one record with each generator's figures and the start skew.
    const record = ingestRepetition(raw);
    expect({ status: record.status, error: record.error }).toEqual({ status: 'SUCCEEDED', error: undefined });
    expect(record.loadGenerators!.map((generator) => generator.id)).toEqual(['lg-1', 'lg-2']);
    expect(record.startSkewMs).toBe(250);
    const one = ingestRepetition({
      ...raw,
      loadGenerators: undefined,
      stdout: fixture('basic-150b.stdout.txt'),
      csv: fixture('basic-150b.csv'),
    });
    expect(record.result!.summary.sendRateAvg).toBeCloseTo(2 * one.result!.summary.sendRateAvg, 0);
  });

  test('a failed generator fails the repetition, named with its instance', async () => {
    ssmMock.on(GetCommandInvocationCommand, { CommandId: 'cmd-0' }).resolves({ Status: 'Success', ResponseCode: 0 });
    ssmMock
      .on(GetCommandInvocationCommand, { CommandId: 'cmd-1' })
      .resolves({ Status: 'Failed', ResponseCode: 1, StandardErrorContent: 'PerfTest exited with status 1:' });
    s3Mock.on(GetObjectCommand).rejects(Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' }));
    s3Mock.on(PutObjectCommand).resolves({});
    await checkRepetition(new SSMClient({}), new S3Client({}), 'raw', twoEvent, new Date('2025-01-01T00:00:40Z'));
    expect(putRaw().targetError).toBe(
      'load generator lg-2 (i-1): the SSM command ended Failed (exit code 1): PerfTest exited with status 1:',
    );
    expect(ingestRepetition(putRaw()).status).toBe('FAILED');
  });
});
