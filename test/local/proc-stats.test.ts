import { parseCpuTicks, parseRssBytes, parseState, parseWriteBytes, readProcess } from '../../local/proc-stats';

// /proc/<pid>/stat of this machine's beam.smp (RabbitMQ 3.10.8 node), utime 1712 and stime 311 ticks.
const beamStat =
  '28984 (beam.smp) S 28950 28984 28984 0 -1 4194560 61543 1205 2 0 1712 311 0 0 20 0 30 0 ' +
  '1229002 2835283968 39125 18446744073709551615 1 1 0 0 0 0 0 4096 536892935 0 0 0 17 1 0 0 0 0 0';

describe('/proc parsing', () => {
  test('utime + stime are fields 14 and 15 of stat', () => {
    expect(parseCpuTicks(beamStat)).toBe(1712 + 311);
  });

  test('a command name with spaces and parentheses does not shift the fields (counted from the last ")")', () => {
    const tricky = beamStat.replace('(beam.smp)', '(my (odd) name)');
    expect(parseCpuTicks(tricky)).toBe(2023);
    expect(parseState(tricky)).toBe('S');
  });

  test('a cut-off stat line is refused, not read as zero', () => {
    expect(() => parseCpuTicks('28984 (beam.smp) S 28950')).toThrow(/has no utime\/stime/);
  });

  test('VmRSS in kB (KiB) to bytes', () => {
    expect(parseRssBytes('Name:\tbeam.smp\nVmPeak:\t 2768832 kB\nVmRSS:\t  156500 kB\nRssAnon:\t  120000 kB\n')).toBe(
      156500 * 1024,
    );
    expect(() => parseRssBytes('Name:\tbeam.smp\nState:\tZ (zombie)\n')).toThrow(/no VmRSS/);
  });

  test('write_bytes of io', () => {
    expect(
      parseWriteBytes(
        'rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 16883712\n' +
          'write_bytes: 1482752\ncancelled_write_bytes: 0\n',
      ),
    ).toBe(1482752);
    expect(() => parseWriteBytes('rchar: 1\n')).toThrow(/no write_bytes/);
  });

  test('this test process itself reads as a live process with CPU used and memory resident', () => {
    const reading = readProcess(process.pid);
    expect(reading!.cpuTicks).toBeGreaterThan(0);
    expect(reading!.rssBytes).toBeGreaterThan(1024 * 1024);
    expect(reading!.writeBytes).toBeGreaterThanOrEqual(0);
  });

  test('a pid that does not exist reads as gone', () => {
    // Above the kernel's pid_max (at most 2^22), so never a live process.
    expect(readProcess(2 ** 22 + 1)).toBeUndefined();
  });
});
