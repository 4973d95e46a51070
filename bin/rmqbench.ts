#!/usr/bin/env node
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PlanValidationError, formatPlanIssue } from '../core/plan/errors';
import { defaultPriceCatalog } from '../core/cost/cost-catalog';
import { targetProblems } from '../core/plan/target-rules';
import { estimateCommand, EstimateUsageError } from './estimate-command';
import { executionInput, WORKFLOW_TARGETS, type WorkflowInput } from '../state-machines/schedule';
import { parsePlanText, Plan } from '../core/plan/plan';
import { formatFailoverLine, formatUncountedFaultLine } from '../core/failover/failover-report';
import { formatNodeSummary, loadGeneratorBoundLine, summarizeNodes } from '../core/metrics/host-metrics';
import { aggregateRun, renderMarkdownReport } from '../core/report/report';
import { doctor } from '../local/doctor';
import { awsPriceList } from './aws-price-list';
import { brokerConfigCommand } from './broker-config-command';
import { ingestRunDir } from '../local/ingest-run-dir';
import { startDynamoDbLocal } from '../local/dynamodb-local';
import { LocalTarget } from '../local/local-target';
import { cacheDir, dataDir } from '../local/paths';
import { exitingAfterSignal, ProcessRegistry, stopOnSignals } from '../local/processes';
import { newRunId } from '../local/run-plan';
import { parseFailAt, runPlanWorkflow } from '../local/workflow-runner';
import { DEFAULT_TABLE_NAME, ResultsStore } from '../store/results-store';
import { ProgressDisplay } from './progress';
import { CloudCommandError, runInCloud, watchInCloud } from './cloud-commands';
import { awsClients, cloudStore, ControllerLookupError, resolveController } from './cloud-controller';
import { cleanupAws, cleanupAzure, formatCleanup } from './cleanup-command';
import type { CloudCommandResult } from './cloud-run-command';
import { formatPrune, parsePruneSelection } from './prune-command';
import { applyPrune, planPrune } from '../local/prune-runs';
import { baselineCommand, compareCommand } from './compare-command';
import { loadEffectiveCatalog, showPrices, updatePrices, userCatalogPath } from './prices-command';
import { commandHelp, COMMAND_NAMES, KNOWN_OPTIONS, OPTIONS, suggestion } from './command-help';
import {
  isChartId,
  metricsOfRun,
  REPORT_FORMATS,
  reportCommand,
  reportOverRuns,
  ReportError,
  thesisChapter7Report,
  type ReportFormat,
} from './report-command';

/** A failure the user can act on: printed as one line, exit code as given. */
class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

