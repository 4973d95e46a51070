export * from './RabbitMqCluster';
export * from './LoadGenerator';
export * from './rabbitmq-release';
export * from './instance-tiers';
export * from './perf-test-artifacts';
export * from './BenchmarkController';
export * from './KafkaCluster';
export * from './kafka-artifacts';
export { skipCheckov } from './checkov';
