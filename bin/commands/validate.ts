/** `rmqbench validate <plan>`: check a plan without running it. */
import { Option, type Command } from 'commander';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';
import { loadPlanForTarget } from '../cli/plan-loading';
import { planOnTarget } from '../../core/plan/plan-target';

interface ValidateOptions {
  readonly target: string;
  readonly json: boolean;
}

export function validateCli(): Command {
  const command = defineCommand({
    name: 'validate',
    summary: 'check a plan without running it',
    details:
      'aws/azure: every cluster names an instance type the price catalog knows (x86-64 on aws), ' +
      "and the plan fits the workflow's limits.",
    arguments: ['<plan>'],
    examples: ['rmqbench validate my-plan.yaml --target aws'],
  })
    .addOption(
      new Option('--target <target>', 'also check what that target needs: local, aws or azure').default('local'),
    )
    .addOption(jsonOption());
  return onRun<ValidateOptions>(command, ([reference], options) => {
    const plan = loadPlanForTarget(String(reference), options.target);
    if (options.json) console.log(JSON.stringify(plan, null, 2));
    else
      console.log(
        `plan ${plan.name} is valid for target ${options.target}: ` +
          `${planOnTarget(plan, options.target).scenarios.length} scenario(s) × ${
            plan.adaptiveRepetitions
              ? `${plan.adaptiveRepetitions.min}-${plan.repetitions} repetition(s) (each scenario stops once its ` +
                `receive rate's 95% CI half-width is within ${plan.adaptiveRepetitions.ciPercent} % of the mean)`
              : `${plan.repetitions} repetition(s)`
          }`,
      );
    return 0;
  });
}