const USAGE = `rmqbench: benchmark RabbitMQ clusters with PerfTest, store results in DynamoDB, report.

Usage:
  rmqbench run <plan.yaml|built-in name> [--target local] [--fail-at <State>[:N]] [--json]
                                                  run a plan through the workflow definition (default
                                                  target: local); --fail-at makes that state fail (tests)
  rmqbench run <plan.yaml> --target aws|azure [--stack NAME | --state-machine-arn ARN --table NAME]
          [--region R] [--max-cost USD] [--run-id ID] [--detach] [--poll-seconds N] [--json]
                                                  estimate, then start the plan on a deployed controller and
                                                  follow it (--detach: print the run id and execution ARN)
  rmqbench watch <runId> [--stack NAME | --state-machine-arn ARN --table NAME] [--region R]
                                                  follow a cloud run started earlier
  rmqbench runs [--json]                          list stored runs, newest first
  rmqbench show <runId> [--json]                  one run with every repetition
  rmqbench report <runId> [--format markdown|html|png] [--out FILE] [--chart ID] [--json]
                                                  report: Markdown (default), one self-contained HTML file
                                                  with Vega-Lite SVG charts, or one chart as PNG
                                                  (--chart throughput-per-repetition|throughput-over-time|
                                                  throughput-vs-queues|latency-percentiles)
  rmqbench report <runId> <runId>... [--json] [--out FILE]
                                                  each run's report, then price-performance across them
                                                  (instance types measured in different runs; Markdown or --json)
  rmqbench report --thesis-ch7 [--format markdown|html|png] [--out FILE] [--json]
                                                  Tables 7.4-7.7 recomputed from the thesis's inputs
  rmqbench compare <runId> [<runId>...] [--json]  per-scenario deltas with 95% CIs against the baseline run
                                                  (one run: vs its plan's baseline, and lb vs direct)
  rmqbench baseline <runId> [--json]              mark a run as the baseline of its plan
  rmqbench prices [--json]                        the price catalog in use
  rmqbench prices update [--out FILE] [--json]    refresh it from the Azure/AWS price APIs (keeps it when offline)
  rmqbench plans [--json]                         the built-in plans
  rmqbench estimate <plan.yaml>... --target aws|azure [--region R] [--max-cost USD] [--cluster-concurrency N] [--json]
                                                  cluster-minutes and cost of a cloud run before it starts
                                                  (exit 1 over --max-cost or the plan's maxCostUsd)
  rmqbench execution-input <plan.yaml> --target aws|azure [--run-id ID]
                                                  the JSON input of a BenchmarkController execution
  rmqbench validate <plan.yaml> [--target local|aws|azure]
                                                  check a plan without running it (aws/azure: every cluster
                                                  names an instanceType the price catalog knows; x86-64 on aws)
  rmqbench ingest <runDir>                        store a run's raw output again (after a store failure)
  rmqbench prune [--keep N | --older-than DAYS] [--dry-run] [--json]
                                                  delete run folders whose results the store has (all such
                                                  by default); a folder the store lacks is kept, with why
  rmqbench cleanup --target aws|azure [--dry-run] [--stack NAME | --table NAME] [--region R]
          [--subscription ID] [--json]        every rmqbench cluster stack / resource group with its run, age and
                                                  expiry; deletes those expired or whose run finished
  rmqbench broker-config --target azure [--topology quorum|classic|stream|mirrored] [--nodes 3]
          [--rabbitmq-version 3.13.7] [--mirror-to all|N] [--replication-factor N] [--json]
                                                  bicep/main.bicep's broker parameters as export lines
  rmqbench doctor [--fix] [--json]                what is missing and how to get it (--fix fetches the jars)

Options:
  --dynamodb-endpoint URL   use this DynamoDB (Local) endpoint instead of starting DynamoDB Local
                            (also RMQBENCH_DYNAMODB_ENDPOINT)
  --table NAME              results table (default ${DEFAULT_TABLE_NAME}, also RMQBENCH_TABLE)
  --store local|aws         runs, show, report, compare, baseline: read DynamoDB Local (default) or the
                            controller's table (from --stack NAME's outputs, default RmqbenchController, or
                            --table NAME; region and credentials from the AWS SDK's default chain, --region R)
  --json                    machine-readable output on stdout
Environment: RMQBENCH_HOME (data, default ~/.local/share/rmqbench), RMQBENCH_CACHE (jars, default ~/.cache/rmqbench).
Exit codes: 0 success, 1 error, 2 bad usage or invalid plan, 3 run finished with failed repetitions.`;

const BUILT_IN_PLANS = join(__dirname, '..', '..', 'plans');

interface GlobalOptions {
  readonly json: boolean;
  /** Where results are read: DynamoDB Local (default) or the controller's table (--store aws). */
  readonly store: 'local' | 'aws';
  /** --stack / --table / --region for --store aws. */
  readonly cloud: { readonly stack?: string; readonly table?: string; readonly region?: string };
  readonly endpoint: string | undefined;
  readonly table: string;
  readonly target: string;
  readonly fix: boolean;
}

