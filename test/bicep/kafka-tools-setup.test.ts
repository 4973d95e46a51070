/**
 * bicep/cloud-init/rmqbench-kafka-tools-setup.sh run for real by bash: it downloads every jar of the manifest with curl
 * (from a file:// copy of Maven Central's layout made of the local cache's Kafka jars, the same jars the pins were
 * computed from), checks each against its sha256, and installs the wrapper the controller's scripts call; the real
 * TopicCommand then runs through it. A tampered jar fails the setup and leaves no jar and no READY file behind.
 */
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { KAFKA_ARTIFACTS } from '../../cdk/kafka-artifacts';
import {
  KAFKA_TOOL_COMMAND,
  KAFKA_TOOLS_HOME,
  KAFKA_TOOLS_READY_FILE,
  kafkaToolWrapper,
} from '../../cdk/user-data/load-generator';
import { cachedArtifactDir, KAFKA_ARTIFACT } from '../../local/maven-artifacts';
import { cacheDir } from '../../local/paths';

const CLOUD_INIT = join(__dirname, '../../bicep/cloud-init');
const SCRIPT = join(CLOUD_INIT, 'rmqbench-kafka-tools-setup.sh');
// The shared download and check the script sources (cloud-init writes it to the script's default path on the VM).
const JARS_LIB = join(CLOUD_INIT, 'rmqbench-jars.sh');

describe("rmqbench-kafka-tools-setup (the Azure load generator's Kafka tools)", () => {
  let work: string;
  let repository: string;
  beforeAll(() => {
    const jars = cachedArtifactDir(cacheDir(), KAFKA_ARTIFACT);
    if (!jars)
      throw new Error('the Kafka jars are not in the Maven cache: run rmqbench doctor --fix (scripts/setup.sh does)');
    work = mkdtempSync(join(tmpdir(), 'rmqbench-kafka-tools-'));
    repository = join(work, 'maven2');
    for (const artifact of KAFKA_ARTIFACTS) {
      mkdirSync(join(repository, dirname(artifact.path)), { recursive: true });
      copyFileSync(join(jars, basename(artifact.path)), join(repository, artifact.path));
    }
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const setup = (root: string) =>
    spawnSync('bash', [SCRIPT, '4.3.1'], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        RMQBENCH_KAFKA_TOOLS_ROOT: root,
        RMQBENCH_MAVEN_REPOSITORY: `file://${repository}`,
        RMQBENCH_KAFKA_MANIFEST: join(CLOUD_INIT, 'kafka-4.3.1.sha256'),
        RMQBENCH_KAFKA_TOOL_LOG4J: join(CLOUD_INIT, 'kafka-tool-log4j2.properties'),
        RMQBENCH_JARS_LIB: JARS_LIB,
      },
      timeout: 120_000,
    });

  test(
    'installs the 92 checked jars, the AWS wrapper byte for ' + 'byte and the READY file; TopicCommand runs through it',
    () => {
      const root = join(work, 'good');
      const run = setup(root);
      expect({ status: run.status, stderr: run.stderr }).toEqual({
        status: 0,
        stderr: expect.stringContaining('Kafka tools 4.3.1 ready'),
      });
      expect(readdirSync(join(root, KAFKA_TOOLS_HOME, 'lib'))).toHaveLength(KAFKA_ARTIFACTS.length);
      expect(readFileSync(join(root, KAFKA_TOOL_COMMAND), 'utf8')).toBe(kafkaToolWrapper(KAFKA_TOOLS_HOME));
      expect(readFileSync(join(root, KAFKA_TOOLS_READY_FILE), 'utf8')).toBe('4.3.1\n');
      // The wrapper names the VM's paths; run the same command line against the test's root.
      const wrapper = kafkaToolWrapper(join(root, KAFKA_TOOLS_HOME));
      writeFileSync(join(work, 'kafka-tool'), wrapper, { mode: 0o755 });
      const version = spawnSync(join(work, 'kafka-tool'), ['org.apache.kafka.tools.TopicCommand', '--version'], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(version.stdout).toMatch(/^4\.3\.1/m);
    },
  );

  test('a jar that does not match its sha256 fails the setup: every jar removed, no READY file', () => {
    const root = join(work, 'tampered');
    const victim = join(repository, KAFKA_ARTIFACTS[0]!.path);
    const original = readFileSync(victim);
    writeFileSync(victim, Buffer.concat([original, Buffer.from('tampered')]));
    try {
      const run = setup(root);
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain('Kafka tools 4.3.1: checksum mismatch, jars removed');
      expect(readdirSync(join(root, KAFKA_TOOLS_HOME, 'lib'))).toEqual([]);
      expect(existsSync(join(root, KAFKA_TOOLS_READY_FILE))).toBe(false);
    } finally {
      writeFileSync(victim, original);
    }
  });

  test('a version the manifest does not pin is refused by name', () => {
    const run = spawnSync('bash', [SCRIPT, '9.9.9'], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        RMQBENCH_KAFKA_MANIFEST: join(CLOUD_INIT, 'kafka-4.3.1.sha256'),
        RMQBENCH_JARS_LIB: JARS_LIB,
      },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('does not pin kafka-tools 9.9.9');
  });
});
