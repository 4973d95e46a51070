import type { QueueThroughputPoint } from './charts';
import {
  aggregateCapacity,
  renderCapacityMarkdown,
  usdPerMillionMessages,
  type CapacityCost,
  type ScenarioCapacity,
} from '../capacity/capacity-report';
import { aggregateFailover, renderFailoverMarkdown } from '../failover/failover-report';
import { loadGeneratorBoundLine } from '../metrics/host-metrics';
import { loadGeneratorsSection } from './load-generators-report';
import {
  capacityIn,
  ComparisonError,
  compareLoadBalancerToDirect,
  type ScenarioDelta,
  type Verdict,
} from '../results/comparison';
import {
  clusterCost,
  costOfRun,
  findInstancePrice,
  PriceCatalogError,
  type CloudProvider,
  type PriceCatalog,
} from '../cost/cost-catalog';
import { DEFAULT_LOAD_GENERATOR_TYPE } from '../cost/estimate';
import { adaptiveRuleOf, validatePlan, type Scenario } from '../plan/plan';
import { adaptiveOutcome } from '../results/adaptive-repetitions';
import { onTarget } from '../plan/plan-target';
import {
  candidatesForQueues,
  formatRangeRow,
  pricePerformanceTable,
  type ThroughputMeasurement,
} from '../cost/price-performance';
import { catalogInstanceType } from '../plan/target-rules';
import type { StoredRepetition } from '../results/result-items';
import {
  megabytesPerSecond,
  type LatencyPercentiles,
  type RunRecord,
  type ScenarioAggregate,
} from '../results/result-model';
import { describe, median, Stats } from '../results/statistics';

/** Reduces a scenario's stored repetitions to one report row; with the message size, the rates in MB/s too. */
export function aggregateScenario(
  scenarioId: string,
  repetitions: readonly StoredRepetition[],
  messageSizeBytes?: number,
): ScenarioAggregate {
  const mine = repetitions.filter((rep) => rep.scenarioId === scenarioId);
  const ok = mine.filter((rep) => rep.status === 'SUCCEEDED' && rep.result);
  const summaries = ok.map((rep) => rep.result!.summary);
  const latency = (
    pick: (s: (typeof summaries)[number]) => LatencyPercentiles | undefined,
  ): LatencyPercentiles | undefined => {
    const values = summaries.map(pick).filter((value): value is LatencyPercentiles => value !== undefined);
    if (values.length === 0) return undefined;
    // min and p75 only where every repetition has them (Kafka's tools report neither).
    const optional = (key: 'min' | 'p75') =>
      values.every((v) => v[key] !== undefined) ? { [key]: median(values.map((v) => v[key]!)) } : {};
    return {
      ...optional('min'),
      median: median(values.map((v) => v.median)),
      ...optional('p75'),
      p95: median(values.map((v) => v.p95)),
      p99: median(values.map((v) => v.p99)),
    };
  };
  const consumerLatency = latency((s) => s.consumerLatency);
  const confirmLatency = latency((s) => s.confirmLatency);
  const failover = aggregateFailover(mine);
  const judged = ok.filter((rep) => rep.loadGenerator !== undefined);
  const capacity = aggregateCapacity(ok);
  return {
    scenarioId,
    repetitionsSucceeded: ok.length,
    repetitionsFailed: mine.filter((rep) => rep.status !== 'SKIPPED').length - ok.length,
    ...(mine.some((rep) => rep.status === 'SKIPPED')
      ? { repetitionsSkipped: mine.filter((rep) => rep.status === 'SKIPPED').length }
      : {}),
    ...(ok.length > 0
      ? {
          sendRate: describe(summaries.map((s) => s.sendRateAvg)),
          receiveRate: describe(summaries.map((s) => s.receiveRateAvg)),
        }
      : {}),
    ...(messageSizeBytes === undefined ? {} : { messageSizeBytes }),
    ...(ok.some((rep) => rep.result!.completedInSeconds !== undefined)
      ? {
          completedInSeconds: describe(
            ok.flatMap((rep) => (rep.result!.completedInSeconds === undefined ? [] : [rep.result!.completedInSeconds])),
          ),
        }
      : {}),
    ...(ok.length > 0 && messageSizeBytes !== undefined
      ? {
          sendMBps: describe(summaries.map((s) => megabytesPerSecond(s.sendRateAvg, messageSizeBytes))),
          receiveMBps: describe(summaries.map((s) => megabytesPerSecond(s.receiveRateAvg, messageSizeBytes))),
        }
      : {}),
    ...(consumerLatency ? { consumerLatency } : {}),
    ...(confirmLatency ? { confirmLatency } : {}),
    ...(failover ? { failover } : {}),
    ...(judged.length > 0
      ? { loadGeneratorBound: { bound: judged.filter((rep) => rep.loadGenerator!.bound).length, of: judged.length } }
      : {}),
    ...(capacity ? { capacity } : {}),
  };
}