function parseCli(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
}
type CliValues = ReturnType<typeof parseCli>['values'];

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCli(argv);
  } catch (error) {
    throw new CliError(`${unknownOptionHint((error as Error).message, argv)} (see rmqbench --help)`, 2);
  }
  const [command, ...rest] = parsed.positionals;
  if (command && !COMMAND_NAMES.includes(command)) {
    const closest = suggestion(command, COMMAND_NAMES);
    throw new CliError(
      `unknown command "${command}"${closest ? `; did you mean "${closest}"?` : ''} (see rmqbench --help)`,
      2,
    );
  }
  if (parsed.values.help && command) {
    console.log(commandHelp(command));
    return 0;
  }
  if (parsed.values.help || !command) {
    console.log(USAGE);
    return command || parsed.values.help ? 0 : 2;
  }
  const options: GlobalOptions = {
    json: parsed.values.json,
    endpoint: parsed.values['dynamodb-endpoint'] ?? process.env.RMQBENCH_DYNAMODB_ENDPOINT,
    table: parsed.values.table ?? process.env.RMQBENCH_TABLE ?? DEFAULT_TABLE_NAME,
    // Each command has its own default target: run → local, broker-config → azure.
    target: parsed.values.target ?? 'local',
    fix: parsed.values.fix,
    store: parseStore(parsed.values.store, command),
    cloud: {
      ...(parsed.values.stack === undefined ? {} : { stack: parsed.values.stack }),
      // Only the flag: RMQBENCH_TABLE names the local table, not the controller's.
      ...(parsed.values.table === undefined ? {} : { table: parsed.values.table }),
      ...(parsed.values.region === undefined ? {} : { region: parsed.values.region }),
    },
  };
  const handler = HANDLERS[command];
  if (!handler) throw new CliError(`unknown command "${command}" (see rmqbench --help)`, 2);
  return handler(rest, parsed.values, options);
}

/** One handler per command: its arguments, the parsed options and the global settings in; the exit code out. */
type CommandHandler = (rest: string[], values: CliValues, options: GlobalOptions) => Promise<number>;

const HANDLERS: Record<string, CommandHandler> = {
  run: handleRun,
  watch: handleWatch,
  validate: handleValidate,
  estimate: handleEstimate,
  'execution-input': handleExecutionInput,
  runs: handleRuns,
  show: handleShow,
  report: handleReport,
  compare: handleCompare,
  baseline: handleBaseline,
  prices: handlePrices,
  plans: handlePlans,
  ingest: handleIngest,
  prune: handlePrune,
  cleanup: handleCleanup,
  'broker-config': handleBrokerConfig,
  doctor: handleDoctor,
};

async function handleRun(rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  if (options.target === 'aws' || options.target === 'azure') {
    const reference = requireArg(rest, 'run <plan>');
    commandValidate(reference, { ...options, json: false }, { quiet: true });
    return cloudCommand(() =>
      runInCloud(loadPlan(reference), {
        ...cloudOptions(values, options),
        target: options.target as 'aws' | 'azure',
        catalog: loadEffectiveCatalog(userCatalogPath(dataDir())).catalog,
        ...(values['max-cost'] === undefined ? {} : { maxCost: values['max-cost'] }),
        ...(values['run-id'] === undefined ? {} : { runId: values['run-id'] }),
      }),
    );
  }
  return commandRun(requireArg(rest, 'run <plan>'), options, values['fail-at']);
}

async function handleWatch(rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  const runId = requireArg(rest, 'watch <runId>');
  return cloudCommand(() => watchInCloud(runId, cloudOptions(values, options)));
}

async function handleValidate(rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  return commandValidate(requireArg(rest, 'validate <plan>'), options);
}

async function handleEstimate(rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  requireArg(rest, 'estimate <plan>...');
  const plans = rest.map((reference) => loadPlan(reference));
  let result;
  try {
    result = estimateCommand(plans, {
      target: options.target,
      json: options.json,
      catalog: loadEffectiveCatalog(userCatalogPath(dataDir())).catalog,
      ...(values.region ? { region: values.region } : {}),
      ...(values['max-cost'] ? { maxCost: values['max-cost'] } : {}),
      ...(values['cluster-concurrency'] ? { clusterConcurrency: values['cluster-concurrency'] } : {}),
    });
  } catch (error) {
    if (error instanceof EstimateUsageError) throw new CliError(error.message, 2);
    throw error;
  }
  process.stdout.write(result.stdout);
  if (result.error) console.error(`rmqbench: ${result.error}`);
  return result.exitCode;
}

async function handleExecutionInput(rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  return commandExecutionInput(requireArg(rest, 'execution-input <plan>'), options, values['run-id']);
}

async function handleRuns(_rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  return withStore(options, async (store) => {
    const runs = await store.listRuns();
    if (options.json) console.log(JSON.stringify(runs, null, 2));
    else if (runs.length === 0) console.log('no runs stored yet; try: rmqbench run quickstart');
    else
      for (const run of runs)
        console.log(`${run.runId}  ${run.status.padEnd(9)}  ${run.target}  ${run.startedAt}  ${run.planName}`);
    return 0;
  });
}

