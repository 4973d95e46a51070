import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { RawRepetition } from '../../core/results/ingest';
import { azureMonitorHostMetrics } from '../../lambdas/ingest-repetition/azure-metrics';
import { ingestFromS3, rereadLateHostMetrics } from '../../lambdas/ingest-repetition/logic';
import type { AzureClients } from '../../lambdas/shared/azure-cluster';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { ResultsStore } from '../../store/results-store';
import { motoClientConfig, startMoto, type Moto } from '../cloud/moto';
import type { FakeArm } from './fake-arm';
import { startFakeArm } from './fake-arm-clients';

// IngestRepetition's "metricsOnly" mode (RereadHostMetrics, before an azure cluster's teardown): the real S3 and
// DynamoDB
// clients against moto (raw objects, ResultsStore), the real ARM client pipeline against the fake ARM's Azure Monitor
// metrics API, which first answers without the repetition's last minutes (as Azure Monitor does right after it) and
// then
// with them.

const GROUP = 'rmqbench-run-1-c1';
const SCALE_SET =
  `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` +
  `/Microsoft.Compute/virtualMachineScaleSets/rmqbench-cluster`;
const LOAD_GENERATOR =
  `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` + `/Microsoft.Compute/virtualMachines/rmqbench-loadgen`;
const outputs = {
  scaleSetResourceId: SCALE_SET,
  loadGeneratorResourceId: LOAD_GENERATOR,
  clusterVmSize: 'Standard_D4s_v5',
  loadGeneratorVmSize: 'Standard_F16s_v2',
};
const minute = (n: number) => new Date(Date.parse('2026-11-23T13:00:00.000Z') + n * 60_000).toISOString();
// Repetition 1 ran 13:00:20 .. 13:02:40 (last whole minute 13:01), repetition 2 ran 13:05:20 .. 13:07:40.
const windows = [
  { startedAt: '2026-11-23T13:00:20.000Z', finishedAt: '2026-11-23T13:02:40.000Z' },
  { startedAt: '2026-11-23T13:05:20.000Z', finishedAt: '2026-11-23T13:07:40.000Z' },
];
const items = [1, 2].map(
  (repetition) =>
    ({ scenarioId: 'three/small', repetition, rawKey: `three_small.rep-${repetition}.json` }) as ScheduledRepetition,
);

let moto: Moto;
let s3: S3Client;
let store: ResultsStore;
let arm: FakeArm;
let clients: AzureClients;

/** Azure Monitor's CPU of one VM of the scale set and of the load generator for the given minutes. */
function cpu(minutes: readonly number[]) {
  const add = (resource: string, vmName: string | undefined, value: number) =>
    arm.metricValues.set(resource.toLowerCase(), [
      ...(arm.metricValues.get(resource.toLowerCase()) ?? []),
      ...minutes.map((n) => ({ metric: 'Percentage CPU', vmName, timeStamp: minute(n), value: value + n })),
    ]);
  add(SCALE_SET, 'rmqbench-cluster_1a2b3c', 40);
  add(LOAD_GENERATOR, undefined, 90);
}

async function putRaw(runId: string, index: number, extra: Partial<RawRepetition> = {}) {
  const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/perftest', name), 'utf8');
  const item = items[index]!;
  // A real PerfTest 2.22.1 run (5 s, 1 producer, 1 consumer).
  const raw: RawRepetition = {
    runId,
    scenarioId: item.scenarioId,
    repetition: item.repetition,
    ...windows[index]!,
    perfTestArgs: ['-x', '1'],
    expectations: { durationSeconds: 5, producers: 1, consumers: 1, confirms: false },
    stdout: fixture('basic-150b.stdout.txt'),
    csv: fixture('basic-150b.csv'),
    ...extra,
  };
  await s3.send(
    new PutObjectCommand({ Bucket: 'raw', Key: `runs/${runId}/ingest/${item.rawKey}`, Body: JSON.stringify(raw) }),
  );
}

