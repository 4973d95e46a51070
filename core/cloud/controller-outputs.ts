/**
 * The controller stack's contract with the CLI: its default name (examples/controller deploys it under this name) and
 * the CloudFormation output keys that `rmqbench run/watch --target aws` and `--store aws` read.
 */
export const DEFAULT_CONTROLLER_STACK = 'RmqbenchController';

/** Stack output names the CLI and the README refer to. */
export const CONTROLLER_OUTPUTS = {
  stateMachineArn: 'StateMachineArn',
  resultsTableName: 'ResultsTableName',
  rawOutputBucketName: 'RawOutputBucketName',
} as const;
