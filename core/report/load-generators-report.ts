import type { StoredRepetition } from '../results/result-items';

type Repetition = Pick<
  StoredRepetition,
  'scenarioId' | 'repetition' | 'loadGenerators' | 'startSkewMs' | 'loadGeneratorSplit' | 'loadGeneratorMerge'
> & { readonly loadGenerator?: StoredRepetition['loadGenerator'] };

/**
 * What the reports say of scenarios run by several load generators (issue 27), one item per line: how the generators'
 * figures were combined, how each workload was split, and per repetition each generator's rates, p99 and CPU with the
 * start skew, and the bound verdict naming the generators and the count that would lift it. Empty when every
 * scenario ran on one.
 */
export function loadGeneratorsItems(repetitions: readonly Repetition[]): string[] {
  const several = repetitions.filter((rep) => rep.loadGenerators && rep.loadGenerators.length > 1);
  if (several.length === 0) return [];
  const method = several.find((rep) => rep.loadGeneratorMerge)?.loadGeneratorMerge;
  const items = method ? [`Combined: ${method}.`] : [];
  for (const scenarioId of [...new Set(several.map((rep) => rep.scenarioId))]) {
    const reps = several.filter((rep) => rep.scenarioId === scenarioId);
    items.push(`${scenarioId}: ${reps[0]!.loadGeneratorSplit ?? `${reps[0]!.loadGenerators!.length} load generators`}`);
    for (const rep of reps) {
      const parts = rep.loadGenerators!.map((lg) => {
        const p99 = lg.consumerLatency ? `, p99 ${(lg.consumerLatency.p99 / 1000).toFixed(1)} ms` : '';
        const cpu = lg.cpuPercent === undefined ? '' : `, CPU ${lg.cpuPercent.toFixed(1)} %`;
        return `${lg.id} ${Math.round(lg.sendRate)} / ${Math.round(lg.receiveRate)} msg/s${p99}${cpu}`;
      });
      const skew = rep.startSkewMs === undefined ? '' : `; start skew ${Math.round(rep.startSkewMs)} ms`;
      items.push(`${scenarioId} #${rep.repetition} (sent / received): ${parts.join('; ')}${skew}`);
      if (rep.loadGenerator?.line) items.push(`${scenarioId} #${rep.repetition}: ${rep.loadGenerator.line}`);
    }
  }
  return items;
}

/** The Markdown report's "Load generators" section (loadGeneratorsItems as a list); empty without several. */
export function loadGeneratorsSection(repetitions: readonly Repetition[]): string[] {
  const items = loadGeneratorsItems(repetitions);
  return items.length === 0 ? [] : ['## Load generators', '', ...items.map((item) => `- ${item}`)];
}
