import {
  LOAD_GENERATOR_NODE,
  METRIC_POINTS_PER_CHUNK,
  MetricSeries,
  MetricsValidationError,
  RepetitionMetrics,
  chunkMetricSeries,
  formatNodeSummary,
  cpuPercentFromTicks,
  loadGeneratorBoundLine,
  loadGeneratorVerdict,
  mergeMetricChunks,
  ratesFromCounters,
  ratesFromKeyedCounters,
  summarizeNodes,
  validateRepetitionMetrics,
} from '../../core/metrics/host-metrics';

const loadGeneratorCpu = (values: number[]): RepetitionMetrics => ({
  source: 'test',
  series: [
    {
      node: LOAD_GENERATOR_NODE,
      metric: 'cpuPercent',
      unit: 'percent',
      points: values.map((value, index) => [index + 1, value] as const),
    },
  ],
});

describe('rates from cumulative counters', () => {
  test('one rate per consecutive pair, at the later reading, per second of elapsed time', () => {
    const readings = [
      { tSeconds: 0, value: 1000 },
      { tSeconds: 1, value: 5000 },
      { tSeconds: 3, value: 9000 },
    ];
    expect(ratesFromCounters(readings)).toEqual([
      [1, 4000],
      [3, 2000],
    ]);
  });

  test('a counter that goes down (the process restarted) gives no rate for that interval, then continues', () => {
    const readings = [
      { tSeconds: 0, value: 500 },
      { tSeconds: 1, value: 800 },
      { tSeconds: 2, value: 10 },
      { tSeconds: 3, value: 110 },
    ];
    expect(ratesFromCounters(readings)).toEqual([
      [1, 300],
      [3, 100],
    ]);
  });

  test('two readings at the same time give no rate (no division by zero)', () => {
    expect(
      ratesFromCounters([
        { tSeconds: 2, value: 1 },
        { tSeconds: 2, value: 5 },
      ]),
    ).toEqual([]);
  });

  test('CPU ticks to percent of ALL the host CPUs: 150 ticks in 1 s at 100 ticks/s on 2 CPUs is 75 %', () => {
    const readings = [
      { tSeconds: 0, value: 1000 },
      { tSeconds: 1, value: 1150 },
      { tSeconds: 2.5, value: 1450 },
    ];
    expect(cpuPercentFromTicks(readings, 100, 2)).toEqual([
      [1, 75],
      [2.5, 100],
    ]);
  });

  test('CPU with a non-positive clock rate or CPU count is refused by name', () => {
    expect(() => cpuPercentFromTicks([], 0, 2)).toThrow(/ticksPerSecond must be positive/);
    expect(() => cpuPercentFromTicks([], 100, 0)).toThrow(/cpuCount must be at least 1/);
  });
});

