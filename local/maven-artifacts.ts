import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PERFTEST_VERSION } from '../core/perftest/perftest-args';

const execFileAsync = promisify(execFile);

export interface MavenArtifact {
  readonly groupId: string;
  readonly artifactId: string;
  readonly version: string;
  /** More artifacts fetched into the same folder with their dependencies (Kafka's tools and log binding). */
  readonly with?: readonly Omit<MavenArtifact, 'with'>[];
}

export const PERFTEST_ARTIFACT: MavenArtifact = {
  groupId: 'com.rabbitmq',
  artifactId: 'perf-test',
  version: PERFTEST_VERSION,
};
export const DYNAMODB_LOCAL_ARTIFACT: MavenArtifact = {
  groupId: 'com.amazonaws',
  artifactId: 'DynamoDBLocal',
  version: '2.6.1',
};

/**
 * The Kafka version the local target runs (broker and tools); Maven Central serves kafka_2.13 and kafka-tools at 4.3.1.
 */
export const KAFKA_VERSION = '4.3.1';
/**
 * The Kafka broker (kafka.Kafka, kafka.tools.StorageTool) with the performance tools of kafka-tools
 * (org.apache.kafka.tools.ProducerPerformance, ConsumerPerformance, TopicCommand) in one folder, so that one
 * classpath runs both. Their dependencies bring slf4j-api 1.7 and log4j-core 2 but no binding between them, so
 * the broker would log nothing (SLF4J: "Defaulting to no-operation (NOP) logger"); the distribution's log4j2
 * binding for slf4j 1.7, log4j-slf4j-impl at the log4j-core version the dependencies bring (2.25.4), gives the
 * broker its log and a failed start its log tail.
 */
export const KAFKA_ARTIFACT: MavenArtifact = {
  groupId: 'org.apache.kafka',
  artifactId: 'kafka_2.13',
  version: KAFKA_VERSION,
  with: [
    { groupId: 'org.apache.kafka', artifactId: 'kafka-tools', version: KAFKA_VERSION },
    { groupId: 'org.apache.logging.log4j', artifactId: 'log4j-slf4j-impl', version: '2.25.4' },
  ],
};

/** The artifact and its companions as pom `<dependency>` elements. */
export function pomDependencies(artifact: MavenArtifact): string {
  return [artifact, ...(artifact.with ?? [])]
    .map(
      (one) =>
        `<dependency><groupId>${one.groupId}</groupId><artifactId>${one.artifactId}</` +
        `artifactId><version>${one.version}</version></dependency>`,
    )
    .join('\n');
}

/** The folder holding the artifact and all its runtime dependencies, or undefined when not cached yet. */
export function cachedArtifactDir(cache: string, artifact: MavenArtifact): string | undefined {
  const dir = artifactDir(cache, artifact);
  return existsSync(join(dir, `${artifact.artifactId}-${artifact.version}.jar`)) ? dir : undefined;
}

function artifactDir(cache: string, artifact: MavenArtifact): string {
  return join(cache, 'maven', `${artifact.artifactId}-${artifact.version}`);
}

/**
 * Fetches an artifact with its dependencies from Maven Central once (with `mvn dependency:copy-dependencies`)
 * into the cache; later calls return the cached folder. A half-finished download never counts as cached.
 */
export async function ensureArtifact(cache: string, artifact: MavenArtifact): Promise<string> {
  const cached = cachedArtifactDir(cache, artifact);
  if (cached) return cached;
  const dir = artifactDir(cache, artifact);
  const staging = `${dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const pom = `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>rmqbench</groupId><artifactId>fetch-${artifact.artifactId}</artifactId><version>1</version>
<dependencies>${pomDependencies(artifact)}</dependencies>
</project>\n`;
  writeFileSync(join(staging, 'pom.xml'), pom);
  try {
    await execFileAsync(
      'mvn',
      [
        '-q',
        '-B',
        '-f',
        join(staging, 'pom.xml'),
        'dependency:copy-dependencies',
        `-DoutputDirectory=${join(staging, 'lib')}`,
      ],
      {
        maxBuffer: 16 * 1024 * 1024,
      },
    );
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const detail = error instanceof Error ? error.message.split('\n').slice(0, 3).join(' ') : String(error);
    throw new Error(
      `could not fetch ${artifact.groupId}:${artifact.artifactId}:${artifact.version} from Maven Central with ` +
        `mvn (${detail}); is Maven installed and the network reachable? Run 'rmqbench doctor'.`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(join(staging, 'lib'), dir);
  rmSync(staging, { recursive: true, force: true });
  const jars = readdirSync(dir);
  for (const one of [artifact, ...(artifact.with ?? [])]) {
    if (!jars.includes(`${one.artifactId}-${one.version}.jar`)) {
      throw new Error(`Maven fetched ${artifact.artifactId} but ${one.artifactId}-${one.version}.jar is not in ${dir}`);
    }
  }
  return dir;
}
