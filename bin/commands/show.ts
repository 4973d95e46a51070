/** `rmqbench show <runId>`: one run with every repetition, its failover counts and metrics. */
import type { Command } from 'commander';
import { formatFailoverLine, formatUncountedFaultLine } from '../../core/failover/failover-report';
import { formatNodeSummary, loadGeneratorBoundLine, summarizeNodes } from '../../core/metrics/host-metrics';
import { adaptiveRuleOf } from '../../core/plan/plan';
import { adaptiveOutcome, type AdaptiveOutcome } from '../../core/results/adaptive-repetitions';
import type { StoredRun } from '../../store/results-store';
import { metricsOfRun } from '../report-command';
import { defineCommand, jsonOption, onRun, withStoreOptions } from '../cli/command-kit';
import { readRun, storeSettings, withStore, type StoreLocation, type StoreOptions } from '../cli/store-access';

type MetricsByRepetition = Map<string, Awaited<ReturnType<typeof metricsOfRun>>[number]['metrics']>;

export function showCli(): Command {
  const command = defineCommand({
    name: 'show',
    summary: 'one run with every repetition, its failover counts and metrics',
    arguments: ['<runId>'],
    examples: ['rmqbench show quickstart-20261125T101500Z-3f2a', 'rmqbench show my-run --store aws --json'],
  });
  withStoreOptions(command).addOption(jsonOption());
  return onRun<StoreOptions & { json: boolean }>(command, ([runId], options, self) =>
    withStore(storeSettings(options, self), async (store, location) => {
      const stored = await readRun(store, String(runId));
      // Each repetition with its broker and host metrics (every series names its node and metric), where stored.
      const found = await metricsOfRun(stored, (id, scenarioId, repetition) =>
        store.getMetrics(id, scenarioId, repetition),
      );
      const metrics: MetricsByRepetition = new Map(
        found.map((entry) => [`${entry.scenarioId}#${entry.repetition}`, entry.metrics]),
      );
      if (options.json) printJson(stored, metrics);
      else printText(stored, metrics, location);
      return 0;
    }),
  );
}

function printJson(stored: StoredRun, metrics: MetricsByRepetition): void {
  const repetitions = stored.repetitions.map((rep) => {
    const found = metrics.get(`${rep.scenarioId}#${rep.repetition}`);
    return found ? { ...rep, metrics: found } : rep;
  });
  const adaptive = adaptiveOutcomes(stored);
  console.log(JSON.stringify({ ...stored, repetitions, ...(adaptive.length > 0 ? { adaptive } : {}) }, null, 2));
}

/** Adaptive repetitions: per scenario, how many ran and why it stopped (empty for a plain number of repetitions). */
function adaptiveOutcomes(stored: StoredRun): AdaptiveOutcome[] {
  const rule = adaptiveRuleOf(stored.run.plan);
  return rule ? stored.run.scenarioIds.map((id) => adaptiveOutcome(rule, id, stored.repetitions)) : [];
}

function printText(stored: StoredRun, metrics: MetricsByRepetition, location: StoreLocation): void {
  const { run } = stored;
  console.log(
    `${run.runId}: plan ${run.planName}, target ${run.target}, ${run.status}, ` +
      `${run.startedAt} → ${run.finishedAt ?? '…'}`,
  );
  if (run.error) console.log(`error: ${run.error}`);
  if (location.bucketName && run.target !== 'local')
    console.log(`raw output: s3://${location.bucketName}/runs/${run.runId}/`);
  for (const rep of stored.repetitions) {
    const rates = rep.result
      ? `send ${rep.result.summary.sendRateAvg} msg/s, receive ${rep.result.summary.receiveRateAvg} msg/s`
      : (rep.error ?? rep.skipReason);
    console.log(`  ${rep.scenarioId} #${rep.repetition} ${rep.status}: ${rates}`);
    if (rep.failover) console.log(`    ${formatFailoverLine(rep.failover)}`);
    if (rep.uncountedFault) console.log(`    ${formatUncountedFaultLine(rep.uncountedFault)}`);
    const found = metrics.get(`${rep.scenarioId}#${rep.repetition}`);
    if (found) for (const node of summarizeNodes(found)) console.log(`    ${formatNodeSummary(node)}`);
    for (const lg of rep.loadGenerators ?? [])
      console.log(
        `    ${lg.id} (${lg.queues.join(', ')}): send ${lg.sendRate} msg/s, receive ${lg.receiveRate} msg/s` +
          (lg.cpuPercent === undefined ? '' : `, CPU ${lg.cpuPercent.toFixed(1)} %`) +
          (lg.startOffsetMs > 0 ? `, started ${lg.startOffsetMs} ms after the first` : ''),
      );
    if (rep.loadGenerator?.bound) console.log(`    ${rep.loadGenerator.line ?? loadGeneratorBoundLine(1, 1)}`);
    if (rep.metricsError) console.log(`    metrics: ${rep.metricsError}`);
  }
  for (const outcome of adaptiveOutcomes(stored))
    console.log(
      `  ${outcome.scenarioId}: ${outcome.ran} of ${outcome.min}-${outcome.max} repetitions, ${outcome.reason}`,
    );
}
