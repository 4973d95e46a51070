/** `rmqbench report`: a run's report, price-performance across runs, or the thesis's chapter 7 tables. */
import { Option, type Command } from 'commander';
import { dataDir } from '../../local/paths';
import { loadEffectiveCatalog, userCatalogPath } from '../prices-command';
import {
  isChartId,
  reportCommand,
  reportOverRuns,
  ReportError,
  REPORT_FORMATS,
  thesisChapter7Report,
  type ReportFormat,
} from '../report-command';
import { CliError } from '../cli/cli-error';
import { defineCommand, jsonOption, onRun, withStoreOptions } from '../cli/command-kit';
import { readRun, storeSettings, withStore, type StoreOptions } from '../cli/store-access';

const CHARTS =
  'throughput-per-repetition, throughput-over-time, throughput-vs-queues, latency-percentiles or cpu-over-time';

interface ReportOptions extends StoreOptions {
  readonly format: ReportFormat;
  readonly out?: string;
  readonly chart?: string;
  readonly thesisCh7: boolean;
  readonly json: boolean;
}

export function reportCli(): Command {
  const command = defineCommand({
    name: 'report',
    summary:
      "a run's report (Markdown, HTML or one chart as PNG), price-performance across runs, or the thesis's chapter 7",
    details: [
      'report <runId>                 the run: Markdown, one self-contained HTML file with charts, or one chart as PNG',
      "report <runId> <runId>...      each run's report, then price-performance across them (Markdown or --json)",
      'report --thesis-ch7            Tables 7.4-7.7 recomputed from the thesis inputs',
    ].join('\n'),
    arguments: ['[runIds...]'],
    examples: ['rmqbench report quickstart-20261125T101500Z-3f2a --format html --out report.html'],
  })
    .addOption(new Option('--format <format>', 'the report format').choices(REPORT_FORMATS).default('markdown'))
    .option('--out <file>', 'write the report there instead of stdout')
    .option('--chart <id>', `with png: ${CHARTS}`)
    .option('--thesis-ch7', 'Tables 7.4-7.7 recomputed from the thesis inputs', false);
  withStoreOptions(command).addOption(jsonOption());
  return onRun<ReportOptions>(command, async ([runIds], options, self) => {
    if (options.thesisCh7) return thesisReport(options);
    const ids = runIds as string[];
    if (ids.length === 0) throw new CliError('missing argument: rmqbench report <runId> [<runId>...]', 2);
    if (ids.length > 1) return reportAcrossRuns(ids, options, self);
    return reportOneRun(ids[0]!, options, self);
  });
}

async function thesisReport(options: ReportOptions): Promise<number> {
  const result = await thesisChapter7Report({
    format: options.format,
    json: options.json,
    catalog: loadEffectiveCatalog(userCatalogPath(dataDir())).catalog,
    ...(options.out === undefined ? {} : { out: options.out }),
  });
  process.stdout.write(result.stdout);
  return 0;
}

function reportAcrossRuns(runIds: readonly string[], options: ReportOptions, command: Command): Promise<number> {
  const { catalog } = loadEffectiveCatalog(userCatalogPath(dataDir()));
  return withStore(storeSettings(options, command), async (store) => {
    const stored = [];
    for (const id of runIds) stored.push(await readRun(store, id));
    let result;
    try {
      result = await reportOverRuns(
        stored,
        {
          format: options.format,
          json: options.json,
          catalog,
          ...(options.out === undefined ? {} : { out: options.out }),
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

function reportOneRun(runId: string, options: ReportOptions, command: Command): Promise<number> {
  const chart = options.chart;
  if (chart !== undefined && !isChartId(chart)) throw new CliError(`unknown chart "${chart}": use ${CHARTS}`, 2);
  const { catalog } = loadEffectiveCatalog(userCatalogPath(dataDir()));
  return withStore(storeSettings(options, command), async (store) => {
    const stored = await readRun(store, runId);
    const result = await reportCommand(
      stored,
      (id, scenarioId, repetition) => store.getSamples(id, scenarioId, repetition),
      {
        format: options.format,
        json: options.json,
        catalog,
        ...(options.out === undefined ? {} : { out: options.out }),
        ...(chart === undefined ? {} : { chart }),
      },
      (id, scenarioId, repetition) => store.getMetrics(id, scenarioId, repetition),
    );
    for (const warning of result.warnings) console.error(`rmqbench: ${warning}`);
    process.stdout.write(result.stdout);
    return 0;
  });
}
