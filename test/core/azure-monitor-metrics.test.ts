import {
  azureMetricsLateness,
  azureMetricsQuery,
  hostMetricsFromAzureMonitor,
  type AzureMetricsResponse,
} from '../../core/metrics/azure-monitor-metrics';

// Response bodies in the shape of metrics_API.json 2023-10-01 (value[].name.value, timeseries[].metadatavalues,
// data[]).
const startedAt = new Date('2026-11-23T13:00:20.000Z');
const minute = (n: number) => new Date(Date.parse('2026-11-23T13:00:00.000Z') + n * 60_000).toISOString();
const singleVm = (cpu: readonly number[]): AzureMetricsResponse => ({
  value: [
    {
      name: { value: 'Percentage CPU' },
      timeseries: [{ metadatavalues: [], data: cpu.map((average, index) => ({ timeStamp: minute(index), average })) }],
    },
  ],
});

describe('Azure Monitor responses become per-node series', () => {
  test(
    'single-VM responses (Kafka brokers) are keyed by the node ' +
      'each was read for, brokers by name and the load generator last',
    () => {
      const metrics = hostMetricsFromAzureMonitor(
        [
          { body: singleVm([20, 30]), node: 'rmqbench-kafka-2' },
          { body: singleVm([90, 95]), node: 'load-generator' },
          { body: singleVm([10, 15]), node: 'rmqbench-kafka-1' },
        ],
        startedAt,
      );
      expect(metrics.series.map((one) => [one.node, one.metric, one.points])).toEqual([
        [
          'rmqbench-kafka-1',
          'cpuPercent',
          [
            [0, 10],
            [40, 15],
          ],
        ],
        [
          'rmqbench-kafka-2',
          'cpuPercent',
          [
            [0, 20],
            [40, 30],
          ],
        ],
        [
          'load-generator',
          'cpuPercent',
          [
            [0, 90],
            [40, 95],
          ],
        ],
      ]);
    },
  );

  test(
    'a response without a node of its own and without the ' +
      'VMName dimension gives no series (it cannot be told apart)',
    () => {
      expect(hostMetricsFromAzureMonitor([{ body: singleVm([10]) }], startedAt).series).toEqual([]);
    },
  );

  test(
    'memoryBytes is the response\'s memoryTotalBytes minus "Available Memory ' +
      'Bytes" per VM; a response without memoryTotalBytes has no memory series',
    () => {
      const GIB = 2 ** 30;
      const available = (vmName: string | undefined, values: readonly number[]) => ({
        metadatavalues: vmName === undefined ? [] : [{ name: { value: 'vmname' }, value: vmName }],
        data: values.map((average, index) => ({ timeStamp: minute(index), average })),
      });
      const scaleSet: AzureMetricsResponse = {
        value: [
          {
            name: { value: 'Available Memory Bytes' },
            timeseries: [available('vm_1', [6 * GIB, 5 * GIB]), available('vm_2', [7 * GIB])],
          },
        ],
      };
      const loadGenerator: AzureMetricsResponse = {
        value: [{ name: { value: 'Available Memory Bytes' }, timeseries: [available(undefined, [30 * GIB])] }],
      };
      const metrics = hostMetricsFromAzureMonitor(
        [
          { body: scaleSet, memoryTotalBytes: 8 * GIB },
          { body: loadGenerator, node: 'load-generator' },
        ],
        startedAt,
      );
      expect(metrics.series).toEqual([
        {
          node: 'vm_1',
          metric: 'memoryBytes',
          unit: 'bytes',
          points: [
            [0, 2 * GIB],
            [40, 3 * GIB],
          ],
        },
        { node: 'vm_2', metric: 'memoryBytes', unit: 'bytes', points: [[0, 1 * GIB]] },
      ]);
    },
  );

  test(
    "a metric whose minutes carry no value (Azure's answer for " +
      'minutes without data) gives no series rather than an empty one',
    () => {
      const body: AzureMetricsResponse = {
        value: [
          {
            name: { value: 'Percentage CPU' },
            timeseries: [{ metadatavalues: [], data: [{ timeStamp: minute(0) }, { timeStamp: minute(1) }] }],
          },
        ],
      };
      expect(hostMetricsFromAzureMonitor([{ body, node: 'rmqbench-kafka-1' }], startedAt).series).toEqual([]);
    },
  );

  test('the query asks for the VMName split only for a scale set', () => {
    const window = { startedAt, finishedAt: new Date('2026-11-23T13:02:40.000Z') };
    const single = new URLSearchParams(azureMetricsQuery(window, false));
    const scaleSet = new URLSearchParams(azureMetricsQuery(window, true));
    expect(single.get('$filter')).toBeNull();
    expect(scaleSet.get('$filter')).toBe("VMName eq '*'");
    expect(single.get('timespan')).toBe('2026-11-23T13:00:00.000Z/2026-11-23T13:03:00.000Z');
    // Memory is requested with the rest: the average aggregation is the one "Available Memory Bytes" has.
    expect(single.get('metricnames')?.split(',')).toContain('Available Memory Bytes');
    expect(single.get('aggregation')).toBe('average,total');
  });
});