/** One line per repetition whose queues grew while it ran flat out (its latencies are queueing time). */
export function queueingLines(
  repetitions: readonly Pick<StoredRepetition, 'scenarioId' | 'repetition' | 'queueingNote'>[],
): string[] {
  return repetitions.flatMap((rep) =>
    rep.queueingNote ? [`${rep.scenarioId} #${rep.repetition}: ${rep.queueingNote}`] : [],
  );
}

/** Per scenario whose load generator was the bottleneck in at least one repetition, the report's verdict line. */
export function loadGeneratorBoundLines(
  aggregates: readonly ScenarioAggregate[],
): { scenarioId: string; line: string }[] {
  return aggregates.flatMap((aggregate) =>
    aggregate.loadGeneratorBound && aggregate.loadGeneratorBound.bound > 0
      ? [
          {
            scenarioId: aggregate.scenarioId,
            line: loadGeneratorBoundLine(aggregate.loadGeneratorBound.bound, aggregate.loadGeneratorBound.of),
          },
        ]
      : [],
  );
}

/**
 * Every scenario of the run reduced to one row; with adaptive repetitions (the stored plan's `repetitions: { min, max,
 * ciPercent }`), each row says how many repetitions the scenario needed and why it stopped.
 */
export function aggregateRun(run: RunRecord, repetitions: readonly StoredRepetition[]): ScenarioAggregate[] {
  const sizes = messageSizesOf(run);
  const rule = adaptiveRuleOf(run.plan);
  return run.scenarioIds.map((id) => ({
    ...aggregateScenario(id, repetitions, sizes.get(id)),
    ...(rule ? { adaptive: adaptiveOutcome(rule, id, repetitions) } : {}),
  }));
}

/** The adaptive repetitions outcome as one table (Markdown and HTML reports); undefined without them. */
export function adaptiveTable(
  aggregates: readonly ScenarioAggregate[],
): { intro: string; header: string[]; rows: string[][] } | undefined {
  const outcomes = aggregates.flatMap((aggregate) => (aggregate.adaptive ? [aggregate.adaptive] : []));
  if (outcomes.length === 0) return undefined;
  const { min, max, ciPercent } = outcomes[0]!;
  return {
    intro:
      `Each scenario ran ${min} to ${max} repetitions and stopped once the 95% CI half-width of its receive rate ` +
      `was within ${ciPercent} % of the mean.`,
    header: ['scenario', 'repetitions run', 'skipped', 'stopped because'],
    rows: outcomes.map((outcome) => [
      outcome.scenarioId,
      `${outcome.ran} of ${max}`,
      String(outcome.skipped),
      outcome.reason,
    ]),
  };
}

/** The adaptive repetitions section: per scenario, how many ran of min-max and why it stopped (empty without). */
export function adaptiveLines(aggregates: readonly ScenarioAggregate[]): string[] {
  const table = adaptiveTable(aggregates);
  if (!table) return [];
  return [
    '## Adaptive repetitions',
    '',
    table.intro,
    '',
    `| ${table.header.join(' | ')} |`,
    '|---|---:|---:|---|',
    ...table.rows.map((row) => `| ${row.join(' | ')} |`),
  ];
}

/**
 * Message size per scenario id from the run's stored plan; empty when the stored plan no longer validates (MB/s is then
 * left out).
 */
function messageSizesOf(run: RunRecord): Map<string, number> {
  return new Map([...storedScenarios(run)].map(([id, scenario]) => [id, scenario.workload.messageSizeBytes]));
}

/**
 * The scenarios of the run's stored plan, by the ids the run recorded; empty when that plan no longer validates.
 * A plan read back from DynamoDB has its maps' keys in another order (DynamoDB keeps no order in a map), so a sweep
 * over several fields yields the same scenarios with their sweep parts in another order: ids are matched on their
 * parts, not their spelling.
 */
