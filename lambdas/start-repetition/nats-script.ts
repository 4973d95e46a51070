import { randomBytes } from 'node:crypto';
import { AWS_CLI_SETTINGS } from '../../core/cloud/aws-cli-environment';
import {
  natsLoadArgs,
  natsLoadExpectations,
  natsRunSettings,
  NATS_DRAIN_SECONDS,
} from '../../core/nats/nats-load-args';
import { NATS_LOAD_LOG_FILE, NATS_LOAD_OUTPUT_FILE, type NatsLoadExpectations } from '../../core/nats/nats-load-output';
import type { Scenario } from '../../core/plan/plan';
import type { ScheduledRepetition } from '../../state-machines/schedule';
import { quote } from '../shared/kafka-load-generator';
import {
  checkedServerUrls,
  natsBuildLines,
  NATS_BUILD_SECONDS,
  NATS_TOOLS_READY_WAIT_SECONDS,
} from '../shared/nats-load-generator';
import { brokerFaultVerifier, natsVerifierStartLines } from '../shared/broker-verifier-lines';
import { scenarioOf } from './kafka-script';
import { rawPrefix } from './logic';

/**
 * The NATS repetition as an AWS-RunShellScript script on the load generator, the same steps as the local target's
 * runNatsLoad (local/nats-load.ts): the load client (built on the load generator from the source the script carries,
 * lambdas/shared/nats-load-generator.ts) creates a fresh stream with the workload's settings and one durable consumer,
 * runs its consumers and producers, and deletes the stream. Its JSON lines go to NATS_LOAD_OUTPUT_FILE, its console to
 * NATS_LOAD_LOG_FILE; both are uploaded whatever happened. The servers listen without authentication inside the
 * controller VPC (they admit the load generator's security group only), so the script carries no credential.
 */

/** Seconds the client may run past durationSeconds and the drain before it is stopped (the local target's grace). */
export const NATS_LOAD_GRACE_SECONDS = 60;

export interface NatsRepetitionScript {
  readonly script: string;
  /** Every file the script uploads (the load client's output, a fault's verifier output). */
  readonly files: readonly string[];
  /** The load client's command line as recorded with the repetition. */
  readonly args: string[];
  readonly expectations: NatsLoadExpectations;
  readonly timeoutSeconds: number;
}

/**
 * One NATS repetition. `uploadCommand(file)` uploads one file of the working directory. A client stopped at its limit
 * (`timeout`) leaves its output cut short: the parser then fails the repetition naming what is missing, and the script
 * exits 1 with the reason on stderr.
 */
export function natsRepetitionScript(options: {
  scenario: Scenario;
  serverUrls: string;
  uploadCommand: (file: string) => string;
  suffix?: string;
  /** The repetition's index in the run (ScheduledRepetition.index): names the verifier's stream of a fault. */
  index?: number;
}): NatsRepetitionScript {
  const { scenario } = options;
  const { workload } = scenario;
  const urls = checkedServerUrls(options.serverUrls).split(',');
  const settings = natsRunSettings(workload, scenario.cluster.nodes);
  const suffix = options.suffix ?? randomBytes(3).toString('hex');
  // Stream names may not hold '.', '*', '>' or spaces; workload names are lower-case letters, digits and dashes.
  const args = natsLoadArgs({
    servers: scenario.cluster.connection === 'direct' ? urls.slice(0, 1) : urls,
    stream: `rmqbench-${workload.name}-${suffix}`,
    subject: `rmqbench.${workload.name}.${suffix}`,
    workload,
    settings,
  });
  const limit = workload.durationSeconds + NATS_DRAIN_SECONDS + NATS_LOAD_GRACE_SECONDS;
  // A fault's verifier beside the load client, on every server URL (it must reach the stream's new leader).
  const verifier = brokerFaultVerifier(scenario, options.index, 'NATS stream', (index, seconds) =>
    natsVerifierStartLines({ servers: urls, index, seconds, settings }),
  );
  const files = [NATS_LOAD_OUTPUT_FILE, NATS_LOAD_LOG_FILE, ...verifier.files];
  const script = [
    'set -uo pipefail',
    'WORK=$(mktemp -d) && cd "$WORK" || exit 1',
    `trap 'cd /; rm -rf "$WORK"' EXIT`,
    ...natsBuildLines(),
    "ERROR=''",
    `touch ${files.join(' ')}`,
    ...verifier.start,
    `timeout ${limit} "$NATS_LOAD" ${args.map(quote).join(' ')} -output ${NATS_LOAD_OUTPUT_FILE} ` +
      `> ${NATS_LOAD_LOG_FILE} 2>&1`,
    'STATUS=$?',
    ...verifier.wait,
    `if [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; then ERROR="the NATS load client did not finish within ` +
      `${limit} s (durationSeconds + ${NATS_DRAIN_SECONDS} s drain + ${NATS_LOAD_GRACE_SECONDS}) and was stopped"; ` +
      `elif [ "$STATUS" -ne 0 ]; then ERROR="the NATS load client exited with $STATUS"; fi`,
    'UPLOAD_FAILED=0',
    ...files.map((file) => `${options.uploadCommand(file)} || UPLOAD_FAILED=1`),
    `[ "$UPLOAD_FAILED" = 0 ] || { echo "rmqbench: could not upload the NATS load client's output" >&2; exit 1; }`,
    'if [ -n "$ERROR" ]; then',
    '  echo "$ERROR" >&2',
    `  tail -n 5 ${NATS_LOAD_LOG_FILE} | cut -c1-400 >&2`,
    '  exit 1',
    'fi',
  ].join('\n');
  return {
    script,
    files,
    args: ['rmqbench-nats-load', ...args],
    expectations: natsLoadExpectations(workload, settings),
    timeoutSeconds: NATS_TOOLS_READY_WAIT_SECONDS + NATS_BUILD_SECONDS + limit + 60,
  };
}

/**
 * The AWS load generator's NATS repetition: the files go to runs/<runId>/raw/<repetition>/ with `aws s3 cp` and the
 * instance role, which may write under runs/ only (cdk/LoadGenerator.ts), as PerfTest's do.
 */
export function awsNatsRepetitionScript(options: {
  plan: unknown;
  runId: string;
  item: ScheduledRepetition;
  serverUrls: string;
  bucket: string;
}): NatsRepetitionScript {
  const prefix = `s3://${options.bucket}/${rawPrefix(options.runId, options.item)}`;
  return natsRepetitionScript({
    scenario: scenarioOf(options.plan, options.item),
    serverUrls: options.serverUrls,
    uploadCommand: (file) => `${AWS_CLI_SETTINGS} aws s3 cp ${file} ${quote(`${prefix}/${file}`)}`,
    index: options.item.index,
  });
}
