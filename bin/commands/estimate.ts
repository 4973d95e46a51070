/** `rmqbench estimate <plan>... --target aws|azure`: cluster-minutes, wall time and cost before a cloud run. */
import type { Command } from 'commander';
import { dataDir } from '../../local/paths';
import { estimateCommand, EstimateUsageError } from '../estimate-command';
import { loadEffectiveCatalog, userCatalogPath } from '../prices-command';
import { CliError } from '../cli/cli-error';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';
import { loadPlan } from '../cli/plan-loading';

interface EstimateOptions {
  readonly target: string;
  readonly region?: string;
  readonly maxCost?: string;
  readonly clusterConcurrency?: string;
  readonly json: boolean;
}

export function estimateCli(): Command {
  const command = defineCommand({
    name: 'estimate',
    summary: 'cluster-minutes, wall time and cost of a cloud run before it starts (exit 1 over the budget)',
    details: 'Several plans are priced one by one and summed; --max-cost then bounds the sum.',
    arguments: ['<plans...>'],
    examples: ['rmqbench estimate plans/thesis-ch4-lb-vs-direct.yaml --target aws --max-cost 20'],
  })
    .option('--target <target>', 'the cloud to price: aws or azure (required)', 'local')
    .option(
      '--region <region>',
      "that region's prices (default: the plan's region for the target, else the newest price in any region)",
    )
    .option(
      '--max-cost <usd>',
      "exit 1 when the estimate (of several plans: their sum) exceeds it (also each plan's maxCostUsd)",
    )
    .option(
      '--cluster-concurrency <n>',
      'clusters the controller runs at once, for the wall time (default 4, as deployed)',
    )
    .addOption(jsonOption());
  return onRun<EstimateOptions>(command, ([references], options) => {
    const plans = (references as string[]).map((reference) => loadPlan(reference));
    let result;
    try {
      result = estimateCommand(plans, {
        target: options.target,
        json: options.json,
        catalog: loadEffectiveCatalog(userCatalogPath(dataDir())).catalog,
        ...(options.region ? { region: options.region } : {}),
        ...(options.maxCost ? { maxCost: options.maxCost } : {}),
        ...(options.clusterConcurrency ? { clusterConcurrency: options.clusterConcurrency } : {}),
      });
    } catch (error) {
      if (error instanceof EstimateUsageError) throw new CliError(error.message, 2);
      throw error;
    }
    process.stdout.write(result.stdout);
    if (result.error) console.error(`rmqbench: ${result.error}`);
    return result.exitCode;
  });
}
