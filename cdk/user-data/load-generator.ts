import { MAVEN_CENTRAL_URL, PERF_TEST_ARTIFACTS, PERF_TEST_VERSION } from '../perf-test-artifacts';
import { shellQuote, writeFileCommand } from '../shell';

export const PERF_TEST_HOME = '/opt/perf-test';
/** The command the boot script installs to run PerfTest from PERF_TEST_HOME/lib; the controller's run script calls it by this path. */
export const PERF_TEST_COMMAND = '/usr/local/bin/perf-test';

export interface LoadGeneratorBootInput {
  /** Results bucket name (a token is fine). */
  readonly resultsBucketName: string;
  /** Key prefix the instance may write under, ending with "/". */
  readonly resultsPrefix: string;
}

/**
 * The boot script of the load generator (Amazon Linux 2023): Java, then PerfTest and its dependencies
 * from Maven Central, each jar checked against its pinned SHA-256. A mismatch removes the jars and fails
 * the boot, so a tampered or truncated download never runs.
 */
export function loadGeneratorBootCommands(input: LoadGeneratorBootInput): string[] {
  const checksums = PERF_TEST_ARTIFACTS.map((artifact) => `${artifact.sha256}  ${basename(artifact.path)}`).join('\n') + '\n';
  return [
    'set -euo pipefail',
    'dnf install -y java-21-amazon-corretto-headless',
    `install -d ${PERF_TEST_HOME}/lib`,
    `cd ${PERF_TEST_HOME}/lib`,
    ...PERF_TEST_ARTIFACTS.map(
      (artifact) => `curl -sSf --retry 5 --retry-all-errors -o ${shellQuote(basename(artifact.path))} ${shellQuote(`${MAVEN_CENTRAL_URL}/${artifact.path}`)}`,
    ),
    writeFileCommand(`${PERF_TEST_HOME}/SHA256SUMS`, checksums, 'RMQBENCH_SHA256SUMS'),
    `if ! sha256sum --check --strict ${PERF_TEST_HOME}/SHA256SUMS; then rm -f ${PERF_TEST_HOME}/lib/*.jar; echo "PerfTest ${PERF_TEST_VERSION}: checksum mismatch, jars removed" >&2; exit 1; fi`,
    writeFileCommand(
      PERF_TEST_COMMAND,
      `#!/bin/sh\nexec java -cp '${PERF_TEST_HOME}/lib/*' com.rabbitmq.perf.PerfTest "$@"\n`,
      'RMQBENCH_WRAPPER',
    ),
    `chmod 755 ${PERF_TEST_COMMAND}`,
    // PerfTest takes credentials only in its --uri arguments: with hidepid=2 no other user can read another's /proc/<pid>
    // (cmdline included), https://man7.org/linux/man-pages/man5/proc.5.html ("hidepid=2"). Persisted for reboots.
    'mount -o remount,hidepid=2 /proc',
    "grep -q '^proc /proc proc' /etc/fstab || echo 'proc /proc proc defaults,hidepid=2 0 0' >> /etc/fstab",
    'install -d /etc/rmqbench',
    `printf 'RESULTS_BUCKET=%s\\nRESULTS_PREFIX=%s\\nPERF_TEST_VERSION=${PERF_TEST_VERSION}\\n' ${input.resultsBucketName} ${shellQuote(input.resultsPrefix)} > /etc/rmqbench/load-generator.env`,
  ];
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