export function storedScenarios(run: RunRecord): Map<string, Scenario> {
  let scenarios: readonly Scenario[];
  try {
    scenarios = validatePlan(run.plan, `the plan stored with run ${run.runId}`).scenarios;
  } catch {
    return new Map();
  }
  const byParts = new Map(scenarios.map((scenario) => [sweepPartsKey(scenario.id), scenario]));
  return new Map(
    run.scenarioIds.flatMap((id) => {
      const scenario = byParts.get(sweepPartsKey(id));
      return scenario ? [[id, scenario] as const] : [];
    }),
  );
}

/** `cluster/workload@a=1,b=2` and `cluster/workload@b=2,a=1` alike. */
function sweepPartsKey(id: string): string {
  const at = id.indexOf('@');
  return at < 0
    ? id
    : `${id.slice(0, at)}@${id
        .slice(at + 1)
        .split(',')
        .sort()
        .join(',')}`;
}

const rate = (stats: Stats | undefined) =>
  stats ? `${Math.round(stats.mean).toLocaleString('en-US')} ± ${Math.round(stats.ci95).toLocaleString('en-US')}` : '—';
/** MB/s with enough digits to be useful for small messages (12 B at 20k msg/s is 0.24 MB/s). */
export const formatMBps = (stats: Stats | undefined) =>
  stats ? stats.mean.toLocaleString('en-US', { maximumSignificantDigits: 3 }) : '—';
const ms = (micros: number) => (micros / 1000).toFixed(micros < 10_000 ? 2 : 1);

/**
 * The run as a Markdown report: one row per scenario (mean ± 95% CI over repetitions), then load balancer vs direct
 * deltas.
 */
export function renderMarkdownReport(
  run: RunRecord,
  repetitions: readonly StoredRepetition[],
  pricePerformance?: RunPricePerformance,
): string {
  const aggregates = aggregateRun(run, repetitions);
  const lines = [
    `# rmqbench report: ${run.planName}`,
    '',
    `Run \`${run.runId}\` on target **${run.target}**, status **${run.status}**, ` +
      `started ${run.startedAt}${run.finishedAt ? `, finished ${run.finishedAt}` : ''}.`,
    `Environment: ${Object.entries(run.environment)
      .map(([key, value]) => `${key} ${value}`)
      .join(', ')}.`,
    ...brokersLine(run),
    ...(run.error ? ['', `Error: ${run.error}`] : []),
    '',
    '| scenario | reps ok | send msg/s (mean ± 95% CI) | receive msg/s (mean ± 95% CI) | ' +
      'send / receive MB/s (mean) | consumer latency min / median / 75th / 95th / 99th (ms) |',
    '|---|---:|---:|---:|---:|---|',
  ];
  for (const aggregate of aggregates) {
    const latency = aggregate.consumerLatency;
    const latencyCell = latency
      ? [latency.min, latency.median, latency.p75, latency.p95, latency.p99]
          .map((value) => (value === undefined ? '—' : ms(value)))
          .join(' / ')
      : '—';
    const reps = `${aggregate.repetitionsSucceeded}/${aggregate.repetitionsSucceeded + aggregate.repetitionsFailed}`;
    lines.push(
      `| ${aggregate.scenarioId} | ${reps} | ${rate(aggregate.sendRate)} | ${rate(aggregate.receiveRate)} | ` +
        `${formatMBps(aggregate.sendMBps)} / ${formatMBps(aggregate.receiveMBps)} | ${latencyCell} |`,
    );
  }
  lines.push(...fixedWorkAndConfirmLines(aggregates));
  const deltas = loadBalancerDeltas(run, aggregates);
  if (deltas.length > 0) {
    // One table per compared metric (the receive rate; the capacity at the p99 bound for capacity workloads).
    for (const metric of [...new Set(deltas.map((delta) => delta.metric))]) {
      lines.push(
        '',
        ...renderDeltasMarkdown(
          deltas.filter((delta) => delta.metric === metric),
          'load balancer vs direct (direct is the baseline)',
        ),
      );
    }
  }
  const capacity = renderCapacityMarkdown(
    capacityRows(aggregates),
    pricePerformance?.available ? pricePerformance.capacity : [],
  );
  if (capacity.length > 0) lines.push('', ...capacity);
  const failover = renderFailoverMarkdown(aggregates, repetitions);
  if (failover.length > 0) lines.push('', ...failover);
  const bound = loadGeneratorBoundLines(aggregates);
  if (bound.length > 0) {
    lines.push('', '## Load generator', '');
    for (const { scenarioId, line } of bound) lines.push(`- ${scenarioId}: ${line}`);
  }
  const generators = loadGeneratorsSection(repetitions);
  if (generators.length > 0) lines.push('', ...generators);
  const queueing = queueingLines(repetitions);
  if (queueing.length > 0) lines.push('', '## Latency is queueing time', '', ...queueing.map((line) => `- ${line}`));
  const adaptive = adaptiveLines(aggregates);
  if (adaptive.length > 0) lines.push('', ...adaptive);
  const failed = repetitions.filter((rep) => rep.status === 'FAILED');
  if (failed.length > 0) {
    lines.push('', '## Failed repetitions', '');
    for (const rep of failed) lines.push(`- ${rep.scenarioId} #${rep.repetition}: ${rep.error}`);
  }
  return `${lines.join('\n')}\n`;
}

