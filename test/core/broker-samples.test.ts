import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  brokerMetricsFromSamples,
  BrokerSamplesError,
  brokerSeriesOnHosts,
  combineRepetitionMetrics,
} from '../../core/broker/broker-samples';
import { summarizeNodes, validateRepetitionMetrics } from '../../core/metrics/host-metrics';

const fixture = (name: string) => readFileSync(join(__dirname, '../fixtures/broker-samples', name), 'utf8');
const depth = fixture('depth-25-on-node-2.jsonl');
const alarm = fixture('alarm-on-node-3.jsonl');
/** The first sample's time in the depth fixture, as the repetition's start. */
const depthStart = new Date(1795452130.05 * 1000);
const NODES = ['rmqbench1@localhost', 'rmqbench2@localhost', 'rmqbench3@localhost'];

const values = (
  metrics: { series: readonly { node: string; metric: string; points: readonly (readonly [number, number])[] }[] },
  node: string,
  metric: string,
) => metrics.series.find((one) => one.node === node && one.metric === metric)?.points.map(([, value]) => value);

describe('broker metrics from the management API sampler (captured on a local 3-node cluster)', () => {
  test('queueDepth per node: the benchmark queue on its leader, 0 elsewhere, a non-benchmark queue not counted', () => {
    const { metrics, samples, unusable } = brokerMetricsFromSamples(depth, depthStart);
    expect({ samples, unusable, source: metrics.source }).toEqual({
      samples: 5,
      unusable: 0,
      source: 'management-api',
    });
    expect(values(metrics, 'rmqbench2@localhost', 'queueDepth')).toEqual([25, 25, 25, 25, 25]);
    expect(values(metrics, 'rmqbench1@localhost', 'queueDepth')).toEqual([0, 0, 0, 0, 0]);
    expect(values(metrics, 'rmqbench3@localhost', 'queueDepth')).toEqual([0, 0, 0, 0, 0]);
    for (const node of NODES) expect(values(metrics, node, 'memoryAlarm')).toEqual([0, 0, 0, 0, 0]);
  });

  test("times are seconds since the repetition started, from the load generator's clock, to the hundredth", () => {
    const points = brokerMetricsFromSamples(depth, depthStart).metrics.series[0]!.points.map(([t]) => t);
    expect(points[0]).toBe(0);
    expect(points.at(-1)).toBeGreaterThan(3.5);
    expect(points.every((t) => Math.round(t * 100) === t * 100)).toBe(true);
    expect([...points].sort((a, b) => a - b)).toEqual(points);
  });

  test('memoryAlarm 1 on the node the 503 health check names, 0 on the others', () => {
    const { metrics } = brokerMetricsFromSamples(alarm, new Date(1795452137 * 1000));
    expect(values(metrics, 'rmqbench3@localhost', 'memoryAlarm')).toEqual([1, 1, 1]);
    expect(values(metrics, 'rmqbench1@localhost', 'memoryAlarm')).toEqual([0, 0, 0]);
    expect(values(metrics, 'rmqbench2@localhost', 'queueDepth')).toEqual([25, 25, 25]);
  });

  test("what it returns passes the stored model's validation", () => {
    expect(validateRepetitionMetrics(brokerMetricsFromSamples(depth, depthStart).metrics).series).toHaveLength(6);
  });

  test(
    'output cut short mid-line (the load generator stopped ' +
      'while writing) keeps every complete line and reports nothing',
    () => {
      const cut = depth.slice(0, depth.lastIndexOf('\n', depth.length - 2) + 40);
      const result = brokerMetricsFromSamples(cut, depthStart);
      expect({ samples: result.samples, unusable: result.unusable, firstProblem: result.firstProblem }).toEqual({
        samples: 4,
        unusable: 0,
        firstProblem: undefined,
      });
    },
  );

  test('a node that stops answering (killed mid-run) has points only while it ran', () => {
    const lines = depth.trimEnd().split('\n');
    const killed =
      lines
        .map((line, index) =>
          index >= 3
            ? line.replace(
                '{"name":"rmqbench3@localhost","running":true}',
                '{"name":"rmqbench3@localhost","running":false}',
              )
            : line,
        )
        .join('\n') + '\n';
    const { metrics } = brokerMetricsFromSamples(killed, depthStart);
    expect(values(metrics, 'rmqbench3@localhost', 'memoryAlarm')).toHaveLength(3);
    expect(values(metrics, 'rmqbench1@localhost', 'memoryAlarm')).toHaveLength(5);
  });

  test(
    'error bodies are counted as unusable lines and requests without an answer as unanswered ones, ' +
      'the rest is kept, the first of each named',
    () => {
      const [, body] = /^401 (.*)$/.exec(fixture('not-management-user.json').trim())!;
      const lines = depth.trimEnd().split('\n');
      const refused = `{"t":1795452129.5,"nodes":${body},"alarms":{"status":"ok"},"queues":[]}`;
      const noAnswer = '{"t":1795452129.6,"nodes":null,"alarms":null,"queues":null}';
      const noQueues = '{"t":1795452129.7,"nodes":[],"alarms":{"status":"ok"},"queues":null}';
      const result = brokerMetricsFromSamples(
        [refused, noAnswer, 'garbage', noQueues, ...lines].join('\n') + '\n',
        depthStart,
      );
      expect({ samples: result.samples, unusable: result.unusable, unanswered: result.unanswered }).toEqual({
        samples: 5,
        unusable: 2,
        unanswered: 2,
      });
      expect(result.firstProblem).toBe(
        'line 1: /api/nodes?columns=name,running answered {"error":"not_authorised","reason":"Not management user"}',
      );
      expect(result.firstUnanswered).toBe('line 2: no answer from /api/nodes?columns=name,running');
    },
  );

  test('no usable line at all is a BrokerSamplesError that says what the file held', () => {
    expect(() => brokerMetricsFromSamples('', depthStart)).toThrow(
      new BrokerSamplesError("the management API sampler's broker-metrics.jsonl holds no complete line"),
    );
    expect(() => brokerMetricsFromSamples('{"t":1,"nodes":[', depthStart)).toThrow(/holds no complete line/);
    expect(() => brokerMetricsFromSamples('{"t":1,"nodes":null,"alarms":null,"queues":null}\n', depthStart)).toThrow(
      /holds 1 unusable line \(first: line 1: no answer from \/api\/nodes\?columns=name,running\)/,
    );
    expect(() =>
      brokerMetricsFromSamples('{"t":1,"nodes":[],"alarms":{"error":"timeout"},"queues":[]}\n', depthStart),
    ).toThrow(/\/api\/health\/checks\/alarms answered \{"error":"timeout"\}/);
  });
});

