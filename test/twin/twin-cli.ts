/**
 * npm run twin -- --target aws|azure [--cdk-out DIR] [--plan FILE]
 *
 * Deploys a cloud assembly into the twin (default: examples/controller synthesized now) and runs
 * `rmqbench run <plan> --target aws`, unchanged, against it, printing the twin's stages and the CLI's own output.
 * Exit code: the CLI's.
 */
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startAwsTwin } from './aws-twin';
import { twinTempFolder } from './temp-folders';
import { startAzureTwin } from './azure/azure-twin';
import { adoptAzureAssembly, givenSecretArn } from './azure/given-assembly';

const ROOT = resolve(__dirname, '../..');

/**
 * The acceptance plan: 3 RabbitMQ nodes through the load balancer, two workloads of one repetition, one killing the
 * leader. The steady workload is fixed work (3,000 messages at 200 msg/s, ~15 s, 60 s allowed): PerfTest's time limit
 * counts its own setup, and the first declaration of the quorum queue by a fresh JVM on a 2-core machine busy with the
 * three nodes and the twin took 4 to 9 s (more on CI's slower machine), so a timed first repetition came out seconds
 * short of its duration and was recorded as failed (a twin artefact: in the cloud the declaration takes
 * milliseconds); fixed work is judged by its message count instead. The failover workload stays timed: its fault is
 * placed on PerfTest's clock, at 15 s: at 10 s a CI rehearsal's Azure twin run found no verifier queue yet (the
 * verifier's JVM had not declared it on the busy machine; InjectFault now waits for it), and at 20 s another's leader
 * lookup took 15 s on the busy machine, so the kill came at 35 s of 40, and a load generator whose connections it broke
 * had no time left to recover: its CSV ended at 36 s and the repetition was recorded as incomplete. 60 s: azure refuses
 * a leader fault with less than 45 s after atSeconds (its Run Commands take 20 s or more each).
 */
export const TWIN_PLAN_YAML =
  `name: twin
repetitions: 1
pauseSecondsBetweenRepetitions: 0
clusters:
  - { name: three, nodes: 3, instanceType: m5.xlarge, topology: { type: quorum } }
workloads:
  - { name: steady, producers: 1, consumers: 1, messageCount: 3000, durationSeconds: 60, publishRateLimit: 200 }
  - { name: failover, producers: 1, consumers: 1, durationSeconds: 60, publishRateLimit: 200, ` +
  `fault: { action: kill, node: leader, atSeconds: 15, healAtSeconds: 25 } }
`;

/**
 * A plan as a user writes it to compare Kafka and NATS: three brokers each, Kafka with acks=all and two in-sync
 * replicas on a replicated topic, NATS on an R3 file stream (its default), one producer and one consumer each; in each
 * the leader of the lost-message verifier's topic or stream is killed mid-run and started again (issue 28).
 */
export const TWIN_BROKERS_PLAN_YAML =
  `name: twin-brokers
repetitions: 1
pauseSecondsBetweenRepetitions: 0
clusters:
  - { name: kafka-three, broker: kafka, nodes: 3, instanceType: m5.xlarge }
  - { name: nats-three, broker: nats, nodes: 3, instanceType: c5.xlarge, syncInterval: always }
workloads:
  - name: kafka-steady
    clusters: [kafka-three]
    producers: 1
    consumers: 1
    messageSizeBytes: 100
    publishRateLimit: 500
    durationSeconds: 60
    partitions: 3
    replicationFactor: 3
    minInsyncReplicas: 2
    acks: all
    fault: { action: kill, node: leader, atSeconds: 12, healAtSeconds: 20 }
  - { name: nats-steady, clusters: [nats-three], messageSizeBytes: 100, publishRateLimit: 200, durationSeconds: 55, ` +
  `replicas: 3, fault: { action: kill, node: leader, atSeconds: 10, healAtSeconds: 18 } }
`;

