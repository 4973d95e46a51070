/** `rmqbench runs`: the stored runs, newest first. */
import type { Command } from 'commander';
import { defineCommand, jsonOption, onRun, withStoreOptions } from '../cli/command-kit';
import { storeSettings, withStore, type StoreOptions } from '../cli/store-access';

export function runsCli(): Command {
  const command = defineCommand({
    name: 'runs',
    summary: 'list stored runs, newest first',
    examples: ['rmqbench runs', 'rmqbench runs --store aws'],
  });
  withStoreOptions(command).addOption(jsonOption());
  return onRun<StoreOptions & { json: boolean }>(command, (_args, options, self) =>
    withStore(storeSettings(options, self), async (store) => {
      const runs = await store.listRuns();
      if (options.json) console.log(JSON.stringify(runs, null, 2));
      else if (runs.length === 0) console.log('no runs stored yet; try: rmqbench run quickstart');
      else
        for (const run of runs)
          console.log(`${run.runId}  ${run.status.padEnd(9)}  ${run.target}  ${run.startedAt}  ${run.planName}`);
      return 0;
    }),
  );
}
