import { gzipSync } from 'node:zlib';
import { VERIFIER_OUTPUT_FILE } from '../../core/failover/cloud-verifier';
import { VERIFIER_QUEUE } from '../../core/failover/failover';
import { LOST_MESSAGE_VERIFIER_CLASS, LOST_MESSAGE_VERIFIER_JAVA } from './lost-message-verifier-java';

/**
 * Seconds the verifier may take beyond the repetition's duration before `timeout` ends it: the JVM compiling the source
 * (a few seconds on a small VM), the wait for the last confirms (at most 5 s) and the drain (at most 30 s). Well inside
 * the run command's own limit (durationSeconds + 120 on AWS, + 180 on Azure), so a verifier that hangs never costs the
 * repetition its PerfTest result.
 */
export const VERIFIER_GRACE_SECONDS = 75;

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Shell lines that start the lost-message verifier (lost-message-verifier-java.ts) in the background of a run script
 * (AWS Run Command and Azure managed Run Command alike), beside PerfTest, for a scenario with a fault:
 * - the Java source travels in the script gzipped and base64-encoded (about a third of its 18 KB) and is written to the
 *   working directory; it runs with PerfTest's own jars (the RabbitMQ Java client), whose class path is read from the
 *   boot script's PerfTest wrapper (`-cp '<home>/lib/*'`: /opt/perf-test/lib on AWS, /opt/perf-test/<version>/lib on
 *   Azure), found as the script runs PerfTest (`perfTestCommand`: a path, or a name on PATH), so that both clouds and
 *   any PerfTest version find them;
 * - source-file mode needs the jdk.compiler module, which both clouds' runtime-only Java packages carry: Corretto's
 *   `-headless` RPM (AWS) holds the JDK image's whole lib/ (corretto/corretto-21
 *   installers/linux/al2/spec/java-amazon-corretto.spec.template, `%files headless`: `%{java_home}/lib`, copied from
 *   images/jdk), and Debian's `openjdk-17-jre-headless` holds lib/modules with jdk.compiler (measured on this machine
 *   with `java --list-modules`; Ubuntu's openjdk-21-jre-headless, which the Azure setup installs, is packaged alike);
 * - it connects as the per-run benchmark user ($BENCH_USER, $BENCH_PASS: hex, nothing to URL-encode) through the
 *   cluster's load balancer; the URI reaches java in its environment (RMQBENCH_VERIFIER_URIS), never in its arguments,
 *   and /proc/<pid>/environ is readable by its owner only (proc(5));
 * - it declares VERIFIER_QUEUE with the scenario's queue arguments (the fault step hits the leader of that queue);
 * - stdout and stderr go to VERIFIER_OUTPUT_FILE, whose last JSON line is the result (core/failover/cloud-verifier.ts);
 * its
 *   error lines, if any, say why there is none. It runs under `timeout`, and nothing it does fails the script.
 */
export function startVerifierLines(options: {
  readonly perfTestCommand: string;
  readonly amqpHost: string;
  readonly seconds: number;
  readonly queueArguments: Readonly<Record<string, string | number>>;
}): string[] {
  if (!(Number.isInteger(options.seconds) && options.seconds > 0))
    throw new Error(`the verifier's seconds must be a positive integer, got ${options.seconds}`);
  if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(options.amqpHost))
    throw new Error(`the verifier's AMQP host must be host[:port], got "${options.amqpHost}"`);
  const source = gzipSync(Buffer.from(LOST_MESSAGE_VERIFIER_JAVA, 'utf8'), { level: 9 }).toString('base64');
  const queueArguments = Object.entries(options.queueArguments).flatMap(([key, value]) => [
    '--queue-arg',
    quote(`${key}=${value}`),
  ]);
  const args = ['--queue', quote(VERIFIER_QUEUE), '--seconds', String(options.seconds), ...queueArguments].join(' ');
  return [
    `printf '%s' ${quote(source)} | base64 -d | gunzip > ${LOST_MESSAGE_VERIFIER_CLASS}.java`,
    // Found as the script runs PerfTest (an absolute path on AWS, on PATH on Azure); a missing wrapper only leaves the
    // class path empty (`|| ...`: under set -e a failed substitution would end the script).
    `VERIFIER_WRAPPER=$(command -v ${quote(options.perfTestCommand)}) || VERIFIER_WRAPPER=''`,
    `VERIFIER_CLASSPATH=$(sed -n "s/.* -cp '\\([^']*\\)'.*/\\1/p" "$VERIFIER_WRAPPER" 2> /dev/null | head -n 1) ` +
      `|| VERIFIER_CLASSPATH=''`,
    `if [ -n "$VERIFIER_CLASSPATH" ]; then`,
    `  RMQBENCH_VERIFIER_URIS="amqp://$BENCH_USER:$BENCH_PASS@${options.amqpHost}" ` +
      `timeout ${options.seconds + VERIFIER_GRACE_SECONDS} java -cp "$VERIFIER_CLASSPATH" ` +
      `${LOST_MESSAGE_VERIFIER_CLASS}.java ${args} > ${VERIFIER_OUTPUT_FILE} 2>&1 & VERIFIER_PID=$!`,
    'else',
    `  echo ${quote(
      `rmqbench verifier: no class path in the PerfTest wrapper ${options.perfTestCommand}, ` +
        'so the verifier did not run',
    )} > ${VERIFIER_OUTPUT_FILE}; VERIFIER_PID=''`,
    'fi',
  ];
}

/**
 * Shell lines that wait for the verifier started by startVerifierLines; a failure is left in its output file for
 * IngestRepetition to name.
 */
export function waitVerifierLines(): string[] {
  return [
    `if [ -n "$VERIFIER_PID" ]; then wait "$VERIFIER_PID" || ` +
      `echo "rmqbench verifier: exited with status $?" >> ${VERIFIER_OUTPUT_FILE}; fi`,
  ];
}
