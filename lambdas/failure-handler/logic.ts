import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { ResultsStore } from '../../store/results-store';
import { deleteStack, stacksOfRun } from '../shared/aws-cluster';

export interface ExecutionStatusChange {
  readonly detail: { readonly name: string; readonly status: string; readonly input?: string; readonly cause?: string };
}

/** Safety net for FAILED / TIMED_OUT / ABORTED executions: tears down the run's stacks and records the run FAILED (keeping an error already recorded). */
export async function handleFailedExecution(cfn: CloudFormationClient, store: ResultsStore, roleArn: string, event: ExecutionStatusChange, now = () => new Date().toISOString()) {
  const input = JSON.parse(event.detail.input ?? '{}') as { runId?: string; plan?: { name?: string } };
  const runId = input.runId ?? `${input.plan?.name ?? 'plan'}-${event.detail.name}`;
  const stacks = await stacksOfRun(cfn, runId);
  for (const stack of stacks) await deleteStack(cfn, roleArn, stack);
  const stored = await store.getRun(runId);
  if (stored && (stored.run.status === 'RUNNING' || !stored.run.error)) {
    await store.finishRun(runId, 'FAILED', now(), stored.run.error ?? `execution ${event.detail.status}${event.detail.cause ? `: ${event.detail.cause}` : ''}`);
  }
  return { runId, deleted: stacks };
}