const BROKER_LABELS = { rabbitmq: 'RabbitMQ', kafka: 'Kafka (KRaft)', nats: 'NATS JetStream' } as const;

/**
 * Which broker each cluster of the stored plan runs, where the plan has a broker other than RabbitMQ (the scenario ids
 * name clusters, not brokers); nothing for a RabbitMQ-only plan, whose report stays as it was.
 */
function brokersLine(run: RunRecord): string[] {
  const clusters = [...new Map([...storedScenarios(run).values()].map((s) => [s.cluster.name, s.cluster])).values()];
  if (clusters.every((cluster) => cluster.broker === 'rabbitmq')) return [];
  const described = clusters.map(
    (cluster) =>
      `${cluster.name} ${BROKER_LABELS[cluster.broker]}, ${cluster.nodes} node(s)` +
      (cluster.syncInterval === undefined ? '' : `, sync_interval ${cluster.syncInterval}`),
  );
  return [`Brokers: ${described.join('; ')}.`];
}

/** The fixed-work and confirm-latency tables (each only when some scenario has it), with a blank line before each. */
function fixedWorkAndConfirmLines(aggregates: readonly ScenarioAggregate[]): string[] {
  const out: string[] = [];
  const fixedWork = aggregates.filter((aggregate) => aggregate.completedInSeconds !== undefined);
  if (fixedWork.length > 0) {
    out.push('', '| fixed amount of work | completed in s (mean ± 95% CI) |', '|---|---:|');
    for (const aggregate of fixedWork)
      out.push(
        `| ${aggregate.scenarioId} | ` +
          `${aggregate.completedInSeconds!.mean.toFixed(1)} ± ${aggregate.completedInSeconds!.ci95.toFixed(1)} |`,
      );
  }
  // Publisher confirms on RabbitMQ, the broker's acknowledgement per acks on Kafka, the stream's acknowledgement of an
  // asynchronous publish on NATS: the producer's side of latency.
  const confirmed = aggregates.filter((aggregate) => aggregate.confirmLatency !== undefined);
  if (confirmed.length > 0) {
    out.push(
      '',
      '| scenario | confirm latency (Kafka, NATS: send to acknowledgement) median / 95th / 99th (ms) |',
      '|---|---|',
    );
    for (const aggregate of confirmed) {
      const latency = aggregate.confirmLatency!;
      out.push(`| ${aggregate.scenarioId} | ${[latency.median, latency.p95, latency.p99].map(ms).join(' / ')} |`);
    }
  }
  return out;
}

/**
 * Load balancer vs direct within one run (core/results/comparison.ts's Welch rule); empty when the plan has no
 * lb/direct pair or the run has no successful repetition, because a report still has its other sections.
 */
export function loadBalancerDeltas(run: RunRecord, aggregates: readonly ScenarioAggregate[]): ScenarioDelta[] {
  try {
    const withCapacity = capacityIn([{ run, aggregates }])
      ? compareLoadBalancerToDirect({ run, aggregates }, 'capacityRate')
      : [];
    return [...compareLoadBalancerToDirect({ run, aggregates }), ...withCapacity];
  } catch (error) {
    if (error instanceof ComparisonError) return [];
    throw error;
  }
}

