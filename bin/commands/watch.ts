/** `rmqbench watch <runId>`: follow a cloud run started earlier. */
import type { Command } from 'commander';
import { cloudCommand, cloudOptions, type ControllerOptions } from '../cli/cloud-invocation';
import { defineCommand, jsonOption, onRun, withControllerOptions } from '../cli/command-kit';

export function watchCli(): Command {
  const command = defineCommand({
    name: 'watch',
    summary: 'follow a cloud run started earlier',
    arguments: ['<runId>'],
    examples: ['rmqbench watch quickstart-20261125T101500Z-3f2a'],
  });
  withControllerOptions(command)
    .option('--table <name>', "the controller's results table, with --state-machine-arn")
    .addOption(jsonOption());
  return onRun<ControllerOptions>(command, async ([runId], options) => {
    const { watchInCloud } = await import('../cloud-commands');
    return cloudCommand(() => watchInCloud(String(runId), cloudOptions(options, true)));
  });
}