async function handleShow(rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  return withStore(options, async (store, location) => {
    const stored = await readRun(store, requireArg(rest, 'show <runId>'));
    // Each repetition with its broker and host metrics (every series names its node and metric), where stored.
    const metrics = new Map(
      (await metricsOfRun(stored, (id, scenarioId, repetition) => store.getMetrics(id, scenarioId, repetition))).map(
        (found) => [`${found.scenarioId}#${found.repetition}`, found.metrics],
      ),
    );
    if (options.json) {
      const repetitions = stored.repetitions.map((rep) => {
        const found = metrics.get(`${rep.scenarioId}#${rep.repetition}`);
        return found ? { ...rep, metrics: found } : rep;
      });
      console.log(JSON.stringify({ ...stored, repetitions }, null, 2));
    } else {
      const { run } = stored;
      console.log(
        `${run.runId}: plan ${run.planName}, target ${run.target}, ${run.status}, ${run.startedAt} → ${run.finishedAt ?? '…'}`,
      );
      if (run.error) console.log(`error: ${run.error}`);
      if (location.bucketName && run.target !== 'local')
        console.log(`raw output: s3://${location.bucketName}/runs/${run.runId}/`);
      for (const rep of stored.repetitions) {
        const rates = rep.result
          ? `send ${rep.result.summary.sendRateAvg} msg/s, receive ${rep.result.summary.receiveRateAvg} msg/s`
          : rep.error;
        console.log(`  ${rep.scenarioId} #${rep.repetition} ${rep.status}: ${rates}`);
        if (rep.failover) console.log(`    ${formatFailoverLine(rep.failover)}`);
        if (rep.uncountedFault) console.log(`    ${formatUncountedFaultLine(rep.uncountedFault)}`);
        const found = metrics.get(`${rep.scenarioId}#${rep.repetition}`);
        if (found) for (const node of summarizeNodes(found)) console.log(`    ${formatNodeSummary(node)}`);
        if (rep.loadGenerator?.bound) console.log(`    ${loadGeneratorBoundLine(1, 1)}`);
        if (rep.metricsError) console.log(`    metrics: ${rep.metricsError}`);
      }
    }
    return 0;
  });
}

async function handleReport(rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  const format = values.format;
  if (!(REPORT_FORMATS as readonly string[]).includes(format))
    throw new CliError(`unknown report format "${format}": use ${REPORT_FORMATS.join(', ')}`, 2);
  if (values['thesis-ch7']) {
    const result = await thesisChapter7Report({
      format: format as ReportFormat,
      json: options.json,
      catalog: loadEffectiveCatalog(userCatalogPath(dataDir())).catalog,
      ...(values.out === undefined ? {} : { out: values.out }),
    });
    process.stdout.write(result.stdout);
    return 0;
  }
  const runId = requireArg(rest, 'report <runId> [<runId>...]');
  const chart = values.chart;
  if (rest.length > 1) {
    const { catalog } = loadEffectiveCatalog(userCatalogPath(dataDir()));
    return withStore(options, async (store) => {
      const stored = [];
      for (const id of rest) stored.push(await readRun(store, id));
      let result;
      try {
        result = await reportOverRuns(
          stored,
          {
            format: format as ReportFormat,
            json: options.json,
            catalog,
            ...(values.out === undefined ? {} : { out: values.out }),
          },
          (id, scenarioId, repetition) => store.getMetrics(id, scenarioId, repetition),
        );
      } catch (error) {
        if (error instanceof ReportError) throw new CliError(error.message, 2);
        throw error;
      }
      for (const warning of result.warnings) console.error(`rmqbench: ${warning}`);
      process.stdout.write(result.stdout);
      return 0;
    });
  }
  if (chart !== undefined && !isChartId(chart))
    throw new CliError(
      `unknown chart "${chart}": use throughput-per-repetition, throughput-over-time, throughput-vs-queues, latency-percentiles or cpu-over-time`,
      2,
    );
  const { catalog } = loadEffectiveCatalog(userCatalogPath(dataDir()));
  return withStore(options, async (store) => {
    const stored = await readRun(store, runId);
    const result = await reportCommand(
      stored,
      (id, scenarioId, repetition) => store.getSamples(id, scenarioId, repetition),
      {
        format: format as ReportFormat,
        json: options.json,
        catalog,
        ...(values.out === undefined ? {} : { out: values.out }),
        ...(chart === undefined ? {} : { chart }),
      },
      (id, scenarioId, repetition) => store.getMetrics(id, scenarioId, repetition),
    );
    for (const warning of result.warnings) console.error(`rmqbench: ${warning}`);
    process.stdout.write(result.stdout);
    return 0;
  });
}

