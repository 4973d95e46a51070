import type { StoredRepetition } from '../results/result-items';
import {
  FAILOVER_METRICS,
  type FailoverMetric,
  type FailoverResult,
  type ScenarioAggregate,
  type UncountedFault,
} from '../results/result-model';
import { describe, type Stats } from '../results/statistics';

/**
 * The lost-message verifier's numbers in reports: over the repetitions of a scenario (mean and 95% CI from
 * core/results/statistics.ts) and per repetition, under the names `lostMessages`, `duplicatedMessages`,
 * `unconfirmedAtFault`, `recoverySeconds`, `unavailableSeconds`, `reconnects`.
 */

/**
 * Over the successful repetitions that carry verifier counts; recoverySeconds over those that recovered. Undefined
 * without any.
 */
export function aggregateFailover(
  repetitions: readonly Pick<StoredRepetition, 'status' | 'failover'>[],
): Partial<Record<FailoverMetric, Stats>> | undefined {
  const results = repetitions.filter((rep) => rep.status === 'SUCCEEDED' && rep.failover).map((rep) => rep.failover!);
  if (results.length === 0) return undefined;
  const aggregate: Partial<Record<FailoverMetric, Stats>> = {};
  for (const metric of FAILOVER_METRICS) {
    const values = results.map((result) => result[metric]).filter((value): value is number => value !== undefined);
    if (values.length > 0) aggregate[metric] = describe(values);
  }
  return aggregate;
}

const number = (value: number) => value.toLocaleString('en-US', { maximumFractionDigits: 2 });
const meanCi = (stats: Stats | undefined) => (stats ? `${number(stats.mean)} ± ${number(stats.ci95)}` : '—');

export const FAILOVER_SCENARIO_HEADER = [
  'scenario',
  'repetitions',
  ...FAILOVER_METRICS.map((metric) => `${metric} (mean ± 95% CI)`),
];

/** One row per scenario that has verifier counts. */
export function failoverScenarioRows(aggregates: readonly ScenarioAggregate[]): string[][] {
  return aggregates
    .filter((aggregate) => aggregate.failover !== undefined)
    .map((aggregate) => [
      aggregate.scenarioId,
      String(aggregate.failover!.lostMessages?.n ?? 0),
      ...FAILOVER_METRICS.map((metric) => meanCi(aggregate.failover![metric])),
    ]);
}

export const FAILOVER_REPETITION_HEADER = ['repetition', 'fault', 'confirmed', 'consumed', ...FAILOVER_METRICS];

/** One row per repetition with verifier counts; a missing recoverySeconds reads "not recovered". */
export function failoverRepetitionRows(
  repetitions: readonly Pick<StoredRepetition, 'scenarioId' | 'repetition' | 'failover'>[],
): string[][] {
  return repetitions
    .filter((rep) => rep.failover !== undefined)
    .map((rep) => {
      const failover: FailoverResult = rep.failover!;
      const { fault } = failover;
      const healed = fault.healedAtSeconds === undefined ? '' : `, healed at ${number(fault.healedAtSeconds)} s`;
      return [
        `${rep.scenarioId} #${rep.repetition}`,
        `${fault.action} ${fault.nodeName} (${String(fault.node)}) at ${number(fault.appliedAtSeconds)} s${healed}`,
        number(failover.confirmed),
        number(failover.consumed),
        ...FAILOVER_METRICS.map((metric) =>
          failover[metric] === undefined ? 'not recovered' : number(failover[metric]),
        ),
      ];
    });
}

/**
 * One line per repetition whose fault a cloud target applied without the verifier: what was done, and "not counted"
 * (never a 0).
 */
export function formatUncountedFaultLine(uncounted: UncountedFault): string {
  const { fault } = uncounted;
  const healed = fault.healedAtSeconds === undefined ? '' : `, healed at ${number(fault.healedAtSeconds)} s`;
  return (
    `${fault.action} ${fault.nodeName} (${String(fault.node)}) at ${number(fault.appliedAtSeconds)} s${healed}: ` +
    `${uncounted.reason}`
  );
}

/** The Markdown lines for faults applied without a lost-message count; empty when there are none. */
function renderUncountedFaults(
  repetitions: readonly Pick<StoredRepetition, 'scenarioId' | 'repetition' | 'uncountedFault'>[],
): string[] {
  const uncounted = repetitions.filter((rep) => rep.uncountedFault !== undefined);
  if (uncounted.length === 0) return [];
  return [
    '## Faults applied, lost messages not counted',
    '',
    ...uncounted.map(
      (rep) => `- ${rep.scenarioId} #${rep.repetition}: ${formatUncountedFaultLine(rep.uncountedFault!)}`,
    ),
  ];
}

/** The Markdown section; empty when no repetition ran a fault. */
export function renderFailoverMarkdown(
  aggregates: readonly ScenarioAggregate[],
  repetitions: readonly StoredRepetition[],
): string[] {
  const scenarioRows = failoverScenarioRows(aggregates);
  const uncounted = renderUncountedFaults(repetitions);
  if (scenarioRows.length === 0) return uncounted;
  const table = (header: readonly string[], rows: readonly string[][]) => [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, index) => (index === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
  return [
    '## Failover (lost-message verifier)',
    '',
    'lostMessages: confirmed, never consumed after the run drained; recoverySeconds: from the fault until the ' +
      'receive rate is back to 90 % of its pre-fault median; unavailableSeconds: seconds with nothing received.',
    '',
    ...table(FAILOVER_SCENARIO_HEADER, scenarioRows),
    '',
    ...table(FAILOVER_REPETITION_HEADER, failoverRepetitionRows(repetitions)),
    ...(uncounted.length > 0 ? ['', ...uncounted] : []),
  ];
}

/** One line for `show` and the run's progress display. */
export function formatFailoverLine(failover: FailoverResult): string {
  const { fault } = failover;
  const recovery =
    failover.recoverySeconds === undefined
      ? 'recoverySeconds: not recovered'
      : `recoverySeconds ${number(failover.recoverySeconds)}`;
  return (
    `${fault.action} ${fault.nodeName} at ${number(fault.appliedAtSeconds)} s: ` +
    `confirmed ${failover.confirmed}, consumed ${failover.consumed}, ` +
    `lostMessages ${failover.lostMessages}, duplicatedMessages ${failover.duplicatedMessages}, ` +
    (failover.undeliveredMessages ? `undeliveredMessages ${failover.undeliveredMessages}, ` : '') +
    `unconfirmedAtFault ${failover.unconfirmedAtFault}, ` +
    `${recovery}, unavailableSeconds ${failover.unavailableSeconds}, reconnects ${failover.reconnects}`
  );
}
