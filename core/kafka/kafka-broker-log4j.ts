/**
 * The Kafka broker's log4j2 configuration (properties format), one for every target: INFO to the console, which the
 * local target keeps in the node's stdout.log (whose tail a failed start shows) and systemd's journal keeps on AWS
 * (`journalctl -u kafka`).
 */
export const KAFKA_BROKER_LOG4J = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
`;

/**
 * The tools' log4j2 configuration (ProducerPerformance, ConsumerPerformance, TopicCommand), one for every target:
 * errors
 * only, on stderr, so that their measurements stay readable, and the consumer's partition assignment ("Adding newly
 * assigned partitions", logged at INFO by ConsumerRebalanceListenerInvoker), which tells that a consumer has joined its
 * group (CONSUMER_JOINED). The local target and the AWS load generator's run script both wait for that line.
 */
export const KAFKA_TOOL_LOG4J = `status = warn
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ERROR
rootLogger.appenderRef.stderr.ref = STDERR
logger.assignment.name = org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker
logger.assignment.level = INFO
`;

/**
 * The text a consumer logs once the group gave it its partitions (possibly none); grep -F finds it on the load
 * generator.
 */
export const CONSUMER_JOINED_TEXT = 'Adding newly assigned partitions';
export const CONSUMER_JOINED = new RegExp(CONSUMER_JOINED_TEXT);