const VERDICT_TEXT: Record<Verdict, string> = {
  higher: 'higher: significant (95% CI of the delta excludes 0)',
  lower: 'lower: significant (95% CI of the delta excludes 0)',
  'inside-noise': 'inside the noise (95% CI of the delta includes 0)',
  'too-few-repetitions': 'no verdict: too few repetitions',
  'no-data': 'no verdict: no data',
};

/** A delta as the reports print it: change in percent, then the absolute delta ± its 95% CI half-width. */
export function formatDelta(delta: ScenarioDelta): { change: string; verdict: string } {
  const signed = (value: number, digits = 0) =>
    `${value >= 0 ? '+' : '−'}` +
    `${Math.abs(value).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })}`;
  let change = '—';
  if (delta.delta !== undefined) {
    const percent = delta.deltaPercent === undefined ? '' : `${signed(delta.deltaPercent, 1)}% `;
    const rate = delta.metric === 'receiveRate' || delta.metric === 'sendRate' || delta.metric === 'capacityRate';
    // The verifier's numbers are small (messages, seconds): two decimals instead of whole msg/s.
    const digits = rate ? 0 : 2;
    const interval =
      delta.welch === undefined
        ? ''
        : ` ± ${delta.welch.ci95.toLocaleString('en-US', { maximumFractionDigits: digits })}`;
    const unit = rate
      ? ' msg/s'
      : delta.metric === 'recoverySeconds' || delta.metric === 'unavailableSeconds'
        ? ' s'
        : '';
    change = `${percent}(${signed(delta.delta, digits)}${interval}${unit})`;
  }
  const verdict =
    delta.message === undefined ? VERDICT_TEXT[delta.verdict] : `${VERDICT_TEXT[delta.verdict]} (${delta.message})`;
  return { change, verdict };
}

/** Markdown table of deltas, e.g. for `rmqbench compare` and the report's load balancer section. */
export function renderDeltasMarkdown(deltas: readonly ScenarioDelta[], heading: string): string[] {
  const compared = deltas[0]?.metric ?? 'receiveRate';
  const metric =
    compared === 'sendRate'
      ? 'send rate'
      : compared === 'receiveRate'
        ? 'receive rate'
        : compared === 'capacityRate'
          ? 'capacity at the p99 bound'
          : compared;
  const lines = [`| ${heading} | ${metric} change (delta ± 95% CI) | verdict |`, '|---|---:|---|'];
  for (const delta of deltas) {
    const { change, verdict } = formatDelta(delta);
    lines.push(`| ${delta.label} | ${change} | ${verdict} |`);
  }
  return lines;
}

/** What a report needs to know about a scenario besides its results: its cluster and queue count. */
export interface ScenarioFacts {
  readonly scenarioId: string;
  readonly clusterName: string;
  readonly nodes?: number;
  readonly connection?: string;
  /** The plan cluster's broker (rabbitmq, kafka, nats); absent for a record whose plan no longer validates. */
  readonly broker?: string;
  readonly queues?: number;
  /** The plan cluster's instanceType (cloud runs). */
  readonly instanceType?: string;
  /** The plan cluster's loadGenerators (issue 27); absent for a record from before it (one). */
  readonly loadGenerators?: number;
}

/**
 * Facts per scenario from the plan stored with the run; from the scenario id alone when that plan no longer validates.
 */
export function scenarioFacts(run: RunRecord): Map<string, ScenarioFacts> {
  const facts = new Map<string, ScenarioFacts>();
  for (const [id, scenario] of storedScenarios(run)) {
    // A run stores its plan resolved for its target; an older or hand-made record may hold a per-target map.
    const instanceType = onTarget(scenario.cluster.instanceType, run.target);
    facts.set(id, {
      scenarioId: id,
      clusterName: scenario.cluster.name,
      nodes: scenario.cluster.nodes,
      connection: scenario.cluster.connection,
      broker: scenario.cluster.broker,
      queues: scenario.workload.queues,
      ...(instanceType === undefined ? {} : { instanceType }),
      ...(scenario.cluster.loadGenerators === undefined ? {} : { loadGenerators: scenario.cluster.loadGenerators }),
    });
  }
  for (const id of run.scenarioIds) {
    if (facts.has(id)) continue;
    const queues = /[@,]queues=(\d+)/.exec(id)?.[1];
    facts.set(id, {
      scenarioId: id,
      clusterName: id.split('/')[0] ?? id,
      ...(queues === undefined ? {} : { queues: Number(queues) }),
    });
  }
  return facts;
}

