/** `rmqbench execution-input <plan> --target aws|azure`: the JSON input of a BenchmarkController execution. */
import type { Command } from 'commander';
import { executionInput } from '../../state-machines/schedule';
import { CliError } from '../cli/cli-error';
import { defineCommand, onRun } from '../cli/command-kit';
import { loadPlanForTarget } from '../cli/plan-loading';

interface ExecutionInputOptions {
  readonly target?: string;
  readonly runId?: string;
}

export function executionInputCli(): Command {
  const command = defineCommand({
    name: 'execution-input',
    summary: 'the JSON input of a BenchmarkController execution',
    details: "{ plan, target, runId? }, after the same checks as validate --target (the controller's ValidatePlan).",
    arguments: ['<plan>'],
    examples: ['rmqbench execution-input my-plan.yaml --target aws'],
  })
    .option('--target <target>', 'aws or azure (required)')
    .option('--run-id <id>', 'the run id (default <plan>-<UTC stamp>-<hex>)');
  return onRun<ExecutionInputOptions>(command, ([reference], options) => {
    const target = options.target ?? 'local';
    if (target !== 'aws' && target !== 'azure')
      throw new CliError(
        `execution-input is for the cloud controller: give --target aws or --target azure (got "${target}")`,
        2,
      );
    const plan = loadPlanForTarget(String(reference), target);
    console.log(JSON.stringify(executionInput(plan, target, options.runId), null, 2));
    return 0;
  });
}
