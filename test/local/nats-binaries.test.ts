import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NATS_GO_CLIENT_VERSION, NATS_MIN_GO_VERSION } from '../../core/nats/nats-versions';
import {
  cachedNatsBinary,
  checkGo,
  compareVersions,
  ensureNatsBinary,
  natsLoadBinary,
  natsLoadSourceDir,
  NATS_SERVER_BINARY,
  NATSCLI_BINARY,
  sourceHash,
} from '../../local/nats-binaries';
import { tempDir } from './helpers';

describe('the NATS binaries in the rmqbench cache', () => {
  const work = tempDir('nats-binaries');
  afterAll(() => work.cleanup());

  /** A stand-in `go` that prints the given GOVERSION. */
  const fakeGo = (name: string, script: string) => {
    const path = join(work.path, name);
    writeFileSync(path, `#!/bin/sh\n${script}\n`);
    chmodSync(path, 0o755);
    return path;
  };

  test('pinned exact versions, each in a versioned folder; the load client in a folder named by its source', () => {
    expect(NATS_SERVER_BINARY).toMatchObject({
      folder: 'nats-server-2.15.0',
      build: { install: 'github.com/nats-io/nats-server/v2@v2.15.0' },
    });
    expect(NATSCLI_BINARY).toMatchObject({
      folder: 'natscli-0.5.0',
      binary: 'nats',
      build: { install: 'github.com/nats-io/natscli/nats@v0.5.0' },
    });
    const source = natsLoadSourceDir();
    expect(natsLoadBinary(source).folder).toBe(`nats-load-${sourceHash(source)}`);
    expect(sourceHash(source)).toMatch(/^[0-9a-f]{12}$/);
    // go.mod pins the Go client the versions module names, and the go line the toolchain check asks for.
    const goMod = readFileSync(join(source, 'go.mod'), 'utf8');
    expect(goMod).toContain(`github.com/nats-io/nats.go v${NATS_GO_CLIENT_VERSION}\n`);
    expect(goMod).toMatch(new RegExp(`^go ${NATS_MIN_GO_VERSION.replace(/\./g, '\\.')}$`, 'm'));
    // A changed source is a new folder, so that it is rebuilt.
    const copy = join(work.path, 'copy');
    mkdirSync(copy);
    for (const file of ['go.mod', 'go.sum', 'main.go', 'verify.go'])
      writeFileSync(join(copy, file), readFileSync(join(source, file)));
    expect(sourceHash(copy)).toBe(sourceHash(source));
    writeFileSync(join(copy, 'main.go'), `${readFileSync(join(source, 'main.go'), 'utf8')}\n// changed\n`);
    expect(sourceHash(copy)).not.toBe(sourceHash(source));
  });

  test('versions compare by number', () => {
    expect(compareVersions('1.26.8', '1.26.0')).toBe(1);
    expect(compareVersions('1.26', '1.26.0')).toBe(0);
    expect(compareVersions('1.9.0', '1.26.0')).toBe(-1);
  });

  test('a missing or too old go is a clear error naming what to install, and nothing is cached', async () => {
    expect(checkGo(fakeGo('go-new', 'echo go1.26.8'))).toBe('1.26.8');
    expect(() => checkGo(fakeGo('go-old', 'echo go1.22.3'))).toThrow(
      new RegExp(
        '^Go 1\\.22\\.3 \\(.*go-old\\) is older than the 1\\.26\\.0 that nats-server 2\\.15\\.0, natscli 0\\.5\\.0 ' +
          'and the NATS load client need \\(their go\\.mod\\): install Go 1\\.26\\.0 or later',
      ),
    );
    expect(() => checkGo(join(work.path, 'no-such-go'))).toThrow(
      /^the Go toolchain \(.*no-such-go\) is not installed or does not run; .*install Go 1\.26\.0 or later/,
    );
    const cache = join(work.path, 'cache');
    const previous = process.env.RMQBENCH_GO;
    process.env.RMQBENCH_GO = fakeGo('go-old-2', 'echo go1.21.0');
    try {
      await expect(ensureNatsBinary(cache, NATS_SERVER_BINARY)).rejects.toThrow(/Go 1\.21\.0 .* is older than/);
    } finally {
      if (previous === undefined) delete process.env.RMQBENCH_GO;
      else process.env.RMQBENCH_GO = previous;
    }
    expect(cachedNatsBinary(cache, NATS_SERVER_BINARY)).toBeUndefined();
  });

  test('a build that fails leaves no half-built folder and says what failed', async () => {
    const cache = join(work.path, 'cache-fail');
    const previous = process.env.RMQBENCH_GO;
    process.env.RMQBENCH_GO = fakeGo(
      'go-failing',
      'if [ "$1" = env ]; then echo go1.26.8; exit 0; fi\necho "go: module lookup disabled by GOPROXY=off" >&2\nexit 1',
    );
    try {
      await expect(ensureNatsBinary(cache, NATSCLI_BINARY)).rejects.toThrow(
        new RegExp(
          'could not build natscli 0\\.5\\.0 .*go install github\\.com/nats-io/natscli/nats@v0\\.5\\.0' +
            '.*module lookup disabled',
        ),
      );
    } finally {
      if (previous === undefined) delete process.env.RMQBENCH_GO;
      else process.env.RMQBENCH_GO = previous;
    }
    expect(cachedNatsBinary(cache, NATSCLI_BINARY)).toBeUndefined();
  });
});
