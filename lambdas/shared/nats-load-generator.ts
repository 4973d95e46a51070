import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GO_HOME, NATS_LOAD_HOME, NATS_TOOLS_READY_FILE } from '../../core/perftest/load-generator-paths';
import { isNatsLoadSourceFile, natsLoadSourceHash } from '../../core/nats/nats-load-source';
import { quote } from './kafka-load-generator';

/**
 * What the controller's scripts for a NATS cluster's load generator share: the load client's source and the lines
 * that build it there, the server URLs check and the smoke test (SmokeTest runs it; the repetition script is in
 * lambdas/start-repetition/nats-script.ts).
 *
 * The load client is rmqbench's own (local/nats-load/, the local target's too, core/nats/nats-load-args.ts says why not
 * `nats bench`). The scripts carry its source (about 14 KB gzipped and base64-encoded, within SendCommand's 64 KB
 * document limit, lambdas/shared/aws-cluster.ts) and build it on the load generator with the Go toolchain its boot
 * installed (cdk/user-data/load-generator.ts natsToolsBootCommands), once per source hash: modules come from the Go
 * module proxy and are checked against the go.sum the source carries (-mod=readonly), so the build needs no
 * checksum database and no other toolchain (GOTOOLCHAIN=local).
 */

/** Seconds a script waits for the load generator's boot to have installed Go (after PerfTest's jars). */
export const NATS_TOOLS_READY_WAIT_SECONDS = 180;
/** Seconds the first build may take (module downloads and a cold build cache; later builds find the binary). */
export const NATS_BUILD_SECONDS = 300;

/**
 * The load client's folder: `nats-load/` beside the bundle (scripts/bundle-lambdas.mjs copies it there; code split
 * into chunks/ finds it one level up), else the package's local/nats-load.
 */
export function natsLoadSourceFolder(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    for (const candidate of [join(dir, 'nats-load'), join(dir, 'local', 'nats-load')])
      if (existsSync(join(candidate, 'go.mod'))) return candidate;
    if (dirname(dir) === dir) throw new Error(`the NATS load client's source (local/nats-load) not found from ${from}`);
  }
}

/** The source files the build needs (core/nats/nats-load-source.ts), by name, sorted. */
export function natsLoadSourceFiles(folder: string = natsLoadSourceFolder()): Record<string, Buffer> {
  const names = readdirSync(folder).filter(isNatsLoadSourceFile).sort();
  return Object.fromEntries(names.map((name) => [name, readFileSync(join(folder, name))]));
}

/** The built client's path on the load generator for these sources. */
export const natsLoadCommand = (files: Record<string, Buffer>) =>
  `${NATS_LOAD_HOME}/build-${natsLoadSourceHash(files)}/rmqbench-nats-load`;

/**
 * Lines that wait for Go, then write the source and build the client unless this source's binary is there already:
 * the build goes to a temporary name and is renamed once complete, so a cut-short build never counts; a failed build
 * ends the script naming Go's last lines. Sets NATS_LOAD to the binary's path.
 */
export function natsBuildLines(files: Record<string, Buffer> = natsLoadSourceFiles()): string[] {
  const binary = natsLoadCommand(files);
  const folder = dirname(binary);
  // GOTOOLCHAIN=local: this toolchain or a failure, never a download of another (go.dev/doc/toolchain, "GOTOOLCHAIN
  // setting"); -mod=readonly: the build fails rather than change go.mod (go.dev/ref/mod#build-commands), and each
  // module downloaded from the proxy is checked against the go.sum the source carries; the checksum database is asked
  // only about modules go.sum does not list (go.dev/ref/mod#authenticating), and it lists them all.
  const env =
    `GOROOT=${GO_HOME} GOPATH=${NATS_LOAD_HOME}/gopath GOCACHE=${NATS_LOAD_HOME}/gocache ` +
    'GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0';
  return [
    `for attempt in $(seq 1 ${NATS_TOOLS_READY_WAIT_SECONDS / 5}); do ` +
      `[ -e ${NATS_TOOLS_READY_FILE} ] && break; sleep 5; done`,
    `[ -e ${NATS_TOOLS_READY_FILE} ] || { echo "rmqbench: the load generator has not installed Go ` +
      `(${NATS_TOOLS_READY_FILE} missing after ${NATS_TOOLS_READY_WAIT_SECONDS} s): ` +
      `see its boot log, /var/log/cloud-init-output.log" >&2; exit 1; }`,
    `NATS_LOAD=${binary}`,
    `if [ ! -x "$NATS_LOAD" ]; then`,
    `  rm -rf ${folder}.src && install -d ${folder}.src`,
    ...Object.entries(files).map(
      ([name, content]) =>
        `  echo ${gzipSync(content, { level: 9 }).toString('base64')} | base64 -d | gunzip > ${folder}.src/${name}`,
    ),
    `  ( cd ${folder}.src && ${env} timeout ${NATS_BUILD_SECONDS} ${GO_HOME}/bin/go build -trimpath ` +
      `-o ${folder}.src/rmqbench-nats-load . ) > ${folder}.build.log 2>&1 || ` +
      `{ echo "rmqbench: could not build the NATS load client:" >&2; tail -n 15 ${folder}.build.log >&2; exit 1; }`,
    `  rm -rf ${folder} && mv ${folder}.src ${folder}`,
    'fi',
  ];
}

