/**
 * How every command is declared on commander (https://github.com/tj/commander.js, v14: CommonJS, as this package is;
 * v15 is ESM-only): one `Command` per module under `bin/commands/`, with its options declared once, an example in
 * its help, and its handler returning the exit code.
 */
import { Command, Option } from 'commander';
import { DEFAULT_TABLE_NAME } from '../../store/results-store';

/** What each command module declares. */
export interface CommandSpec {
  readonly name: string;
  /** The one line `rmqbench --help` shows beside the command. */
  readonly summary: string;
  /** More lines for `rmqbench <command> --help` (other forms of the command, what it prints). */
  readonly details?: string;
  /** Positional arguments, commander's syntax: `<plan>`, `[runIds...]`. */
  readonly arguments?: readonly string[];
  /** One or more command lines shown under Example. */
  readonly examples: readonly string[];
}

/** The exit code of the command that ran (commander's actions return nothing to parseAsync). */
let exitCode = 0;
export const lastExitCode = () => exitCode;

/** A command with its summary, arguments and example; options are added by the caller (the helpers below). */
export function defineCommand(spec: CommandSpec): Command {
  const command = new Command(spec.name).summary(spec.summary);
  command.description(spec.details ? `${spec.summary}\n\n${spec.details}` : spec.summary);
  for (const argument of spec.arguments ?? []) command.argument(argument);
  const examples = spec.examples.map((line) => `  ${line}`).join('\n');
  return command.addHelpText('after', `\nExample${spec.examples.length > 1 ? 's' : ''}:\n${examples}`);
}

/**
 * The command's handler: receives the parsed positional arguments and the options (camelCase), returns the exit
 * code.
 */
export function onRun<Options>(
  command: Command,
  handler: (args: readonly unknown[], options: Options, command: Command) => Promise<number> | number,
): Command {
  return command.action(async function (this: Command) {
    exitCode = await handler(this.processedArgs, this.opts() as Options, this);
  });
}

export const jsonOption = () => new Option('--json', 'machine-readable output on stdout').default(false);

/** --dynamodb-endpoint and --table: the local store (DynamoDB Local, started per command unless given an endpoint). */
export function withLocalStoreOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--dynamodb-endpoint <url>',
        'use this DynamoDB (Local) endpoint instead of starting DynamoDB Local',
      ).env('RMQBENCH_DYNAMODB_ENDPOINT'),
    )
    .addOption(new Option('--table <name>', 'the results table').env('RMQBENCH_TABLE').default(DEFAULT_TABLE_NAME));
}

/** --store local|aws with the controller lookup: the commands that read stored results. */
export function withStoreOptions(command: Command): Command {
  return withLocalStoreOptions(command)
    .addOption(
      new Option('--store <where>', "read DynamoDB Local or the controller's results table")
        .choices(['local', 'aws'])
        .default('local'),
    )
    .option(
      '--stack <name>',
      'with --store aws: the controller stack whose outputs name the table (default RmqbenchController)',
    )
    .option('--region <region>', 'with --store aws: the AWS region (default: the SDK chain)');
}

/** The deployed controller and how a followed run is polled: run --target aws|azure and watch. */
export function withControllerOptions(command: Command): Command {
  return command
    .option(
      '--stack <name>',
      'the controller stack whose outputs name the state machine and table (default RmqbenchController)',
    )
    .option('--state-machine-arn <arn>', 'the state machine, with --table NAME, instead of a stack')
    .option('--region <region>', 'the AWS region (default: the SDK chain)')
    .option('--poll-seconds <n>', 'how often a followed run is polled (default 10)');
}
