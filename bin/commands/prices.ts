/** `rmqbench prices [update]`: the price catalog in use, or refresh it from the vendors' price APIs. */
import type { Command } from 'commander';
import { dataDir } from '../../local/paths';
import { awsPriceList } from '../aws-price-list';
import { loadEffectiveCatalog, showPrices, updatePrices, userCatalogPath } from '../prices-command';
import { CliError } from '../cli/cli-error';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';

interface PricesOptions {
  readonly out?: string;
  readonly json: boolean;
}

export function pricesCli(): Command {
  const command = defineCommand({
    name: 'prices',
    summary: 'the price catalog in use, or refresh it from the Azure/AWS price APIs',
    details: 'prices update keeps the catalog in use when a price API cannot be reached (exit 1).',
    arguments: ['[action]'],
    examples: ['rmqbench prices', 'rmqbench prices update'],
  })
    .option('--out <file>', 'update: where the refreshed catalog is written (default: the user catalog)')
    .addOption(jsonOption());
  return onRun<PricesOptions>(command, async ([action], options) => {
    const path = userCatalogPath(dataDir());
    if (action === undefined) {
      process.stdout.write(showPrices(loadEffectiveCatalog(path), options.json));
      return 0;
    }
    if (action !== 'update')
      throw new CliError(
        `unknown prices subcommand "${String(action)}": use rmqbench prices, or rmqbench prices update`,
        2,
      );
    const update = await updatePrices(loadEffectiveCatalog(path), options.out ?? path, {
      json: options.json,
      awsGetProducts: awsPriceList(),
    });
    process.stdout.write(update.stdout);
    return update.refreshed ? 0 : 1;
  });
}
