import { Aws } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { LOAD_GENERATOR_ROLE } from '../../core/metrics/cloudwatch-host-metrics';
import { cloudWatchAgentBootCommands } from './cloudwatch-agent';
import { KAFKA_TOOL_LOG4J } from '../../core/kafka/kafka-broker-log4j';
import {
  KAFKA_TOOL_COMMAND,
  KAFKA_TOOLS_HOME,
  KAFKA_TOOLS_READY_FILE,
  GO_HOME,
  NATS_LOAD_HOME,
  NATS_TOOLS_READY_FILE,
  PERF_TEST_COMMAND,
  PERF_TEST_HOME,
} from '../../core/perftest/load-generator-paths';
import { KAFKA_ARTIFACTS, KAFKA_VERSION_ON_AWS } from '../kafka-artifacts';
import { PERF_TEST_ARTIFACTS, PERF_TEST_VERSION } from '../perf-test-artifacts';
import { shellQuote, writeFileCommand } from '../shell';
import { FETCH_JAR_FUNCTION, pinnedJarCommands } from './pinned-jars';
import { goTarball, type GoArch } from '../go-toolchain';
import { INSTALL_OVERRIDE_FILE } from './rabbitmq-node';

// The tools' paths are shared with the functions that write the run scripts (core/perftest/load-generator-paths.ts).
export { KAFKA_TOOL_COMMAND, KAFKA_TOOLS_HOME, KAFKA_TOOLS_READY_FILE, PERF_TEST_COMMAND, PERF_TEST_HOME };
/** Here-document delimiters of the jar manifests (`<home>/jars.txt`); the tests find them by these. */
export const PERF_TEST_JARS_DELIMITER = 'RMQBENCH_PERF_TEST_JARS';
export const KAFKA_TOOLS_JARS_DELIMITER = 'RMQBENCH_KAFKA_TOOLS_JARS';

export interface LoadGeneratorBootInput {
  /** Results bucket name (a token is fine). */
  readonly resultsBucketName: string;
  /** Key prefix the instance may write under, ending with "/". */
  readonly resultsPrefix: string;
  /** Also install Kafka's tools (the pinned Kafka jars) and KAFKA_TOOL_COMMAND. @default false */
  readonly kafkaTools?: boolean;
  /**
   * Also install the Go toolchain (cdk/go-toolchain.ts, for the instance's architecture), with which the controller's
   * NATS scripts build rmqbench's NATS load client from the source they carry. @default - not installed
   */
  readonly natsTools?: { readonly arch: GoArch };
  /**
   * This instance's place among several generators (LoadGenerator `count` > 1), written to the env file so that a run
   * script can tell the generators' results apart. @default - one generator: nothing written
   */
  readonly generator?: { readonly index: number; readonly count: number | string };
}

/**
 * The wrapper around java for the Kafka tools: the same JVM options as the local target's tools (local/kafka-java.ts
 * javaArgs: an English locale, because the tools print rates with the JVM locale's decimal separator; UTC, because
 * ConsumerPerformance prints its rows' times in the JVM's zone and the parser reads them as UTC), the tools' log4j2
 * configuration (errors and the consumer's partition assignment on stderr), and the classpath of the pinned jars, which
 * the JVM expands itself (no shell glob).
 */
export function kafkaToolWrapper(home: string): string {
  return (
    `#!/bin/sh\nexec java -Xmx1g -XX:+UseParallelGC -Duser.language=en -Duser.country=US -Duser.timezone=UTC ` +
    `-Dlog4j2.configurationFile=${home}/log4j2-tool.properties -cp '${home}/lib/*' "$@"\n`
  );
}

/**
 * Boot lines that install the Kafka tools beside PerfTest: the same 92 jars as the brokers (cdk/kafka-artifacts.ts, one
 * classpath for broker and tools), downloaded from Maven Central and checked against their pinned SHA-256 before
 * anything
 * runs; a mismatch removes them and fails the boot.
 */
export function kafkaToolsBootCommands(home = KAFKA_TOOLS_HOME, command = KAFKA_TOOL_COMMAND): string[] {
  return [
    `install -d ${home}/lib`,
    `cd ${home}/lib`,
    ...pinnedJarCommands({
      artifacts: KAFKA_ARTIFACTS,
      home,
      libDir: `${home}/lib`,
      label: `Kafka tools ${KAFKA_VERSION_ON_AWS} (pinned in cdk/kafka-artifacts.ts)`,
      delimiter: KAFKA_TOOLS_JARS_DELIMITER,
    }),
    writeFileCommand(`${home}/log4j2-tool.properties`, KAFKA_TOOL_LOG4J, 'RMQBENCH_KAFKA_TOOL_LOG4J'),
    writeFileCommand(command, kafkaToolWrapper(home), 'RMQBENCH_KAFKA_TOOL_WRAPPER'),
    `chmod 755 ${command}`,
    `echo ${KAFKA_VERSION_ON_AWS} > ${home}/READY`,
  ];
}

/**
 * The boot script of the load generator (Amazon Linux 2023): Java, then PerfTest and its dependencies
 * from Maven Central, each jar checked against its pinned SHA-256. A mismatch removes the jars and fails
 * the boot, so a tampered or truncated download never runs.
 */