/** The instance type of a scenario's cluster (or of the run) as reports name it (`localhost` for local runs). */
export function instanceTypeOf(run: RunRecord, fact?: ScenarioFacts): string {
  // A local run ignores the plan's cloud instance types: it ran on this machine.
  const planned = run.target === 'local' ? undefined : fact?.instanceType;
  return planned ?? run.environment.instanceType ?? run.target;
}

/**
 * Figures 6.1–6.4 points: each scenario's mean receive rate at its queue count, one series per instance type (and
 * cluster).
 */
export function queueThroughputPoints(
  runs: readonly { run: RunRecord; aggregates: readonly ScenarioAggregate[] }[],
): QueueThroughputPoint[] {
  const points: QueueThroughputPoint[] = [];
  for (const { run, aggregates } of runs) {
    const facts = scenarioFacts(run);
    const clusters = new Set([...facts.values()].map((fact) => fact.clusterName));
    for (const aggregate of aggregates) {
      const fact = facts.get(aggregate.scenarioId);
      if (fact?.queues === undefined || aggregate.receiveRate === undefined) continue;
      const series =
        clusters.size > 1 ? `${instanceTypeOf(run, fact)} · ${fact.clusterName}` : instanceTypeOf(run, fact);
      points.push({
        series,
        queues: fact.queues,
        throughput: aggregate.receiveRate.mean,
        scenarioId: aggregate.scenarioId,
      });
    }
  }
  return points;
}

/** A price-performance table (Tables 7.4–7.7 layout) for one queue count. */
export interface PricePerformanceTableView {
  readonly queues: number;
  /** `["Up to 10k-20k", "3 × c5.xlarge (35% - 70%)", …]`. */
  readonly rows: readonly (readonly string[])[];
}

export interface ClusterCostView {
  readonly clusterName: string;
  readonly description: string;
  readonly hourlyUsd: number;
  readonly monthlyUsd: number;
  /** The cluster's cost over the run's wall-clock time; absent while the run has not finished. */
  readonly runCostUsd?: number;
  readonly notes: readonly string[];
}

export type RunPricePerformance =
  | {
      readonly available: true;
      readonly provider: CloudProvider;
      readonly instanceType: string;
      readonly costs: readonly ClusterCostView[];
      readonly tables: readonly PricePerformanceTableView[];
      /** Each capacity scenario priced by its cluster: USD per million messages at the capacity. */
      readonly capacity: readonly CapacityCost[];
    }
  | { readonly available: false; readonly reason: string };

/** The scenarios with a capacity result. */
export function capacityRows(
  aggregates: readonly ScenarioAggregate[],
): { scenarioId: string; capacity: ScenarioCapacity }[] {
  return aggregates.flatMap((aggregate) =>
    aggregate.capacity ? [{ scenarioId: aggregate.scenarioId, capacity: aggregate.capacity }] : [],
  );
}

/**
 * Each capacity priced by its scenario's cluster (its hourly price over the messages an hour carries at the capacity).
 */
function capacityCosts(
  run: RunRecord,
  aggregates: readonly ScenarioAggregate[],
  costs: readonly ClusterCostView[],
): CapacityCost[] {
  const facts = scenarioFacts(run);
  const byCluster = new Map(costs.map((cost) => [cost.clusterName, cost]));
  return capacityRows(aggregates).flatMap(({ scenarioId, capacity }) => {
    const cost = byCluster.get(facts.get(scenarioId)?.clusterName ?? '');
    const rate = capacity.rateMsgPerSecond?.mean;
    if (cost === undefined || rate === undefined) return [];
    return [
      {
        scenarioId,
        clusterName: cost.clusterName,
        rateMsgPerSecond: rate,
        atLeast: capacity.atLeast,
        hourlyUsd: cost.hourlyUsd,
        usdPerMillionMessages: usdPerMillionMessages(cost.hourlyUsd, rate),
        msgPerSecondPerUsdHour: rate / cost.hourlyUsd,
      },
    ];
  });
}

/**
 * Cluster costs and the chapter-7 table for one run: each cluster of the run is a candidate priced as
 * nodes × instance price (+ load balancer), measured by its best mean receive rate at each queue count.
 * Unavailable, with the reason, for local runs and for instance types the catalog does not price.
 */
