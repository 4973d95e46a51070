/** `rmqbench run`: a plan on localhost through the workflow definition, or on a deployed controller. */
import { join } from 'node:path';
import { Option, type Command } from 'commander';
import { aggregateRun, renderMarkdownReport } from '../../core/report/report';
import { LocalTarget } from '../../local/local-target';
import { cacheDir, dataDir } from '../../local/paths';
import { ProcessRegistry, StopReason, stopOnSignals } from '../../local/processes';
import { newRunId } from '../../local/run-plan';
import { planOnTarget } from '../../core/plan/plan-target';
import { parseFailAt, runPlanWorkflow } from '../../local/workflow-runner';
import { loadEffectiveCatalog, userCatalogPath } from '../prices-command';
import { ProgressDisplay } from '../progress';
import { CliError } from '../cli/cli-error';
import { cloudCommand, cloudOptions, type ControllerOptions } from '../cli/cloud-invocation';
import { defineCommand, jsonOption, onRun, withControllerOptions, withLocalStoreOptions } from '../cli/command-kit';
import { loadPlan, loadPlanForTarget } from '../cli/plan-loading';
import { openStore, storeSettings, warnIfLeft, type StoreOptions } from '../cli/store-access';

interface RunOptions extends StoreOptions, Omit<ControllerOptions, 'table'> {
  readonly target: string;
  readonly failAt?: string;
  readonly maxCost?: string;
  readonly runId?: string;
  readonly skipQuotaCheck?: boolean;
}

export function runCli(): Command {
  const command = defineCommand({
    name: 'run',
    summary: 'run a plan: on localhost through the workflow definition, or on a deployed controller',
    details:
      "A plan is a YAML file or a built-in plan's name (rmqbench plans). Locally, rmqbench starts the cluster, " +
      'PerfTest and DynamoDB Local, prints the report and stops everything. With --target aws|azure it estimates ' +
      'the cost, starts the plan on the deployed controller and follows it (--detach: print the run id and ' +
      'return). Exit 3: the run finished with failed repetitions.',
    arguments: ['<plan>'],
    examples: ['rmqbench run quickstart', 'rmqbench run plans/thesis-ch4-lb-vs-direct.yaml --target aws --max-cost 20'],
  })
    .addOption(new Option('--target <target>', 'where the plan runs: local, aws or azure').default('local'))
    .option('--fail-at <state[:n]>', 'local: make that workflow state fail (on its Nth entry)')
    .option('--max-cost <usd>', "cloud: refuse to start above this estimate (also the plan's maxCostUsd)")
    .option('--run-id <id>', 'cloud: the run id and execution name (default <plan>-<UTC stamp>-<hex>)')
    .option('--detach', 'cloud: print the run id and execution ARN and return')
    .option('--skip-quota-check', "aws: start without comparing the plan's vCPUs with the account's On-Demand quota");
  withControllerOptions(withLocalStoreOptions(command)).addOption(jsonOption());
  return onRun<RunOptions>(command, async ([reference], options, self) => {
    if (options.target === 'aws' || options.target === 'azure') return runOnCloud(String(reference), options, self);
    if (options.target !== 'local')
      throw new CliError(`--target must be local, aws or azure (got "${options.target}")`, 2);
    return runLocally(String(reference), options, self);
  });
}

async function runOnCloud(reference: string, options: RunOptions, command: Command): Promise<number> {
  const target = options.target as 'aws' | 'azure';
  const plan = loadPlanForTarget(reference, target);
  const { runInCloud } = await import('../cloud-commands');
  return cloudCommand(() =>
    runInCloud(plan, {
      ...cloudOptions(options, command.getOptionValueSource('table') === 'cli'),
      target,
      catalog: loadEffectiveCatalog(userCatalogPath(dataDir())).catalog,
      ...(options.maxCost === undefined ? {} : { maxCost: options.maxCost }),
      ...(options.runId === undefined ? {} : { runId: options.runId }),
      ...(options.skipQuotaCheck ? { skipQuotaCheck: true } : {}),
    }),
  );
}

/**
 * Runs the plan through the workflow definition the BenchmarkController deploys; --fail-at <State>[:N] injects a
 * fault.
 */
async function runLocally(reference: string, options: RunOptions, command: Command): Promise<number> {
  const plan = loadPlan(reference);
  try {
    parseFailAt(options.failAt);
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  const runId = newRunId(plan.name);
  const runDir = join(dataDir(), 'runs', runId);
  const processes = new ProcessRegistry();
  const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
  target.preflight(planOnTarget(plan, 'local'));
  const opening = openStore(storeSettings(options, command), processes);
  opening.catch(() => undefined); // awaited by the run; this only keeps an early failure from being unhandled
  const uninstall = stopOnSignals(async (reason) => {
    // Record the interruption while the store still runs (at most 5 s), then stop everything.
    const recorded = opening.then((store) =>
      store.finishRun(runId, 'FAILED', new Date().toISOString(), interruptionMessage(reason)),
    );
    await Promise.race([recorded.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000))]);
    await processes.stopAll();
  });
  try {
    const display = new ProgressDisplay(process.stderr);
    const outcome = await runPlanWorkflow({
      plan,
      target,
      store: opening,
      runDir,
      runId,
      onEvent: (event) => display.handle(event),
      ...(options.failAt ? { failAt: options.failAt } : {}),
    });
    display.finish();
    const store = await opening;
    const stored = await store.getRun(runId).catch(() => undefined);
    if (options.json) {
      const report = stored ? aggregateRun(stored.run, stored.repetitions) : undefined;
      console.log(JSON.stringify({ ...outcome, report }, null, 2));
    } else if (stored) process.stdout.write(renderMarkdownReport(stored.run, stored.repetitions));
    if (outcome.status === 'FAILED')
      throw new CliError(`run ${runId} failed: ${outcome.error ?? 'no repetition succeeded'}`);
    if (outcome.status === 'PARTIAL') {
      const failed = outcome.records.filter((record) => record.status === 'FAILED').length;
      throw new CliError(
        `run ${runId} finished with ${failed} failed repetition(s) of ${outcome.records.length}; see the report above`,
        3,
      );
    }
    return 0;
  } finally {
    warnIfLeft(await processes.stopAll());
    uninstall();
  }
}

/** What an interrupted local run records as its error. */
export function interruptionMessage(reason: StopReason): string {
  if (reason === 'SIGINT') return 'interrupted by a signal (Ctrl-C)';
  if (reason === 'output closed') return 'interrupted: its output could no longer be written (EPIPE)';
  return `interrupted by a signal (${reason})`;
}
