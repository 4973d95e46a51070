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
      for (const check of report.checks) {
        const only = check.onlyFor && !check.ok ? ` (needed only for ${check.onlyFor})` : '';
        console.log(`${check.ok ? 'ok     ' : 'MISSING'}  ${check.name}: ${check.detail}${only}`);
      }
    // What only some plans need does not fail doctor (a run of such a plan fails at launch with the same message).
    return report.checks.every((check) => check.ok || check.onlyFor !== undefined) ? 0 : 1;
  });
}
