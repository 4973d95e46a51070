import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSchedule, type WorkflowInput } from '../../state-machines/schedule';

// The CLI as users run it: the built file (npm test builds first).
const cli = join(__dirname, '../../dist/bin/rmqbench.js');

function rmqbench(...args: string[]) {
  return rmqbenchWithEnv({}, ...args);
}

function rmqbenchWithEnv(env: NodeJS.ProcessEnv, ...args: string[]) {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build (npm test does)`);
  const result = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...process.env, RMQBENCH_HOME: mkdtempSync(join(tmpdir(), 'rmqbench-cli-')), ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('rmqbench CLI', () => {
  test('plans --json lists every built-in plan with its scenario count', () => {
    const { code, stdout } = rmqbench('plans', '--json');
    expect(code).toBe(0);
    const plans = JSON.parse(stdout) as {
      name: string;
      scenarios: number;
      scenariosByTarget: Record<string, number>;
    }[];
    expect(plans.map((p) => p.name)).toEqual(
      expect.arrayContaining(['quickstart', 'thesis-ch4-lb-vs-direct', 'thesis-ch6-queue-count', 'ha-topologies']),
    );
    expect(plans.find((p) => p.name === 'thesis-ch6-queue-count')!.scenarios).toBe(6);
    // Its matrix runs on the clouds only (targets): 8 clusters on aws, 3 on azure, 1 locally, 6 workloads each.
    expect(plans.find((p) => p.name === 'thesis-ch6-queue-count')!.scenariosByTarget).toEqual({
      aws: 48,
      azure: 18,
      local: 6,
    });
  });

  test('a plan with mistakes exits 2 and names every bad field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-plan-'));
    const file = join(dir, 'broken.yaml');
    writeFileSync(
      file,
      'name: broken\nclusters:\n' +
        '  - { name: c, nodes: 3, rabbitmqVersion: "4.0", topology: { type: mirrored } }\n' +
        'workloads:\n  - { name: w, producers: -1, messageSizeBytes: "big", colour: blue }\n',
    );
    const { code, stderr, stdout } = rmqbench('run', file);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^rmqbench: invalid plan .*broken\.yaml \(\d+ problems\)/);
    expect(stderr).toContain('workloads[0].producers');
    expect(stderr).toContain('workloads[0].messageSizeBytes');
    expect(stderr).toMatch(/workloads\[0\]\.colour: unknown field/);
  });

  test('mirroring on RabbitMQ 4 is refused before anything starts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-plan-'));
    const file = join(dir, 'mirror4.yaml');
    writeFileSync(
      file,
      'name: mirror4\nclusters:\n' +
        '  - { name: c, nodes: 3, rabbitmqVersion: "4.1", topology: { type: mirrored } }\n' +
        'workloads:\n  - { name: w }\n',
    );
    const { code, stderr } = rmqbench('validate', file);
    expect(code).toBe(2);
    expect(stderr).toMatch(/clusters\[0\]\.topology\.type: classic queue mirroring was removed in RabbitMQ 4\.0/);
  });

  test('unknown commands, missing arguments and unknown plans exit 2 with one line', () => {
    for (const args of [['frobnicate'], ['run'], ['run', 'no-such-plan']]) {
      const { code, stderr } = rmqbench(...args);
      expect(code).toBe(2);
      expect(stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  test('validate accepts a built-in plan by name', () => {
    const { code, stdout } = rmqbench('validate', 'quickstart');
    expect(code).toBe(0);
    expect(stdout).toMatch(/plan quickstart is valid for target local: 2 scenario\(s\) × 2 repetition\(s\)/);
  });

  test('an answer larger than a pipe holds (64 KiB) reaches a reader of the pipe whole', () => {
    // Node writes to pipes asynchronously on POSIX: the CLI once exited with 64 KiB of a larger --json answer sent.
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-input-'));
    const workloads = Array.from(
      { length: 250 },
      (_, index) =>
        `  - { name: workload-${index}-of-a-wide-plan, messageSizeBytes: ${100 + index}, durationSeconds: 30 }`,
    );
    writeFileSync(
      join(dir, 'wide.yaml'),
      'name: wide\nclusters:\n  - { name: c, nodes: 3, instanceType: m5.xlarge, topology: { type: quorum } }\n' +
        `workloads:\n${workloads.join('\n')}\n`,
    );
    // Through a shell pipe, as `| jq` reads it (a child's stdout from spawn is a socket, whose buffer is larger).
    const { status, stdout } = spawnSync(
      'bash',
      [
        '-o',
        'pipefail',
        '-c',
        '"$@" | cat',
        'bash',
        process.execPath,
        cli,
        'execution-input',
        join(dir, 'wide.yaml'),
      ].concat(['--target', 'aws']),
      { encoding: 'utf8', env: { ...process.env, RMQBENCH_HOME: dir } },
    );
    expect(status).toBe(0);
    expect(stdout.length).toBeGreaterThan(65_536);
    const input = JSON.parse(stdout) as { plan: { workloads: unknown[] } };
    expect(input.plan.workloads).toHaveLength(250);
  });

  test("execution-input prints what the controller's ValidatePlan accepts, and refuses what it would refuse", () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmqbench-input-'));
    writeFileSync(
      join(dir, 'p.yaml'),
      'name: cloud\nclusters:\n' +
        '  - { name: small, nodes: 3, instanceType: c5.xlarge, topology: { type: quorum } }\n' +
        'workloads:\n  - { name: w, producers: 2, consumers: 2, sweep: { queues: [1, 2] } }\n',
    );
    const { code, stdout } = rmqbench('execution-input', join(dir, 'p.yaml'), '--target', 'aws', '--run-id', 'r-1');
    expect(code).toBe(0);
    const input = JSON.parse(stdout) as WorkflowInput;
    expect([input.target, input.runId]).toEqual(['aws', 'r-1']);
    const schedule = buildSchedule(input, 'exec');
    expect([
      schedule.runId,
      schedule.clusters.length,
      schedule.totalRepetitions,
      schedule.clusters[0]!.instanceType,
    ]).toEqual(['r-1', 1, 2, 'c5.xlarge']);
    expect(rmqbench('execution-input', join(dir, 'p.yaml'), '--target', 'azure').code).toBe(2);
    expect(rmqbench('execution-input', join(dir, 'p.yaml')).stderr).toContain('give --target aws or --target azure');
  });

  test(
    'estimate prints the cost with its parts (--json: totalUsd and parts), exits 1 over --max-cost and 2 for a ' +
      'local target',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-estimate-'));
      writeFileSync(
        join(dir, 'p.yaml'),
        'name: cloud\nrepetitions: 2\nclusters:\n  - { name: small, nodes: 3, instanceType: c5.xlarge }\n' +
          'workloads:\n  - { name: w, durationSeconds: 120 }\n',
      );
      const json = rmqbench('estimate', join(dir, 'p.yaml'), '--target', 'aws', '--region', 'us-east-1', '--json');
      expect(json.code).toBe(0);
      const estimate = JSON.parse(json.stdout) as {
        totalUsd: number;
        complete: boolean;
        maxTotalUsd?: number;
        parts: { name: string; usd: number }[];
      };
      expect(estimate.parts.map((part) => part.name)).toEqual([
        'small: nodes',
        'small: load balancer',
        'small: NAT gateway',
        'small: load generator',
        'Step Functions',
        'Lambda',
        'data transfer between zones',
      ]);
      expect(estimate.totalUsd).toBeCloseTo(
        estimate.parts.reduce((sum, part) => sum + part.usd, 0),
        9,
      );
      const text = rmqbench('estimate', join(dir, 'p.yaml'), '--target', 'aws');
      // No publish rate: priced in full at the planned traffic, with the load generator's line rate as its ceiling.
      expect(text.stdout).toMatch(
        new RegExp(
          String.raw`^estimated cost of plan cloud on aws: \$\d+\.\d\d, up to \$\d+\.\d\d if the workloads without ` +
            String.raw`a publish rate moved traffic at the load generators' line rate\n`,
        ),
      );
      expect(estimate).toMatchObject({ complete: true, maxTotalUsd: expect.any(Number) });
      const ireland = rmqbench('estimate', join(dir, 'p.yaml'), '--target', 'aws', '--region', 'eu-west-1');
      expect(ireland.stdout).toMatch(/^estimated cost of plan cloud on aws: \$\d+\.\d\d, up to/);
      const frankfurt = rmqbench('estimate', join(dir, 'p.yaml'), '--target', 'aws', '--region', 'eu-central-1');
      // No eu-central-1 prices in the catalog: those parts are left out, and the total says it is a lower bound.
      expect(frankfurt.stdout).toMatch(
        /^estimated cost of plan cloud on aws: \$\d+\.\d\d \(at least: some parts are not priced\)/,
      );
      const over = rmqbench('estimate', join(dir, 'p.yaml'), '--target', 'aws', '--max-cost', '0.01');
      expect([over.code, over.stderr.trim()]).toEqual([
        1,
        expect.stringMatching(/^rmqbench: the estimated cost \$\d+\.\d\d on aws exceeds --max-cost \$0\.01/),
      ]);
      expect(rmqbench('estimate', join(dir, 'p.yaml')).code).toBe(2);
      expect(rmqbench('estimate', join(dir, 'p.yaml'), '--target', 'aws', '--max-cost', 'cheap').stderr).toContain(
        '--max-cost must be a positive number of US dollars, got "cheap"',
      );
    },
  );

  test(
    'validate --target aws names every cluster without a ' + 'priced x86 instance type (exit 2); with one it passes',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'rmqbench-target-'));
      const plan = (types: (string | undefined)[]) =>
        JSON.stringify({
          name: 'cloud',
          clusters: types.map((instanceType, index) => ({
            name: `c${index}`,
            nodes: 3,
            ...(instanceType ? { instanceType } : {}),
          })),
          workloads: [{ name: 'w' }],
        });
      writeFileSync(join(dir, 'bad.json'), plan([undefined, 'm6g.large', 'c5.mega']));
      const bad = rmqbench('validate', join(dir, 'bad.json'), '--target', 'aws');
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('plan cloud cannot run on target aws (3 problems):');
      expect(bad.stderr).toMatch(/clusters\[0\]\.instanceType: target aws needs the nodes' instance type/);
      expect(bad.stderr).toMatch(/clusters\[1\]\.instanceType: is an Arm \(Graviton\) type.*\(got "m6g\.large"\)/);
      expect(bad.stderr).toMatch(
        /clusters\[2\]\.instanceType: the price catalog .* has no aws price for this type.*\(got "c5\.mega"\)/,
      );
      writeFileSync(join(dir, 'good.json'), plan(['c5.xlarge', 'm5.xlarge']));
      const good = rmqbench('validate', join(dir, 'good.json'), '--target', 'aws');
      expect([good.code, good.stdout.trim()]).toEqual([
        0,
        'plan cloud is valid for target aws: 2 scenario(s) × 1 repetition(s)',
      ]);
      expect(rmqbench('validate', join(dir, 'good.json')).code).toBe(0);
      const unknownTarget = rmqbench('validate', join(dir, 'good.json'), '--target', 'gcp');
      expect([unknownTarget.code, unknownTarget.stderr.trim()]).toEqual([
        2,
        expect.stringContaining('--target must be one of aws, azure, local (got "gcp")'),
      ]);
    },
  );

  test('an unreachable --dynamodb-endpoint is a one-line error naming it', () => {
    const { code, stderr } = rmqbench('runs', '--dynamodb-endpoint', 'http://127.0.0.1:9');
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^rmqbench: DynamoDB at http:\/\/127\.0\.0\.1:9: could not describe the table .*omit --dynamodb-endpoint/,
    );
  });

  test(
    'prune refuses --keep with --older-than, negative or non-numeric values: exit 2 naming the problem, before ' +
      'touching the store',
    () => {
      const cases: [string[], RegExp][] = [
        [
          ['--keep', '2', '--older-than', '3'],
          /use either --keep N or --older-than DAYS, not both \(got --keep 2 --older-than 3\)/,
        ],
        [['--keep=-1'], /--keep must be a whole number of run folders, 0 or more \(got "-1"\)/],
        [['--keep', '1.5'], /--keep must be a whole number of run folders, 0 or more \(got "1\.5"\)/],
        [['--older-than=-7'], /--older-than must be a number of days, 0 or more, e\.g\. 7 or 0\.5 \(got "-7"\)/],
        [['--older-than', 'week'], /--older-than must be a number of days, 0 or more, e\.g\. 7 or 0\.5 \(got "week"\)/],
      ];
      for (const [args, message] of cases) {
        // An unreachable endpoint: had the arguments been accepted, the error would be about the store.
        const { code, stderr, stdout } = rmqbench('prune', ...args, '--dynamodb-endpoint', 'http://127.0.0.1:9');
        expect({ args, code, stdout }).toEqual({ args, code: 2, stdout: '' });
        expect(stderr.trim()).toMatch(message);
      }
    },
  );

  test('doctor names what is missing and how to get it, and exits 1', () => {
    // An empty PATH and cache: no java, mvn, epmd or haproxy, no jars.
    const emptyBin = mkdtempSync(join(tmpdir(), 'rmqbench-nobin-'));
    const { code, stdout } = rmqbenchWithEnv(
      { PATH: emptyBin, RMQBENCH_CACHE: mkdtempSync(join(tmpdir(), 'rmqbench-nocache-')) },
      'doctor',
      '--json',
    );
    expect(code).toBe(1);
    const checks = (JSON.parse(stdout) as { checks: { name: string; ok: boolean; detail: string }[] }).checks;
    const byName = new Map(checks.map((check) => [check.name, check]));
    expect(byName.get('java')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/apt-get install -y openjdk/),
    });
    expect(byName.get('haproxy')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/apt-get install -y haproxy/),
    });
    expect(byName.get('com.rabbitmq:perf-test:2.22.1')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/rmqbench doctor --fix/),
    });
    expect(byName.get('node')).toMatchObject({ ok: true });
  });

  test('doctor without Go reports the NATS toolchain missing, only for broker: nats, and does not fail for it', () => {
    // The real cache (the jars and tools setup installed) but no Go: what a RabbitMQ-only machine looks like.
    const { code, stdout } = rmqbenchWithEnv({ RMQBENCH_GO: join(tmpdir(), 'rmqbench-no-go', 'go') }, 'doctor');
    const goLine = stdout.split('\n').find((line) => /^\S+\s+go: /.test(line));
    expect(goLine).toMatch(
      /^MISSING {2}go: .*install Go 1\.26\.0 or later.*\(needed only for plans with broker: nats\)$/,
    );
    const required = stdout.split('\n').filter((line) => line.startsWith('MISSING') && !/needed only for/.test(line));
    expect({ code, required }).toEqual({ code: 0, required: [] });
  });
});
