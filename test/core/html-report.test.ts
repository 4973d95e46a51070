import { validatePlan } from '../../core/plan/plan';
import { defaultPriceCatalog, findInstancePrice } from '../../core/cost/cost-catalog';
import { escapeHtml, renderHtmlReport, runReportDocument, type RenderedChart } from '../../core/report/html-report';
import { aggregateRun, loadBalancerDeltas, runPricePerformance } from '../../core/report/report';
import { SCENARIOS, storedRun, uniformRates } from '../bin/report-fixtures';

const svg =
  '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><g ' +
  'class="mark-rect role-mark"><path d="M0,0h5v5h-5Z"/></g></svg>';
const chart: RenderedChart = {
  chart: {
    id: 'throughput-per-repetition',
    title: 'Throughput per repetition',
    caption: 'One bar per repetition.',
    marks: { kind: 'rect', count: 1 },
  },
  svg: `<?xml version="1.0" encoding="utf-8"?>\n${svg}`,
};

function report(runOverrides = {}, rates = uniformRates([10_000, 10_500])) {
  const stored = storedRun('run-1', rates, runOverrides);
  const aggregates = aggregateRun(stored.run, stored.repetitions);
  return renderHtmlReport(
    runReportDocument({
      run: stored.run,
      aggregates,
      failedRepetitions: stored.repetitions.filter((rep) => rep.status === 'FAILED'),
      charts: [chart],
      loadBalancerDeltas: loadBalancerDeltas(stored.run, aggregates),
      pricePerformance: runPricePerformance(stored.run, aggregates, defaultPriceCatalog),
      generatedAt: '2026-01-01T00:00:00.000Z',
    }),
  );
}