/** What `show --json` holds of a repetition's fault. */
export type Faulted = {
  scenarioId: string;
  failover?: {
    fault: { nodeName?: string; healedAtSeconds?: number };
    published: number;
    confirmed: number;
    lostMessages: number;
  };
  uncountedFault?: { fault: { nodeName: string }; reason: string };
};

/** Each repetition's fault in plan order (Kafka, then NATS): the node it hit, and whether the verifier counted it. */
export const failoverSummaries = (repetitions: readonly Faulted[]) =>
  [...repetitions]
    .sort((a, b) => a.scenarioId.localeCompare(b.scenarioId))
    .map((repetition) =>
      repetition.failover
        ? {
            node: repetition.failover.fault.nodeName,
            counted: repetition.failover.confirmed > 0,
            lost: repetition.failover.lostMessages,
            healed: repetition.failover.fault.healedAtSeconds !== undefined,
          }
        : { node: repetition.uncountedFault?.fault.nodeName, uncounted: repetition.uncountedFault?.reason },
    );

/**
 * The acceptance runs' plan (issue 27 through the twins): the same cluster with two load generators, each workload
 * split over them by queue (two quorum queues, a producer and a consumer each per generator). Both generators start
 * their PerfTest at the shared start over SSM or Run Command and upload under generator-<i>/; the failover workload's
 * verifier runs on the first. The negative tests keep the one-generator plan above (one VM less to boot).
 */
export const TWIN_ACCEPTANCE_PLAN_YAML = TWIN_PLAN_YAML.replace(
  'topology: { type: quorum } }',
  'topology: { type: quorum }, loadGenerators: 2 }',
).replace(/producers: 1, consumers: 1,/g, 'producers: 2, consumers: 2, queues: 2,');

/** `text` with `from` replaced by `to`; throws when `from` is not in it (a plan changed under a derived one). */
function replacedOnce(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`twin plan: "${from}" not found`);
  return text.replace(from, to);
}

/**
 * The AWS twins' plans: their fault workloads as long as AWS needs. The 60 s and 55 s above are for Azure, which
 * refuses a fault whose Run Commands may land after its repetition (45 s after atSeconds; d2c52b0); AWS has no such
 * rule, and 40 s with the kill at 15 s left a load generator whose connections broke time to recover (8d44217).
 */
export const TWIN_AWS_ACCEPTANCE_PLAN_YAML = replacedOnce(
  TWIN_ACCEPTANCE_PLAN_YAML,
  'durationSeconds: 60, publishRateLimit: 200, fault',
  'durationSeconds: 40, publishRateLimit: 200, fault',
);
export const TWIN_AWS_BROKERS_PLAN_YAML = replacedOnce(
  replacedOnce(TWIN_BROKERS_PLAN_YAML, '    durationSeconds: 60\n', '    durationSeconds: 40\n'),
  'durationSeconds: 55, ',
  'durationSeconds: 35, ',
);

/** The acceptance plan for the Azure twin: the same plan on a Standard_D2s_v5 cluster. */
export const TWIN_AZURE_PLAN_YAML = TWIN_ACCEPTANCE_PLAN_YAML.replace('m5.xlarge', 'Standard_D2s_v5');

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : undefined;
}

export function synthesizeController(context: Record<string, string> = {}): string {
  const outdir = twinTempFolder('rmqbench-twin-cdkout-');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { buildControllerApp } = require(
    join(ROOT, 'dist/examples/controller/controller-app.js'),
  ) as typeof import('../../examples/controller/controller-app');
  buildControllerApp({ outdir, context }).synth();
  return outdir;
}

/** The CLI's own arguments after the twin's options. */
function cliArguments(): string[] {
  return process.argv
    .slice(2)
    .filter(
      (_a, i, all) =>
        !['--target', '--cdk-out', '--plan'].includes(all[i]!) &&
        !['--target', '--cdk-out', '--plan'].includes(all[i - 1]!),
    );
}

