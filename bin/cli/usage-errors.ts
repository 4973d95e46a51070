/**
 * Commander's usage errors as the one-line messages rmqbench has always printed (exit 2), with the closest command
 * or option by the rule the plan's unknown fields use (core/plan/plan-field-suggestion.ts).
 */
import type { Command, CommanderError } from 'commander';
import { suggestField } from '../../core/plan/plan-field-suggestion';
import { CliError, EXIT } from './cli-error';

/** Commands that take --store (to say so when another command is given it). */
const STORE_COMMANDS = ['runs', 'show', 'report', 'compare', 'baseline'];

/** Help and version printed: not an error. */
export function isHelpShown(error: CommanderError): boolean {
  return error.code === 'commander.helpDisplayed' || error.code === 'commander.version';
}

/** The CliError to print for commander's `error` raised while parsing `command`'s arguments. */
export function usageError(error: CommanderError, command: Command): CliError {
  const isProgram = !command.parent;
  const helpHint = isProgram ? 'see rmqbench --help' : `see rmqbench ${command.name()} --help`;
  if (error.code === 'commander.unknownCommand') {
    const name = /unknown command '([^']*)'/.exec(error.message)?.[1] ?? '';
    const closest = suggestField(
      name,
      command.commands.map((sub) => sub.name()),
    );
    return new CliError(
      `unknown command "${name}"${closest ? `; did you mean "${closest}"?` : ''} (${helpHint})`,
      EXIT.usage,
    );
  }
  if (error.code === 'commander.unknownOption') {
    const flag = /unknown option '([^']*)'/.exec(error.message)?.[1] ?? '';
    const known = command.options.flatMap((option) => (option.long ? [option.long.replace(/^--/, '')] : []));
    const closest = suggestField(flag.replace(/^-+/, ''), known);
    const store =
      flag === '--store' && !STORE_COMMANDS.includes(command.name())
        ? `; --store is for ${STORE_COMMANDS.join(', ')}`
        : '';
    return new CliError(
      `unknown option ${flag}${closest ? `; did you mean --${closest}?` : ''}${store} (${helpHint})`,
      EXIT.usage,
    );
  }
  if (error.code === 'commander.missingArgument') {
    const argumentsUsage = command.registeredArguments
      .map((argument) => (argument.required ? `<${argument.name()}>` : `[${argument.name()}]`))
      .join(' ');
    return new CliError(`missing argument: rmqbench ${command.name()} ${argumentsUsage} (${helpHint})`, EXIT.usage);
  }
  const message = error.message
    .replace(/^error: /, '')
    .replace(/\n\(?/g, '; ')
    .replace(/\)$/, '');
  return new CliError(`${message} (${helpHint})`, EXIT.usage);
}
