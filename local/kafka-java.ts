import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KAFKA_BROKER_LOG4J, KAFKA_TOOL_LOG4J } from '../core/kafka/kafka-broker-log4j';
import { ManagedProcess, ProcessRegistry, StartOptions } from './processes';

/**
 * Small heaps: the brokers and the tools share two cores and the memory of a laptop with other work.
 * The broker's own default is -Xmx1G -Xms1G (bin/kafka-server-start.sh); a benchmark topic of a few hundred MB
 * needs far less, because Kafka keeps its log in the page cache, not the heap.
 */
export const KAFKA_BROKER_HEAP = ['-Xmx256m', '-Xms128m'] as const;
export const KAFKA_TOOL_HEAP = ['-Xmx256m', '-Xms64m'] as const;

/**
 * log4j2 configurations (properties format, https://logging.apache.org/log4j/2.x/manual/configuration.html):
 * the broker logs INFO to its console output (the node's stdout.log, whose tail a failed start shows); the tools
 * log errors only, on stderr, so that their measurements stay readable, and the consumer's partition assignment
 * ("Adding newly assigned partitions", logged at INFO by ConsumerRebalanceListenerInvoker), which tells that a
 * consumer has joined its group (CONSUMER_JOINED).
 */
const BROKER_LOG4J = KAFKA_BROKER_LOG4J;
const TOOL_LOG4J = KAFKA_TOOL_LOG4J;

/** The line a consumer logs once the group gave it its partitions (possibly none). */
export { CONSUMER_JOINED } from '../core/kafka/kafka-broker-log4j';

/** Writes the two log4j2 files into `dir` and returns their paths. */
export function writeLog4jConfigs(dir: string): { broker: string; tool: string } {
  const broker = join(dir, 'log4j2-broker.properties');
  const tool = join(dir, 'log4j2-tool.properties');
  writeFileSync(broker, BROKER_LOG4J);
  writeFileSync(tool, TOOL_LOG4J);
  return { broker, tool };
}

/** Starts a Kafka JVM through the registry, which refuses once the run is being stopped (ProcessRegistry.start). */
export function startKafkaProcess(
  processes: ProcessRegistry,
  name: string,
  command: string,
  args: readonly string[],
  options: StartOptions,
): ManagedProcess {
  return processes.start(name, command, args, options);
}

/** `java` arguments for a main class from the Kafka jars folder. */
export function javaArgs(
  jarsDir: string,
  log4jConfig: string,
  heap: readonly string[],
  mainClass: string,
  args: readonly string[],
): string[] {
  // An English locale: the tools print rates with printf, whose decimal separator follows the JVM's locale.
  return [
    ...heap,
    '-XX:+UseParallelGC',
    '-Duser.language=en',
    '-Duser.country=US',
    // ConsumerPerformance prints its rows' times in the JVM's zone; the parser reads them as UTC.
    '-Duser.timezone=UTC',
    `-Dlog4j2.configurationFile=${log4jConfig}`,
    '-cp',
    `${jarsDir}/*`,
    mainClass,
    ...args,
  ];
}

export interface JavaToolResult {
  readonly exitCode: number | null;
  /** stdout and stderr as written to the log file. */
  readonly output: string;
  readonly timedOut: boolean;
}

/**
 * Runs a Kafka command-line tool to its end (registered, so Ctrl-C stops it too), with a time limit;
 * its output goes to `logPath` and is returned.
 */
export async function runJavaTool(options: {
  readonly processes: ProcessRegistry;
  readonly name: string;
  readonly jarsDir: string;
  readonly log4jConfig: string;
  readonly mainClass: string;
  readonly args: readonly string[];
  readonly logPath: string;
  readonly timeoutMs: number;
  readonly javaCommand?: string;
  readonly onLine?: StartOptions['onLine'];
}): Promise<JavaToolResult> {
  const child = startKafkaProcess(
    options.processes,
    options.name,
    options.javaCommand ?? 'java',
    javaArgs(options.jarsDir, options.log4jConfig, KAFKA_TOOL_HEAP, options.mainClass, options.args),
    {
      logPath: options.logPath,
      ...(options.onLine ? { onLine: options.onLine } : {}),
    },
  );
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void child.stop(1000);
  }, options.timeoutMs);
  const status = await child.exited;
  clearTimeout(timer);
  await child.stop(0);
  return {
    exitCode: status.code,
    output: existsSync(options.logPath) ? readFileSync(options.logPath, 'utf8') : '',
    timedOut,
  };
}