async function handleCompare(rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  if (rest.length === 0) throw new CliError('missing argument: rmqbench compare <runId> [<runId>...]', 2);
  return withStore(options, async (store) => {
    process.stdout.write(await compareCommand(store, rest, { json: options.json }));
    return 0;
  });
}

async function handleBaseline(rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  return withStore(options, async (store) => {
    process.stdout.write(await baselineCommand(store, requireArg(rest, 'baseline <runId>'), { json: options.json }));
    return 0;
  });
}

async function handlePrices(rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  const path = userCatalogPath(dataDir());
  if (rest[0] === undefined) {
    process.stdout.write(showPrices(loadEffectiveCatalog(path), options.json));
    return 0;
  }
  if (rest[0] !== 'update')
    throw new CliError(`unknown prices subcommand "${rest[0]}": use rmqbench prices, or rmqbench prices update`, 2);
  const update = await updatePrices(loadEffectiveCatalog(path), values.out ?? path, {
    json: options.json,
    awsGetProducts: awsPriceList(),
  });
  process.stdout.write(update.stdout);
  return update.refreshed ? 0 : 1;
}

async function handlePlans(_rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  return commandPlans(options);
}

async function handleIngest(rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  return commandIngest(requireArg(rest, 'ingest <runDir>'), options);
}

async function handlePrune(_rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  let selection;
  try {
    selection = parsePruneSelection({ keep: values.keep, olderThan: values['older-than'] });
  } catch (error) {
    throw new CliError(`${(error as Error).message} (see rmqbench --help)`, 2);
  }
  const dryRun = values['dry-run'];
  return withStore(options, async (store) => {
    const decisions = await planPrune(join(dataDir(), 'runs'), store, selection);
    if (!dryRun) applyPrune(decisions);
    process.stdout.write(formatPrune(decisions, dryRun, options.json));
    return 0;
  });
}

async function handleCleanup(_rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  return commandCleanup(options, values['dry-run'], values.subscription ?? process.env.AZURE_SUBSCRIPTION_ID);
}

async function handleBrokerConfig(_rest: string[], values: CliValues, options: GlobalOptions): Promise<number> {
  try {
    process.stdout.write(
      brokerConfigCommand({
        target: values.target ?? 'azure',
        topology: values.topology,
        nodes: values.nodes,
        rabbitmqVersion: values['rabbitmq-version'],
        ...(values['mirror-to'] !== undefined ? { mirrorTo: values['mirror-to'] } : {}),
        ...(values['replication-factor'] !== undefined ? { replicationFactor: values['replication-factor'] } : {}),
        json: options.json,
      }),
    );
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  return 0;
}

async function handleDoctor(_rest: string[], _values: CliValues, options: GlobalOptions): Promise<number> {
  const report = await doctor({ cacheDir: cacheDir(), fix: options.fix });
  if (options.json) console.log(JSON.stringify(report, null, 2));
  else
    for (const check of report.checks)
      console.log(`${check.ok ? 'ok     ' : 'MISSING'}  ${check.name}: ${check.detail}`);
  return report.checks.every((check) => check.ok) ? 0 : 1;
}

/** parseArgs' "Unknown option '--tagret'. To specify a positional…" as one line naming the closest known option. */
function unknownOptionHint(message: string, argv: readonly string[]): string {
  const unknown = /Unknown option '(--?[^']+)'/.exec(message)?.[1];
  if (!unknown) return message;
  const closest = argv.includes(unknown) ? suggestion(unknown.replace(/^-+/, ''), KNOWN_OPTIONS) : undefined;
  return `unknown option ${unknown}${closest ? `; did you mean --${closest}?` : ''}`;
}

