/**
 * bench:fidelity: is rmqbench a transparent wrapper around PerfTest? The same scenario runs through
 * rmqbench's local target and as a raw `java ... PerfTest` command against the same broker,
 * interleaved A-B-B-A so that drift cancels out, and the receive-rate ratio is printed.
 * Target: rmqbench / raw >= 0.97.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ingestRepetition } from '../core/results/ingest';
import { parsePlanText } from '../core/plan/plan';
import { buildPerfTestArgs } from '../core/perftest/perftest-args';
import { parsePerfTestOutput } from '../core/perftest/perftest-output';
import { groupScenariosByCluster } from '../core/plan/plan';
import { describe } from '../core/results/statistics';
import { LocalTarget } from '../local/local-target';
import { PERFTEST_ARTIFACT, ensureArtifact } from '../local/maven-artifacts';
import { cacheDir } from '../local/paths';
import { ProcessRegistry, stopOnSignals } from '../local/processes';

const PAIRS = Number(process.env.FIDELITY_PAIRS ?? 4);
const DURATION = Number(process.env.FIDELITY_SECONDS ?? 15);

async function main() {
  const plan = parsePlanText(
    `name: fidelity
clusters: [{ name: one-node, nodes: 1, topology: { type: classic }, connection: direct }]
workloads: [{ name: w150b, producers: 1, consumers: 1, queues: 1, ` +
      `messageSizeBytes: 150, durationSeconds: ${DURATION} }]`,
    'fidelity',
  );
  const scenario = plan.scenarios[0]!;
  const work = mkdtempSync(join(tmpdir(), 'rmqbench-fidelity-'));
  const processes = new ProcessRegistry();
  const uninstall = stopOnSignals(() => processes.stopAll());
  const target = new LocalTarget({ processes, runDir: work, cacheDir: cacheDir() });
  const jars = await ensureArtifact(cacheDir(), PERFTEST_ARTIFACT);
  const handle = await target.launchRabbitMq(groupScenariosByCluster(plan)[0]!, 0);
  const viaRmqbench: number[] = [];
  const raw: number[] = [];
  try {
    const runRmqbench = async (index: number) => {
      const record = ingestRepetition(await target.runRepetition(handle, 'fidelity', scenario, index));
      if (!record.result) throw new Error(`rmqbench repetition failed: ${record.error}`);
      viaRmqbench.push(record.result.summary.receiveRateAvg);
    };
    const runRaw = async (index: number) => {
      await handle.cluster.deleteBenchmarkQueues();
      const dir = join(work, `raw-${index}`);
      mkdirSync(dir);
      const csvPath = join(dir, 'out.csv');
      const args = buildPerfTestArgs({
        workload: scenario.workload,
        topology: scenario.cluster.topology,
        queueArguments: handle.cluster.queueArguments,
        uris: [handle.cluster.amqpUri(handle.cluster.nodes[0]!)],
        csvPath,
      });
      const result = spawnSync(
        'java',
        ['-XX:+UseParallelGC', '-cp', `${jars}/*`, 'com.rabbitmq.perf.PerfTest', ...args],
        { encoding: 'utf8' },
      );
      const parsed = parsePerfTestOutput(result.stdout, readFileSync(csvPath, 'utf8'), {
        durationSeconds: DURATION,
        producers: 1,
        consumers: 1,
        confirms: false,
      });
      raw.push(parsed.summary.receiveRateAvg);
    };
    for (let pair = 1; pair <= PAIRS; pair++) {
      // A-B-B-A ordering: each side runs first in half of the pairs.
      if (pair % 2 === 1) {
        await runRmqbench(pair);
        await runRaw(pair);
      } else {
        await runRaw(pair);
        await runRmqbench(pair);
      }
      console.log(`pair ${pair}/${PAIRS}: rmqbench ${viaRmqbench.at(-1)} msg/s, raw PerfTest ${raw.at(-1)} msg/s`);
    }
  } finally {
    await target.teardown(handle);
    await processes.stopAll();
    uninstall();
    rmSync(work, { recursive: true, force: true });
  }
  const a = describe(viaRmqbench);
  const b = describe(raw);
  console.log(`rmqbench   receive rate: mean ${a.mean.toFixed(0)} ± ${a.ci95.toFixed(0)} msg/s (n=${a.n})`);
  console.log(`raw        receive rate: mean ${b.mean.toFixed(0)} ± ${b.ci95.toFixed(0)} msg/s (n=${b.n})`);
  console.log(`fidelity ratio (rmqbench / raw): ${(a.mean / b.mean).toFixed(3)}  (target >= 0.97)`);
}

main().catch((error: unknown) => {
  console.error(`bench:fidelity: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