/**
 * The server URLs the cluster stack outputs (`nats://nats-1.<zone>:4222,...`), checked: they are written into the
 * scripts.
 */
export function checkedServerUrls(value: string): string {
  if (!/^nats:\/\/[A-Za-z0-9.-]+:\d{1,5}(,nats:\/\/[A-Za-z0-9.-]+:\d{1,5})*$/.test(value))
    throw new Error(
      `the cluster stack's ServerUrls output must be nats://host:port URLs separated by commas, got "${value}"`,
    );
  return value;
}

/** Seconds the smoke-test script may take: Go's wait, a first build, and a short run. */
export const NATS_SMOKE_TEST_SECONDS = NATS_TOOLS_READY_WAIT_SECONDS + NATS_BUILD_SECONDS + 60;
/** Messages the smoke test publishes and reads back. */
export const NATS_SMOKE_TEST_MESSAGES = 100;

/**
 * The NATS cluster's smoke test, run on the load generator (the client the benchmark uses, with its DNS and its
 * security group): the load client is built, then creates a memory stream with min(3, nodes) replicas (only a cluster
 * with a meta leader and that many servers in it can place it), publishes NATS_SMOKE_TEST_MESSAGES with
 * acknowledgements and reads them back with explicit acks through all the server URLs, and deletes the stream. The
 * summary line must show every message acknowledged and received, and no error.
 */
export function natsSmokeTestScript(options: { serverUrls: string; nodes: number; suffix?: string }): string {
  const serverUrls = checkedServerUrls(options.serverUrls);
  if (!Number.isInteger(options.nodes) || options.nodes < 1)
    throw new Error(`nodes must be a positive integer, got ${options.nodes}`);
  const suffix = options.suffix ?? randomBytes(4).toString('hex');
  const replicas = Math.min(3, options.nodes);
  const messages = NATS_SMOKE_TEST_MESSAGES;
  const args = [
    ...['-servers', serverUrls, '-stream', `rmqbench-smoke-${suffix}`, '-subject', `rmqbench.smoke.${suffix}`],
    ...['-producers', '1', '-consumers', '1', '-size', '100', '-rate', '0', '-messages', String(messages)],
    ...['-drain', '5', '-consumer-mode', 'pull', '-ack', 'explicit', '-storage', 'memory'],
    ...['-replicas', String(replicas), '-retention', 'limits', '-window', '50'],
  ];
  // encoding/json writes a map's keys sorted, so each count is matched on its own.
  const counts = ['published', 'confirmed', 'received'].map((key) => `"${key}":${messages}[,}]`);
  return [
    'set -uo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK" || exit 1',
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    ...natsBuildLines(),
    `timeout 60 "$NATS_LOAD" ${args.map(quote).join(' ')} > smoke.jsonl 2> smoke.log`,
    `grep '"type":"summary"' smoke.jsonl | tail -n 1 > summary.json`,
    `if ! { ${counts.map((count) => `grep -qE '${count}' summary.json`).join(' && ')} && ` +
      `! grep -q '"firstError"' summary.json; }; then`,
    `  echo "smoke test: ${messages} messages were not all acknowledged by ${replicas} replicas and read back:" >&2`,
    '  { cat summary.json; grep \'"type":"error"\' smoke.jsonl; tail -n 5 smoke.log; } | cut -c1-400 >&2',
    '  exit 1',
    'fi',
    `echo "smoke test: ${messages} messages acknowledged by ${replicas} replicas and read back"`,
  ].join('\n');
}
