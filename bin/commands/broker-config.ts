/** `rmqbench broker-config --target azure`: bicep/main.bicep's broker parameters as export lines. */
import type { Command } from 'commander';
import { brokerConfigCommand, type BrokerConfigOptions } from '../broker-config-command';
import { CliError } from '../cli/cli-error';
import { defineCommand, jsonOption, onRun } from '../cli/command-kit';

export function brokerConfigCli(): Command {
  const command = defineCommand({
    name: 'broker-config',
    summary: "bicep/main.bicep's broker parameters as export lines",
    examples: ['rmqbench broker-config --target azure --topology quorum --nodes 5'],
  })
    .option('--target <target>', 'the target whose parameters are printed', 'azure')
    .option('--topology <topology>', 'quorum, classic, stream or mirrored', 'quorum')
    .option('--nodes <n>', 'cluster size', '3')
    .option('--rabbitmq-version <version>', 'the RabbitMQ version', '3.13.7')
    .option('--mirror-to <all|n>', 'mirrored: how many nodes hold a mirror')
    .option('--replication-factor <n>', 'quorum/stream: replicas per queue')
    .addOption(jsonOption());
  return onRun<BrokerConfigOptions>(command, (_args, options) => {
    try {
      process.stdout.write(brokerConfigCommand(options));
    } catch (error) {
      throw new CliError((error as Error).message, 2);
    }
    return 0;
  });
}
