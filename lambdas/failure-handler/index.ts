import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ResultsStore } from '../../store/results-store';
import { deleteStack, stacksOfRun } from '../shared/aws-cluster';
import { requireEnv } from '../shared/env';

const roleArn = requireEnv('CLOUDFORMATION_ROLE_ARN');
const store = new ResultsStore(new DynamoDBClient({}), requireEnv('RESULTS_TABLE'));
const cfn = new CloudFormationClient({});

/** Safety net for FAILED / TIMED_OUT / ABORTED executions: tears down the run's stacks and records the run FAILED. */
export const handler = async (event: { detail: { name: string; status: string; input?: string; cause?: string } }) => {
  const input = JSON.parse(event.detail.input ?? '{}') as { runId?: string; plan?: { name?: string } };
  const runId = input.runId ?? `${input.plan?.name ?? 'plan'}-${event.detail.name}`;
  const stacks = await stacksOfRun(cfn, runId);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  const stored = await store.getRun(runId);
  if (stored && (stored.run.status === 'RUNNING' || !stored.run.error)) {
    await store.finishRun(runId, 'FAILED', new Date().toISOString(), stored.run.error ?? `execution ${event.detail.status}${event.detail.cause ? `: ${event.detail.cause}` : ''}`);
  }
  return { runId, deleted: stacks };
};
