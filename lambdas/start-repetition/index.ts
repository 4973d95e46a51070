import { SSMClient } from '@aws-sdk/client-ssm';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { startPerfTest } from '../shared/aws-cluster';
import { requireEnv } from '../shared/env';
import { perfTestScript } from './logic';

const bucket = requireEnv('RAW_OUTPUT_BUCKET');
const ssm = new SSMClient({});

export const handler = async (event: { runId: string; plan: unknown; item: ScheduledRepetition; readiness: { outputs: Record<string, string> } }) => {
  const output = (part: string) => Object.entries(event.readiness.outputs).find(([key]) => key.includes(part))?.[1] ?? '';
  const { script, redactedArgs } = perfTestScript({ plan: event.plan, runId: event.runId, item: event.item, endpoint: output('AmqpEndpoint'), secretArn: output('AdminSecretArn'), bucket });
  const started = await startPerfTest(ssm, output('InstanceId'), script, event.item.durationSeconds + 120);
  return { ...started, startedAt: new Date().toISOString(), perfTestArgs: redactedArgs, doneBy: new Date(Date.now() + (event.item.durationSeconds + 180) * 1000).toISOString() };
};
