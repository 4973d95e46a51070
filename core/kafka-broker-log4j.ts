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
