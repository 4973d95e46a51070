import { HostMetricsSampler } from '../../local/host-metrics-sampler';
import type { BrokerReading } from '../../local/management-metrics';
import type { ProcessReading } from '../../local/proc-stats';

// The sampler's clock is faked so that every tick lands on a whole second; /proc and the management API are
// replaced by scripted readings (the real ones are read by test/local/metrics.integration.test.ts).
describe('host metrics sampler', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  test(
    'per node CPU (share of all CPUs), RSS and disk writes ' + 'from /proc; a restarted process starts new counters',
    async () => {
      // Node A: pid 10 for 3 s (50 ticks/s), then killed (gone for one tick) and restarted as pid 11 (counters from 0).
      let second = 0;
      const pidsOfA = () => (second < 3 ? [10] : second === 3 ? [10] : [11]);
      const read = (pid: number): ProcessReading | undefined => {
        if (pid === 10)
          return second === 3
            ? undefined
            : { cpuTicks: 1000 + 50 * second, rssBytes: 100 + second, writeBytes: 4096 * second };
        if (pid === 11) return { cpuTicks: 20 * (second - 4), rssBytes: 50, writeBytes: 0 };
        // The load generator: two JVMs, each 100 ticks/s.
        return { cpuTicks: 100 * second, rssBytes: 1000, writeBytes: 0 };
      };
      const sampler = HostMetricsSampler.start({
        nodes: [
          { node: 'a', pids: pidsOfA },
          { node: 'load-generator', pids: () => [20, 21] },
        ],
        startedAtMs: Date.now(),
        readProcess: read,
        ticksPerSecond: 100,
        cpuCount: 2,
      });
      for (second = 1; second <= 6; second++) await jest.advanceTimersByTimeAsync(1000);
      const { metrics, error } = await sampler.stop();
      expect(error).toBeUndefined();
      const series = (node: string, metric: string) =>
        metrics.series.find((s) => s.node === node && s.metric === metric)?.points;
      // 50 ticks/s at 100 ticks/s on 2 CPUs = 25 %; pid 11: 20 ticks/s = 10 %; no rate across the restart.
      expect(series('a', 'cpuPercent')).toEqual([
        [1, 25],
        [2, 25],
        [5, 10],
        [6, 10],
      ]);
      expect(series('a', 'memoryBytes')).toEqual([
        [0, 100],
        [1, 101],
        [2, 102],
        [4, 50],
        [5, 50],
        [6, 50],
      ]);
      expect(series('a', 'diskWriteBytesPerSecond')).toEqual([
        [1, 4096],
        [2, 4096],
        [5, 0],
        [6, 0],
      ]);
      // Two JVMs at 100 ticks/s each on 2 CPUs: 100 % of the host.
      expect(series('load-generator', 'cpuPercent')).toEqual([1, 2, 3, 4, 5, 6].map((t) => [t, 100]));
      expect(metrics.source).toBe('local-proc');
    },
  );

  test('a node without a process yet has no points; ticks stop at stop()', async () => {
    let pids: number[] = [];
    const sampler = HostMetricsSampler.start({
      nodes: [{ node: 'load-generator', pids: () => pids }],
      startedAtMs: Date.now(),
      readProcess: () => ({ cpuTicks: 0, rssBytes: 1, writeBytes: 0 }),
      ticksPerSecond: 100,
      cpuCount: 2,
    });
    await jest.advanceTimersByTimeAsync(2000);
    pids = [5];
    await jest.advanceTimersByTimeAsync(2000);
    const { metrics } = await sampler.stop();
    await jest.advanceTimersByTimeAsync(5000);
    expect(metrics.series.find((s) => s.metric === 'memoryBytes')!.points).toEqual([
      [3, 1],
      [4, 1],
    ]);
  });

  test(
    'broker polls become memory alarm, queue depth and ' + 'network rate series; a failed poll is reported, not thrown',
    async () => {
      let polls = 0;
      const pollBroker = async (tSeconds: number): Promise<BrokerReading> => {
        polls++;
        if (polls === 3) throw new Error('GET /api/nodes on rmqbench1@localhost answered 503');
        return {
          tSeconds,
          memoryAlarm: new Map([['n1', tSeconds >= 4 ? 1 : 0]]),
          queueDepth: new Map([['n1', 10 * tSeconds]]),
          networkCounters: new Map([['n1', new Map([['link n2', 1000 * tSeconds]])]]),
        };
      };
      const sampler = HostMetricsSampler.start({
        nodes: [],
        pollBroker,
        startedAtMs: Date.now(),
        ticksPerSecond: 100,
        cpuCount: 2,
      });
      for (let second = 1; second <= 4; second++) await jest.advanceTimersByTimeAsync(1000);
      const { metrics, error } = await sampler.stop();
      const points = (metric: string) => metrics.series.find((s) => s.node === 'n1' && s.metric === metric)!.points;
      expect(points('memoryAlarm')).toEqual([
        [0, 0],
        [1, 0],
        [3, 0],
        [4, 1],
      ]);
      expect(points('queueDepth')).toEqual([
        [0, 0],
        [1, 10],
        [3, 30],
        [4, 40],
      ]);
      expect(points('networkBytesPerSecond')).toEqual([
        [1, 1000],
        [3, 1000],
        [4, 1000],
      ]);
      expect(error).toBe(
        'management API failed in 1 of 5 second(s) (first: GET /api/nodes on rmqbench1@localhost answered 503)',
      );
    },
  );

  test('a poll still in flight is not doubled: one at a time, and stop() waits for it', async () => {
    let inFlight = 0;
    let most = 0;
    const pollBroker = async (tSeconds: number): Promise<BrokerReading> => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      inFlight--;
      return { tSeconds, memoryAlarm: new Map([['n1', 0]]), queueDepth: new Map(), networkCounters: new Map() };
    };
    const sampler = HostMetricsSampler.start({
      nodes: [],
      pollBroker,
      startedAtMs: Date.now(),
      ticksPerSecond: 100,
      cpuCount: 2,
    });
    await jest.advanceTimersByTimeAsync(4000);
    const stopping = sampler.stop();
    await jest.advanceTimersByTimeAsync(3000);
    const { metrics } = await stopping;
    expect(most).toBe(1);
    // Polls started at 0 s and at 3 s (the first tick after the first answer).
    expect(metrics.series.find((s) => s.metric === 'memoryAlarm')!.points).toEqual([
      [0, 0],
      [3, 0],
    ]);
  });
});
