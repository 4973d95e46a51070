import { PlatformMetricsRecorder, type MetricEntry } from './platform-metrics';

// The recorder measured on this test's own process (its network namespace stands for a VM's).
describe("the Azure twin's platform metrics of a VM, from its processes", () => {
  const minute = Date.parse('2026-11-27T10:15:00.000Z');

  test('CPU time between samples over the cores, in the minute it fell in; memory: size less resident', () => {
    const recorded = new Map<string, MetricEntry[]>();
    const recorder = new PlatformMetricsRecorder(
      () => [
        { resourceId: '/x/virtualMachineScaleSets/rmqbench-vmss', vmName: 'rmqbench-vmss_0a1b2c3d', pid: process.pid },
        { resourceId: '/x/virtualMachines/rmqbench-loadgen', pid: process.pid, memoryBytes: 64 * 2 ** 30 },
      ],
      (resourceId, entries) => recorded.set(resourceId, entries),
    );
    recorder.sample(minute + 10_000);
    // The first sample only sets the baseline.
    expect([...recorded.values()].flat()).toEqual([]);
    const busyUntil = Date.now() + 300;
    while (Date.now() < busyUntil); // about 0.3 s of this process's CPU
    recorder.sample(minute + 11_000);
    const scaleSet = recorded.get('/x/virtualMachineScaleSets/rmqbench-vmss')!;
    expect(new Set(scaleSet.map((entry) => [entry.metric, entry.vmName, entry.timeStamp].join('|')))).toEqual(
      new Set(
        ['Percentage CPU', 'Disk Write Bytes', 'Network In Total', 'Network Out Total'].map(
          (metric) => `${metric}|rmqbench-vmss_0a1b2c3d|2026-11-27T10:15:00.000Z`,
        ),
      ),
    );
    const cpu = scaleSet.find((entry) => entry.metric === 'Percentage CPU')!.value;
    // 0.3 s or more of CPU over the 1 s between the samples, on this machine's cores.
    expect(cpu).toBeGreaterThan(0);
    expect(cpu).toBeLessThanOrEqual(100);
    // The standalone VM has no vmName, and its memory is the size's less what its processes hold.
    const loadGenerator = recorded.get('/x/virtualMachines/rmqbench-loadgen')!;
    expect(loadGenerator.every((entry) => entry.vmName === undefined)).toBe(true);
    const available = loadGenerator.find((entry) => entry.metric === 'Available Memory Bytes')!.value;
    expect(available).toBeLessThan(64 * 2 ** 30);
    expect(available).toBeGreaterThan(0);
  });

  test('a VM whose holder has gone is skipped; the next minute is a point of its own', () => {
    const recorded = new Map<string, MetricEntry[]>();
    let vms = [{ resourceId: '/x/vm', pid: process.pid }];
    const recorder = new PlatformMetricsRecorder(
      () => vms,
      (resourceId, entries) => recorded.set(resourceId, entries),
    );
    recorder.sample(minute + 50_000);
    recorder.sample(minute + 55_000);
    recorder.sample(minute + 65_000);
    const stamps = (recorded.get('/x/vm') ?? []).filter((entry) => entry.metric === 'Percentage CPU');
    expect(stamps.map((entry) => entry.timeStamp)).toEqual(['2026-11-27T10:15:00.000Z', '2026-11-27T10:16:00.000Z']);
    vms = [{ resourceId: '/x/gone', pid: 2 ** 22 + 7 }];
    recorder.sample(minute + 70_000);
    expect(recorded.get('/x/gone')).toEqual([]);
  });
});