describe("broker series under their hosts' names", () => {
  const { metrics } = brokerMetricsFromSamples(depth, depthStart);

  test("each RabbitMQ node name becomes its host's id; a node without a host keeps its name and is listed", () => {
    const named = brokerSeriesOnHosts(metrics, [
      { id: 'i-0aaa', nodeName: 'rmqbench1@localhost' },
      { id: 'i-0bbb', nodeName: 'rmqbench2@localhost' },
      { id: 'i-0ccc', nodeName: 'rabbit@10.0.9.9' },
    ]);
    expect([...new Set(named.metrics.series.map((series) => series.node))]).toEqual([
      'i-0aaa',
      'i-0bbb',
      'rmqbench3@localhost',
    ]);
    expect(named.unmatched).toEqual(['rmqbench3@localhost']);
    expect(values(named.metrics, 'i-0bbb', 'queueDepth')).toEqual([25, 25, 25, 25, 25]);
    expect(named.metrics.source).toBe('management-api');
  });

  test('combined with the host metrics, a node is one node in the summary', () => {
    const host = {
      source: 'cloudwatch',
      series: [
        {
          node: 'i-0bbb',
          metric: 'cpuPercent' as const,
          unit: 'percent' as const,
          points: [[0, 40]] as [number, number][],
        },
      ],
    };
    const combined = combineRepetitionMetrics([
      host,
      brokerSeriesOnHosts(metrics, [{ id: 'i-0bbb', nodeName: 'rmqbench2@localhost' }]).metrics,
    ]);
    expect(combined.source).toBe('cloudwatch+management-api');
    expect(summarizeNodes(validateRepetitionMetrics(combined)).find((summary) => summary.node === 'i-0bbb')).toEqual({
      node: 'i-0bbb',
      maxCpuPercent: 40,
      medianCpuPercent: 40,
      memoryAlarm: false,
    });
    expect(() => combineRepetitionMetrics([])).toThrow(/at least one part/);
  });
});
