/** `rmqbench ingest <runDir>`: store a run's raw output again (after a store failure). */
import type { Command } from 'commander';
import { ingestRunDir } from '../../local/ingest-run-dir';
import { defineCommand, jsonOption, onRun, withLocalStoreOptions } from '../cli/command-kit';
import { storeSettings, withStore, type StoreOptions } from '../cli/store-access';

export function ingestCli(): Command {
  const command = defineCommand({
    name: 'ingest',
    summary: "store a run's raw output again (after a store failure)",
    arguments: ['<runDir>'],
    examples: ['rmqbench ingest ~/.local/share/rmqbench/runs/quickstart-20261125T101500Z-3f2a'],
  });
  withLocalStoreOptions(command).addOption(jsonOption());
  return onRun<StoreOptions & { json: boolean }>(command, ([runDir], options, self) =>
    withStore(storeSettings(options, self), async (store) => {
      const result = await ingestRunDir(store, String(runDir));
      console.log(
        options.json
          ? JSON.stringify(result)
          : `stored ${result.stored} repetition(s) of ${result.runId}: ${result.status}`,
      );
      return 0;
    }),
  );
}