export function runPricePerformance(
  run: RunRecord,
  aggregates: readonly ScenarioAggregate[],
  catalog: PriceCatalog,
): RunPricePerformance {
  const priced = pricedRun(run, aggregates, catalog);
  if (!priced.available) return priced;
  const { provider, instanceType, costs, measurements } = priced;
  return {
    available: true,
    provider,
    instanceType,
    costs,
    tables: pricePerformanceTables(costs, measurements),
    capacity: capacityCosts(run, aggregates, costs),
  };
}

/**
 * A run's clusters priced and its measurements labelled by cluster description: what price-performance tables are made
 * of.
 */
type PricedRun =
  | {
      readonly available: true;
      readonly provider: CloudProvider;
      readonly instanceType: string;
      readonly costs: ClusterCostView[];
      readonly measurements: ThroughputMeasurement[];
    }
  | { readonly available: false; readonly reason: string };

function pricedRun(run: RunRecord, aggregates: readonly ScenarioAggregate[], catalog: PriceCatalog): PricedRun {
  const runInstanceType = run.environment.instanceType;
  if (run.target === 'local') {
    return {
      available: false,
      reason:
        `run ${run.runId} ran on target local (instance type ${runInstanceType ?? 'unknown'}), ` +
        `which has no cloud price; price-performance needs an aws or azure run`,
    };
  }
  const provider: CloudProvider = run.target;
  const facts = scenarioFacts(run);
  const clusters = new Map<string, ScenarioFacts>();
  for (const fact of facts.values()) if (!clusters.has(fact.clusterName)) clusters.set(fact.clusterName, fact);
  // Each plan cluster names its own type (the cloud targets require it); runs from before that record one for the run.
  const instanceTypeOfCluster = (fact: ScenarioFacts) =>
    fact.instanceType === undefined ? runInstanceType : catalogInstanceType(provider, fact.instanceType);
  const unpriced = [...clusters.values()]
    .filter((fact) => instanceTypeOfCluster(fact) === undefined)
    .map((fact) => fact.clusterName);
  if (unpriced.length > 0) {
    return {
      available: false,
      reason:
        `run ${run.runId} records no instance type for cluster(s) ${unpriced.join(', ')} ` +
        `(plan clusters[].instanceType or environment.instanceType), so it cannot be priced`,
    };
  }
  const instanceTypes = [...new Set([...clusters.values()].map((fact) => instanceTypeOfCluster(fact)!))];
  const instanceType = instanceTypes.join(', ');
  const region = run.environment.region;
  const seconds =
    run.finishedAt === undefined ? undefined : (Date.parse(run.finishedAt) - Date.parse(run.startedAt)) / 1000;
  const costs: ClusterCostView[] = [];
  try {
    for (const [clusterName, fact] of clusters) {
      const nodes = fact.nodes ?? 1;
      // Only a RabbitMQ cluster has a load balancer: Kafka and NATS clients reach each node at its own address.
      const loadBalancer = fact.connection === 'lb' && (fact.broker ?? 'rabbitmq') === 'rabbitmq';
      const clusterInstanceType = instanceTypeOfCluster(fact)!;
      const cost = clusterCost(catalog, {
        provider,
        instanceType: clusterInstanceType,
        nodes,
        loadBalancer,
        ...(region === undefined ? {} : { region }),
      });
      // What the run cost counts its load generators too; the monthly cost and the score are the cluster's alone.
      const generators = loadGeneratorsCost(catalog, provider, region, fact.loadGenerators ?? 1);
      costs.push({
        clusterName,
        description: `${nodes} × ${clusterInstanceType}${loadBalancer ? ' + lb' : ''}`,
        hourlyUsd: cost.hourlyUsd,
        monthlyUsd: cost.monthlyUsd,
        ...(seconds === undefined || !(seconds >= 0)
          ? {}
          : { runCostUsd: costOfRun({ hourlyUsd: cost.hourlyUsd + generators.hourlyUsd }, seconds) }),
        notes: [...cost.notes, generators.note],
      });
    }
  } catch (error) {
    if (error instanceof PriceCatalogError) return { available: false, reason: error.message };
    throw error;
  }
  // Two clusters of the same composition (e.g. quorum and classic queues) stay two candidates.
  const descriptions = costs.map((cost) => cost.description);
  costs.forEach((cost, index) => {
    if (descriptions.indexOf(cost.description) !== descriptions.lastIndexOf(cost.description)) {
      costs[index] = { ...cost, description: `${cost.description} (${cost.clusterName})` };
    }
  });
  const byCluster = new Map(costs.map((cost) => [cost.clusterName, cost]));
  const measurements = aggregates.flatMap((aggregate) => {
    const fact = facts.get(aggregate.scenarioId);
    const cost = fact === undefined ? undefined : byCluster.get(fact.clusterName);
    if (fact?.queues === undefined || cost === undefined || aggregate.receiveRate === undefined) return [];
    return [{ instanceType: cost.description, queues: fact.queues, throughput: aggregate.receiveRate.mean }];
  });
  return { available: true, provider, instanceType, costs, measurements };
}

