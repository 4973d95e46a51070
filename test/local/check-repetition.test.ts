import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RawRepetition } from '../../core/results/ingest';
import type { LocalRun, PendingRepetition } from '../../local/tasks/local-run';
import { checkRepetition, CHECK_WAITS_MS } from '../../local/tasks/repetition-tasks';

// The local CheckRepetition answers when the repetition ends, not one poll interval later, and answers "not done"
// after CHECK_WAITS_MS while it runs (the workflow then waits and checks again).
describe('local CheckRepetition', () => {
  let runDir: string;
  beforeEach(() => (runDir = mkdtempSync(join(tmpdir(), 'rmqbench-check-'))));
  afterEach(() => rmSync(runDir, { recursive: true, force: true }));

  const input = {
    launch: { clusterId: 'c1' },
    item: { scenarioId: 's/w', repetition: 1, rawKey: 'raw-1.json' },
  } as unknown as Parameters<ReturnType<typeof checkRepetition>>[0];

  function runWith(promise: Promise<RawRepetition>): { run: LocalRun; entry: PendingRepetition } {
    const entry: PendingRepetition = { promise };
    // As startRepetition registers it, before any check.
    promise.then(
      (raw) => (entry.settled = { raw }),
      (error: unknown) => (entry.settled = { error }),
    );
    const run = { pending: new Map([['c1/raw-1.json', entry]]), runDir } as unknown as LocalRun;
    return { run, entry };
  }

  test('a repetition that ends during the check is done in that same check, its raw output written', async () => {
    let finish!: (raw: RawRepetition) => void;
    const { run } = runWith(new Promise<RawRepetition>((resolve) => (finish = resolve)));
    const checking = checkRepetition(run)(input);
    setTimeout(() => finish({ runId: 'r', scenarioId: 's/w' } as RawRepetition), 50);
    await expect(checking).resolves.toEqual({ done: true, rawKey: 'raw-1.json' });
    expect(JSON.parse(readFileSync(join(runDir, 'ingest', 'raw-1.json'), 'utf8'))).toMatchObject({ runId: 'r' });
    expect(run.pending.size).toBe(0);
  });

  test('a repetition still running is "not done" once the wait is over, and stays pending', async () => {
    const { run } = runWith(new Promise<RawRepetition>(() => undefined));
    const started = Date.now();
    await expect(checkRepetition(run)(input)).resolves.toEqual({ done: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(CHECK_WAITS_MS - 50);
    expect(run.pending.size).toBe(1);
  });

  test('a repetition that fails during the check fails the check with its error', async () => {
    let fail!: (error: Error) => void;
    const { run } = runWith(new Promise<RawRepetition>((_, reject) => (fail = reject)));
    const checking = checkRepetition(run)(input);
    setTimeout(() => fail(new Error('PerfTest could not connect')), 50);
    await expect(checking).rejects.toThrow('PerfTest could not connect');
  });
});