/** Runs `rmqbench run <plan> --target <target>` against the twin's endpoints; resolves with its exit code. */
async function runCli(planFile: string, target: 'aws' | 'azure', env: Record<string, string>): Promise<number> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'dist/bin/rmqbench.js'), 'run', planFile, '--target', target, ...cliArguments()],
    { env: { ...process.env, ...env }, stdio: 'inherit' },
  );
  return new Promise<number>((resolveCode) => child.once('exit', (exitCode) => resolveCode(exitCode ?? 1)));
}

async function mainAzure(planFile: string): Promise<number> {
  const given = argument('--cdk-out');
  // A given assembly is checked before the twin starts: it must name the service principal's secret it replaces.
  if (given) console.error(`[twin] using the cloud assembly ${given} (secret ${givenSecretArn(given)})`);
  const twin = await startAzureTwin({
    synthesize: (context) => {
      if (!given) return synthesizeController(context);
      const copy = twinTempFolder('rmqbench-twin-given-');
      const replaced = adoptAzureAssembly(given, copy, context.azureCredentialsSecretArn!);
      console.error(`[twin] deploying a copy of ${given} with ${context.azureCredentialsSecretArn} for ${replaced}`);
      return copy;
    },
    log: (line) => console.error(line),
  });
  try {
    console.error(`[twin] running rmqbench run ${planFile} --target azure against ${twin.env.AWS_ENDPOINT_URL}`);
    const code = await runCli(planFile, 'azure', twin.env);
    const denied = twin.aws.gateway.decisions.filter((decision) => !decision.allowed);
    console.error(`[twin] ${twin.aws.gateway.decisions.length} IAM decisions, ${denied.length} denied`);
    return code;
  } finally {
    await twin.stop();
  }
}

async function main(): Promise<number> {
  const target = argument('--target') ?? 'aws';
  if (target !== 'aws' && target !== 'azure') {
    console.error(`twin: --target must be aws or azure (got ${target})`);
    return 2;
  }
  if (target === 'azure') {
    const scratch = twinTempFolder('rmqbench-twin-plan-');
    try {
      const planFile = argument('--plan') ?? join(scratch, 'twin.yaml');
      if (!argument('--plan')) writeFileSync(planFile, TWIN_AZURE_PLAN_YAML);
      return await mainAzure(planFile);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  const given = argument('--cdk-out');
  console.error(given ? `[twin] using the cloud assembly ${given}` : '[twin] synthesizing examples/controller');
  const cdkOut = given ?? synthesizeController();
  let planFile = argument('--plan');
  const scratch = twinTempFolder('rmqbench-twin-plan-');
  if (!planFile) {
    planFile = join(scratch, 'twin.yaml');
    writeFileSync(planFile, TWIN_ACCEPTANCE_PLAN_YAML);
  }
  const twin = await startAwsTwin({ cdkOut, clusterSubnets: 40, log: (line) => console.error(line) });
  try {
    console.error(
      `[twin] ${twin.stackName} deployed; running rmqbench run ` +
        `${planFile} --target aws against ${twin.env.AWS_ENDPOINT_URL}`,
    );
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'dist/bin/rmqbench.js'),
        'run',
        planFile,
        '--target',
        'aws',
        ...process.argv
          .slice(2)
          .filter(
            (_a, i, all) =>
              !['--target', '--cdk-out', '--plan'].includes(all[i]!) &&
              !['--target', '--cdk-out', '--plan'].includes(all[i - 1]!),
          ),
      ],
      {
        env: { ...process.env, ...twin.env },
        stdio: 'inherit',
      },
    );
    const code = await new Promise<number>((resolveCode) =>
      child.once('exit', (exitCode) => resolveCode(exitCode ?? 1)),
    );
    const denied = twin.gateway.decisions.filter((decision) => !decision.allowed);
    console.error(`[twin] ${twin.gateway.decisions.length} IAM decisions, ${denied.length} denied`);
    for (const decision of denied)
      console.error(`[twin]   denied: ${decision.principal} ${decision.action} ${decision.resource}`);
    return code;
  } finally {
    await twin.stop();
    rmSync(scratch, { recursive: true, force: true });
    if (!given) rmSync(cdkOut, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(`twin: ${error.message}`);
      process.exit(1);
    },
  );
}