describe('load-generator bound verdict', () => {
  test('bound when the median over the measured seconds is above 90 %', () => {
    expect(loadGeneratorVerdict(loadGeneratorCpu([95, 97, 60, 99, 96]))).toEqual({ medianCpuPercent: 96, bound: true });
  });

  test('one saturated second (a warm-up spike) does not make a run load-generator bound', () => {
    expect(loadGeneratorVerdict(loadGeneratorCpu([100, 40, 42, 41, 39]))).toEqual({
      medianCpuPercent: 41,
      bound: false,
    });
  });

  test('exactly 90 % is not above the threshold', () => {
    expect(loadGeneratorVerdict(loadGeneratorCpu([90, 90, 90]))?.bound).toBe(false);
  });

  test('only the measured window counts: saturated seconds outside it are ignored', () => {
    // Points at t = 1..6; the window 3..5 holds 20, 30, 25.
    expect(loadGeneratorVerdict(loadGeneratorCpu([99, 99, 20, 30, 25, 99]), { from: 3, to: 5 })).toEqual({
      medianCpuPercent: 25,
      bound: false,
    });
  });

  test("Azure Monitor's minutes count where they overlap the window, though their start lies before it", () => {
    // A 30 s repetition from 20 s into a minute: the minute placed at 0 covers its first 40 s, the next starts after.
    const azure = {
      source: 'azure-monitor+broker-samples',
      series: [
        {
          node: 'load-generator',
          metric: 'cpuPercent' as const,
          unit: 'percent' as const,
          points: [
            [0, 95],
            [40, 10],
          ] as [number, number][],
        },
      ],
    };
    expect(loadGeneratorVerdict(azure, { from: 0.5, to: 30.5 })).toEqual({ medianCpuPercent: 95, bound: true });
    // Per-second points keep their own rule: the point at 0 lies before the window.
    expect(loadGeneratorVerdict({ ...azure, source: 'cloudwatch' }, { from: 0.5, to: 30.5 })).toBeUndefined();
  });

  test('no metrics, no load-generator series or no point in the window: no verdict', () => {
    expect(loadGeneratorVerdict(undefined)).toBeUndefined();
    expect(loadGeneratorVerdict({ source: 'test', series: [] })).toBeUndefined();
    expect(loadGeneratorVerdict(loadGeneratorCpu([99]), { from: 5, to: 9 })).toBeUndefined();
  });

  test('the verdict line says how many repetitions and what it means', () => {
    expect(loadGeneratorBoundLine(2, 3)).toBe(
      'load-generator bound (load generator CPU median ' +
        "above 90 % in 2 of 3 repetitions): the broker's maximum was not measured",
    );
  });
});

describe('per-node summary', () => {
  test('max and median CPU, max RSS and whether the alarm was raised, load generator last', () => {
    const metrics: RepetitionMetrics = {
      source: 'test',
      series: [
        {
          node: LOAD_GENERATOR_NODE,
          metric: 'cpuPercent',
          unit: 'percent',
          points: [
            [1, 30],
            [2, 50],
          ],
        },
        {
          node: 'rabbit@a',
          metric: 'cpuPercent',
          unit: 'percent',
          points: [
            [1, 10],
            [2, 40],
            [3, 20],
          ],
        },
        {
          node: 'rabbit@a',
          metric: 'memoryBytes',
          unit: 'bytes',
          points: [
            [1, 100],
            [2, 300],
          ],
        },
        {
          node: 'rabbit@a',
          metric: 'memoryAlarm',
          unit: 'boolean',
          points: [
            [1, 0],
            [2, 1],
          ],
        },
        { node: 'rabbit@b', metric: 'memoryAlarm', unit: 'boolean', points: [[1, 0]] },
      ],
    };
    expect(summarizeNodes(metrics)).toEqual([
      { node: 'rabbit@a', maxCpuPercent: 40, medianCpuPercent: 20, maxMemoryBytes: 300, memoryAlarm: true },
      { node: 'rabbit@b', memoryAlarm: false },
      { node: LOAD_GENERATOR_NODE, maxCpuPercent: 50, medianCpuPercent: 40 },
    ]);
  });
});

