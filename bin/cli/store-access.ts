/** Where a command reads and writes results: DynamoDB Local (started for the command) or the controller's table. */
import { join } from 'node:path';
import type { Command } from 'commander';
import { startDynamoDbLocal } from '../../local/dynamodb-local';
import { cacheDir, dataDir } from '../../local/paths';
import { ProcessRegistry, stopOnSignals } from '../../local/processes';
import { ResultsStore } from '../../store/results-store';
import { awsClients, cloudStore, ControllerLookupError, resolveController } from '../cloud-controller';
import { CliError } from './cli-error';

/** The options withLocalStoreOptions / withStoreOptions declare, as commander parses them. */
export interface StoreOptions {
  readonly dynamodbEndpoint?: string;
  readonly table: string;
  readonly store?: 'local' | 'aws';
  readonly stack?: string;
  readonly region?: string;
}

export interface StoreSettings {
  readonly store: 'local' | 'aws';
  /** --dynamodb-endpoint or RMQBENCH_DYNAMODB_ENDPOINT; undefined: start DynamoDB Local. */
  readonly endpoint: string | undefined;
  readonly table: string;
  /** --stack / --table / --region for --store aws (the table only from the flag: RMQBENCH_TABLE is the local one). */
  readonly cloud: { readonly stack?: string; readonly table?: string; readonly region?: string };
}

export function storeSettings(options: StoreOptions, command: Command): StoreSettings {
  return {
    store: options.store ?? 'local',
    endpoint: options.dynamodbEndpoint,
    table: options.table,
    cloud: {
      ...(options.stack === undefined ? {} : { stack: options.stack }),
      ...(command.getOptionValueSource('table') === 'cli' ? { table: options.table } : {}),
      ...(options.region === undefined ? {} : { region: options.region }),
    },
  };
}

/** Where a store keeps what is not in the table: the controller's raw-output bucket (--store aws). */
export interface StoreLocation {
  readonly bucketName?: string;
}

/** The store named by --dynamodb-endpoint, or a DynamoDB Local started for this command and kept in the data folder. */
export async function openStore(settings: StoreSettings, processes: ProcessRegistry): Promise<ResultsStore> {
  let endpoint = settings.endpoint;
  if (!endpoint) {
    const local = await startDynamoDbLocal({
      cacheDir: cacheDir(),
      processes,
      dataPath: join(dataDir(), 'dynamodb'),
      logPath: join(dataDir(), 'dynamodb-local.log'),
    });
    endpoint = local.endpoint;
  }
  const store = ResultsStore.forEndpoint(endpoint, settings.table);
  try {
    await store.ensureTable();
  } catch (error) {
    const hint = settings.endpoint
      ? '; start DynamoDB Local there, or omit --dynamodb-endpoint and rmqbench starts one'
      : '';
    throw new CliError(`${(error as Error).message}${hint}`);
  }
  return store;
}

/** Runs `action` on the store the settings name, and stops what was started for it (DynamoDB Local, SDK clients). */
export async function withStore(
  settings: StoreSettings,
  action: (store: ResultsStore, location: StoreLocation) => Promise<number>,
): Promise<number> {
  if (settings.store === 'aws') return withControllerStore(settings, action);
  const processes = new ProcessRegistry();
  const uninstall = stopOnSignals(() => processes.stopAll());
  try {
    return await action(await openStore(settings, processes), {});
  } finally {
    warnIfLeft(await processes.stopAll());
    uninstall();
  }
}

async function withControllerStore(
  settings: StoreSettings,
  action: (store: ResultsStore, location: StoreLocation) => Promise<number>,
): Promise<number> {
  const clients = awsClients(settings.cloud.region);
  let controller;
  try {
    controller = await resolveController(clients.cfn, settings.cloud, { stateMachine: false });
  } catch (error) {
    if (error instanceof ControllerLookupError) throw new CliError(error.message);
    throw error;
  }
  try {
    return await action(
      cloudStore(clients.dynamodb, controller.tableName),
      controller.bucketName ? { bucketName: controller.bucketName } : {},
    );
  } finally {
    for (const client of Object.values(clients)) client.destroy();
  }
}

export async function readRun(store: ResultsStore, runId: string) {
  const stored = await store.getRun(runId);
  if (!stored) throw new CliError(`no run "${runId}" in table ${store.tableName} (see rmqbench runs)`);
  return stored;
}

/** Names processes still listed (unreaped) after the wait, so that a user can see what and why. */
export function warnIfLeft(left: readonly { pid: number; comm: string; state: string; ppid: number }[]): void {
  if (left.length === 0) return;
  const list = left.map((p) => `${p.comm} (pid ${p.pid}, state ${p.state}, parent ${p.ppid})`).join(', ');
  console.error(`rmqbench: still listed after stopping, not yet reaped by their parent: ${list}`);
}
