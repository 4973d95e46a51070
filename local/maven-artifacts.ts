import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PERFTEST_VERSION } from '../core/perftest-args';

const execFileAsync = promisify(execFile);

export interface MavenArtifact {
  readonly groupId: string;
  readonly artifactId: string;
  readonly version: string;
}

export const PERFTEST_ARTIFACT: MavenArtifact = { groupId: 'com.rabbitmq', artifactId: 'perf-test', version: PERFTEST_VERSION };
export const DYNAMODB_LOCAL_ARTIFACT: MavenArtifact = { groupId: 'com.amazonaws', artifactId: 'DynamoDBLocal', version: '2.6.1' };

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
<dependencies><dependency><groupId>${artifact.groupId}</groupId><artifactId>${artifact.artifactId}</artifactId><version>${artifact.version}</version></dependency></dependencies>
</project>\n`;
  writeFileSync(join(staging, 'pom.xml'), pom);
  try {
    await execFileAsync('mvn', ['-q', '-B', '-f', join(staging, 'pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${join(staging, 'lib')}`], {
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const detail = error instanceof Error ? error.message.split('\n').slice(0, 3).join(' ') : String(error);
    throw new Error(
      `could not fetch ${artifact.groupId}:${artifact.artifactId}:${artifact.version} from Maven Central with mvn (${detail}); is Maven installed and the network reachable? Run 'rmqbench doctor'.`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(join(staging, 'lib'), dir);
  rmSync(staging, { recursive: true, force: true });
  if (!readdirSync(dir).includes(`${artifact.artifactId}-${artifact.version}.jar`)) {
    throw new Error(`Maven fetched ${artifact.artifactId} but ${artifact.artifactId}-${artifact.version}.jar is not in ${dir}`);
  }
  return dir;
}