describe("a read before Azure Monitor had the repetition's last whole minute is said to be incomplete", () => {
  // The repetition ran 13:00:20 .. 13:02:40: its last whole minute is 13:01 (13:01:00 .. 13:02:00).
  const window = { startedAt, finishedAt: new Date('2026-11-23T13:02:40.000Z') };

  test(
    'every series reaching the last whole minute is complete (the ' + 'partial minute 13:02 may still be missing)',
    () => {
      expect(azureMetricsLateness([{ body: singleVm([10, 20]), node: 'load-generator' }], window)).toBeUndefined();
      expect(azureMetricsLateness([{ body: singleVm([10, 20, 30]), node: 'load-generator' }], window)).toBeUndefined();
    },
  );

  test(
    'one series ending a minute early makes the read incomplete, ' +
      'naming where its data ends and when the repetition ended',
    () => {
      const message = azureMetricsLateness(
        [
          { body: singleVm([10, 20]), node: 'rmqbench-kafka-1' },
          { body: singleVm([90]), node: 'load-generator' },
        ],
        window,
      );
      expect(message).toBe(
        'Azure Monitor had data up to 2026-11-23T13:01:00.000Z of a repetition ' +
          'that ended at 2026-11-23T13:02:40.000Z (platform metrics arrive late)',
      );
    },
  );

  test('minutes without a value do not count as data; a metric with no value at all is not judged', () => {
    const trailingEmpty: AzureMetricsResponse = {
      value: [
        {
          name: { value: 'Percentage CPU' },
          timeseries: [
            {
              metadatavalues: [],
              data: [{ timeStamp: minute(0), average: 5 }, { timeStamp: minute(1) }, { timeStamp: minute(2) }],
            },
          ],
        },
      ],
    };
    expect(azureMetricsLateness([{ body: trailingEmpty, node: 'load-generator' }], window)).toMatch(
      /had data up to 2026-11-23T13:01:00.000Z/,
    );
    const memoryNeverReported: AzureMetricsResponse = {
      value: [
        {
          name: { value: 'Percentage CPU' },
          timeseries: [{ metadatavalues: [], data: [{ timeStamp: minute(1), average: 5 }] }],
        },
        {
          name: { value: 'Available Memory Bytes' },
          timeseries: [{ metadatavalues: [], data: [{ timeStamp: minute(0) }, { timeStamp: minute(1) }] }],
        },
      ],
    };
    expect(azureMetricsLateness([{ body: memoryNeverReported, node: 'load-generator' }], window)).toBeUndefined();
  });

  test('a repetition shorter than a whole minute needs its first minute', () => {
    const short = { startedAt: new Date('2026-11-23T13:00:20.000Z'), finishedAt: new Date('2026-11-23T13:00:50.000Z') };
    expect(azureMetricsLateness([{ body: singleVm([10]), node: 'load-generator' }], short)).toBeUndefined();
    const empty: AzureMetricsResponse = {
      value: [
        {
          name: { value: 'Percentage CPU' },
          timeseries: [{ metadatavalues: [], data: [{ timeStamp: minute(-1), average: 3 }] }],
        },
      ],
    };
    expect(azureMetricsLateness([{ body: empty, node: 'load-generator' }], short)).toMatch(
      /ended at 2026-11-23T13:00:50.000Z/,
    );
  });
});
