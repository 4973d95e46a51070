/** `rmqbench plans`: the built-in plans. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { parsePlanText } from '../../core/plan/plan';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';
import { BUILT_IN_PLANS } from '../cli/plan-loading';

export function plansCli(): Command {
  const command = defineCommand({
    name: 'plans',
    summary: 'the built-in plans',
    examples: ['rmqbench plans'],
  }).addOption(jsonOption());
  return onRun<{ json: boolean }>(command, (_args, options) => {
    const plans = readdirSync(BUILT_IN_PLANS)
      .filter((file) => file.endsWith('.yaml'))
      .sort()
      .map((file) => {
        const plan = parsePlanText(readFileSync(join(BUILT_IN_PLANS, file), 'utf8'), file);
        return {
          name: plan.name,
          description: plan.description ?? '',
          reproduces: plan.reproduces ?? '',
          scenarios: plan.scenarios.length,
          repetitions: plan.repetitions,
        };
      });
    if (options.json) console.log(JSON.stringify(plans, null, 2));
    else
      for (const plan of plans)
        console.log(`${plan.name.padEnd(26)} ${plan.scenarios} scenario(s) × ${plan.repetitions}  ${plan.description}`);
    return 0;
  });
}