/**
 * `cleanup --target aws|azure [--dry-run]`: run states come from the controller's results table (stack outputs or
 * --table); without one, expiry alone decides, as in the hourly sweeper.
 */
async function commandCleanup(
  options: GlobalOptions,
  dryRun: boolean,
  subscription: string | undefined,
): Promise<number> {
  if (options.target !== 'aws' && options.target !== 'azure')
    throw new CliError(`cleanup needs --target aws or --target azure (got "${options.target}")`, 2);
  if (options.target === 'azure' && !subscription)
    throw new CliError('cleanup --target azure needs --subscription ID (or AZURE_SUBSCRIPTION_ID)', 2);
  const clients = awsClients(options.cloud.region);
  try {
    let store: ResultsStore | undefined;
    let note: string | undefined;
    try {
      store = cloudStore(
        clients.dynamodb,
        (await resolveController(clients.cfn, options.cloud, { stateMachine: false })).tableName,
      );
    } catch (error) {
      if (!(error instanceof ControllerLookupError)) throw error;
      note = `run states unknown (${error.message}): only expiry tags decide`;
    }
    const outcome =
      options.target === 'aws'
        ? await cleanupAws(clients.cfn, store, { dryRun, ...(note ? { note } : {}) })
        : await cleanupAzure(await azureCliClients(subscription!), store, { dryRun, ...(note ? { note } : {}) });
    process.stdout.write(formatCleanup(outcome, dryRun, options.json));
    return 0;
  } finally {
    for (const client of Object.values(clients)) client.destroy();
  }
}

/**
 * ARM clients with the user's Azure sign-in (DefaultAzureCredential: environment, workload identity, managed identity,
 * Azure CLI).
 */
async function azureCliClients(subscription: string) {
  const [{ DefaultAzureCredential }, { azureClients }] = await Promise.all([
    import('@azure/identity'),
    import('../lambdas/shared/azure-cluster'),
  ]);
  return azureClients(new DefaultAzureCredential(), subscription);
}

/** The controller and polling flags the cloud commands share. */
function cloudOptions(
  values: {
    stack?: string;
    'state-machine-arn'?: string;
    region?: string;
    detach?: boolean;
    'poll-seconds'?: string;
    table?: string;
  },
  options: GlobalOptions,
) {
  const pollSeconds = values['poll-seconds'] === undefined ? undefined : Number(values['poll-seconds']);
  if (pollSeconds !== undefined && !(Number.isFinite(pollSeconds) && pollSeconds > 0))
    throw new CliError(`--poll-seconds must be a positive number, got "${values['poll-seconds']}"`, 2);
  return {
    json: options.json,
    ...(values.stack === undefined ? {} : { stack: values.stack }),
    ...(values['state-machine-arn'] === undefined ? {} : { stateMachineArn: values['state-machine-arn'] }),
    ...(values.table === undefined ? {} : { table: values.table }),
    ...(values.region === undefined ? {} : { region: values.region }),
    ...(values.detach ? { detach: true } : {}),
    ...(pollSeconds === undefined ? {} : { pollSeconds }),
  };
}

