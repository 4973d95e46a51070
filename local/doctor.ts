import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResultsStore } from '../store/results-store';
import { startDynamoDbLocal } from './dynamodb-local';
import { hasDynamoDbLocalArchive, prepareDynamoDbLocalArchive } from './dynamodb-local-cds';
import {
  DYNAMODB_LOCAL_ARTIFACT,
  KAFKA_ARTIFACT,
  MavenArtifact,
  PERFTEST_ARTIFACT,
  cachedArtifactDir,
  ensureArtifact,
} from './maven-artifacts';
import { ProcessRegistry } from './processes';
import { RABBITMQ_SERVER, installedRabbitmqVersion } from './rabbitmq-cluster';
import {
  cachedNatsBinary,
  checkGo,
  ensureNatsBinary,
  goCommand,
  NATS_SERVER_BINARY,
  NATSCLI_BINARY,
  natsLoadBinary,
  type NatsBinary,
} from './nats-binaries';

export interface DoctorCheck {
  readonly name: string;
  readonly ok: boolean;
  /** The version found, or how to get what is missing. */
  readonly detail: string;
  /**
   * Set when only some plans need it (the NATS toolchain and binaries: `broker: nats`): missing, it is reported but
   * does not make doctor fail, so a machine without Go still runs RabbitMQ and Kafka plans.
   */
  readonly onlyFor?: string;
}

function commandOutput(command: string, args: string[]): string | undefined {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    env: { ...process.env, MAVEN_OPTS: '-Djansi.passthrough=false', TERM: 'dumb' },
  });
  if (result.error) return undefined;
  // java -version and haproxy -v write to different streams; take the first line of whichever has one.
  const text = `${result.stdout ?? ''}\n${result.stderr ?? ''}`.replace(/\x1b\[[0-9;]*m/g, '');
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line.length > 0) ?? 'found'
  );
}

/** What the local target needs, whether it is here, and how to get it; `fix` fetches the Maven jars. */
export async function doctor(options: {
  readonly cacheDir: string;
  readonly fix: boolean;
}): Promise<{ checks: DoctorCheck[] }> {
  const checks: DoctorCheck[] = [];
  const nodeMajor = Number(process.versions.node.split('.')[0]);
  checks.push({
    name: 'node',
    ok: nodeMajor >= 22,
    detail:
      nodeMajor >= 22
        ? process.version
        : `${process.version} is too old; run through npm scripts (they use the node@22 devDependency) or ` +
          `install Node 22+`,
  });
  const java = commandOutput('java', ['-version']);
  checks.push({
    name: 'java',
    ok: java !== undefined,
    detail: java ?? 'not found; sudo apt-get install -y openjdk-17-jre-headless',
  });
  const mvn = commandOutput('mvn', ['-v']);
  checks.push({
    name: 'maven',
    ok: mvn !== undefined,
    detail: mvn ?? 'not found (needed once, to fetch the jars); sudo apt-get install -y maven',
  });
  const rabbit = installedRabbitmqVersion();
  checks.push({
    name: 'rabbitmq-server',
    ok: rabbit !== undefined && existsSync(RABBITMQ_SERVER),
    detail: rabbit ? `${rabbit} (${RABBITMQ_SERVER})` : 'not found; sudo apt-get install -y rabbitmq-server',
  });
  const epmd = commandOutput('epmd', ['-names', '-port', '1']);
  checks.push({
    name: 'epmd',
    ok: epmd !== undefined,
    detail: epmd !== undefined ? 'found' : 'not found; it comes with rabbitmq-server (erlang-base)',
  });
  const haproxy = commandOutput('haproxy', ['-v']);
  checks.push({
    name: 'haproxy',
    ok: haproxy !== undefined,
    detail: haproxy ?? 'not found (needed for connection: lb); sudo apt-get install -y haproxy',
  });
  // Kafka (broker and tools) is needed only by plans with broker: kafka; --fix fetches it with the others (setup.sh
  // runs it).
  for (const artifact of [PERFTEST_ARTIFACT, DYNAMODB_LOCAL_ARTIFACT, KAFKA_ARTIFACT])
    checks.push(await artifactCheck(options, artifact));
  checks.push(await dynamoDbArchiveCheck(options));
  // NATS (server, CLI and load client) is needed only by plans with broker: nats: built with Go, --fix builds them.
  checks.push(...(await natsChecks(options)));
  return { checks };
}

