import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { holderName, holdMountpoint, otherHolders, releaseMountpoint } from './mountpoints';

/** The shared mount points of simulated VMs: the last hub to stop removes one, and only one a hub created. */
describe('mount points shared between hubs', () => {
  let scratch: string;
  let holders: string;
  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), 'rmqbench-mountpoints-'));
    holders = join(scratch, 'holders');
  });
  afterEach(() => rmSync(scratch, { recursive: true, force: true }));

  test('two hubs of one process: the first to stop leaves the directory to the second, which removes it', () => {
    const path = join(scratch, 'etc', 'rmqbench');
    const [a, b] = [holderName('rmqsim-a'), holderName('rmqsim-b')];
    holdMountpoint(path, a, holders);
    holdMountpoint(path, b, holders);
    expect(existsSync(path)).toBe(true);
    expect(otherHolders(path, a, holders)).toEqual([b]);
    expect(releaseMountpoint(path, a, holders)).toBe(false);
    expect(existsSync(path)).toBe(true);
    expect(releaseMountpoint(path, b, holders)).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  test('a directory that existed before any hub stays', () => {
    const path = join(scratch, 'existing');
    mkdirSync(path);
    holdMountpoint(path, holderName('rmqsim-a'), holders);
    expect(releaseMountpoint(path, holderName('rmqsim-a'), holders)).toBe(false);
    expect(existsSync(path)).toBe(true);
  });

  test('a holder whose process is gone (a killed test run) does not keep the directory', () => {
    const path = join(scratch, 'opt', 'kafka');
    const gone = spawnSync('true').pid!;
    holdMountpoint(path, `${gone}-rmqsim-killed`, holders);
    holdMountpoint(path, holderName('rmqsim-a'), holders);
    expect(otherHolders(path, holderName('rmqsim-a'), holders)).toEqual([]);
    expect(releaseMountpoint(path, holderName('rmqsim-a'), holders)).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  test('a live holder of another process keeps it', () => {
    const path = join(scratch, 'var', 'lib', 'x');
    const other = `${process.ppid}-rmqsim-other`;
    holdMountpoint(path, other, holders);
    holdMountpoint(path, holderName('rmqsim-a'), holders);
    expect(releaseMountpoint(path, holderName('rmqsim-a'), holders)).toBe(false);
    expect(existsSync(path)).toBe(true);
  });
});