async function storeRaw(runId: string, extra: Partial<RawRepetition> = {}) {
  await store.putRun({
    runId,
    planName: 'three',
    plan: {},
    target: 'azure',
    status: 'RUNNING',
    startedAt: windows[0]!.startedAt,
    environment: {},
    scenarioIds: ['three/small'],
  });
  for (const index of items.keys()) await putRaw(runId, index, extra);
}

const read =
  (readOutputs: Record<string, string> = outputs) =>
  (window: { startedAt: string; finishedAt: string }) =>
    azureMonitorHostMetrics(clients, readOutputs, window);
const metricsRequests = () =>
  arm.requests.filter((request) => request.path.endsWith('/providers/Microsoft.Insights/metrics')).length;
const errors = async (runId: string) =>
  [...((await store.getRun(runId))?.repetitions ?? [])]
    .sort((a, b) => a.repetition - b.repetition)
    .map((one) => [one.repetition, one.status, one.metricsError]);
const cpuPoints = async (runId: string, repetition: number) =>
  (await store.getMetrics(runId, 'three/small', repetition))?.series.find(
    (one) => one.node === 'load-generator' && one.metric === 'cpuPercent',
  )?.points;

beforeAll(async () => {
  moto = await startMoto();
  s3 = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
  store = new ResultsStore(new DynamoDBClient(motoClientConfig(moto)), 'rmqbench-results');
  await store.ensureTable();
  await s3.send(new CreateBucketCommand({ Bucket: 'raw' }));
}, 60_000);
afterAll(async () => moto?.stop());
beforeEach(async () => {
  ({ arm, clients } = await startFakeArm());
});
afterEach(async () => arm.stop());

