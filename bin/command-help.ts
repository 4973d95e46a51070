/**
 * The CLI's options (parseArgs' configuration) and per-command help (`rmqbench <command> --help`: synopsis, options,
 * example), declared here once, and suggestions for a misspelt command or option.
 */
import { suggestField } from '../core/plan/plan-field-suggestion';

/** Every option of every command: parseArgs' configuration (bin/rmqbench.ts), each described per command below. */
export const OPTIONS = {
  json: { type: 'boolean', default: false },
  'dynamodb-endpoint': { type: 'string' },
  table: { type: 'string' },
  target: { type: 'string' },
  fix: { type: 'boolean', default: false },
  'fail-at': { type: 'string' },
  'run-id': { type: 'string' },
  region: { type: 'string' },
  'max-cost': { type: 'string' },
  'cluster-concurrency': { type: 'string' },
  topology: { type: 'string', default: 'quorum' },
  nodes: { type: 'string', default: '3' },
  'rabbitmq-version': { type: 'string', default: '3.13.7' },
  'mirror-to': { type: 'string' },
  'replication-factor': { type: 'string' },
  format: { type: 'string', default: 'markdown' },
  out: { type: 'string' },
  chart: { type: 'string' },
  'thesis-ch7': { type: 'boolean', default: false },
  keep: { type: 'string' },
  'older-than': { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  stack: { type: 'string' },
  'state-machine-arn': { type: 'string' },
  detach: { type: 'boolean', default: false },
  store: { type: 'string' },
  'poll-seconds': { type: 'string' },
  subscription: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;
export const KNOWN_OPTIONS = Object.keys(OPTIONS);

export interface CommandSpec {
  readonly name: string;
  readonly summary: string;
  /** Usage lines without the leading `rmqbench `. */
  readonly usage: readonly string[];
  /** [flag with its value, what it does]. */
  readonly options: readonly (readonly [string, string])[];
  readonly example: string;
}

const JSON_OPTION = ['--json', 'machine-readable output on stdout'] as const;
const STORE_OPTIONS = [
  ['--store local|aws', "read DynamoDB Local (default) or the controller's results table"],
  ['--stack NAME', 'with --store aws: the controller stack whose outputs name the table (default RmqbenchController)'],
  ['--table NAME', 'the results table (local default rmqbench-results, also RMQBENCH_TABLE)'],
  ['--region R', 'with --store aws: the AWS region (default: the SDK chain)'],
  ['--dynamodb-endpoint URL', 'use this DynamoDB (Local) endpoint instead of starting DynamoDB Local'],
] as const;
const CONTROLLER_OPTIONS = [
  ['--stack NAME', 'the controller stack whose outputs name the state machine and table (default RmqbenchController)'],
  ['--state-machine-arn ARN', 'the state machine, with --table NAME, instead of a stack'],
  ['--region R', 'the AWS region (default: the SDK chain)'],
  ['--poll-seconds N', 'how often a followed run is polled (default 10)'],
] as const;

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'run',
    summary: 'run a plan: on localhost through the workflow definition, or on a deployed controller',
    usage: [
      'run <plan.yaml|built-in name> [--target local] [--fail-at <State>[:N]] [--json]',
      'run <plan.yaml> --target aws|azure [--max-cost USD] [--run-id ID] [--detach] [controller options]',
    ],
    options: [
      ['--target local|aws|azure', 'where the plan runs (default local)'],
      ['--fail-at <State>[:N]', 'local: make that workflow state fail (on its Nth entry)'],
      ['--max-cost USD', "cloud: refuse to start above this estimate (also the plan's maxCostUsd)"],
      ['--run-id ID', 'cloud: the run id and execution name (default <plan>-<UTC stamp>-<hex>)'],
      ['--detach', 'cloud: print the run id and execution ARN and return'],
      ...CONTROLLER_OPTIONS,
      ['--dynamodb-endpoint URL', 'local: store results in this DynamoDB instead of starting DynamoDB Local'],
      JSON_OPTION,
    ],
    example: 'rmqbench run quickstart',
  },
  {
    name: 'watch',
    summary: 'follow a cloud run started earlier',
    usage: ['watch <runId> [controller options]'],
    options: [...CONTROLLER_OPTIONS, JSON_OPTION],
    example: 'rmqbench watch quickstart-20261125T101500Z-3f2a',
  },
  {
    name: 'runs',
    summary: 'list stored runs, newest first',
    usage: ['runs [--store local|aws] [--json]'],
    options: [...STORE_OPTIONS, JSON_OPTION],
    example: 'rmqbench runs --store aws',
  },
  {
    name: 'show',
    summary: 'one run with every repetition, its failover counts and metrics',
    usage: ['show <runId> [--store local|aws] [--json]'],
    options: [...STORE_OPTIONS, JSON_OPTION],
    example: 'rmqbench show quickstart-20261125T101500Z-3f2a',
  },
  {
    name: 'report',
    summary:
      "a run's report (Markdown, HTML or one chart as PNG), price-performance across runs, or the thesis's chapter 7",
    usage: [
      'report <runId> [--format markdown|html|png] [--out FILE] [--chart ID] [--json]',
      'report <runId> <runId>... [--out FILE] [--json]',
      'report --thesis-ch7 [--format markdown|html|png] [--out FILE] [--json]',
    ],
    options: [
      [
        '--format markdown|html|png',
        'Markdown (default), one self-contained HTML file with charts, or one chart as PNG',
      ],
      ['--out FILE', 'write the report there instead of stdout'],
      [
        '--chart ID',
        'with png: throughput-per-repetition, throughput-over-time, throughput-vs-queues, latency-percentiles or cpu-over-time',
      ],
      ['--thesis-ch7', 'Tables 7.4-7.7 recomputed from the thesis inputs'],
      ...STORE_OPTIONS,
      JSON_OPTION,
    ],
    example: 'rmqbench report quickstart-20261125T101500Z-3f2a --format html --out report.html',
  },
  {
    name: 'compare',
    summary: 'per-scenario deltas with 95% intervals against a baseline run',
    usage: ['compare <runId> [<runId>...] [--json]'],
    options: [...STORE_OPTIONS, JSON_OPTION],
    example: 'rmqbench compare run-a run-b',
  },
  {
    name: 'baseline',
    summary: "mark a run as its plan's baseline",
    usage: ['baseline <runId> [--json]'],
    options: [...STORE_OPTIONS, JSON_OPTION],
    example: 'rmqbench baseline run-a',
  },
  {
    name: 'prices',
    summary: 'the price catalog in use, or refresh it from the Azure/AWS price APIs',
    usage: ['prices [--json]', 'prices update [--out FILE] [--json]'],
    options: [['--out FILE', 'update: where the refreshed catalog is written'], JSON_OPTION],
    example: 'rmqbench prices update',
  },
  {
    name: 'plans',
    summary: 'the built-in plans',
    usage: ['plans [--json]'],
    options: [JSON_OPTION],
    example: 'rmqbench plans',
  },
  {
    name: 'estimate',
    summary: 'cluster-minutes and cost of a cloud run before it starts (exit 1 over the budget)',
    usage: [
      'estimate <plan.yaml>... --target aws|azure [--region R] [--max-cost USD] [--cluster-concurrency N] [--json]',
    ],
    options: [
      ['--target aws|azure', 'the cloud to price (required)'],
      [
        '--region R',
        "that region's prices (default: the plan's region for the target, else the newest price in any region)",
      ],
      [
        '--max-cost USD',
        "exit 1 when the estimate (of several plans: their sum) exceeds it (also each plan's maxCostUsd)",
      ],
      ['--cluster-concurrency N', 'clusters the controller runs at once, for the wall time (default 4, as deployed)'],
      JSON_OPTION,
    ],
    example: 'rmqbench estimate plans/thesis-ch4-lb-vs-direct.yaml --target aws --max-cost 20',
  },
  {
    name: 'execution-input',
    summary: 'the JSON input of a BenchmarkController execution',
    usage: ['execution-input <plan.yaml> --target aws|azure [--run-id ID]'],
    options: [
      ['--target aws|azure', 'the target (required)'],
      ['--run-id ID', 'the run id (default <plan>-<UTC stamp>-<hex>)'],
    ],
    example: 'rmqbench execution-input my-plan.yaml --target aws',
  },
  {
    name: 'validate',
    summary: 'check a plan without running it',
    usage: ['validate <plan.yaml> [--target local|aws|azure]'],
    options: [
      ['--target local|aws|azure', "also check what that target needs (priced instance types, the workflow's limits)"],
    ],
    example: 'rmqbench validate my-plan.yaml --target aws',
  },
  {
    name: 'ingest',
    summary: "store a run's raw output again (after a store failure)",
    usage: ['ingest <runDir>'],
    options: [['--dynamodb-endpoint URL', 'store into this DynamoDB instead of starting DynamoDB Local']],
    example: 'rmqbench ingest ~/.local/share/rmqbench/runs/quickstart-20261125T101500Z-3f2a',
  },
  {
    name: 'prune',
    summary: 'delete run folders whose results the store has',
    usage: ['prune [--keep N | --older-than DAYS] [--dry-run] [--json]'],
    options: [
      ['--keep N', 'keep the N newest folders'],
      ['--older-than DAYS', 'only folders older than DAYS'],
      ['--dry-run', 'say what would be deleted'],
      JSON_OPTION,
    ],
    example: 'rmqbench prune --keep 10 --dry-run',
  },
  {
    name: 'cleanup',
    summary:
      'every rmqbench cluster stack / resource group with its run and expiry; deletes those expired or whose run finished',
    usage: [
      'cleanup --target aws|azure [--dry-run] [--stack NAME | --table NAME] [--region R] [--subscription ID] [--json]',
    ],
    options: [
      ['--target aws|azure', 'the cloud to clean (required)'],
      ['--dry-run', 'list without deleting'],
      ['--stack NAME', "the controller stack whose results table gives the runs' states"],
      ['--table NAME', 'the results table instead of a stack'],
      ['--region R', 'the AWS region'],
      ['--subscription ID', 'azure: the subscription (also AZURE_SUBSCRIPTION_ID)'],
      JSON_OPTION,
    ],
    example: 'rmqbench cleanup --target aws --dry-run',
  },
  {
    name: 'broker-config',
    summary: "bicep/main.bicep's broker parameters as export lines",
    usage: [
      'broker-config --target azure [--topology quorum|classic|stream|mirrored] [--nodes 3] [--rabbitmq-version 3.13.7] [--mirror-to all|N] [--replication-factor N] [--json]',
    ],
    options: [
      ['--topology T', 'quorum (default), classic, stream or mirrored'],
      ['--nodes N', 'cluster size (default 3)'],
      ['--rabbitmq-version V', 'default 3.13.7'],
      ['--mirror-to all|N', 'mirrored: how many nodes hold a mirror'],
      ['--replication-factor N', 'quorum/stream: replicas per queue'],
      JSON_OPTION,
    ],
    example: 'rmqbench broker-config --target azure --topology quorum --nodes 5',
  },
  {
    name: 'doctor',
    summary: 'what is missing and how to get it',
    usage: ['doctor [--fix] [--json]'],
    options: [['--fix', 'fetch the missing jars'], JSON_OPTION],
    example: 'rmqbench doctor --fix',
  },
];

export const COMMAND_NAMES = COMMANDS.map((command) => command.name);

/** `rmqbench <command> --help`: usage, options and an example; undefined for an unknown command. */
export function commandHelp(name: string): string | undefined {
  const spec = COMMANDS.find((command) => command.name === name);
  if (!spec) return undefined;
  const width = Math.max(...spec.options.map(([flag]) => flag.length));
  return [
    `rmqbench ${spec.name}: ${spec.summary}`,
    '',
    'Usage:',
    ...spec.usage.map((line) => `  rmqbench ${line}`),
    '',
    'Options:',
    ...spec.options.map(([flag, description]) => `  ${flag.padEnd(width)}  ${description}`),
    `  ${'--help'.padEnd(width)}  this help`,
    '',
    'Example:',
    `  ${spec.example}`,
  ].join('\n');
}

/**
 * The closest known command or option to a misspelt one, by the rule the plan's unknown fields use
 * (core/plan/plan-field-suggestion.ts: edit distance within a third of the name, or the one name it begins).
 */
export function suggestion(word: string, candidates: readonly string[]): string | undefined {
  return suggestField(word, candidates);
}
