/**
 * What the commands that talk to a deployed controller share: its flags, and how their outcome is printed. The cloud
 * commands themselves (and their AWS SDK clients, a third of the CLI's start) are imported when one runs.
 */
import { CloudCommandError } from './cloud-command-error';
import type { CloudCommandResult } from '../cloud-run-command';
import { CliError } from './cli-error';

/** The options withControllerOptions declares (and --table, --detach where a command has them). */
export interface ControllerOptions {
  readonly json: boolean;
  readonly stack?: string;
  readonly stateMachineArn?: string;
  readonly region?: string;
  readonly detach?: boolean;
  readonly pollSeconds?: string;
  readonly table?: string | undefined;
}

/** The controller and polling settings the cloud commands take; `table` only when given on the command line. */
export function cloudOptions(options: ControllerOptions, tableFromFlag: boolean) {
  const pollSeconds = options.pollSeconds === undefined ? undefined : Number(options.pollSeconds);
  if (pollSeconds !== undefined && !(Number.isFinite(pollSeconds) && pollSeconds > 0))
    throw new CliError(`--poll-seconds must be a positive number, got "${options.pollSeconds}"`, 2);
  return {
    json: options.json,
    ...(options.stack === undefined ? {} : { stack: options.stack }),
    ...(options.stateMachineArn === undefined ? {} : { stateMachineArn: options.stateMachineArn }),
    ...(tableFromFlag && options.table !== undefined ? { table: options.table } : {}),
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.detach ? { detach: true } : {}),
    ...(pollSeconds === undefined ? {} : { pollSeconds }),
  };
}

/** Prints a cloud command's outcome; a failure before anything started is one line, exit 1. */
export async function cloudCommand(command: () => Promise<CloudCommandResult>): Promise<number> {
  let result;
  try {
    result = await command();
  } catch (error) {
    if (error instanceof CloudCommandError) throw new CliError(error.message, 1);
    throw error;
  }
  process.stdout.write(result.stdout);
  if (result.error) console.error(`rmqbench: ${result.error}`);
  return result.exitCode;
}

/**
 * ARM clients with the user's Azure sign-in (DefaultAzureCredential: environment, workload identity, managed identity,
 * Azure CLI).
 */
export async function azureCliClients(subscription: string) {
  const [{ DefaultAzureCredential }, { azureClients }] = await Promise.all([
    import('@azure/identity'),
    import('../../lambdas/shared/azure-cluster'),
  ]);
  return azureClients(new DefaultAzureCredential(), subscription);
}
