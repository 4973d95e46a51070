/** `rmqbench prune`: delete local run folders whose results the store has. */
import { join } from 'node:path';
import type { Command } from 'commander';
import { dataDir } from '../../local/paths';
import { applyPrune, planPrune } from '../../local/prune-runs';
import { formatPrune, parsePruneSelection } from '../prune-command';
import { CliError } from '../cli/cli-error';
import { defineCommand, jsonOption, onRun, withLocalStoreOptions } from '../cli/command-kit';
import { storeSettings, withStore, type StoreOptions } from '../cli/store-access';

interface PruneOptions extends StoreOptions {
  readonly keep?: string;
  readonly olderThan?: string;
  readonly dryRun: boolean;
  readonly json: boolean;
}

export function pruneCli(): Command {
  const command = defineCommand({
    name: 'prune',
    summary: 'delete run folders whose results the store has',
    details: 'All such folders by default; a folder the store lacks is kept, with why.',
    examples: ['rmqbench prune --keep 10 --dry-run'],
  })
    .option('--keep <n>', 'keep the N newest folders')
    .option('--older-than <days>', 'only folders older than DAYS')
    .option('--dry-run', 'say what would be deleted', false);
  withLocalStoreOptions(command).addOption(jsonOption());
  return onRun<PruneOptions>(command, (_args, options, self) => {
    let selection;
    try {
      selection = parsePruneSelection({ keep: options.keep, olderThan: options.olderThan });
    } catch (error) {
      throw new CliError(`${(error as Error).message} (see rmqbench prune --help)`, 2);
    }
    return withStore(storeSettings(options, self), async (store) => {
      const decisions = await planPrune(join(dataDir(), 'runs'), store, selection);
      if (!options.dryRun) applyPrune(decisions);
      process.stdout.write(formatPrune(decisions, options.dryRun, options.json));
      return 0;
    });
  });
}