describe('validation on ingest', () => {
  const valid = {
    source: 'local-proc',
    series: [
      {
        node: 'rabbit@a',
        metric: 'cpuPercent',
        unit: 'percent',
        points: [
          [1, 12.5],
          [2, 13],
        ],
      },
    ],
  };

  test('well-formed metrics pass unchanged', () => {
    expect(validateRepetitionMetrics(valid)).toEqual(valid);
  });

  test.each([
    ['not an object', 'nope', /^metrics: must be an object/],
    ['no source', { series: [] }, /^metrics\.source: must be a non-empty string/],
    ['series not an array', { source: 's', series: {} }, /^metrics\.series: must be an array/],
    [
      'an unknown metric',
      { source: 's', series: [{ node: 'n', metric: 'temperature', unit: 'percent', points: [] }] },
      /metrics\.series\[0\]\.metric: must be one of cpuPercent/,
    ],
    [
      'the wrong unit',
      { source: 's', series: [{ node: 'n', metric: 'memoryBytes', unit: 'percent', points: [] }] },
      /metrics\.series\[0\]\.unit: memoryBytes is measured in bytes/,
    ],
    [
      'no node',
      { source: 's', series: [{ node: '', metric: 'cpuPercent', unit: 'percent', points: [] }] },
      /metrics\.series\[0\]\.node: must be a non-empty string/,
    ],
    [
      'a point that is not a pair',
      { source: 's', series: [{ node: 'n', metric: 'cpuPercent', unit: 'percent', points: [[1]] }] },
      /series\[0\]\.points\[0\]: must be \[tSeconds, value\]/,
    ],
    [
      'a NaN value',
      { source: 's', series: [{ node: 'n', metric: 'cpuPercent', unit: 'percent', points: [[1, Number.NaN]] }] },
      /points\[0\]: must be \[tSeconds, value\], two finite numbers/,
    ],
    [
      'time going back',
      {
        source: 's',
        series: [
          {
            node: 'n',
            metric: 'cpuPercent',
            unit: 'percent',
            points: [
              [2, 1],
              [1, 1],
            ],
          },
        ],
      },
      /points\[1\]: tSeconds must not go back in time/,
    ],
    [
      'a negative value',
      { source: 's', series: [{ node: 'n', metric: 'queueDepth', unit: 'messages', points: [[1, -3]] }] },
      /queueDepth cannot be negative/,
    ],
    [
      'an alarm that is not 0 or 1',
      { source: 's', series: [{ node: 'n', metric: 'memoryAlarm', unit: 'boolean', points: [[1, 2]] }] },
      /memoryAlarm is 0 or 1/,
    ],
    [
      'the same node and metric twice',
      {
        source: 's',
        series: [
          { node: 'n', metric: 'cpuPercent', unit: 'percent', points: [] },
          { node: 'n', metric: 'cpuPercent', unit: 'percent', points: [] },
        ],
      },
      /series\[1\]: a second cpuPercent series for node n/,
    ],
  ])('%s is refused with the field named', (_what, input, message) => {
    expect(() => validateRepetitionMetrics(input)).toThrow(MetricsValidationError);
    expect(() => validateRepetitionMetrics(input)).toThrow(message);
  });
});

describe('chunking for storage', () => {
  const series = (node: string, metric: MetricSeries['metric'], count: number): MetricSeries => ({
    node,
    metric,
    unit: metric === 'cpuPercent' ? 'percent' : 'bytes',
    points: Array.from({ length: count }, (_, index) => [index, index * 1.5] as const),
  });

  test('long series are cut into chunks of at most maxPoints and merged back in order', () => {
    const input = [series('a', 'cpuPercent', 7), series('b', 'cpuPercent', 2), series('a', 'memoryBytes', 5)];
    const chunks = chunkMetricSeries(input, 4);
    expect(chunks.map((chunk) => chunk.reduce((sum, piece) => sum + piece.points.length, 0))).toEqual([4, 4, 4, 2]);
    expect(mergeMetricChunks(chunks)).toEqual(input);
  });

  test('a series without points is kept', () => {
    const input = [series('a', 'cpuPercent', 0), series('b', 'cpuPercent', 1)];
    expect(mergeMetricChunks(chunkMetricSeries(input, 4))).toEqual(input);
  });

  test('no series, no chunk', () => {
    expect(chunkMetricSeries([])).toEqual([]);
  });

  test('a full chunk of worst-case numbers stays far below the 400 KB DynamoDB item limit', () => {
    // 17 significant digits is the most a double prints; node names as long as a cloud VM name gets.
    const worst: MetricSeries[] = Array.from({ length: 6 }, (_, index) => ({
      node: `rmqbench-node-${index}-${'x'.repeat(60)}`,
      metric: 'networkBytesPerSecond',
      unit: 'bytesPerSecond',
      points: Array.from({ length: 1000 }, (_, at) => [1234.5678901234567 + at, 123456789.01234567 + at] as const),
    }));
    const [first] = chunkMetricSeries(worst);
    expect(first!.reduce((sum, piece) => sum + piece.points.length, 0)).toBe(METRIC_POINTS_PER_CHUNK);
    const item = {
      PK: `RUN#${'r'.repeat(40)}`,
      SK: `METRICS#${'s'.repeat(200)}#001#000`,
      type: 'metrics',
      series: first,
    };
    expect(dynamoItemBytes(item)).toBeLessThan(200 * 1024);
  });
});

