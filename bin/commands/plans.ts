/** `rmqbench plans`: the built-in plans. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { parsePlanText } from '../../core/plan/plan';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';
import { planOnTarget } from '../../core/plan/plan-target';
import { BUILT_IN_PLANS } from '../cli/plan-loading';
import { WORKFLOW_TARGETS } from '../../state-machines/schedule';

/** "6 scenario(s)", or per target where they differ: "6 scenario(s) (aws 48, azure 18)". */
function scenarioCounts(byTarget: Record<string, number>): string {
  const local = byTarget.local ?? 0;
  const others = Object.entries(byTarget).filter(([target, count]) => target !== 'local' && count !== local);
  const differing = others.map(([target, count]) => `${target} ${count}`).join(', ');
  return `${local} scenario(s)${differing ? ` (${differing})` : ''}`;
}

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
        const scenariosByTarget = Object.fromEntries(
          WORKFLOW_TARGETS.map((target) => [target, planOnTarget(plan, target).scenarios.length]),
        );
        return {
          name: plan.name,
          description: plan.description ?? '',
          reproduces: plan.reproduces ?? '',
          // On the local target (the default); a cluster for some targets only (`targets`) counts where it runs.
          scenarios: scenariosByTarget.local!,
          scenariosByTarget,
          repetitions: plan.repetitions,
        };
      });
    if (options.json) console.log(JSON.stringify(plans, null, 2));
    else
      for (const plan of plans) {
        const counts = scenarioCounts(plan.scenariosByTarget);
        console.log(`${plan.name.padEnd(26)} ${counts} × ${plan.repetitions}  ${plan.description}`);
      }
    return 0;
  });
}