export function loadGeneratorBootCommands(input: LoadGeneratorBootInput): string[] {
  return [
    'set -euo pipefail',
    // Within EC2's 16 KB of user data (with the Kafka tools a line and a checksum per jar came to ~36 KB): each jar set
    // as
    // coordinates and one digest (pinned-jars.ts), downloaded by this one function.
    FETCH_JAR_FUNCTION,
    'dnf install -y java-21-amazon-corretto-headless',
    `install -d ${PERF_TEST_HOME}/lib`,
    `cd ${PERF_TEST_HOME}/lib`,
    ...pinnedJarCommands({
      artifacts: PERF_TEST_ARTIFACTS,
      home: PERF_TEST_HOME,
      libDir: `${PERF_TEST_HOME}/lib`,
      label: `PerfTest ${PERF_TEST_VERSION} (pinned in cdk/perf-test-artifacts.ts)`,
      delimiter: PERF_TEST_JARS_DELIMITER,
    }),
    writeFileCommand(
      PERF_TEST_COMMAND,
      `#!/bin/sh\nexec java -cp '${PERF_TEST_HOME}/lib/*' com.rabbitmq.perf.PerfTest "$@"\n`,
      'RMQBENCH_WRAPPER',
    ),
    `chmod 755 ${PERF_TEST_COMMAND}`,
    // PerfTest takes credentials only in its --uri arguments: with hidepid=2 no other user can read another's
    // /proc/<pid>
    // (cmdline included), https://man7.org/linux/man-pages/man5/proc.5.html ("hidepid=2"). Persisted for reboots.
    'mount -o remount,hidepid=2 /proc',
    "grep -q '^proc /proc proc' /etc/fstab || echo 'proc /proc proc defaults,hidepid=2 0 0' >> /etc/fstab",
    'install -d /etc/rmqbench',
    `printf 'RESULTS_BUCKET=%s\\nRESULTS_PREFIX=%s\\nPERF_TEST_VERSION=${PERF_TEST_VERSION}\\n' ` +
      `${input.resultsBucketName} ${shellQuote(input.resultsPrefix)} > /etc/rmqbench/load-generator.env`,
    ...(input.generator
      ? [
          `printf 'LOAD_GENERATOR_INDEX=%s\\nLOAD_GENERATOR_COUNT=%s\\n' ${input.generator.index} ` +
            `${input.generator.count} >> /etc/rmqbench/load-generator.env`,
        ]
      : []),
    ...(input.kafkaTools ? kafkaToolsBootCommands() : []),
    ...(input.natsTools ? natsToolsBootCommands(input.natsTools.arch) : []),
  ];
}

/**
 * `rmqbench_fetch_go <url> <file>`: downloads the Go tarball. The boot's test seam (INSTALL_OVERRIDE_FILE, absent on
 * EC2) may redefine it and GO_SHA256, for a tarball of its own; the checksum check after it runs either way.
 */
export const FETCH_GO_FUNCTION = 'rmqbench_fetch_go() { curl -fsSL --retry 5 --retry-connrefused -o "$2" "$1"; }';

/**
 * Boot lines that install the Go toolchain for the NATS load client: the pinned tarball (cdk/go-toolchain.ts) checked
 * against its SHA-256 before it is unpacked into GO_HOME (the tarball holds one folder, `go/`), then the ready file
 * the controller's NATS scripts wait for. The load client itself is built by those scripts from the source they
 * carry, so that a controller update never waits for a new load generator image.
 */
export function natsToolsBootCommands(arch: GoArch, home = NATS_LOAD_HOME, goHome = GO_HOME): string[] {
  const tarball = goTarball(arch);
  const file = `${home}/go.tar.gz`;
  return [
    `# Go ${tarball.version} (${arch}) for the NATS load client, checked against the SHA-256 pinned in ` +
      'cdk/go-toolchain.ts.',
    `GO_URL=${tarball.url}`,
    `GO_SHA256=${tarball.sha256}`,
    FETCH_GO_FUNCTION,
    `if [ -f ${INSTALL_OVERRIDE_FILE} ]; then . ${INSTALL_OVERRIDE_FILE}; fi`,
    `install -d ${home} ${goHome}`,
    `rmqbench_fetch_go "$GO_URL" ${file}`,
    `echo "$GO_SHA256  ${file}" | sha256sum -c --quiet - || { rm -f ${file}; ` +
      `echo "rmqbench: the Go tarball differs from the pinned one ($GO_SHA256, cdk/go-toolchain.ts)" >&2; exit 1; }`,
    `tar -xzf ${file} -C ${goHome} --strip-components=1 --no-same-owner`,
    `rm -f ${file}`,
    `${goHome}/bin/go version`,
    `echo ${tarball.version} > ${NATS_TOOLS_READY_FILE}`,
  ];
}

/**
 * A load generator's whole boot script: the host metrics agent first, then Java and the tools (LoadGenerator's user
 * data; the controller's cluster template renders it again per index with the LoadGeneratorCount parameter as count).
 */
export function loadGeneratorUserData(input: LoadGeneratorBootInput): ec2.UserData {
  const userData = ec2.UserData.forLinux();
  userData.addCommands(
    ...cloudWatchAgentBootCommands({ clusterId: Aws.STACK_NAME, role: LOAD_GENERATOR_ROLE }),
    ...loadGeneratorBootCommands(input),
  );
  return userData;
}
