import { createHash } from 'node:crypto';
import { MAVEN_CENTRAL_URL, type MavenArtifact } from '../perf-test-artifacts';
import { writeFileCommand } from '../shell';

/**
 * Boot lines that download pinned jars from Maven Central and check them, small enough for EC2's user data. EC2 takes
 * at
 * most 16 KB of user data "in raw form, before it is base64-encoded"
 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html; RunInstances refuses more). A
 * curl line and a checksum line per jar made a Kafka broker's user data ~31 KB and the load generator's with the Kafka
 * tools ~36 KB, so the user data carries each jar's Maven coordinates (its download path follows from them) and one
 * SHA-256 digest over the jars' pinned sums instead.
 */

/**
 * Downloads one jar: `rmqbench_fetch_jar <path under Maven Central's maven2/> <file>`. A boot's test seam may redefine
 * it.
 */
export const FETCH_JAR_FUNCTION =
  `rmqbench_fetch_jar() { curl -sSf --retry 5 --retry-all-errors ` + `-o "$2" "${MAVEN_CENTRAL_URL}/$1"; }`;

/**
 * A jar's Maven coordinates `group:artifact:version` from its path in Maven's repository layout
 * (https://maven.apache.org/repositories/layout.html: the group with "/" for ".", the artifact, the version, and the
 * file
 * `<artifact>-<version>.jar` for a jar without classifier); a path of another shape is refused.
 */
export function mavenCoordinates(path: string): string {
  const parts = path.split('/');
  const [artifact, version, file] = parts.slice(-3);
  if (parts.length < 4 || file !== `${artifact}-${version}.jar`)
    throw new Error(`${path} is not <group path>/<artifact>/<version>/<artifact>-<version>.jar`);
  return `${parts.slice(0, -3).join('.')}:${artifact}:${version}`;
}

/** The jars as coordinates, one a line, in the given order: what the boot reads to download and check them. */
export function jarsManifest(artifacts: readonly MavenArtifact[]): string {
  return artifacts.map((artifact) => `${mavenCoordinates(artifact.path)}\n`).join('');
}

/**
 * The SHA-256 of the `sha256sum` lines ("<sha256>  <file>") of the pinned jars in manifest order: one digest that
 * changes if any jar differs from its pin (or is missing).
 */
export function jarsDigest(artifacts: readonly MavenArtifact[]): string {
  return createHash('sha256')
    .update(
      artifacts
        .map((artifact) => `${artifact.sha256}  ${artifact.path.slice(artifact.path.lastIndexOf('/') + 1)}\n`)
        .join(''),
    )
    .digest('hex');
}

export interface PinnedJarsInput {
  readonly artifacts: readonly MavenArtifact[];
  /** Folder of the manifest (`jars.txt`) and the computed sums (`SHA256SUMS`). */
  readonly home: string;
  /** Folder the jars go to: the boot's current folder when these lines run. */
  readonly libDir: string;
  /** What the jars are, for the error message (e.g. "Kafka 4.3.1"). */
  readonly label: string;
  /** Here-document delimiter of the manifest (the tests find it by this). */
  readonly delimiter: string;
}

/**
 * Downloads every jar of the manifest with `rmqbench_fetch_jar` (FETCH_JAR_FUNCTION, defined earlier in the boot) into
 * the current folder and checks them: the sums the instance computes stay in SHA256SUMS; when their digest differs from
 * the pinned one they are printed, the jars removed and the boot fails.
 */
export function pinnedJarCommands(input: PinnedJarsInput): string[] {
  const manifest = `${input.home}/jars.txt`;
  const eachJar = (body: string) => `while IFS=: read -r group artifact version; do ${body}; done < ${manifest}`;
  return [
    writeFileCommand(manifest, jarsManifest(input.artifacts), input.delimiter),
    eachJar('rmqbench_fetch_jar "${group//.//}/$artifact/$version/$artifact-$version.jar" "$artifact-$version.jar"'),
    eachJar('sha256sum "$artifact-$version.jar" || true') + ` > ${input.home}/SHA256SUMS`,
    `if [ "$(sha256sum < ${input.home}/SHA256SUMS | cut -d ' ' -f 1)" != ${jarsDigest(input.artifacts)} ]; ` +
      `then rm -f ${input.libDir}/*.jar; echo "${input.label}: the jars' SHA-256 sums (below) differ from the ` +
      `pinned ones: jars removed" >&2; cat ${input.home}/SHA256SUMS >&2; exit 1; fi`,
  ];
}
