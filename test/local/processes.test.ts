import { ProcessRegistry } from '../../local/processes';

describe('ProcessRegistry.stopAll', () => {
  test("waits for an asynchronous cleanup (a stopped cluster's data deleted in the background), run once", async () => {
    const registry = new ProcessRegistry();
    const sleeper = registry.start('sleeper', 'sleep', ['30']);
    let runs = 0;
    let finished = false;
    registry.afterStop(async () => {
      runs++;
      await new Promise((resolve) => setTimeout(resolve, 200));
      finished = true;
    });
    await Promise.all([registry.stopAll(), registry.stopAll()]);
    expect({ finished, runs, sleeperExited: sleeper.hasExited }).toEqual({
      finished: true,
      runs: 1,
      sleeperExited: true,
    });
  });

  test('reports a cleanup that fails', async () => {
    const registry = new ProcessRegistry();
    registry.afterStop(() => Promise.reject(new Error('EACCES: permission denied, rmdir mnesia')));
    await expect(registry.stopAll()).rejects.toThrow(/EACCES/);
  });
});