/** Prints a cloud command's outcome; a failure before anything started is one line, exit 1. */
async function cloudCommand(command: () => Promise<CloudCommandResult>): Promise<number> {
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

function requireArg(rest: string[], usage: string): string {
  if (!rest[0]) throw new CliError(`missing argument: rmqbench ${usage}`, 2);
  return rest[0];
}

function loadPlan(reference: string): Plan {
  const builtIn = join(BUILT_IN_PLANS, `${reference}.yaml`);
  const path = existsSync(reference) ? reference : existsSync(builtIn) ? builtIn : undefined;
  if (!path)
    throw new CliError(`no plan file "${reference}" and no built-in plan of that name (see rmqbench plans)`, 2);
  try {
    return parsePlanText(readFileSync(path, 'utf8'), path);
  } catch (error) {
    if (error instanceof PlanValidationError) {
      const details = error.issues.map((issue) => `  - ${formatPlanIssue(issue)}`).join('\n');
      throw new CliError(
        `invalid plan ${path} (${error.issues.length} problem${error.issues.length > 1 ? 's' : ''}):\n${details}`,
        2,
      );
    }
    throw error;
  }
}

/**
 * `validate <plan> [--target local|aws|azure]`: the plan schema, then what the target needs (the workflow's
 * ValidatePlan applies the same rules).
 */
function commandValidate(reference: string, options: GlobalOptions, { quiet = false } = {}): number {
  if (!(WORKFLOW_TARGETS as readonly string[]).includes(options.target)) {
    throw new CliError(`--target must be one of ${WORKFLOW_TARGETS.join(', ')} (got "${options.target}")`, 2);
  }
  const plan = loadPlan(reference);
  const issues = targetProblems(plan, options.target, defaultPriceCatalog);
  if (issues.length > 0) {
    const details = issues.map((issue) => `  - ${formatPlanIssue(issue)}`).join('\n');
    throw new CliError(
      `plan ${plan.name} cannot run on target ${options.target} (${issues.length} problem${issues.length > 1 ? 's' : ''}):\n${details}`,
      2,
    );
  }
  if (quiet) return 0;
  if (options.json) console.log(JSON.stringify(plan, null, 2));
  else
    console.log(
      `plan ${plan.name} is valid for target ${options.target}: ${plan.scenarios.length} scenario(s) × ${plan.repetitions} repetition(s)`,
    );
  return 0;
}

/**
 * `execution-input <plan> --target aws|azure [--run-id ID]`: the JSON a BenchmarkController execution takes
 * (`{ plan, target, runId? }`), after the same checks as `validate --target`.
 */
function commandExecutionInput(reference: string, options: GlobalOptions, runId: string | undefined): number {
  if (options.target !== 'aws' && options.target !== 'azure') {
    throw new CliError(
      `execution-input is for the cloud controller: give --target aws or --target azure (got "${options.target}")`,
      2,
    );
  }
  commandValidate(reference, { ...options, json: false }, { quiet: true });
  const input: WorkflowInput = executionInput(loadPlan(reference), options.target, runId);
  console.log(JSON.stringify(input, null, 2));
  return 0;
}

function commandPlans(options: GlobalOptions): number {
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
}

/**
 * Runs the plan through the workflow definition the BenchmarkController deploys; `failAt` injects a fault (--fail-at
 * <State>[:N]).
 */
async function commandRun(reference: string, options: GlobalOptions, failAt?: string): Promise<number> {
  if (options.target !== 'local')
    throw new CliError(`--target must be local, aws or azure (got "${options.target}")`, 2);
  const plan = loadPlan(reference);
  try {
    parseFailAt(failAt);
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  const runId = newRunId(plan.name);
  const runDir = join(dataDir(), 'runs', runId);
  const processes = new ProcessRegistry();
  const target = new LocalTarget({ processes, runDir, cacheDir: cacheDir() });
  target.preflight(plan);
  const opening = openStore(options, processes);
  opening.catch(() => undefined); // awaited by the run; this only keeps an early failure from being unhandled
  const uninstall = stopOnSignals(async () => {
    // Record the interruption while the store still runs (at most 5 s), then stop everything.
    const recorded = opening.then((store) =>
      store.finishRun(runId, 'FAILED', new Date().toISOString(), 'interrupted by a signal (Ctrl-C)'),
    );
    await Promise.race([recorded.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000))]);
    await processes.stopAll();
  });
  try {
    const display = new ProgressDisplay(process.stderr);
    const outcome = await runPlanWorkflow({
      plan,
      target,
      store: opening,
      runDir,
      runId,
      onEvent: (event) => display.handle(event),
      ...(failAt ? { failAt } : {}),
    });
    display.finish();
    const store = await opening;
    const stored = await store.getRun(runId).catch(() => undefined);
    if (options.json)
      console.log(
        JSON.stringify(
          { ...outcome, report: stored ? aggregateRun(stored.run, stored.repetitions) : undefined },
          null,
          2,
        ),
      );
    else if (stored) process.stdout.write(renderMarkdownReport(stored.run, stored.repetitions));
    if (outcome.status === 'FAILED')
      throw new CliError(`run ${runId} failed: ${outcome.error ?? 'no repetition succeeded'}`);
    if (outcome.status === 'PARTIAL') {
      const failed = outcome.records.filter((record) => record.status === 'FAILED').length;
      throw new CliError(
        `run ${runId} finished with ${failed} failed repetition(s) of ${outcome.records.length}; see the report above`,
        3,
      );
    }
    return 0;
  } finally {
    warnIfLeft(await processes.stopAll());
    uninstall();
  }
}

