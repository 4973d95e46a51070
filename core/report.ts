import type { StoredRepetition } from './result-items';
import type { LatencyPercentiles, RunRecord, ScenarioAggregate } from './result-model';
import { describe, median, Stats } from './statistics';

/** Reduces a scenario's stored repetitions to one report row. */
export function aggregateScenario(scenarioId: string, repetitions: readonly StoredRepetition[]): ScenarioAggregate {
  const mine = repetitions.filter((rep) => rep.scenarioId === scenarioId);
  const ok = mine.filter((rep) => rep.status === 'SUCCEEDED' && rep.result);
  const summaries = ok.map((rep) => rep.result!.summary);
  const latency = (pick: (s: (typeof summaries)[number]) => LatencyPercentiles | undefined): LatencyPercentiles | undefined => {
    const values = summaries.map(pick).filter((value): value is LatencyPercentiles => value !== undefined);
    if (values.length === 0) return undefined;
    return {
      min: median(values.map((v) => v.min)),
      median: median(values.map((v) => v.median)),
      p75: median(values.map((v) => v.p75)),
      p95: median(values.map((v) => v.p95)),
      p99: median(values.map((v) => v.p99)),
    };
  };
  const consumerLatency = latency((s) => s.consumerLatency);
  const confirmLatency = latency((s) => s.confirmLatency);
  return {
    scenarioId,
    repetitionsSucceeded: ok.length,
    repetitionsFailed: mine.length - ok.length,
    ...(ok.length > 0
      ? { sendRate: describe(summaries.map((s) => s.sendRateAvg)), receiveRate: describe(summaries.map((s) => s.receiveRateAvg)) }
      : {}),
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
  };
}

export function aggregateRun(run: RunRecord, repetitions: readonly StoredRepetition[]): ScenarioAggregate[] {
  return run.scenarioIds.map((id) => aggregateScenario(id, repetitions));
}

/** A delta between two scenarios of one run that differ only in how clients connect (e.g. load balancer vs direct). */
export interface ConnectionDelta {
  readonly scenarioId: string;
  readonly againstScenarioId: string;
  readonly label: string;
  /** Relative change of the mean receive rate, in percent. */
  readonly receiveRateChangePercent: number;
  /** True when the two 95% confidence intervals overlap: the difference may be noise. */
  readonly withinNoise: boolean;
}

interface PlanShape {
  clusters: { name: string; nodes: number; topology: unknown; connection: string; rabbitmqVersion?: string }[];
}

/** Pairs each non-direct scenario with the scenario that runs the same workload on the same cluster shape directly. */
export function connectionDeltas(run: RunRecord, aggregates: readonly ScenarioAggregate[]): ConnectionDelta[] {
  const plan = run.plan as PlanShape;
  const clusterByName = new Map(plan.clusters.map((cluster) => [cluster.name, cluster]));
  const parse = (id: string) => {
    const slash = id.indexOf('/');
    return { clusterName: id.slice(0, slash), workload: id.slice(slash + 1) };
  };
  const shape = (cluster: PlanShape['clusters'][number]) =>
    JSON.stringify({ nodes: cluster.nodes, topology: cluster.topology, version: cluster.rabbitmqVersion ?? null });
  const deltas: ConnectionDelta[] = [];
  for (const aggregate of aggregates) {
    const { clusterName, workload } = parse(aggregate.scenarioId);
    const cluster = clusterByName.get(clusterName);
    if (!cluster || cluster.connection === 'direct' || !aggregate.receiveRate) continue;
    const counterpart = aggregates.find((other) => {
      const parsed = parse(other.scenarioId);
      const otherCluster = clusterByName.get(parsed.clusterName);
      return parsed.workload === workload && otherCluster?.connection === 'direct' && shape(otherCluster) === shape(cluster);
    });
    if (!counterpart?.receiveRate) continue;
    deltas.push({
      scenarioId: aggregate.scenarioId,
      againstScenarioId: counterpart.scenarioId,
      label: `${cluster.connection} vs direct`,
      receiveRateChangePercent: ((aggregate.receiveRate.mean - counterpart.receiveRate.mean) / counterpart.receiveRate.mean) * 100,
      withinNoise: intervalsOverlap(aggregate.receiveRate, counterpart.receiveRate),
    });
  }
  return deltas;
}

export function intervalsOverlap(a: Stats, b: Stats): boolean {
  return a.mean - a.ci95 <= b.mean + b.ci95 && b.mean - b.ci95 <= a.mean + a.ci95;
}

const rate = (stats: Stats | undefined) => (stats ? `${Math.round(stats.mean).toLocaleString('en-US')} ± ${Math.round(stats.ci95).toLocaleString('en-US')}` : '—');
const ms = (micros: number) => (micros / 1000).toFixed(micros < 10_000 ? 2 : 1);

/** The run as a Markdown report: one row per scenario (mean ± 95% CI over repetitions), then connection deltas. */
export function renderMarkdownReport(run: RunRecord, repetitions: readonly StoredRepetition[]): string {
  const aggregates = aggregateRun(run, repetitions);
  const lines = [
    `# rmqbench report: ${run.planName}`,
    '',
    `Run \`${run.runId}\` on target **${run.target}**, status **${run.status}**, started ${run.startedAt}${run.finishedAt ? `, finished ${run.finishedAt}` : ''}.`,
    `Environment: ${Object.entries(run.environment).map(([key, value]) => `${key} ${value}`).join(', ')}.`,
    ...(run.error ? ['', `Error: ${run.error}`] : []),
    '',
    '| scenario | reps ok | send msg/s (mean ± 95% CI) | receive msg/s (mean ± 95% CI) | consumer latency min / median / 75th / 95th / 99th (ms) |',
    '|---|---:|---:|---:|---|',
  ];
  for (const aggregate of aggregates) {
    const latency = aggregate.consumerLatency;
    const latencyCell = latency ? [latency.min, latency.median, latency.p75, latency.p95, latency.p99].map(ms).join(' / ') : '—';
    const reps = `${aggregate.repetitionsSucceeded}/${aggregate.repetitionsSucceeded + aggregate.repetitionsFailed}`;
    lines.push(`| ${aggregate.scenarioId} | ${reps} | ${rate(aggregate.sendRate)} | ${rate(aggregate.receiveRate)} | ${latencyCell} |`);
  }
  const deltas = connectionDeltas(run, aggregates);
  if (deltas.length > 0) {
    lines.push('', '| comparison | receive rate change | significance |', '|---|---:|---|');
    for (const delta of deltas) {
      const sign = delta.receiveRateChangePercent >= 0 ? '+' : '';
      lines.push(
        `| ${delta.scenarioId} vs ${delta.againstScenarioId} (${delta.label}) | ${sign}${delta.receiveRateChangePercent.toFixed(1)}% | ${delta.withinNoise ? 'within noise (95% CIs overlap)' : 'significant (95% CIs apart)'} |`,
      );
    }
  }
  const failed = repetitions.filter((rep) => rep.status === 'FAILED');
  if (failed.length > 0) {
    lines.push('', '## Failed repetitions', '');
    for (const rep of failed) lines.push(`- ${rep.scenarioId} #${rep.repetition}: ${rep.error}`);
  }
  return `${lines.join('\n')}\n`;
}
