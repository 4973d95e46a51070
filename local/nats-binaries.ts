import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import {
  NATS_MIN_GO_VERSION,
  NATS_SERVER_MODULE,
  NATS_SERVER_VERSION,
  NATSCLI_PACKAGE,
  NATSCLI_VERSION,
} from '../core/nats/nats-versions';
import { isNatsLoadSourceFile, natsLoadSourceHash } from '../core/nats/nats-load-source';

const execFileAsync = promisify(execFile);

/**
 * The NATS binaries the local target runs, built with the machine's Go toolchain into the rmqbench cache, one
 * versioned folder each (as local/maven-artifacts.ts keeps the jars): nats-server and the NATS CLI with `go install
 * module@version` from the Go module proxy, and rmqbench's own load client (local/nats-load/) with `go build`, in a
 * folder named after a hash of its source, so that a changed client is rebuilt. `rmqbench doctor --fix` (run by
 * scripts/setup.sh) builds them; a launch builds what is missing. A half-finished build never counts as cached.
 */
export interface NatsBinary {
  /** What doctor and errors call it, e.g. "nats-server 2.15.2". */
  readonly label: string;
  /** The folder under <cache>/nats. */
  readonly folder: string;
  /** The executable's file name in that folder. */
  readonly binary: string;
  /** `go install` of a pinned module version, or `go build` of a source folder. */
  readonly build: { readonly install: string } | { readonly sourceDir: string };
}

export const NATS_SERVER_BINARY: NatsBinary = {
  label: `nats-server ${NATS_SERVER_VERSION}`,
  folder: `nats-server-${NATS_SERVER_VERSION}`,
  binary: 'nats-server',
  build: { install: `${NATS_SERVER_MODULE}@v${NATS_SERVER_VERSION}` },
};

export const NATSCLI_BINARY: NatsBinary = {
  label: `natscli ${NATSCLI_VERSION}`,
  folder: `natscli-${NATSCLI_VERSION}`,
  binary: 'nats',
  build: { install: `${NATSCLI_PACKAGE}@v${NATSCLI_VERSION}` },
};

/** local/nats-load of the package: beside dist/ once built, beside this file under ts-jest. */
export function natsLoadSourceDir(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'local', 'nats-load');
    if (existsSync(join(candidate, 'go.mod'))) return candidate;
    if (dirname(dir) === dir)
      throw new Error(`local/nats-load (the NATS load client's source) not found above ${from}`);
  }
}

/** The hash that names a build of the load client's source (core/nats/nats-load-source.ts). */
export function sourceHash(sourceDir: string): string {
  const names = readdirSync(sourceDir).filter(isNatsLoadSourceFile);
  return natsLoadSourceHash(Object.fromEntries(names.map((name) => [name, readFileSync(join(sourceDir, name))])));
}

/** rmqbench's NATS load client (local/nats-load/main.go), built from the package's source. */
export function natsLoadBinary(sourceDir: string = natsLoadSourceDir()): NatsBinary {
  return {
    label: 'rmqbench-nats-load',
    folder: `nats-load-${sourceHash(sourceDir)}`,
    binary: 'rmqbench-nats-load',
    build: { sourceDir },
  };
}

/** The binary's path when it is in the cache, else undefined. */
export function cachedNatsBinary(cache: string, binary: NatsBinary): string | undefined {
  const path = join(cache, 'nats', binary.folder, binary.binary);
  return existsSync(path) ? path : undefined;
}

/** `go` on PATH, else the Go distribution's usual place; RMQBENCH_GO overrides both. */
export function goCommand(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RMQBENCH_GO) return env.RMQBENCH_GO;
  const onPath = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (!onPath.error) return 'go';
  return existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go';
}

/** -1, 0 or 1 as dotted version a is older than, equal to or newer than b ("1.26.8" vs "1.26.0"). */
export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

/**
 * The Go toolchain's version ("1.26.8"), checked against what the NATS modules need; a clear error when `go` is
 * missing or too old (with GOTOOLCHAIN=local it would not fetch a newer one, and a module whose go line is newer
 * fails to build with "go.mod requires go >= ...").
 */
export function checkGo(go: string = goCommand()): string {
  const result = spawnSync(go, ['env', 'GOVERSION'], { encoding: 'utf8' });
  const howTo = `install Go ${NATS_MIN_GO_VERSION} or later (https://go.dev/doc/install), or set RMQBENCH_GO to its go`;
  if (result.error || result.status !== 0) {
    throw new Error(
      `the Go toolchain (${go}) is not installed or does not run; it builds nats-server, the NATS CLI and ` +
        `rmqbench's NATS load client (needed for broker: nats only): ${howTo}`,
    );
  }
  const version = /^go(\d+(?:\.\d+)*)/.exec(result.stdout.trim())?.[1];
  if (!version) throw new Error(`could not read the Go version from "${go} env GOVERSION": ${result.stdout.trim()}`);
  if (compareVersions(version, NATS_MIN_GO_VERSION) < 0) {
    throw new Error(
      `Go ${version} (${go}) is older than the ${NATS_MIN_GO_VERSION} that nats-server ${NATS_SERVER_VERSION}, ` +
        `natscli ${NATSCLI_VERSION} and the NATS load client need (their go.mod): ${howTo}`,
    );
  }
  return version;
}

/**
 * Builds the binary into the cache once (`go install` or `go build` into a staging folder, renamed when done);
 * later calls return the cached path.
 */
export async function ensureNatsBinary(cache: string, binary: NatsBinary): Promise<string> {
  const cached = cachedNatsBinary(cache, binary);
  if (cached) return cached;
  const go = goCommand();
  checkGo(go);
  const dir = join(cache, 'nats', binary.folder);
  const staging = `${dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // GOTOOLCHAIN=local: never fetch another toolchain (checkGo has said whether this one will do); GOFLAGS cleared of
  // whatever the caller's environment has (-mod=vendor would break both).
  const env = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false' };
  try {
    if ('install' in binary.build) {
      await execFileAsync(go, ['install', '-trimpath', binary.build.install], {
        env: { ...env, GOBIN: staging },
        maxBuffer: 16 * 1024 * 1024,
      });
    } else {
      await execFileAsync(go, ['build', '-trimpath', '-mod=readonly', '-o', join(staging, binary.binary), '.'], {
        env,
        cwd: binary.build.sourceDir,
        maxBuffer: 16 * 1024 * 1024,
      });
    }
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const stderr = (error as { stderr?: string }).stderr?.trim();
    const detail = stderr || (error instanceof Error ? error.message : String(error));
    const how =
      'install' in binary.build ? `go install ${binary.build.install}` : `go build in ${binary.build.sourceDir}`;
    throw new Error(
      `could not build ${binary.label} with ${go} (${how}): ` +
        `${detail.split('\n').slice(0, 5).join(' ')}; is the Go module proxy reachable? Run 'rmqbench doctor'.`,
    );
  }
  if (!existsSync(join(staging, binary.binary))) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`go built ${binary.label} but ${binary.binary} is not in ${staging}`);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return join(dir, binary.binary);
}

/** The three NATS binaries' paths, each built first when missing. */
export interface NatsBinaries {
  readonly server: string;
  readonly cli: string;
  readonly load: string;
}

export async function ensureNatsBinaries(cache: string): Promise<NatsBinaries> {
  return {
    server: await ensureNatsBinary(cache, NATS_SERVER_BINARY),
    cli: await ensureNatsBinary(cache, NATSCLI_BINARY),
    load: await ensureNatsBinary(cache, natsLoadBinary()),
  };
}
