import { validatePlan } from '../../core/plan';
import { buildPerfTestArgs, redactPerfTestArgs } from '../../core/perftest-args';
import type { ScheduledRepetition } from '../../state-machines/schedule';

/** Shell-quotes one word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The AWS-RunShellScript script for one repetition: PerfTest against the load balancer with the admin
 * credentials read on the instance (never in the command or its logs), then stdout and CSV to S3.
 */
export function perfTestScript(options: { plan: unknown; runId: string; item: ScheduledRepetition; endpoint: string; secretArn: string; bucket: string }): { script: string; redactedArgs: string[] } {
  const plan = validatePlan(options.plan, 'the execution input');
  const scenario = plan.scenarios.find((candidate) => candidate.id === options.item.scenarioId);
  if (!scenario) throw new Error(`scenario ${options.item.scenarioId} is not in plan ${plan.name}`);
  const host = options.endpoint.replace(/^amqps?:\/\//, '');
  const args = buildPerfTestArgs({ workload: scenario.workload, topology: scenario.cluster.topology, queueArguments: {}, uris: [`amqp://USER:PASS@${host}`], csvPath: 'perftest.csv', predeclared: false });
  const prefix = `s3://${options.bucket}/runs/${options.runId}/raw/${options.item.rawKey.replace(/\.json$/, '')}`;
  const script = [
    'set -euo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK"',
    `SECRET=$(aws secretsmanager get-secret-value --secret-id ${quote(options.secretArn)} --query SecretString --output text)`,
    'USER=$(echo "$SECRET" | python3 -c "import json,sys,urllib.parse;print(urllib.parse.quote(json.load(sys.stdin)[\'username\'],safe=\'\'))")',
    'PASS=$(echo "$SECRET" | python3 -c "import json,sys,urllib.parse;print(urllib.parse.quote(json.load(sys.stdin)[\'password\'],safe=\'\'))")',
    `java -cp '/opt/perftest/*' com.rabbitmq.perf.PerfTest ${args.map((arg) => (arg.includes('USER:PASS') ? `"${arg.replace('USER:PASS', '$USER:$PASS')}"` : quote(arg))).join(' ')} > stdout.txt 2>&1 || echo "exit $?" >> stdout.txt`,
    `aws s3 cp stdout.txt ${quote(`${prefix}/stdout.txt`)} && aws s3 cp perftest.csv ${quote(`${prefix}/perftest.csv`)}`,
  ].join('\n');
  return { script, redactedArgs: redactPerfTestArgs(args) };
}
