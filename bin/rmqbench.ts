#!/usr/bin/env node
/**
 * The rmqbench CLI: the list of commands, one module each under bin/commands/ (options, help, handler), on commander.
 */
import './cli/compile-cache';
import { Command, CommanderError } from 'commander';
import { exitingAfterSignal, exitWhenWritten } from '../local/processes';
import { CliError, EXIT } from './cli/cli-error';
import { lastExitCode } from './cli/command-kit';
import { isHelpShown, usageError } from './cli/usage-errors';
import { brokerConfigCli } from './commands/broker-config';
import { cleanupCli } from './commands/cleanup';
import { baselineCli, compareCli } from './commands/compare';
import { doctorCli } from './commands/doctor';
import { estimateCli } from './commands/estimate';
import { executionInputCli } from './commands/execution-input';
import { ingestCli } from './commands/ingest';
import { plansCli } from './commands/plans';
import { pricesCli } from './commands/prices';
import { pruneCli } from './commands/prune';
import { reportCli } from './commands/report';
import { runCli } from './commands/run';
import { runsCli } from './commands/runs';
import { showCli } from './commands/show';
import { validateCli } from './commands/validate';
import { watchCli } from './commands/watch';

/** Every command, in the order `rmqbench --help` lists them. */
const COMMANDS = [
  runCli,
  watchCli,
  runsCli,
  showCli,
  reportCli,
  compareCli,
  baselineCli,
  estimateCli,
  pricesCli,
  plansCli,
  validateCli,
  executionInputCli,
  ingestCli,
  pruneCli,
  cleanupCli,
  brokerConfigCli,
  doctorCli,
];

const AFTER_HELP = `
Environment: RMQBENCH_HOME (data, default ~/.local/share/rmqbench), RMQBENCH_CACHE (jars, default ~/.cache/rmqbench),
RMQBENCH_DYNAMODB_ENDPOINT and RMQBENCH_TABLE (the local results store).
Exit codes: 0 success, 1 error, 2 bad usage or invalid plan, 3 run finished with failed repetitions.
Example:
  rmqbench run quickstart`;

/** The program: each command's usage errors become one-line CliErrors, help goes to stdout. */
export function buildProgram(): Command {
  const program = new Command('rmqbench')
    .description('benchmark RabbitMQ clusters with PerfTest, store results in DynamoDB, report')
    .addHelpText('after', AFTER_HELP)
    .showSuggestionAfterError(false);
  for (const build of COMMANDS) program.addCommand(build());
  for (const command of [program, ...program.commands])
    command
      .configureOutput({ writeErr: () => undefined, outputError: () => undefined })
      .configureHelp({ helpWidth: 120 })
      .exitOverride((error) => {
        throw isHelpShown(error) ? error : usageError(error, command);
      });
  return program;
}

async function main(argv: string[]): Promise<number> {
  // `rmqbench run --help | head`: a reader that stops early is not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
    throw error;
  });
  const program = buildProgram();
  if (argv.length === 0) {
    program.outputHelp();
    return EXIT.usage;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && isHelpShown(error)) return EXIT.ok;
    throw error;
  }
  return lastExitCode();
}

// After Ctrl-C the signal handler exits (130) once every process is reaped; the run failing
// because its processes were stopped must not exit first with another code.
main(process.argv.slice(2)).then(
  (code) => {
    if (!exitingAfterSignal()) exitWhenWritten(code);
  },
  (error: unknown) => {
    if (exitingAfterSignal()) return;
    const message = error instanceof Error ? error.message : String(error);
    console.error(`rmqbench: ${message}`);
    exitWhenWritten(error instanceof CliError ? error.exitCode : EXIT.error);
  },
);
