/**
 * Host directories the simulated VMs bind their private directories onto (/etc/rmqbench, ...), shared by every hub:
 * several hubs (in one test process, or in two, as when a twin run and a simulated-VM test overlap) use the same
 * mount point, and only the last one to stop may remove it. Each hub holds a mount point with a marker file under
 * MOUNTPOINT_HOLDERS (on /run, a tmpfs: nothing survives a reboot); the directory is removed when its last holder
 * releases it, and only if a hub created it (a directory that existed before any hub stays). A holder whose process is
 * gone (a test killed mid-run) does not keep a mount point alive.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const MOUNTPOINT_HOLDERS = '/run/rmqbench-sim-mountpoints';
const CREATED = '.created';

const holdersDir = (path: string, root: string) => join(root, encodeURIComponent(path));

/** A holder's name: its process and hub, `<pid>-<name>`. */
export const holderName = (hub: string) => `${process.pid}-${hub}`;

const alive = (holder: string): boolean => {
  const pid = Number(/^(\d+)-/.exec(holder)?.[1]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Makes `path` exist (recording that a hub created it) and holds it for `holder`. */
export function holdMountpoint(path: string, holder: string, root = MOUNTPOINT_HOLDERS): void {
  const dir = holdersDir(path, root);
  mkdirSync(dir, { recursive: true });
  if (!existsSync(path)) {
    mkdirSync(path, { recursive: true });
    writeFileSync(join(dir, CREATED), '');
  }
  writeFileSync(join(dir, holder), '');
}

/** The holders of `path` still alive, `holder` itself left out. */
export function otherHolders(path: string, holder: string, root = MOUNTPOINT_HOLDERS): string[] {
  const dir = holdersDir(path, root);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((name) => name !== CREATED && name !== holder && alive(name));
}

/**
 * Releases `holder`'s hold on `path`; the last live holder removes the directory if a hub created it (retrying while
 * a VM's mount namespace still holds it busy). Returns whether the directory was removed.
 */
export function releaseMountpoint(path: string, holder: string, root = MOUNTPOINT_HOLDERS): boolean {
  const dir = holdersDir(path, root);
  if (!existsSync(dir)) return false;
  if (existsSync(join(dir, holder))) unlinkSync(join(dir, holder));
  if (otherHolders(path, holder, root).length > 0) return false;
  const created = existsSync(join(dir, CREATED));
  rmSync(dir, { recursive: true, force: true });
  // The holders' folder itself goes with the last mount point.
  if (readdirSync(root).length === 0) rmdirSync(root);
  if (!created) return false;
  for (let attempt = 0; attempt < 50 && existsSync(path); attempt += 1) {
    try {
      rmdirSync(path);
    } catch {
      execFileSync('sleep', ['0.2']);
    }
  }
  return !existsSync(path);
}
