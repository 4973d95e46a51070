import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { cachedArtifactDir, KAFKA_ARTIFACT, PERFTEST_ARTIFACT } from '../../local/maven-artifacts';
import { goCommand } from '../../local/nats-binaries';
import { cacheDir } from '../../local/paths';

/** The download hosts a hub's fake serves from this machine's caches (fake_downloads.py). */
export const DOWNLOAD_MIRROR_HOSTS = ['repo1.maven.org', 'proxy.golang.org'] as const;

/**
 * The hub state that points those hosts at this machine's caches: PerfTest's jars for the RabbitMQ load generators and
 * Kafka's for the brokers and the Kafka tools (Maven Central); this machine's Go module cache for the NATS load
 * client's build, whose cache/download folder has the proxy's layout (scripts/setup.sh fills it when it builds the
 * client).
 */
export function downloadMirrorState(): { mavenDirectories: string[]; goModuleProxy: string } {
  return {
    mavenDirectories: [PERFTEST_ARTIFACT, KAFKA_ARTIFACT]
      .map((artifact) => cachedArtifactDir(cacheDir(), artifact))
      .filter((directory): directory is string => Boolean(directory)),
    goModuleProxy: join(
      execFileSync(goCommand(), ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim(),
      'cache/download',
    ),
  };
}