describe('RereadHostMetrics (IngestRepetition metricsOnly) reads the late minutes again before teardown', () => {
  test(
    'a repetition ingested before Azure Monitor had its last minutes is stored ' +
      'again with them and loses its "incomplete"; a complete one is not read again',
    async () => {
      await storeRaw('run-1');
      // At ingest time: repetition 1 only has 13:00 (13:01 and 13:02 not yet in Azure Monitor); repetition 2 is
      // complete.
      cpu([0, 5, 6, 7]);
      for (const item of items) await ingestFromS3(s3, 'raw', store, 'run-1', item, read());
      expect(await errors('run-1')).toEqual([
        [
          1,
          'SUCCEEDED',
          'metrics incomplete: Azure Monitor had data up to 2026-11-23T13:01:00.000Z of a ' +
            'repetition that ended at 2026-11-23T13:02:40.000Z (platform metrics arrive late)',
        ],
        [2, 'SUCCEEDED', undefined],
      ]);
      expect(await cpuPoints('run-1', 1)).toEqual([[0, 90]]);
      const before = (await store.getRun('run-1'))!.repetitions.find((one) => one.repetition === 1)!;

      // Azure Monitor catches up; the re-read asks for repetition 1 only (one request per resource).
      cpu([1, 2]);
      const requestsBefore = metricsRequests();
      await expect(rereadLateHostMetrics(s3, 'raw', store, 'run-1', items, read())).resolves.toEqual({
        reread: 1,
        stored: 1,
        stillIncomplete: 0,
      });
      expect(metricsRequests() - requestsBefore).toBe(2);
      expect(await errors('run-1')).toEqual([
        [1, 'SUCCEEDED', undefined],
        [2, 'SUCCEEDED', undefined],
      ]);
      expect(await cpuPoints('run-1', 1)).toEqual([
        [0, 90],
        [40, 91],
        [100, 92],
      ]);
      expect(await cpuPoints('run-1', 2)).toEqual([
        [0, 95],
        [40, 96],
        [100, 97],
      ]);
      // The same keys: still one record per repetition, with the same result.
      const after = (await store.getRun('run-1'))!.repetitions;
      expect(after).toHaveLength(2);
      expect(after.find((one) => one.repetition === 1)!.result).toEqual(before.result);

      // Read again once more: nothing is late any more, nothing is asked.
      const requestsAfter = metricsRequests();
      await expect(rereadLateHostMetrics(s3, 'raw', store, 'run-1', items, read())).resolves.toEqual({
        reread: 0,
        stored: 0,
        stillIncomplete: 0,
      });
      expect(metricsRequests()).toBe(requestsAfter);
    },
  );

  test('still late at the re-read: stored with what is there now and still said to be incomplete', async () => {
    await storeRaw('run-2');
    cpu([0, 5, 6, 7]);
    for (const item of items) await ingestFromS3(s3, 'raw', store, 'run-2', item, read());
    await expect(rereadLateHostMetrics(s3, 'raw', store, 'run-2', items, read())).resolves.toEqual({
      reread: 1,
      stored: 1,
      stillIncomplete: 1,
    });
    expect((await errors('run-2'))?.[0]?.[2]).toMatch(
      /^metrics incomplete: Azure Monitor had data up to 2026-11-23T13:01:00.000Z .*\(platform metrics arrive late\)$/,
    );
  });

  test(
    'broker samples that cannot be used (named in metricsError ' + 'too) do not stop the re-read of the host metrics',
    async () => {
      await storeRaw('run-4', { brokerSamples: '' });
      cpu([0, 5, 6, 7]);
      for (const item of items) await ingestFromS3(s3, 'raw', store, 'run-4', item, read());
      expect((await errors('run-4'))?.[0]?.[2]).toMatch(
        /^metrics incomplete: .*\(platform metrics arrive late\); broker metrics unavailable: /,
      );
      cpu([1, 2]);
      await expect(rereadLateHostMetrics(s3, 'raw', store, 'run-4', items, read())).resolves.toEqual({
        reread: 1,
        stored: 1,
        stillIncomplete: 0,
      });
      expect((await errors('run-4'))?.[0]?.[2]).toMatch(/^broker metrics unavailable: [^;]*$/);
      expect(await cpuPoints('run-4', 1)).toEqual([
        [0, 90],
        [40, 91],
        [100, 92],
      ]);
    },
  );

  test(
    'a re-read that fails keeps the stored record as it was, goes on with ' +
      'the other repetitions, and then fails naming the one it could not read',
    async () => {
      await storeRaw('run-3');
      // Both repetitions late at ingest time.
      cpu([0, 5]);
      for (const item of items) await ingestFromS3(s3, 'raw', store, 'run-3', item, read());
      const stored = await errors('run-3');
      expect(stored?.map((one) => one[2])).toEqual([
        expect.stringMatching(/arrive late/),
        expect.stringMatching(/arrive late/),
      ]);
      // Repetition 1's raw object is gone: it cannot be read again; repetition 2 still is.
      await s3.send(
        new PutObjectCommand({ Bucket: 'raw', Key: `runs/run-3/ingest/${items[0]!.rawKey}`, Body: 'not json' }),
      );
      cpu([1, 2, 6, 7]);
      await expect(rereadLateHostMetrics(s3, 'raw', store, 'run-3', items, read())).rejects.toThrow(
        /^the host metrics of 1 of 2 repetition\(s\) were not read again: three\/small #1: /,
      );
      expect(await errors('run-3')).toEqual([stored![0], [2, 'SUCCEEDED', undefined]]);
      expect(await cpuPoints('run-3', 1)).toEqual([[0, 90]]);

      // Azure Monitor refusing the read (here: a deployment output that names no VM) keeps the stored record too.
      await putRaw('run-3', 0);
      const refused = {
        ...outputs,
        loadGeneratorResourceId:
          `/subscriptions/sub-1/resourceGroups/${GROUP}/providers` + `/Microsoft.Network/loadBalancers/lb`,
      };
      await expect(rereadLateHostMetrics(s3, 'raw', store, 'run-3', items, read(refused))).rejects.toThrow(
        new RegExp(
          String.raw`three\/small #1: its host metrics could not be read again \(Azure Monitor answered 400 ` +
            String.raw`.*\); the stored record is kept`,
        ),
      );
      expect(await errors('run-3')).toEqual([stored![0], [2, 'SUCCEEDED', undefined]]);
      expect(await cpuPoints('run-3', 1)).toEqual([[0, 90]]);
    },
  );
});