/** Names processes still listed (unreaped) after the wait, so that a user can see what and why. */
function warnIfLeft(left: readonly { pid: number; comm: string; state: string; ppid: number }[]): void {
  if (left.length === 0) return;
  const list = left.map((p) => `${p.comm} (pid ${p.pid}, state ${p.state}, parent ${p.ppid})`).join(', ');
  console.error(`rmqbench: still listed after stopping, not yet reaped by their parent: ${list}`);
}

async function commandIngest(runDir: string, options: GlobalOptions): Promise<number> {
  return withStore(options, async (store) => {
    const result = await ingestRunDir(store, runDir);
    console.log(
      options.json
        ? JSON.stringify(result)
        : `stored ${result.stored} repetition(s) of ${result.runId}: ${result.status}`,
    );
    return 0;
  });
}

async function readRun(store: ResultsStore, runId: string) {
  const stored = await store.getRun(runId);
  if (!stored) throw new CliError(`no run "${runId}" in table ${store.tableName} (see rmqbench runs)`);
  return stored;
}

/** The store named by --dynamodb-endpoint, or a DynamoDB Local started for this command and kept in the data folder. */
async function openStore(options: GlobalOptions, processes: ProcessRegistry): Promise<ResultsStore> {
  let endpoint = options.endpoint;
  if (!endpoint) {
    const local = await startDynamoDbLocal({
      cacheDir: cacheDir(),
      processes,
      dataPath: join(dataDir(), 'dynamodb'),
      logPath: join(dataDir(), 'dynamodb-local.log'),
    });
    endpoint = local.endpoint;
  }
  const store = ResultsStore.forEndpoint(endpoint, options.table);
  try {
    await store.ensureTable();
  } catch (error) {
    const hint = options.endpoint
      ? '; start DynamoDB Local there, or omit --dynamodb-endpoint and rmqbench starts one'
      : '';
    throw new CliError(`${(error as Error).message}${hint}`);
  }
  return store;
}

/** Commands that read (or, baseline, mark) stored results and so take --store aws. */
const CLOUD_STORE_COMMANDS = ['runs', 'show', 'report', 'compare', 'baseline'];

function parseStore(value: string | undefined, command: string | undefined): 'local' | 'aws' {
  if (value === undefined || value === 'local') return 'local';
  if (value !== 'aws') throw new CliError(`--store must be local or aws (got "${value}")`, 2);
  if (!CLOUD_STORE_COMMANDS.includes(command ?? ''))
    throw new CliError(`--store aws is for ${CLOUD_STORE_COMMANDS.join(', ')} (not ${command})`, 2);
  return 'aws';
}

/** Where a store keeps what is not in the table: the controller's raw-output bucket (--store aws). */
interface StoreLocation {
  readonly bucketName?: string;
}

async function withStore(
  options: GlobalOptions,
  action: (store: ResultsStore, location: StoreLocation) => Promise<number>,
): Promise<number> {
  if (options.store === 'aws') {
    const clients = awsClients(options.cloud.region);
    let controller;
    try {
      controller = await resolveController(clients.cfn, options.cloud, { stateMachine: false });
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
  const processes = new ProcessRegistry();
  const uninstall = stopOnSignals(() => processes.stopAll());
  try {
    return await action(await openStore(options, processes), {});
  } finally {
    warnIfLeft(await processes.stopAll());
    uninstall();
  }
}

// After Ctrl-C the signal handler exits (130) once every process is reaped; the run failing
// because its processes were stopped must not exit first with another code.
main(process.argv.slice(2)).then(
  (code) => {
    if (!exitingAfterSignal()) process.exit(code);
  },
  (error: unknown) => {
    if (exitingAfterSignal()) return;
    const message = error instanceof Error ? error.message : String(error);
    console.error(`rmqbench: ${message}`);
    process.exit(error instanceof CliError ? error.exitCode : 1);
  },
);
