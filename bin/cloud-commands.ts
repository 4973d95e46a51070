import type { PriceCatalog } from '../core/cost/cost-catalog';
import type { Plan } from '../core/plan/plan';
import { regionMismatch } from '../core/plan/plan-target';
import { newRunId } from '../local/run-plan';
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
}

/** A failure before anything was started (no controller, over budget): exit 1 with this message. */
export class CloudCommandError extends Error {}

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
