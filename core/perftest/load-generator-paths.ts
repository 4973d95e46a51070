/**
 * Where a load generator's boot installs the benchmark tools, and where the controller's scripts find them: shared by
 * the boot scripts (cdk/user-data/load-generator.ts, bicep's cloud-init) and the functions that write the run scripts
 * (lambdas/start-repetition, lambdas/shared/kafka-load-generator.ts), so that neither side imports the other.
 */
export const PERF_TEST_HOME = '/opt/perf-test';
/**
 * The command the boot script installs to run PerfTest from PERF_TEST_HOME/lib; the controller's run script calls it by
 * this path.
 */
export const PERF_TEST_COMMAND = '/usr/local/bin/perf-test';
export const KAFKA_TOOLS_HOME = '/opt/kafka-tools';
/**
 * The command the boot script installs to run a Kafka tool by its main class (`kafka-tool
 * org.apache.kafka.tools.TopicCommand
 * --bootstrap-server ...`); the controller's Kafka run script (lambdas/start-repetition/kafka-script.ts) calls it by
 * this path.
 */
export const KAFKA_TOOL_COMMAND = '/usr/local/bin/kafka-tool';
/** Written last by a load generator boot that installed the Kafka tools: the controller's scripts wait for it. */
export const KAFKA_TOOLS_READY_FILE = `${KAFKA_TOOLS_HOME}/READY`;
/** Where a load generator with the NATS tools keeps the Go toolchain its boot installs (GOROOT). */
export const GO_HOME = '/opt/go';
/**
 * Where the controller's NATS scripts build and keep the load client (one folder per source hash) and Go's module and
 * build caches.
 */
export const NATS_LOAD_HOME = '/opt/nats-load';
/** Written last by a load generator boot that installed the Go toolchain: the controller's NATS scripts wait for it. */
export const NATS_TOOLS_READY_FILE = `${NATS_LOAD_HOME}/READY`;