/**
 * The hourly cost of a cluster's load generators (the controller's default type, DEFAULT_LOAD_GENERATOR_TYPE), which
 * the run's cost counts and the cluster's monthly cost does not, with the note that says so; 0 when the catalog has no
 * price for the type, with a note naming it.
 */
function loadGeneratorsCost(
  catalog: PriceCatalog,
  provider: CloudProvider,
  region: string | undefined,
  count: number,
): { hourlyUsd: number; note: string } {
  const type = DEFAULT_LOAD_GENERATOR_TYPE[provider];
  try {
    const price = findInstancePrice(catalog, { provider, instanceType: type, ...(region ? { region } : {}) });
    const hourlyUsd = (count * price.monthlyUsd) / catalog.hoursPerMonth;
    return {
      hourlyUsd,
      note:
        `this run's cost includes ${count} × ${type} load generator(s) at $${hourlyUsd.toFixed(3)}/h; ` +
        `the monthly cost and the price-performance score are the cluster's alone`,
    };
  } catch (error) {
    if (!(error instanceof PriceCatalogError)) throw error;
    return { hourlyUsd: 0, note: `this run's cost excludes its ${count} load generator(s): ${error.message}` };
  }
}

/** One Tables 7.4–7.7 table per measured queue count; a candidate measured several times counts with its best. */
function pricePerformanceTables(
  costs: readonly ClusterCostView[],
  measurements: readonly ThroughputMeasurement[],
): PricePerformanceTableView[] {
  const monthlyByDescription = new Map(costs.map((cost) => [cost.description, cost.monthlyUsd]));
  const queueCounts = [...new Set(measurements.map((m) => m.queues))].sort((a, b) => a - b);
  return queueCounts.map((queues) => ({
    queues,
    rows: pricePerformanceTable(
      candidatesForQueues(measurements, queues, (description) => monthlyByDescription.get(description)!),
    ).map((row) => formatRangeRow(row)),
  }));
}

/** Price-performance over several runs: the chapter-7 comparison of instance types measured in different runs. */
export type RunsPricePerformance =
  | {
      readonly available: true;
      readonly costs: readonly (ClusterCostView & { readonly runId: string })[];
      readonly tables: readonly PricePerformanceTableView[];
      readonly leftOut: readonly string[];
    }
  | { readonly available: false; readonly reason: string };

/**
 * Every priced cluster of every run is a candidate (the same composition measured in two runs is one candidate with
 * its best measurement, as the thesis takes each instance type's maximum); a run that cannot be priced (local, an
 * unknown instance type) is left out with its reason. Unavailable when no run can be priced.
 */
export function pricePerformanceAcrossRuns(
  runs: readonly { run: RunRecord; aggregates: readonly ScenarioAggregate[] }[],
  catalog: PriceCatalog,
): RunsPricePerformance {
  const costs: (ClusterCostView & { runId: string })[] = [];
  const measurements: ThroughputMeasurement[] = [];
  const leftOut: string[] = [];
  for (const { run, aggregates } of runs) {
    const priced = pricedRun(run, aggregates, catalog);
    if (!priced.available) {
      leftOut.push(priced.reason);
      continue;
    }
    for (const cost of priced.costs)
      if (!costs.some((known) => known.description === cost.description)) costs.push({ ...cost, runId: run.runId });
    measurements.push(...priced.measurements);
  }
  if (costs.length === 0) return { available: false, reason: leftOut.join('; ') || 'no runs given' };
  return { available: true, costs, tables: pricePerformanceTables(costs, measurements), leftOut };
}
