/** `rmqbench cleanup --target aws|azure`: the cluster stacks / resource groups left behind, deleted when done. */
import type { Command } from 'commander';
import { awsClients, cloudStore, ControllerLookupError, resolveController } from '../cloud-controller';
import { cleanupAws, cleanupAzure, formatCleanup } from '../cleanup-command';
import type { ResultsStore } from '../../store/results-store';
import { CliError } from '../cli/cli-error';
import { azureCliClients } from '../cli/cloud-invocation';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';

interface CleanupOptions {
  readonly target: string;
  readonly dryRun: boolean;
  readonly stack?: string;
  readonly table?: string;
  readonly region?: string;
  readonly subscription?: string;
  readonly json: boolean;
}

export function cleanupCli(): Command {
  const command = defineCommand({
    name: 'cleanup',
    summary:
      'every rmqbench cluster stack / resource group with its run and expiry; ' +
      'deletes those expired or whose run finished',
    details:
      "Run states come from the controller's results table; without one, expiry alone decides (as the hourly sweeper).",
    examples: ['rmqbench cleanup --target aws --dry-run'],
  })
    .option('--target <target>', 'the cloud to clean: aws or azure (required)', 'local')
    .option('--dry-run', 'list without deleting', false)
    .option('--stack <name>', "the controller stack whose results table gives the runs' states")
    .option('--table <name>', 'the results table instead of a stack')
    .option('--region <region>', 'the AWS region (default: the SDK chain)')
    .option('--subscription <id>', 'azure: the subscription (also AZURE_SUBSCRIPTION_ID)')
    .addOption(jsonOption());
  return onRun<CleanupOptions>(command, (_args, options) => cleanup(options));
}

async function cleanup(options: CleanupOptions): Promise<number> {
  const { target, dryRun } = options;
  if (target !== 'aws' && target !== 'azure')
    throw new CliError(`cleanup needs --target aws or --target azure (got "${target}")`, 2);
  const subscription = options.subscription ?? process.env.AZURE_SUBSCRIPTION_ID;
  if (target === 'azure' && !subscription)
    throw new CliError('cleanup --target azure needs --subscription ID (or AZURE_SUBSCRIPTION_ID)', 2);
  const clients = awsClients(options.region);
  try {
    let store: ResultsStore | undefined;
    let note: string | undefined;
    try {
      const lookup = {
        ...(options.stack === undefined ? {} : { stack: options.stack }),
        ...(options.table === undefined ? {} : { table: options.table }),
      };
      store = cloudStore(
        clients.dynamodb,
        (await resolveController(clients.cfn, lookup, { stateMachine: false })).tableName,
      );
    } catch (error) {
      if (!(error instanceof ControllerLookupError)) throw error;
      note = `run states unknown (${error.message}): only expiry tags decide`;
    }
    const outcome =
      target === 'aws'
        ? await cleanupAws(clients.cfn, store, { dryRun, ...(note ? { note } : {}) })
        : await cleanupAzure(await azureCliClients(subscription!), store, { dryRun, ...(note ? { note } : {}) });
    process.stdout.write(formatCleanup(outcome, dryRun, options.json));
    return 0;
  } finally {
    for (const client of Object.values(clients)) client.destroy();
  }
}
