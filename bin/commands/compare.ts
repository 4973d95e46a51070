/** `rmqbench compare` and `rmqbench baseline`: runs against their plan's baseline, with 95 % intervals. */
import type { Command } from 'commander';
import { baselineCommand, compareCommand } from '../compare-command';
import { defineCommand, jsonOption, onRun, withStoreOptions } from '../cli/command-kit';
import { storeSettings, withStore, type StoreOptions } from '../cli/store-access';

type Options = StoreOptions & { readonly json: boolean };

export function compareCli(): Command {
  const command = defineCommand({
    name: 'compare',
    summary: 'per-scenario deltas with 95% intervals against a baseline run',
    details: "One run: against its plan's baseline, and load-balanced against direct.",
    arguments: ['<runIds...>'],
    examples: ['rmqbench compare run-a run-b'],
  });
  withStoreOptions(command).addOption(jsonOption());
  return onRun<Options>(command, ([runIds], options, self) =>
    withStore(storeSettings(options, self), async (store) => {
      process.stdout.write(await compareCommand(store, runIds as string[], { json: options.json }));
      return 0;
    }),
  );
}

export function baselineCli(): Command {
  const command = defineCommand({
    name: 'baseline',
    summary: "mark a run as its plan's baseline",
    arguments: ['<runId>'],
    examples: ['rmqbench baseline run-a'],
  });
  withStoreOptions(command).addOption(jsonOption());
  return onRun<Options>(command, ([runId], options, self) =>
    withStore(storeSettings(options, self), async (store) => {
      process.stdout.write(await baselineCommand(store, String(runId), { json: options.json }));
      return 0;
    }),
  );
}