describe('HTML report', () => {
  it('is self-contained: no script, no external resource, and a CSP that forbids every fetch', () => {
    const html = report();
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; ` +
        `style-src 'unsafe-inline'; img-src data:">`,
    );
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i);
    // The only URL is the SVG namespace, which is a name, not a fetch.
    expect(html.match(/https?:\/\/[^"]+/g)).toEqual(['http://www.w3.org/2000/svg']);
  });

  it('inlines each chart SVG without its XML declaration and labels it with the marks a viewer should find', () => {
    const html = report();
    expect(html).not.toContain('<?xml');
    expect(html).toContain(
      `<figure class="chart" id="chart-throughput-per-repetition" ` +
        `data-chart="throughput-per-repetition" data-mark-kind="rect" data-expected-marks="1">\n${svg}`,
    );
  });

  it('escapes text from the run, so a scenario or error cannot inject markup', () => {
    const html = report(
      { error: '<img src=x onerror=alert(1)>' },
      { ...uniformRates([1_000]), [SCENARIOS[0]!]: [null] },
    );
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).not.toContain('<img');
    expect(escapeHtml(`a&b"c'<`)).toBe('a&amp;b&quot;c&#39;&lt;');
  });

  it('lists failed repetitions and shows the lb vs direct deltas with their verdicts', () => {
    const html = report({}, { ...uniformRates([10_000, 10_100]), [SCENARIOS[0]!]: [10_000, null] });
    expect(html).toContain('<section id="failed-repetitions">');
    expect(html).toContain(`${SCENARIOS[0]} #2: PerfTest exited with code 1`);
    expect(html).toContain('<section id="load-balancer-vs-direct">');
    expect(html).toMatch(/no verdict: too few repetitions/);
    expect(html).toMatch(/inside the noise/);
  });

  it('explains why a local run has no price-performance section', () => {
    expect(report()).toMatch(
      /Not available: run run-1 ran on target local \(instance type localhost\), which has no cloud price/,
    );
  });

  it(
    'prices an aws run by cluster (nodes × instance + load ' +
      'balancer) and prints the chapter-7 table per queue count',
    () => {
      const html = report(
        { target: 'aws', environment: { instanceType: 'c5.xlarge', region: 'eu-west-1' } },
        uniformRates([25_000, 25_000]),
      );
      expect(html).toContain('<td>3 × c5.xlarge</td>');
      expect(html).toContain('<td class="num">$420.48</td>'); // 3 × 140.16 (the eu-west-1 Price List entry)
      expect(html).toContain('<caption>Best price-performance, 2 queues</caption>');
      expect(html).toContain('<td>Up to 10k-20k</td><td>3 × c5.xlarge (40% - 80%)</td>');
    },
  );

  it('prices no load balancer for Kafka and NATS clusters: their clients reach each node at its own address', () => {
    const stored = storedRun('run-1', uniformRates([25_000]), {
      target: 'aws',
      environment: { instanceType: 'c5.xlarge', region: 'eu-west-1' },
    });
    const plan = stored.run.plan as { clusters: Record<string, unknown>[] };
    const brokers = ['kafka', 'nats'];
    const otherPlan = {
      ...plan,
      clusters: plan.clusters.map((cluster, index) => ({
        ...cluster,
        broker: brokers[index],
        topology: { type: 'classic' },
        connection: 'lb',
      })),
      workloads: [{ name: 'w', producers: 2, consumers: 2, durationSeconds: 5 }],
    };
    const other = {
      ...stored.run,
      plan: otherPlan,
      scenarioIds: validatePlan(otherPlan, 'kafka-nats').scenarios.map((scenario) => scenario.id),
    };
    const result = runPricePerformance(other, aggregateRun(other, stored.repetitions), defaultPriceCatalog);
    expect(result.available && result.costs.map((cost) => cost.description)).toEqual([
      '3 × c5.xlarge (c-lb)',
      '3 × c5.xlarge (c-direct)',
    ]);
  });

  it('keeps two clusters of the same composition apart in the price-performance table', () => {
    const stored = storedRun('run-1', uniformRates([25_000]), {
      target: 'aws',
      environment: { instanceType: 'c5.xlarge', region: 'eu-west-1' },
    });
    const plan = stored.run.plan as { clusters: { connection: string }[] };
    const twins = {
      ...stored.run,
      plan: { ...plan, clusters: plan.clusters.map((cluster) => ({ ...cluster, connection: 'direct' })) },
    };
    const result = runPricePerformance(twins, aggregateRun(twins, stored.repetitions), defaultPriceCatalog);
    expect(result.available && result.costs.map((cost) => cost.description)).toEqual([
      '3 × c5.xlarge (c-lb)',
      '3 × c5.xlarge (c-direct)',
    ]);
  });

  it(
    'prices each cluster by its own plan instanceType (c5.xlarge vs ' +
      'c5.2xlarge in one run; Azure sizes with or without Standard_)',
    () => {
      const stored = storedRun('run-1', uniformRates([25_000]), {
        target: 'aws',
        environment: { region: 'eu-west-1' },
      });
      const plan = stored.run.plan as { clusters: Record<string, unknown>[] };
      const typed = (types: string[], target: 'aws' | 'azure') => ({
        ...stored.run,
        target,
        plan: {
          ...plan,
          clusters: plan.clusters.map((cluster, index) => ({ ...cluster, instanceType: types[index] })),
        },
      });
      const aws = runPricePerformance(
        typed(['c5.xlarge', 'c5.2xlarge'], 'aws'),
        aggregateRun(stored.run, stored.repetitions),
        defaultPriceCatalog,
      );
      expect(aws.available && aws.costs.map((cost) => [cost.description, cost.monthlyUsd > 0])).toEqual([
        ['3 × c5.xlarge + lb', true],
        ['3 × c5.2xlarge', true],
      ]);
      expect(aws.available && aws.instanceType).toBe('c5.xlarge, c5.2xlarge');
      const azure = runPricePerformance(
        { ...typed(['Standard_F4s', 'F8s'], 'azure'), environment: {} },
        aggregateRun(stored.run, stored.repetitions),
        defaultPriceCatalog,
      );
      expect(azure.available && azure.costs.map((cost) => cost.description)).toEqual(['3 × F4s + lb', '3 × F8s']);
    },
  );

  it("counts the cluster's load generators in this run's cost, not in its monthly cost", () => {
    const stored = storedRun('run-1', uniformRates([25_000]), {
      target: 'aws',
      environment: { instanceType: 'c5.xlarge', region: 'us-east-1' },
    });
    const plan = stored.run.plan as { clusters: Record<string, unknown>[] };
    const withGenerators = (count: number | undefined) => {
      const generatorsPlan = {
        ...plan,
        clusters: plan.clusters.map((cluster) => ({
          ...cluster,
          ...(count === undefined ? {} : { loadGenerators: count }),
        })),
        // A workload two generators can split (a queue, a producer and a consumer each).
        workloads: [{ name: 'w', producers: 2, consumers: 2, queues: 2, durationSeconds: 5 }],
      };
      const run = {
        ...stored.run,
        plan: generatorsPlan,
        scenarioIds: validatePlan(generatorsPlan, 'generators').scenarios.map((scenario) => scenario.id),
      };
      const priced = runPricePerformance(run, aggregateRun(run, stored.repetitions), defaultPriceCatalog);
      if (!priced.available) throw new Error(priced.reason);
      return priced.costs[0]!;
    };
    const generator = findInstancePrice(defaultPriceCatalog, {
      provider: 'aws',
      instanceType: 'c5n.4xlarge',
      region: 'us-east-1',
    });
    const seconds = (Date.parse(stored.run.finishedAt!) - Date.parse(stored.run.startedAt)) / 1000;
    const one = withGenerators(undefined);
    const two = withGenerators(2);
    expect(two.monthlyUsd).toBe(one.monthlyUsd);
    expect(two.runCostUsd! - one.runCostUsd!).toBeCloseTo(
      (generator.monthlyUsd * seconds) / defaultPriceCatalog.hoursPerMonth / 3600,
      9,
    );
    expect(two.notes).toContainEqual(expect.stringMatching(/^this run's cost includes 2 × c5n\.4xlarge load gen/));
    expect(one.notes).toContainEqual(expect.stringMatching(/^this run's cost includes 1 × c5n\.4xlarge load gen/));
  });

  it('says which clusters have no instance type when a cloud run records none', () => {
    const stored = storedRun('run-1', uniformRates([25_000]), { target: 'aws', environment: {} });
    const result = runPricePerformance(stored.run, aggregateRun(stored.run, stored.repetitions), defaultPriceCatalog);
    expect(result).toEqual({
      available: false,
      reason:
        'run run-1 records no instance type for cluster(s) c-lb, c-direct (plan ' +
        'clusters[].instanceType or environment.instanceType), so it cannot be priced',
    });
  });

  it('names the unknown instance type instead of failing', () => {
    expect(report({ target: 'azure', environment: { instanceType: 'F999s' } })).toMatch(
      /Not available: unknown azure instance type &quot;F999s&quot; in the price catalog; known: .*F4s/,
    );
  });

  it('shows the adaptive repetitions outcome, as the Markdown report does, and nothing of it without', () => {
    const stored = storedRun('run-1', uniformRates([10_000, 10_500]));
    const plain = aggregateRun(stored.run, stored.repetitions);
    const reason = 'settled: CI half-width 3.1 % ≤ 5 % after 2 repetitions';
    const adaptive = plain.map((aggregate, index) =>
      index === 0
        ? {
            ...aggregate,
            adaptive: {
              scenarioId: aggregate.scenarioId,
              min: 2,
              max: 5,
              ciPercent: 5,
              ran: 2,
              skipped: 3,
              stoppedBecause: 'settled' as const,
              reason,
            },
          }
        : aggregate,
    );
    const render = (aggregates: typeof plain) =>
      renderHtmlReport(
        runReportDocument({
          run: stored.run,
          aggregates,
          failedRepetitions: [],
          charts: [],
          loadBalancerDeltas: [],
          pricePerformance: runPricePerformance(stored.run, aggregates, defaultPriceCatalog),
          generatedAt: '2026-01-01T00:00:00.000Z',
        }),
      );
    const html = render(adaptive);
    expect(html).toContain('<h2>Adaptive repetitions</h2>');
    expect(html).toContain('Each scenario ran 2 to 5 repetitions and stopped once the 95% CI half-width');
    expect(html).toContain(`<td>${escapeHtml(plain[0]!.scenarioId)}</td><td>2 of 5</td><td class="num">3</td>`);
    expect(html).toContain(`<td>${escapeHtml(reason)}</td>`);
    expect(render(plain)).not.toContain('Adaptive repetitions');
  });
});