/** DynamoDB's item size rules (CapacityUnitCalculations.html) applied to an item as the document client writes it. */
function dynamoItemBytes(item: Record<string, unknown>): number {
  const valueBytes = (value: unknown): number => {
    if (typeof value === 'string') return Buffer.byteLength(value);
    // 1 byte per two significant digits (leading and trailing zeroes trimmed) + 1 byte.
    if (typeof value === 'number')
      return (
        Math.ceil(
          String(value)
            .replace(/[-.]|e.*$/g, '')
            .replace(/^0+|0+$/g, '').length / 2,
        ) + 1
      );
    if (typeof value === 'boolean' || value === null) return 1;
    if (Array.isArray(value)) return 3 + value.reduce((sum: number, element) => sum + 1 + valueBytes(element), 0);
    if (typeof value === 'object')
      return (
        3 +
        Object.entries(value).reduce(
          (sum, [name, element]) => sum + 1 + Buffer.byteLength(name) + valueBytes(element),
          0,
        )
      );
    throw new Error(`unexpected attribute value ${String(value)}`);
  };
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + valueBytes(value), 0);
}

describe('rates from counters that come and go', () => {
  test(
    'sums the increase of keys present at both ends; ' + 'a closed or new connection is neither a drop nor a burst',
    () => {
      const readings = [
        {
          tSeconds: 0,
          counters: new Map([
            ['conn-a', 100],
            ['link-b', 50],
          ]),
        },
        // conn-a closed, conn-c opened with 10,000 bytes it carried before this interval was measured.
        {
          tSeconds: 1,
          counters: new Map([
            ['link-b', 80],
            ['conn-c', 10_000],
          ]),
        },
        {
          tSeconds: 3,
          counters: new Map([
            ['link-b', 100],
            ['conn-c', 10_400],
          ]),
        },
      ];
      expect(ratesFromKeyedCounters(readings)).toEqual([
        [1, 30],
        [3, 210],
      ]);
    },
  );

  test('a counter that was reset adds nothing', () => {
    const readings = [
      { tSeconds: 0, counters: new Map([['link', 5000]]) },
      { tSeconds: 1, counters: new Map([['link', 20]]) },
    ];
    expect(ratesFromKeyedCounters(readings)).toEqual([[1, 0]]);
  });
});

describe('the per-node line of rmqbench show', () => {
  test('CPU max and median, RSS max in MB, alarm yes/no', () => {
    expect(
      formatNodeSummary({
        node: 'rmqbench1@localhost',
        maxCpuPercent: 23.46,
        medianCpuPercent: 19,
        maxMemoryBytes: 189_600_000,
        memoryAlarm: false,
      }),
    ).toBe('rmqbench1@localhost: CPU max 23.5 %, median 19.0 %; RSS max 190 MB; memory alarm no');
    expect(formatNodeSummary({ node: 'rmqbench2@localhost', memoryAlarm: true })).toBe(
      'rmqbench2@localhost: memory alarm yes',
    );
    expect(
      formatNodeSummary({
        node: 'load-generator',
        maxCpuPercent: 97,
        medianCpuPercent: 95,
        maxMemoryBytes: 400_000_000,
      }),
    ).toBe('load-generator: CPU max 97.0 %, median 95.0 %; RSS max 400 MB');
  });
});