/** The Go toolchain, then each NATS binary in the cache (built by --fix when Go will do). */
async function natsChecks(options: { cacheDir: string; fix: boolean }): Promise<DoctorCheck[]> {
  const go = goCommand();
  let goProblem: string | undefined;
  let goVersion: string | undefined;
  try {
    goVersion = checkGo(go);
  } catch (error) {
    goProblem = (error as Error).message;
  }
  const checks: DoctorCheck[] = [
    { name: 'go', ok: goProblem === undefined, detail: goProblem ?? `${goVersion} (${go}; builds the NATS binaries)` },
  ];
  for (const binary of [NATS_SERVER_BINARY, NATSCLI_BINARY, natsLoadBinary()])
    checks.push(await natsBinaryCheck(options, binary, goProblem === undefined));
  return checks.map((check) => ({ ...check, onlyFor: 'plans with broker: nats' }));
}

async function natsBinaryCheck(
  options: { cacheDir: string; fix: boolean },
  binary: NatsBinary,
  canBuild: boolean,
): Promise<DoctorCheck> {
  let path = cachedNatsBinary(options.cacheDir, binary);
  if (!path && options.fix && canBuild) {
    try {
      path = await ensureNatsBinary(options.cacheDir, binary);
    } catch (error) {
      return { name: binary.label, ok: false, detail: (error as Error).message };
    }
  }
  return path
    ? { name: binary.label, ok: true, detail: path }
    : { name: binary.label, ok: false, detail: 'not built; run: rmqbench doctor --fix (builds it with Go)' };
}

async function artifactCheck(
  options: { cacheDir: string; fix: boolean },
  artifact: MavenArtifact,
): Promise<DoctorCheck> {
  const name = `${artifact.groupId}:${artifact.artifactId}:${artifact.version}`;
  let dir = cachedArtifactDir(options.cacheDir, artifact);
  if (!dir && options.fix) {
    try {
      dir = await ensureArtifact(options.cacheDir, artifact);
    } catch (error) {
      return { name, ok: false, detail: (error as Error).message };
    }
  }
  return dir
    ? { name, ok: true, detail: dir }
    : { name, ok: false, detail: 'not cached; run: rmqbench doctor --fix (fetches it from Maven Central)' };
}

/**
 * DynamoDB Local's class archive (local/dynamodb-local-cds.ts): only a faster start, so a missing one never fails
 * doctor. --fix prepares it with a training run that does what every command does first: start DynamoDB Local,
 * create the results table, write and read a run.
 */
export async function dynamoDbArchiveCheck(options: { cacheDir: string; fix: boolean }): Promise<DoctorCheck> {
  const name = 'DynamoDB Local class archive';
  const onlyFor = 'a faster start of DynamoDB Local';
  const libDir = cachedArtifactDir(options.cacheDir, DYNAMODB_LOCAL_ARTIFACT);
  if (libDir && hasDynamoDbLocalArchive(libDir)) return { name, ok: true, detail: 'prepared' };
  if (!libDir || !options.fix)
    return {
      name,
      ok: false,
      detail: 'not prepared; run: rmqbench doctor --fix (a training run, then a dump)',
      onlyFor,
    };
  try {
    const archive = await prepareDynamoDbLocalArchive(libDir, (classArgs) =>
      trainDynamoDbLocal(options.cacheDir, classArgs),
    );
    return { name, ok: true, detail: archive };
  } catch (error) {
    return { name, ok: false, detail: (error as Error).message, onlyFor };
  }
}

async function trainDynamoDbLocal(cacheDir: string, classArgs: readonly string[]): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'rmqbench-cds-training-'));
  const processes = new ProcessRegistry();
  try {
    const local = await startDynamoDbLocal({
      cacheDir,
      processes,
      logPath: join(work, 'dynamodb-local.log'),
      classArgs,
    });
    const store = ResultsStore.forEndpoint(local.endpoint);
    await store.ensureTable();
    const startedAt = new Date().toISOString();
    await store.putRun({
      runId: 'class-archive-training',
      planName: 'training',
      plan: {},
      target: 'local',
      status: 'SUCCEEDED',
      startedAt,
      environment: {},
      scenarioIds: [],
    });
    await store.getRun('class-archive-training');
    await store.listRuns();
  } finally {
    await processes.stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}
