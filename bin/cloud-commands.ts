import type { PriceCatalog } from '../core/cost/cost-catalog';
import type { Plan } from '../core/plan/plan';
import { regionMismatch } from '../core/plan/plan-target';
import { newRunId } from '../local/run-plan';
import { DEFAULT_CLUSTER_CONCURRENCY } from '../core/cost/estimate';
import { checkVcpuQuota } from './vcpu-quota-check';
import { CloudCommandError } from './cli/cloud-command-error';
import {
  awsClients,
  cloudStore,
  ControllerLookupError,
  resolveController,
  type ControllerSelection,
} from './cloud-controller';
import {
  askOnTerminal,
  checkBudget,
  findExecution,
  followCloudRun,
  startCloudRun,
  type CloudCommandResult,
} from './cloud-run-command';

/** The flags of `run --target aws|azure` and `watch`. */
export interface CloudCommandOptions extends ControllerSelection {
  readonly target: 'aws' | 'azure';
  readonly json: boolean;
  readonly region?: string;
  readonly detach?: boolean;
  readonly pollSeconds?: number;
  /** aws: start without comparing the plan's vCPUs with the account's On-Demand quota. */
  readonly skipQuotaCheck?: boolean;
}

/**
 * Where a cloud run is priced before it starts. On aws the clusters launch in the controller's region (the SDK's, or
 * --region), so the run is priced there, and a plan that names another region is refused here, as ValidatePlan
 * would refuse it, before anything starts. On azure they launch in the Azure location the controller was deployed
 * with, which the CLI does not know (--region is the controller's AWS region): the plan's azure region prices it, or
 * else the newest price of any region (undefined here).
 */
export function pricingRegion(
  plan: Plan,
  target: 'aws' | 'azure',
  controllerRegion: string | undefined,
): string | undefined {
  if (target === 'azure') return undefined;
  const planned = regionMismatch(plan, 'aws', controllerRegion);
  if (planned !== undefined) {
    throw new CloudCommandError(
      `the plan runs its clusters in ${planned} (region.aws), but the controller is in ${controllerRegion}: ` +
        'run it on a controller deployed there (--region), or change the plan; nothing was started',
    );
  }
  return controllerRegion;
}

/**
 * `rmqbench run <plan> --target aws|azure [--stack NAME | --state-machine-arn ARN] [--max-cost USD] [--detach]`:
 * the estimate first (refused over budget), then StartExecution, then the run followed to its end.
 */
export async function runInCloud(
  plan: Plan,
  options: CloudCommandOptions & { catalog: PriceCatalog; maxCost?: string; runId?: string },
): Promise<CloudCommandResult> {
  const clients = awsClients(options.region);
  const controllerRegion = options.region ?? (await clients.sfn.config.region().catch(() => undefined));
  const region = pricingRegion(plan, options.target, controllerRegion);
  const budget = checkBudget(plan, options.target, options.catalog, options.maxCost, region);
  process.stderr.write(budget.stdout);
  if (budget.exitCode !== 0) throw new CloudCommandError(`${budget.error ?? 'over budget'}; nothing was started`);
  if (options.target === 'aws' && region && !options.skipQuotaCheck) await refuseOverQuota(plan, region);
  const controller = await lookup(() => resolveController(clients.cfn, options, { stateMachine: true }));
  const runId = options.runId ?? newRunId(plan.name);
  const { executionArn, schedule } = await startCloudRun(
    clients.sfn,
    controller.stateMachineArn,
    plan,
    options.target,
    runId,
  );
  if (options.detach) {
    const stdout = options.json
      ? `${JSON.stringify({ runId, executionArn }, null, 2)}\n`
      : `started run ${runId}\nexecution ${executionArn}\nfollow it with: rmqbench watch ${runId}\n`;
    return { exitCode: 0, stdout };
  }
  return following((interrupted) =>
    followCloudRun(
      {
        ...clients,
        store: cloudStore(clients.dynamodb, controller.tableName),
        controller,
        json: options.json,
        progress: process.stderr,
        interrupted,
        ...askIfTerminal(),
        ...poll(options),
      },
      executionArn,
      schedule,
      options.target,
    ),
  );
}

/**
 * The account's On-Demand vCPU quota in the controller's region, before anything starts (bin/vcpu-quota-check.ts):
 * a run that would exceed it is refused with what to do; an unchecked quota is only noted.
 */
async function refuseOverQuota(plan: Plan, region: string): Promise<void> {
  const [{ EC2Client }, { ServiceQuotasClient }] = await Promise.all([
    import('@aws-sdk/client-ec2'),
    import('@aws-sdk/client-service-quotas'),
  ]);
  const ec2 = new EC2Client({ region });
  const quotas = new ServiceQuotasClient({ region });
  try {
    const outcome = await checkVcpuQuota(plan, region, { ec2, quotas }, DEFAULT_CLUSTER_CONCURRENCY);
    if (outcome.note) process.stderr.write(`${outcome.note}\n`);
    if (outcome.problem) throw new CloudCommandError(`${outcome.problem}; nothing was started`);
  } finally {
    ec2.destroy();
    quotas.destroy();
  }
}

/** `rmqbench watch <runId>`: follows a run started earlier (by `run --detach`, the console or a schedule). */
export async function watchInCloud(
  runId: string,
  options: Omit<CloudCommandOptions, 'target'>,
): Promise<CloudCommandResult> {
  const clients = awsClients(options.region);
  const controller = await lookup(() => resolveController(clients.cfn, options, { stateMachine: true }));
  const { executionArn, schedule } = await findExecution(clients.sfn, controller.stateMachineArn, runId);
  return following((interrupted) =>
    followCloudRun(
      {
        ...clients,
        store: cloudStore(clients.dynamodb, controller.tableName),
        controller,
        json: options.json,
        progress: process.stderr,
        interrupted,
        ...askIfTerminal(),
        ...poll(options),
      },
      executionArn,
      schedule,
      schedule.target,
    ),
  );
}

async function lookup<T>(resolve: () => Promise<T>): Promise<T> {
  try {
    return await resolve();
  } catch (error) {
    if (error instanceof ControllerLookupError) throw new CloudCommandError(error.message);
    throw error;
  }
}

/** Ctrl-C (or SIGTERM) stops following instead of killing the CLI, so that it can ask about the execution. */
async function following(
  follow: (interrupted: AbortSignal) => Promise<CloudCommandResult>,
): Promise<CloudCommandResult> {
  const controller = new AbortController();
  const onSignal = () => {
    process.stderr.write('\n');
    controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await follow(controller.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Only a person at a terminal is asked; a CI job interrupted leaves the execution running (and says how to stop it).
 */
function askIfTerminal(): { askToStop?: () => Promise<boolean> } {
  return process.stdin.isTTY && process.stderr.isTTY
    ? { askToStop: () => askOnTerminal('stop the execution? [y/N] ') }
    : {};
}

function poll(options: { pollSeconds?: number }): { pollMs?: number } {
  return options.pollSeconds === undefined ? {} : { pollMs: options.pollSeconds * 1000 };
}
