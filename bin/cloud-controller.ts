import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import { CONTROLLER_OUTPUTS, DEFAULT_CONTROLLER_STACK } from '../core/cloud/controller-outputs';
import { ResultsStore } from '../store/results-store';

/** What the CLI needs of a deployed BenchmarkController. */
export interface ControllerEndpoints {
  readonly stateMachineArn: string;
  readonly tableName: string;
  /** Absent when neither the stack nor the user named it (--state-machine-arn and --table given). */
  readonly bucketName?: string;
}

/** How the user named the controller: a stack (default the example app's) or the ARN and table directly. */
export interface ControllerSelection {
  readonly stack?: string;
  readonly stateMachineArn?: string;
  readonly table?: string;
}

/** The controller cannot be found or its stack lacks an output; the message says what to give instead. */
export class ControllerLookupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ControllerLookupError';
  }
}

/**
 * The AWS SDK v3 clients the cloud commands use. Region and credentials come from the SDK's default chain
 * (AWS_REGION / AWS_PROFILE / ~/.aws/config, SSO, instance roles:
 * https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html); `--region` overrides the region.
 * AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_<SERVICE>) points every client at another endpoint, e.g. an emulator
 * (https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html); the tests use it for moto.
 */
export interface AwsClients {
  readonly cfn: CloudFormationClient;
  readonly sfn: SFNClient;
  readonly dynamodb: DynamoDBClient;
}

export function awsClients(region?: string): AwsClients {
  const config = region ? { region } : {};
  return { cfn: new CloudFormationClient(config), sfn: new SFNClient(config), dynamodb: new DynamoDBClient(config) };
}

/**
 * The state machine, results table and bucket: from the flags when they name them, else from the controller
 * stack's outputs (DescribeStacks:
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html,
 * Outputs[].OutputKey/OutputValue). `need` says which the command uses, so that e.g. `--store aws --table T` reads no
 * stack.
 */
export async function resolveController(
  cfn: CloudFormationClient,
  selection: ControllerSelection,
  need: { stateMachine: boolean },
): Promise<ControllerEndpoints> {
  if (selection.table !== undefined && (!need.stateMachine || selection.stateMachineArn !== undefined)) {
    return { stateMachineArn: selection.stateMachineArn ?? '', tableName: selection.table };
  }
  const stackName = selection.stack ?? DEFAULT_CONTROLLER_STACK;
  let outputs: Record<string, string>;
  try {
    const stack = (await cfn.send(new DescribeStacksCommand({ StackName: stackName }))).Stacks?.[0];
    outputs = Object.fromEntries(
      (stack?.Outputs ?? [])
        .filter((output) => output.OutputKey && output.OutputValue)
        .map((output) => [output.OutputKey!, output.OutputValue!]),
    );
  } catch (error) {
    const region = await cfn.config.region().catch(() => 'the default region');
    if (/does not exist/.test((error as Error).message)) {
      throw new ControllerLookupError(
        `no CloudFormation stack "${stackName}" in ${region}: deploy examples/controller (README, "Benchmark ` +
          `in the cloud"), or name the controller with --stack NAME, --state-machine-arn ARN and --table NAME`,
      );
    }
    throw new ControllerLookupError(`could not read stack "${stackName}" in ${region}: ${(error as Error).message}`);
  }
  const output = (key: string) => {
    const value = outputs[key];
    if (value === undefined)
      throw new ControllerLookupError(
        `stack "${stackName}" has no output ${key} (outputs: ${Object.keys(outputs).join(', ') || 'none'}): is ` +
          `it an rmqbench controller stack (examples/controller)?`,
      );
    return value;
  };
  const stateMachineArn =
    selection.stateMachineArn ??
    (need.stateMachine
      ? output(CONTROLLER_OUTPUTS.stateMachineArn)
      : (outputs[CONTROLLER_OUTPUTS.stateMachineArn] ?? ''));
  const tableName = selection.table ?? output(CONTROLLER_OUTPUTS.resultsTableName);
  const bucketName = outputs[CONTROLLER_OUTPUTS.rawOutputBucketName];
  return { stateMachineArn, tableName, ...(bucketName ? { bucketName } : {}) };
}

/** The controller's results table through the SDK's default chain (no table is created: the construct owns it). */
export function cloudStore(dynamodb: DynamoDBClient, tableName: string): ResultsStore {
  return new ResultsStore(dynamodb, tableName, 'DynamoDB (--store aws)');
}
