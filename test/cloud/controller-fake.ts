import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateStateMachineCommand, SFNClient } from '@aws-sdk/client-sfn';
import { CONTROLLER_OUTPUTS } from '../../core/cloud/controller-outputs';
import { validatePlan, type Plan } from '../../core/plan/plan';
import type { RepetitionRecord, RunRecord, RunStatus } from '../../core/results/result-model';
import { describe as stats } from '../../core/results/statistics';
import { ResultsStore } from '../../store/results-store';
import { motoClientConfig, type Moto } from './moto';

/**
 * A stand-in for a deployed controller in moto: the example app's stack outputs (StateMachineArn, ResultsTableName,
 * RawOutputBucketName), the results table with the real key schema (ResultsStore.ensureTable) and a state machine
 * that, like the real workflow, ends when the run record leaves RUNNING: FinishRun records the status before the
 * execution succeeds (RunSucceeded) or fails (RunFailed). moto executes it with its Step Functions parser, the
 * DynamoDB GetItem integration reading moto's table; the Lambda tasks of the real definition cannot run in moto
 * (no Lambda runtime here), so the test writes what they would write through the same ResultsStore.
 * The results table is moto's DynamoDB rather than DynamoDB Local: the stand-in state machine's GetItem integration
 * can only read a table inside the same emulator, and the CLI's ResultsStore is thereby checked against a second
 * DynamoDB implementation besides DynamoDB Local (GSI queries, batch writes, conditional updates).
 */
export interface FakeController {
  readonly stackName: string;
  readonly stateMachineArn: string;
  readonly tableName: string;
  readonly bucketName: string;
  readonly store: ResultsStore;
  readonly cfn: CloudFormationClient;
  readonly sfn: SFNClient;
  /** Closes the clients' keep-alive sockets. */
  destroy(): void;
}

export async function deployFakeController(
  moto: Moto,
  stackName = 'RmqbenchController',
  tableName = 'rmqbench-cloud-results',
  bucketName = 'rmqbench-raw-output',
): Promise<FakeController> {
  const config = motoClientConfig(moto);
  const cfn = new CloudFormationClient(config);
  const sfn = new SFNClient(config);
  const store = new ResultsStore(new DynamoDBClient(config), tableName, 'moto DynamoDB');
  await store.ensureTable();
  const definition = {
    StartAt: 'ReadRun',
    States: {
      ReadRun: {
        Type: 'Task',
        Resource: 'arn:aws:states:::dynamodb:getItem',
        Parameters: {
          TableName: tableName,
          Key: { PK: { 'S.$': "States.Format('RUN#{}', $.runId)" }, SK: { S: 'RUN' } },
        },
        ResultPath: '$.read',
        Next: 'Finished?',
      },
      'Finished?': {
        Type: 'Choice',
        Choices: [
          { Variable: '$.read.Item.status.S', StringEquals: 'FAILED', Next: 'RunFailed' },
          {
            Or: [
              { Variable: '$.read.Item.status.S', StringEquals: 'SUCCEEDED' },
              { Variable: '$.read.Item.status.S', StringEquals: 'PARTIAL' },
            ],
            Next: 'RunSucceeded',
          },
        ],
        Default: 'Poll',
      },
      Poll: { Type: 'Wait', Seconds: 1, Next: 'ReadRun' },
      RunFailed: { Type: 'Fail', Error: 'RunFailed', Cause: 'the run failed' },
      RunSucceeded: { Type: 'Succeed' },
    },
  };
  const { stateMachineArn } = await sfn.send(
    new CreateStateMachineCommand({
      name: `${stackName}-Workflow`,
      definition: JSON.stringify(definition),
      roleArn: 'arn:aws:iam::123456789012:role/rmqbench-workflow',
    }),
  );
  await cfn.send(
    new CreateStackCommand({
      StackName: stackName,
      TemplateBody: JSON.stringify({
        Resources: { RawOutput: { Type: 'AWS::S3::Bucket', Properties: { BucketName: bucketName } } },
        Outputs: {
          [CONTROLLER_OUTPUTS.stateMachineArn]: { Value: stateMachineArn },
          [CONTROLLER_OUTPUTS.resultsTableName]: { Value: tableName },
          [CONTROLLER_OUTPUTS.rawOutputBucketName]: { Value: { Ref: 'RawOutput' } },
        },
      }),
    }),
  );
  return {
    stackName,
    stateMachineArn: stateMachineArn!,
    tableName,
    bucketName,
    store,
    cfn,
    sfn,
    destroy: () => [cfn, sfn, store.client].forEach((client) => client.destroy()),
  };
}

export const CLOUD_PLAN_YAML = `name: cloud-e2e
repetitions: 2
pauseSecondsBetweenRepetitions: 5
clusters:
  - { name: small, nodes: 3, instanceType: c5.xlarge, topology: { type: quorum } }
workloads:
  - { name: w, producers: 1, consumers: 1, durationSeconds: 30 }
`;

export const cloudPlan = (): Plan =>
  validatePlan(
    {
      name: 'cloud-e2e',
      repetitions: 2,
      pauseSecondsBetweenRepetitions: 5,
      clusters: [{ name: 'small', nodes: 3, instanceType: 'c5.xlarge', topology: { type: 'quorum' } }],
      workloads: [{ name: 'w', producers: 1, consumers: 1, durationSeconds: 30 }],
    },
    'test',
  );

/** What RecordRunStart writes. */
export function runStarted(
  runId: string,
  plan: Plan,
  target: 'aws' | 'azure' = 'aws',
  startedAt = new Date().toISOString(),
): RunRecord {
  const { scenarios, ...planData } = plan;
  return {
    runId,
    planName: plan.name,
    plan: planData,
    target,
    status: 'RUNNING',
    startedAt,
    environment: { region: 'us-east-1' },
    scenarioIds: scenarios.map((scenario) => scenario.id),
  };
}

/** What IngestRepetition writes: a measured repetition (rate msg/s each second) or a failed one. */
export function repetitionRecord(
  runId: string,
  scenarioId: string,
  repetition: number,
  rate: number | null,
): RepetitionRecord {
  const common = {
    runId,
    scenarioId,
    repetition,
    startedAt: new Date().toISOString(),
    finishedAt: new Date().toISOString(),
    perfTestArgs: ['--producers', '1'],
  };
  if (rate === null) return { ...common, status: 'FAILED', error: 'PerfTest exited with code 1' };
  const samples = [1, 2, 3].map((time) => ({
    time,
    published: rate,
    returned: 0,
    confirmed: 0,
    nacked: 0,
    received: rate,
  }));
  return {
    ...common,
    status: 'SUCCEEDED',
    result: {
      summary: { sendRateAvg: rate, receiveRateAvg: rate },
      samples,
      sendRate: stats([rate, rate, rate]),
      receiveRate: stats([rate, rate, rate]),
    },
  };
}

export async function finishRun(store: ResultsStore, runId: string, status: RunStatus, error?: string) {
  await store.finishRun(runId, status, new Date().toISOString(), error);
}
