/** `rmqbench doctor`: what the local target is missing and how to get it. */
import type { Command } from 'commander';
import { doctor } from '../../local/doctor';
import { cacheDir } from '../../local/paths';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';

export function doctorCli(): Command {
  const command = defineCommand({
    name: 'doctor',
    summary: 'what is missing and how to get it',
    examples: ['rmqbench doctor --fix'],
  })
    .option('--fix', 'fetch the missing jars and build the NATS binaries', false)
    .addOption(jsonOption());
  return onRun<{ fix: boolean; json: boolean }>(command, async (_args, options) => {
    const report = await doctor({ cacheDir: cacheDir(), fix: options.fix });
    if (options.json) console.log(JSON.stringify(report, null, 2));
    else
      for (const check of report.checks)
        console.log(`${check.ok ? 'ok     ' : 'MISSING'}  ${check.name}: ${check.detail}`);
    return report.checks.every((check) => check.ok) ? 0 : 1;
  });
}
