/**
 * bench:cluster-start: how long a local 3-node RabbitMQ cluster takes to start (processes started, the cluster
 * formed, every node's management API answering, policies applied), over several rounds, optionally with extra Erlang
 * VM arguments for every node, to see where the quickstart's start-up goes (issue 24's faster start).
 *   npm run bench:cluster-start -- [rounds] [erlang args] [nodes] [preload|no-preload] [trimmed-plugins|all-plugins]
 *   e.g. npm run bench:cluster-start -- 4 "+sbwt none +sbwtdcpu none +sbwtdio none"
 *   or one node alone, to see one VM's boot without the others beside it: npm run bench:cluster-start -- 2 "" 1
 *   or without the module preload (local/node-boot-eval.ts), to see what it saves: ... -- 4 "" 3 no-preload
 *   or with the whole installed plugins folder (local/plugins-dir.ts): ... -- 4 "" 3 preload all-plugins
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clockTicksPerSecond, readProcess } from '../local/proc-stats';
import { ProcessRegistry, stopOnSignals } from '../local/processes';
import { LocalRabbitCluster } from '../local/rabbitmq-cluster';

const rounds = Number(process.argv[2] ?? 4);
const erlangArgs = process.argv[3] ?? '';
const nodes = Number(process.argv[4] ?? 3);
const preload = process.argv[5] ?? 'preload';
const plugins = process.argv[6] ?? 'trimmed-plugins';

async function main(): Promise<void> {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a positive integer, got ${rounds}`);
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error(`nodes must be a positive integer, got ${nodes}`);
  if (preload !== 'preload' && preload !== 'no-preload') {
    throw new Error(`the fourth argument is "preload" or "no-preload", got "${preload}"`);
  }
  if (plugins !== 'trimmed-plugins' && plugins !== 'all-plugins') {
    throw new Error(`the fifth argument is "trimmed-plugins" or "all-plugins", got "${plugins}"`);
  }
  const seconds: number[] = [];
  const cpuSeconds: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const workDir = mkdtempSync(join(tmpdir(), 'rmqbench-cluster-start-'));
    const processes = new ProcessRegistry();
    const uninstall = stopOnSignals(() => processes.stopAll());
    try {
      const started = process.hrtime.bigint();
      const cluster = await LocalRabbitCluster.start({
        nodes,
        topology: { type: 'quorum' },
        workDir,
        processes,
        preloadModules: preload === 'preload',
        trimPluginsDir: plugins === 'trimmed-plugins',
        ...(erlangArgs ? { erlangArgs } : {}),
      });
      seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
      // The nodes' own CPU time until the cluster answered (beam.smp's utime + stime; not the short-lived VMs a node
      // starts itself): on two cores, half of it is a floor for the wall time.
      const ticks = cluster.nodes.reduce((sum, node) => sum + (readProcess(node.process!.pid!)?.cpuTicks ?? 0), 0);
      cpuSeconds.push(ticks / clockTicksPerSecond());
      await cluster.stop();
    } finally {
      await processes.stopAll();
      uninstall();
      rmSync(workDir, { recursive: true, force: true });
    }
  }
  const mean = seconds.reduce((sum, value) => sum + value, 0) / seconds.length;
  console.log(`erlang args: ${erlangArgs || '(none)'}; modules: ${preload}; ${plugins}`);
  console.log(
    `${nodes}-node cluster start, ${rounds} round(s): ${seconds.map((value) => value.toFixed(2)).join(', ')} s`,
  );
  console.log(
    `mean ${mean.toFixed(2)} s, min ${Math.min(...seconds).toFixed(2)} s, max ${Math.max(...seconds).toFixed(2)} s`,
  );
  console.log(`the nodes' CPU until then: ${cpuSeconds.map((value) => value.toFixed(2)).join(', ')} s`);
}

main().catch((error: unknown) => {
  console.error(`bench:cluster-start: ${(error as Error).message}`);
  process.exit(1);
});
