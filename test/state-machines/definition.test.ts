import aslValidator from 'asl-validator';
import {
  AslStates,
  buildBenchmarkDefinition,
  FAULT_INJECTABLE_STATES,
  FUNCTION_PLACEHOLDERS,
  resolveResources,
  STATE,
  stateNames,
} from '../../state-machines';

const definition = buildBenchmarkDefinition();

function allStates(
  states: AslStates,
  parents: string[] = [],
): { name: string; state: Record<string, unknown>; parents: string[] }[] {
  return Object.entries(states).flatMap(([name, state]) => {
    const processor = state.ItemProcessor as { States: AslStates } | undefined;
    return [{ name, state, parents }, ...(processor ? allStates(processor.States, [...parents, name]) : [])];
  });
}

describe('the benchmark workflow definition', () => {
  test('is valid ASL according to asl-validator once the function placeholders are filled', () => {
    const result = aslValidator(resolveResources(definition));
    expect(result.errorsText('\n')).toBe('');
    expect(result.isValid).toBe(true);
  });

  test('asl-validator rejects a definition whose Catch leads nowhere (the check can fail)', () => {
    const broken = resolveResources(definition) as unknown as { States: AslStates };
    (broken.States[STATE.validatePlan]!.Catch as { Next: string }[])[0]!.Next = 'NoSuchState';
    expect(aslValidator(broken).isValid).toBe(false);
  });

  test('uses only known function placeholders, and each of them', () => {
    const text = JSON.stringify(definition);
    const used = new Set([...text.matchAll(/\$\{([A-Za-z]+)\}/g)].map((match) => match[1]));
    expect([...used].sort()).toEqual([...FUNCTION_PLACEHOLDERS].sort());
  });

  test(
    'every Task state can fail into teardown or the failure ' + 'record: its own Catch, or that of the Map around it',
    () => {
      const states = allStates(definition.States);
      const byName = new Map(states.map((entry) => [entry.name, entry.state]));
      for (const { name, state, parents } of states.filter((entry) => entry.state.Type === 'Task')) {
        const catchers = [state, ...parents.map((parent) => byName.get(parent)!)].flatMap(
          (candidate) => (candidate.Catch as { ErrorEquals: string[]; Next: string }[] | undefined) ?? [],
        );
        expect({ name, catchesAll: catchers.some((catcher) => catcher.ErrorEquals.includes('States.ALL')) }).toEqual({
          name,
          catchesAll: true,
        });
      }
    },
  );

  test('cluster failures inside the Map lead to TeardownCluster, which retries every error', () => {
    const inner = allStates(definition.States).filter(
      (entry) => entry.parents[0] === STATE.forEachCluster && entry.parents.length === 1,
    );
    // The teardown's own states lead to ClusterOutcome (a failed deletion is the cluster's failure, not a reason to
    // delete
    // again); the metrics re-read's failure does not fail the cluster (DropBootLogs); every other failure keeps the
    // boot logs.
    const teardownStates: string[] = [STATE.teardownCluster, STATE.checkTeardown, STATE.rereadHostMetrics];
    for (const entry of inner.filter(
      (candidate) => candidate.state.Catch && !teardownStates.includes(candidate.name),
    )) {
      expect((entry.state.Catch as { Next: string }[]).map((catcher) => catcher.Next)).toEqual([STATE.keepBootLogs]);
    }
    expect(inner.find((entry) => entry.name === STATE.keepBootLogs)!.state).toEqual({
      Type: 'Pass',
      Result: { keep: true },
      ResultPath: '$.bootLogs',
      Next: STATE.teardownCluster,
    });
    expect(inner.find((entry) => entry.name === STATE.dropBootLogs)!.state).toEqual({
      Type: 'Pass',
      Result: { keep: false },
      ResultPath: '$.bootLogs',
      Next: STATE.teardownCluster,
    });
    const teardown = inner.find((entry) => entry.name === STATE.teardownCluster)!.state;
    expect(teardown.Retry).toEqual(
      expect.arrayContaining([expect.objectContaining({ ErrorEquals: ['States.ALL'], MaxAttempts: 3 })]),
    );
  });

  test('polling loops wait between checks and go back to the check', () => {
    expect(stateNames(definition)).toEqual(expect.arrayContaining([STATE.waitForCluster, STATE.waitForRepetition]));
    const states = new Map(allStates(definition.States).map((entry) => [entry.name, entry.state]));
    expect(states.get(STATE.waitForCluster)).toEqual({ Type: 'Wait', Seconds: 30, Next: STATE.checkClusterReady });
    expect(states.get(STATE.waitForRepetition)).toEqual({
      Type: 'Wait',
      SecondsPath: '$.item.pollSeconds',
      Next: STATE.checkRepetition,
    });
    expect(states.get(STATE.waitForTeardown)).toEqual({ Type: 'Wait', Seconds: 30, Next: STATE.checkTeardown });
    expect(states.get(STATE.checkTeardown)).toMatchObject({
      Next: STATE.isTeardownDone,
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.teardownError', Next: STATE.clusterOutcome }],
    });
  });

  test('runs cluster configurations in parallel up to maxConcurrency and repetitions one at a time', () => {
    const custom = buildBenchmarkDefinition({ maxConcurrency: 7 });
    expect(custom.States[STATE.forEachCluster]!.MaxConcurrency).toBe(7);
    const states = new Map(allStates(custom.States).map((entry) => [entry.name, entry.state]));
    expect(states.get(STATE.forEachRepetition)!.MaxConcurrency).toBe(1);
    expect(() => buildBenchmarkDefinition({ maxConcurrency: 0 })).toThrow(
      /maxConcurrency must be an integer from 1 to 40 \(got 0\)/,
    );
  });

  test('every fault-injectable state exists in the definition', () => {
    expect(stateNames(definition)).toEqual(expect.arrayContaining([...FAULT_INJECTABLE_STATES]));
  });
});
